"""Which ``__consumer_offsets`` leaderships a group coordinator has been told of, fenced by epoch.

Kafka's coordinator is told ``onElection(partition, coordinatorEpoch)`` and
``onResignation(partition, coordinatorEpoch)`` and ignores a change older than the newest it has
seen, since such calls can arrive late or out of order; the partition's leader epoch plays the
coordinator epoch here. A load that finishes after a newer change arrived is stale and is dropped:
``is_current`` says so.
"""
from __future__ import annotations


class CoordinatorEpochs:
    def __init__(self) -> None:
        self._epochs: dict[int, int] = {}  # offsets partition -> newest leader epoch heard of

    def accept(self, partition: int, leader_epoch: int) -> bool:
        """Record a leadership change; False when it is older than one already seen (ignore it)."""
        if leader_epoch < self._epochs.get(partition, -1):
            return False
        self._epochs[partition] = leader_epoch
        return True

    def is_current(self, partition: int, leader_epoch: int) -> bool:
        return self._epochs.get(partition) == leader_epoch

    def partitions(self) -> list[int]:
        return sorted(self._epochs)

    def clear(self) -> None:
        """Forget everything (the broker changed under us): the next changes are taken as they come."""
        self._epochs.clear()
