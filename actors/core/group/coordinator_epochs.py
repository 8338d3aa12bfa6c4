"""Which ``__consumer_offsets`` leaderships a group coordinator has been told of, fenced by epoch.

Kafka's coordinator is told ``onElection(partition, coordinatorEpoch)`` and
``onResignation(partition, coordinatorEpoch)`` and ignores a change older than the newest it has
seen, since such calls can arrive late or out of order; the partition's leader epoch plays the
coordinator epoch here. Within one epoch the only change is election then resignation (StopReplica
resigns at the epoch the partition was led with), so at an equal epoch a resignation after an
election is accepted and everything else is a duplicate: in particular the same election heard
twice (from the broker and from the coordinator's own adoption of its broker's leaderships) loads
the partition once, as Kafka's ``scheduleLoadGroupAndOffsets`` skips a partition already loading.
A load that finishes after a newer change arrived is stale and is dropped: ``is_current`` says so.
"""
from __future__ import annotations


class CoordinatorEpochs:
    def __init__(self) -> None:
        # offsets partition -> (newest leader epoch heard of, whether that change was an election)
        self._changes: dict[int, tuple[int, bool]] = {}

    def accept(self, partition: int, leader_epoch: int, *, is_leader: bool) -> bool:
        """Record a leadership change; False when it is older than, or the same as, one already
        seen (ignore it)."""
        known = self._changes.get(partition)
        if known is not None:
            known_epoch, known_is_leader = known
            if leader_epoch < known_epoch:
                return False
            if leader_epoch == known_epoch and not (known_is_leader and not is_leader):
                return False
        self._changes[partition] = (leader_epoch, is_leader)
        return True

    def is_current(self, partition: int, leader_epoch: int) -> bool:
        """Whether a load begun for the election at ``leader_epoch`` is still wanted."""
        return self._changes.get(partition) == (leader_epoch, True)

    def partitions(self) -> list[int]:
        return sorted(self._changes)

    def clear(self) -> None:
        """Forget everything (the broker changed under us): the next changes are taken as they come."""
        self._changes.clear()
