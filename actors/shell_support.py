"""What every actor shell shares: answering requests through futures, and keeping call order.

``PendingRequests`` is the purgatory's shell half. A request gets an id and a future; the core is
stepped with that id and may answer at once or later with a ``Respond`` effect, which resolves the
future the caller is awaiting.

``OrderedInbox`` and ``CallNumbers`` put one caller's calls back in order. Ray does not promise
that an async actor runs one caller's calls in the order they were sent (observed here: a new
send-thread actor ran a later batch before an earlier one), so callers that need order number
their calls per target, and the target applies them strictly in that order.
"""
from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Callable
from typing import Any

from loguru import logger

from actors.core.effects import Respond


def monotonic_ms() -> int:
    return int(time.monotonic() * 1000)


class PendingRequests:
    def __init__(self, owner: str) -> None:
        self._owner = owner
        self._pending: dict[int, asyncio.Future] = {}
        self._ids = itertools.count()

    async def call(self, handler: Callable, request: Any, apply: Callable[[list], None]) -> Any:
        """Step ``handler`` with a new request id, apply its effects, await the answer."""
        request_id = next(self._ids)
        future = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        try:
            effects = handler(request_id, request, monotonic_ms())
        except Exception:
            self._pending.pop(request_id, None)
            logger.exception("{} failed on {}", self._owner, type(request).__name__)
            raise
        apply(effects)
        return await future

    def respond(self, effect: Respond) -> None:
        future = self._pending.pop(effect.request_id, None)
        if future is not None and not future.done():
            future.set_result(effect.response)


class OrderedInbox:
    """Receiving side: items numbered 0, 1, 2, ... come out in that order, however they arrive."""

    def __init__(self, early_max: int = 100_000) -> None:
        self._early: dict[int, Any] = {}
        self._next = 0
        self._early_max = early_max

    def offer(self, sequence: int, item: Any) -> list[Any]:
        """Accept ``item``; returns the items now deliverable, in order (possibly none)."""
        assert sequence >= self._next and sequence not in self._early, f"call {sequence} seen twice"
        assert len(self._early) < self._early_max, "a gap in the caller's numbering never filled"
        self._early[sequence] = item
        ready = []
        while self._next in self._early:
            ready.append(self._early.pop(self._next))
            self._next += 1
        return ready


class CallNumbers:
    """Sending side: the next number for each target; a new target (actor) starts again at 0."""

    def __init__(self) -> None:
        self._next: dict[Any, int] = {}

    def reset(self, target: Any) -> None:
        self._next[target] = 0

    def next(self, target: Any) -> int:
        number = self._next[target]
        self._next[target] = number + 1
        return number

    def forget(self, target: Any) -> None:
        self._next.pop(target, None)
