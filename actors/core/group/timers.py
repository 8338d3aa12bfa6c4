"""Deadlines of the group coordinator's delayed operations, earliest first (its timing wheel).

Theory of operation. Kafka keeps DelayedJoin and DelayedHeartbeat operations in purgatories driven
by a timer thread. Here each operation is a deadline stored on the object it concerns (a member's
``heartbeat_deadline_ms``, a pending member's rejoin deadline, a group's delayed join), and this
queue only says which deadline comes next. Rescheduling does not remove the old entry: the owner's
``is_live`` says whether an entry still matches the object's current deadline, and stale entries
are dropped when they surface or when the heap grows past four times its live size (a rebuild,
so the heap stays proportional to the live timers however often members heartbeat).
"""
from __future__ import annotations

import enum
import heapq
from collections.abc import Callable
from typing import NamedTuple

REBUILD_SIZE_MIN = 1024


class TimerKind(enum.IntEnum):
    # Values order timers that share a deadline: expirations first, so a rebalance that completes
    # at the same instant no longer waits for a member that has just expired.
    HEARTBEAT = 0
    PENDING_MEMBER = 1
    JOIN = 2


class Timer(NamedTuple):
    deadline_ms: int
    kind: TimerKind
    group_id: str
    member_id: str = ""


class TimerQueue:
    __slots__ = ("_heap", "_is_live", "_rebuild_size")

    def __init__(self, is_live: Callable[[Timer], bool]) -> None:
        self._heap: list[Timer] = []
        self._is_live = is_live
        self._rebuild_size = REBUILD_SIZE_MIN

    def __len__(self) -> int:
        return len(self._heap)

    def push(self, timer: Timer) -> None:
        heapq.heappush(self._heap, timer)
        if len(self._heap) > self._rebuild_size:
            self._heap = [entry for entry in self._heap if self._is_live(entry)]
            heapq.heapify(self._heap)
            self._rebuild_size = max(REBUILD_SIZE_MIN, 4 * len(self._heap))

    def pop_due(self, now_ms: int) -> Timer | None:
        """The earliest live timer due at ``now_ms``, removed; None if none is due."""
        while self._heap and self._heap[0].deadline_ms <= now_ms:
            timer = heapq.heappop(self._heap)
            if self._is_live(timer):
                return timer
        return None

    def next_deadline_ms(self) -> int | None:
        while self._heap and not self._is_live(self._heap[0]):
            heapq.heappop(self._heap)
        return self._heap[0].deadline_ms if self._heap else None
