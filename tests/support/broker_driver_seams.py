"""For tests that drive a shipped ``BrokerDriver`` by hand, without Ray: seams with a fixed clock that
keep every call unanswered unless the test answers it, a bounded wait on the running event loop,
a call that must be answered within the step that received it, and a disk whose chosen operation
waits until the test releases it."""
from __future__ import annotations

import asyncio
import threading

from actors.core.log.storage import InMemoryStorage
from actors.drivers.broker import BrokerDriver

WAIT_LIMIT_S = 30.0
# How long a held disk operation waits for its release before it gives up (bounds the test if the
# operation runs where it blocks the loop that would release it).
HOLD_LIMIT_S = 10.0


class SlowDisk(InMemoryStorage):
    """Once ``hold`` names an operation ("fsync", "write" or "delete") and a path test, that
    operation waits for ``release`` (or HOLD_LIMIT_S), noting the thread it waited on."""

    def __init__(self) -> None:
        super().__init__()
        self.hold: tuple[str, object] | None = None
        self.entered = threading.Event()
        self.release = threading.Event()
        self.held_threads: list[int] = []
        self.released_by_limit = False

    def _maybe_wait(self, operation: str, path: str) -> None:
        if self.hold is not None and self.hold[0] == operation and self.hold[1](path):
            self.held_threads.append(threading.get_ident())
            self.entered.set()
            self.released_by_limit |= not self.release.wait(HOLD_LIMIT_S)

    def fsync(self, path: str) -> None:
        self._maybe_wait("fsync", path)
        super().fsync(path)

    def write_file_atomically(self, path: str, data: bytes) -> None:
        self._maybe_wait("write", path)
        super().write_file_atomically(path, data)

    def delete(self, path: str, **options) -> None:
        self._maybe_wait("delete", path)
        super().delete(path, **options)


class Seams:
    """Messenger, clock and log: a fixed clock, calls kept unanswered unless the test answers them."""

    def __init__(self) -> None:
        self.now = 0
        self.replies: list = []

    def call(self, destination, request, *, timeout_ms, on_reply):
        self.replies.append(on_reply)

    def tell(self, destination, event):
        pass

    def start(self, destination, **arguments):
        pass

    def stop(self, destination, *, idle=False):
        pass

    def pack(self, records, *, for_replica):
        return records

    def pack_together(self, payloads):
        return list(payloads)

    def now_ms(self):
        return self.now

    def wake_at(self, deadline_ms):
        pass

    def log(self, level, message):
        pass

    def metric(self, name, value, tags):
        pass


async def wait_until(condition, what: str) -> None:
    """Poll ``condition`` on the running loop for at most WAIT_LIMIT_S, naming ``what`` if it never holds."""
    deadline = asyncio.get_running_loop().time() + WAIT_LIMIT_S
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, f"waited {WAIT_LIMIT_S}s for {what}"
        await asyncio.sleep(0.01)


def ask(driver: BrokerDriver, request):
    """Hand ``request`` to the driver and return its answer, which must come in the same step."""
    answers: list = []
    driver.handle(request, answers.append)
    assert answers, f"{type(request).__name__} was not answered at once"
    return answers[0]
