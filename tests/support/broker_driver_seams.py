"""For tests that drive a shipped ``BrokerDriver`` by hand, without Ray: seams with a fixed clock that
keep every call unanswered unless the test answers it, a bounded wait on the running event loop,
and a call that must be answered within the step that received it."""
from __future__ import annotations

import asyncio

from actors.drivers.broker import BrokerDriver

WAIT_LIMIT_S = 30.0


class Seams:
    """Transport, clock and log: a fixed clock, calls kept unanswered unless the test answers them."""

    def __init__(self) -> None:
        self.now = 0
        self.replies: list = []

    def call(self, destination, request, *, timeout_ms, on_reply):
        self.replies.append(on_reply)

    def tell(self, destination, event):
        pass

    def start(self, destination, **arguments):
        pass

    def stop(self, destination):
        pass

    def pack(self, records, *, for_replica):
        return records

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


def ask(driver: BrokerDriver, api: str, request):
    """Hand ``request`` to the driver and return its answer, which must come in the same step."""
    answers: list = []
    driver.handle(api, request, answers.append)
    assert answers, f"{api} was not answered at once"
    return answers[0]
