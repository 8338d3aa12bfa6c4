"""What the Ray shells share: keeping one caller's calls in order.

``OrderedInbox`` and ``CallNumbers`` put one caller's calls back in order. Ray does not promise
that an async actor runs one caller's calls in the order they were sent (observed here: a new
send-thread actor ran a later batch before an earlier one), so callers that need order number
their calls per target, and the target applies them strictly in that order. (Answering requests,
and parsing them first, is the drivers' business: actors/drivers/base.py.)
"""
from __future__ import annotations

from typing import Any


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
