"""The seams of actors/drivers/seams.py in the simulator: each node's messenger, clock, log and storage worker.

Theory of operation. Every node of a ``Simulation`` (orchestration/simulation/simulation.py) that runs a driver gets
its own ``SimMessenger``, ``SimClock`` and ``SimLog``. A call becomes a request ``Message`` on the
simulated network with a ``Call`` awaiting its reply (failed with ``REQUEST_TIMED_OUT`` at its
deadline, or ``NETWORK_EXCEPTION`` when the callee is down); a told event becomes an event
``Message``. ``around`` wraps the handling of each answer (the simulation watches a broker's logs
across every step). ``route`` turns the driver's destination names into (node name, incarnation):
None for "whichever incarnation is up when it arrives" (a Ray call by actor name), a number to pin
one (a fetcher's own broker); None for a destination the simulation does not run.
``start``/``stop`` create and take down child nodes (a broker's fetchers, the controller's send
threads) through the hooks the node gives. ``wake_at`` adds a deadline to the node's timers; the
simulation ticks the node when one is due, and on its period. ``SimStorageWorker`` keeps a
broker's storage work (fsyncs, checkpoint writes) until the node's next wake-up, a millisecond or
more later, and runs it then, before the tick: a step never both plans and finishes one, so a crash
in between (the node taken down, the work with it) happens in the simulation as it can on a disk.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from actors.drivers.seams import CALL_TIMED_OUT, InlineStorageWorker

Route = Callable[[str], tuple[str, int | None]]


class SimMessenger:
    def __init__(self, sim: Any, node: Any, route: Route, *, start: Callable[..., None] | None = None,
                 stop: Callable[[str], None] | None = None,
                 around: Callable[[str, Callable[[], None]], None] | None = None) -> None:
        self._sim, self._node, self._route = sim, node, route
        self._start, self._stop = start, stop
        self._around = around

    def call(self, destination: str, request: Any, *, timeout_ms: int, on_reply: Callable[[Any], None]) -> None:
        name, incarnation = self._route(destination)
        if self._around is not None:
            cause, reply = type(request).__name__.replace("Request", "Response"), on_reply
            on_reply = lambda response: self._around(cause, lambda: reply(response))  # noqa: E731
        self._sim.call(self._node, name, incarnation, request, on_reply, timeout_ms=timeout_ms,
                       timeout_error=CALL_TIMED_OUT)

    def tell(self, destination: str, event: Any) -> None:
        routed = self._route(destination)
        if routed is None:  # a destination the simulation does not run: note what it would be told
            self._sim.record(f"{self._node.name}: {event}")
            return
        self._sim.post_event(self._node, *routed, event)

    def start(self, destination: str, **arguments: Any) -> None:
        assert self._start is not None, f"{self._node.name} starts no actors"
        self._start(destination, **arguments)

    def stop(self, destination: str, *, idle: bool = False) -> None:
        # An idle stop is a stop here: a simulated fetcher costs no process to start again.
        assert self._stop is not None, f"{self._node.name} stops no actors"
        self._stop(destination)

    def pack(self, records: Any, *, for_replica: bool) -> Any:
        return records

    def pack_together(self, payloads: list) -> list:
        return list(payloads)


class SimClock:
    def __init__(self, sim: Any, node: Any) -> None:
        self._sim, self._node = sim, node

    def now_ms(self) -> int:
        return self._sim.now_ms

    def wake_at(self, deadline_ms: int) -> None:
        self._node.timers.add(max(deadline_ms, self._sim.now_ms + 1))


class SimLog:
    def __init__(self, sim: Any, node: Any) -> None:
        self._sim, self._node = sim, node

    def log(self, level: str, message: str) -> None:
        self._sim.log_events.append((self._sim.now_ms, self._node.name, level, message))
        if level != "debug":
            self._sim.record(f"{self._node.name}: {message}")

    def metric(self, name: str, value: float, tags: tuple[tuple[str, str], ...]) -> None:
        pass


class SimStorageWorker:
    def __init__(self, sim: Any, node: Any) -> None:
        self._sim, self._node = sim, node

    def run(self, work: Callable[[], None], on_done: Callable[[str | None], None]) -> None:
        self._node.storage_works.append((work, on_done))
        self._node.timers.add(self._sim.now_ms + 1)

    def finish_due(self) -> None:
        """Run the works handed over before this wake-up, in order (called by the node's wake-up)."""
        works, self._node.storage_works = self._node.storage_works, []
        for work, on_done in works:
            InlineStorageWorker().run(work, on_done)


__all__ = ["SimClock", "SimLog", "SimStorageWorker", "SimMessenger"]
