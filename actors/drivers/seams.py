"""The seams a driver talks to the world through: a messenger, a clock, a log and a storage worker.

Theory of operation. A driver (one per actor kind, in this package) owns a sans-I/O core, steps it
and interprets its effects. Everything it does beyond the core goes through these seams, which a
host implements: the Ray shells in ``actors/*.py`` over Ray calls, asyncio timers and loguru, and
the simulator in ``orchestration/simulation/`` over a seeded, single-threaded network and a fake clock.
Nothing here imports Ray or asyncio, so the simulator runs exactly the code that ships.

- ``Messenger``: calls to other actors by a name the driver knows (``"leader"``, ``"controller"``,
  ``"broker"``, ``"fetcher:<leader id>:<fetcher id>"`` ...; each host resolves the names of its
  actor kind). ``call`` sends a request and hands its answer, exactly once, to ``on_reply``; a call
  that fails hands over an ``ErrorCode`` instead: ``REQUEST_TIMED_OUT`` when no answer came within
  ``timeout_ms``, ``NETWORK_EXCEPTION`` when the peer could not be reached or failed. ``tell``
  sends a one-way event; the events one caller tells one destination arrive in the order told.
  ``start`` and ``stop`` create and end a child actor (a broker's fetchers, a controller's send
  threads); stopping one cancels its calls and loses what was told to it and not yet taken.
  ``pack`` gives a consumer's record payload the form it travels in (Ray: a large one as a
  shared-memory array; the simulator: as it is); ``pack_together`` the payloads of one answer to
  a follower's fetcher, one form each (Ray: together one object, which the fetcher hands on
  unread, each payload a ``SharedRecords`` slice of it; the simulator: as they are).
- ``Clock``: ``now_ms`` and ``wake_at(deadline_ms)``: the host calls the driver's ``on_wakeup``
  no later than about that deadline. Every host also calls ``on_wakeup`` on a short period of its
  own, so a lost wake-up only delays.
- ``EventLog``: a line worth a human's attention (``LogEvent`` effects) and gauges (``Metric``).
- ``StorageWorker``: ``run(work, on_done)`` runs ``work`` (fsyncs and checkpoint writes, which may
  take long) away from the driver's thread, one work at a time in the order given, and then calls
  ``on_done`` on the driver's thread with None, or with the text of the error ``work`` raised.
  Ray runs it on an executor thread, the simulator as a later event of the node. The work of a
  process that dies before it finished never reports (what it did not fsync is not durable).
  ``InlineStorageWorker`` runs it at once, for drivers in tests that do no I/O worth a thread.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from actors.core.errors import ErrorCode

Reply = Callable[[Any], None]

# What a failed call hands ``on_reply`` (see the module docstring).
CALL_TIMED_OUT = ErrorCode.REQUEST_TIMED_OUT
PEER_UNREACHABLE = ErrorCode.NETWORK_EXCEPTION


class Messenger(Protocol):
    def call(self, destination: str, request: Any, *, timeout_ms: int, on_reply: Reply) -> None: ...

    def tell(self, destination: str, event: Any) -> None: ...

    def start(self, destination: str, **arguments: Any) -> None: ...

    def stop(self, destination: str, *, idle: bool = False) -> None: ...

    def pack(self, records: bytes, *, for_replica: bool) -> Any: ...

    def pack_together(self, payloads: list) -> list: ...


class Clock(Protocol):
    def now_ms(self) -> int: ...

    def wake_at(self, deadline_ms: int) -> None: ...


class StorageWorker(Protocol):
    def run(self, work: Callable[[], None], on_done: Callable[[str | None], None]) -> None: ...


class InlineStorageWorker:
    def run(self, work: Callable[[], None], on_done: Callable[[str | None], None]) -> None:
        try:
            work()
        except Exception as exc:  # an I/O error is the core's to handle, as on a worker thread
            on_done(f"{type(exc).__name__}: {exc}")
            return
        on_done(None)


class EventLog(Protocol):
    def log(self, level: str, message: str) -> None: ...

    def metric(self, name: str, value: float, tags: tuple[tuple[str, str], ...]) -> None: ...
