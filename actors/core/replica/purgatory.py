"""Delayed operations: requests that wait for a condition or a deadline (Kafka's purgatories).

Theory of operation. A handler that cannot answer yet (a long-poll fetch with too few bytes, an
acks=all produce whose offsets are not yet under the high watermark) parks a delayed operation
here, keyed by the partitions whose progress could complete it. Each kind of operation is its own
type that knows how to complete itself, as Kafka's ``DelayedProduce`` and ``DelayedFetch`` extend
``DelayedOperation``: ``DelayedProduce`` (produce.py) and ``DelayedFetch`` (fetch.py) carry what
they wait for and the objects they read, and answer from ``try_complete``. The replica manager's
two purgatories are ``DelayedOperations``: when a partition's log end offset or high watermark
moves, ``try_complete`` asks every operation watching that partition, in either purgatory, to
complete; ``expire`` completes those past their deadline. Completion and expiry both remove the
operation, so each request is answered exactly once.

A purgatory is bounded by ``max_size``. At the limit ``is_full`` is true and the replica manager
answers new requests at once with what it has (a fetch returns what is there; a produce returns
its append result), which is always correct, only less patient.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Hashable

from actors.core.effects import ArmTimer, Effect

TopicPartition = tuple[str, int]


@dataclass(slots=True, kw_only=True)
class DelayedOperation:
    """A parked request: its id, when it must be answered at the latest, and what it watches.
    A kind that the replica manager parks adds what it waits for and ``try_complete``."""
    request_id: int
    deadline_ms: int
    keys: tuple[Hashable, ...]

    def try_complete(self, now_ms: int, *, expired: bool) -> list[Effect]:
        """Answer and leave the purgatory if the condition holds or ``expired``; else nothing."""
        raise NotImplementedError(type(self).__name__)


class Purgatory:
    __slots__ = ("name", "max_size", "_operations", "_watchers")

    def __init__(self, name: str, max_size: int) -> None:
        assert max_size > 0
        self.name = name
        self.max_size = max_size
        self._operations: dict[int, DelayedOperation] = {}
        self._watchers: dict[Hashable, set[int]] = {}

    def __len__(self) -> int:
        return len(self._operations)

    @property
    def is_full(self) -> bool:
        return len(self._operations) >= self.max_size

    def add(self, operation: DelayedOperation) -> None:
        assert not self.is_full, f"{self.name} purgatory is full"
        assert operation.request_id not in self._operations
        self._operations[operation.request_id] = operation
        for key in operation.keys:
            self._watchers.setdefault(key, set()).add(operation.request_id)

    def remove(self, request_id: int) -> DelayedOperation | None:
        operation = self._operations.pop(request_id, None)
        if operation is not None:
            for key in operation.keys:
                watchers = self._watchers.get(key)
                if watchers is not None:
                    watchers.discard(request_id)
                    if not watchers:
                        del self._watchers[key]
        return operation

    def watching(self, key: Hashable) -> list[DelayedOperation]:
        """Operations that watch ``key``, oldest first (request ids grow with arrival)."""
        ids = sorted(self._watchers.get(key, ()))
        return [self._operations[request_id] for request_id in ids]

    def expired(self, now_ms: int) -> list[DelayedOperation]:
        return [op for op in self._operations.values() if op.deadline_ms <= now_ms]

    def next_deadline_ms(self) -> int | None:
        return min((op.deadline_ms for op in self._operations.values()), default=None)

    def all(self) -> list[DelayedOperation]:
        return list(self._operations.values())


class DelayedOperations:
    """The replica manager's purgatories: acks=all produces, long-poll fetches and DeleteRecords
    waiting for the followers' log start offsets, all keyed by the partitions they watch."""
    __slots__ = ("produce", "fetch", "delete_records")

    def __init__(self, max_size: int) -> None:
        self.produce = Purgatory("produce", max_size)
        self.fetch = Purgatory("fetch", max_size)
        self.delete_records = Purgatory("delete records", max_size)

    @property
    def _all(self) -> tuple[Purgatory, ...]:
        return (self.produce, self.fetch, self.delete_records)

    def park(self, purgatory: Purgatory, operation: DelayedOperation) -> list[Effect]:
        """Put ``operation`` in ``purgatory`` until it completes or its deadline passes."""
        purgatory.add(operation)
        return [ArmTimer(deadline_ms=operation.deadline_ms)]

    def try_complete(self, key: Hashable, now_ms: int) -> list[Effect]:
        """Kafka's ``checkAndComplete`` on every purgatory: every operation watching ``key``."""
        effects: list[Effect] = []
        for purgatory in self._all:
            for operation in purgatory.watching(key):
                effects.extend(operation.try_complete(now_ms, expired=False))
        return effects

    def expire(self, now_ms: int) -> list[Effect]:
        """Complete every operation whose deadline has passed, answered with what it has."""
        effects: list[Effect] = []
        for purgatory in self._all:
            for operation in purgatory.expired(now_ms):
                effects.extend(operation.try_complete(now_ms, expired=True))
        return effects

    def next_deadline_ms(self) -> int | None:
        deadlines = [d for d in (p.next_deadline_ms() for p in self._all) if d is not None]
        return min(deadlines, default=None)

    def try_complete_delete_records(self, key: Hashable, now_ms: int) -> list[Effect]:
        """A follower's log start offset moved: only a DeleteRecords can complete by that."""
        effects: list[Effect] = []
        for operation in self.delete_records.watching(key):
            effects.extend(operation.try_complete(now_ms, expired=False))
        return effects
