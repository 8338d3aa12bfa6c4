"""Delayed operations: requests that wait for a condition or a deadline (Kafka's purgatories).

Theory of operation. A handler that cannot answer yet (a long-poll fetch with too few bytes, an
acks=all produce whose offsets are not yet under the high watermark) parks a delayed operation
here, keyed by the partitions whose progress could complete it. When a partition's log end offset
or high watermark moves, the replica manager asks for the operations watching that partition and
tries to complete each; ``tick`` expires those past their deadline. Completion and expiry both
remove the operation, so each request is answered exactly once.

The purgatory is bounded by ``max_size``. At the limit ``is_full`` is true and the replica manager
answers new requests at once with what it has (a fetch returns what is there; a produce returns
its append result), which is always correct, only less patient.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Hashable

TopicPartition = tuple[str, int]


@dataclass(slots=True, kw_only=True)
class DelayedOperation:
    request_id: int
    deadline_ms: int
    keys: tuple[Hashable, ...]
    payload: Any = field(default=None)


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
