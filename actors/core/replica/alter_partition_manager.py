"""A broker's ISR changes on their way to the controller: at most one AlterPartition in flight, and
every change proposed meanwhile batched into the next (Kafka's AlterPartition manager, KIP-497).

Theory of operation. A leader that wants to change a partition's ISR marks the partition pending
(``Partition.propose_isr``) and ``submit``s the change here. With no request in flight the change
goes to the controller at once; otherwise it waits, one entry per partition (a later proposal for
the same partition replaces the earlier), until the answer to the request in flight arrives. Then
``on_answer`` frees the slot and ``send_unsent`` sends everything that waited in one request. So a
broker whose followers catch up on many partitions at once (a restart, a failover) asks the
controller once per round trip, not once per partition, and the controller refreshes every
broker's metadata once per request, not once per change.

A change that waited is checked again when it is sent: if the partition's leadership or its
pending proposal changed since (a LeaderAndIsr made this broker a follower, or gave it a new
epoch, which discards the proposal), the change is dropped; it would only be refused.

The request's answer is always delivered (the driver turns an unreachable controller into an
ErrorCode), so the slot is never held forever; a request that got no answer may still have been
committed, so its changes stay pending and ``Replication.resend_unanswered_isr_proposals``
submits them again unchanged after a backoff; the answer's partitions are applied by
``Replication.on_alter_partition_response`` before the waiting changes go out, so a change sent
next carries the partition epoch the answer taught.
"""
from __future__ import annotations

from dataclasses import dataclass

from actors.core.effects import Effect, Send
from actors.core.messages.alter_partition import (
    AlterPartitionPartitionData, AlterPartitionRequest, AlterPartitionTopicData,
)
from actors.core.replica.partition import Partition

TopicPartition = tuple[str, int]


@dataclass(frozen=True, slots=True)
class IsrChange:
    """One partition's proposed ISR, with the epochs its leader proposed it under."""
    topic_partition: TopicPartition
    leader_epoch: int
    partition_epoch: int
    new_isr: tuple[int, ...]


class AlterPartitionManager:
    def __init__(self, broker_id: int) -> None:
        self.broker_id = broker_id
        self.unsent: dict[TopicPartition, IsrChange] = {}
        self.in_flight: AlterPartitionRequest | None = None

    def submit(self, changes: list[IsrChange], partitions: dict[TopicPartition, Partition],
               broker_epoch: int) -> list[Effect]:
        """Queue ``changes``; sent at once unless a request is in flight."""
        for change in changes:
            self.unsent[change.topic_partition] = change
        return self.send_unsent(partitions, broker_epoch)

    def on_answer(self, request: AlterPartitionRequest) -> None:
        """The controller answered (or could not be reached for) ``request``: the slot is free."""
        if request is self.in_flight:
            self.in_flight = None

    def send_unsent(self, partitions: dict[TopicPartition, Partition], broker_epoch: int) -> list[Effect]:
        """Every waiting change still wanted, in one AlterPartition, if none is in flight."""
        if self.in_flight is not None or not self.unsent:
            return []
        changes = [c for c in self.unsent.values() if _still_wanted(c, partitions.get(c.topic_partition))]
        self.unsent = {}
        if not changes:
            return []
        by_topic: dict[str, list[AlterPartitionPartitionData]] = {}
        for change in sorted(changes, key=lambda c: c.topic_partition):
            by_topic.setdefault(change.topic_partition[0], []).append(AlterPartitionPartitionData(
                partition_index=change.topic_partition[1], leader_epoch=change.leader_epoch,
                new_isr=change.new_isr, partition_epoch=change.partition_epoch))
        self.in_flight = AlterPartitionRequest(broker_id=self.broker_id, broker_epoch=broker_epoch, topics=tuple(
            AlterPartitionTopicData(topic_name=topic, partitions=tuple(data)) for topic, data in by_topic.items()))
        return [Send(destination="controller", message=self.in_flight)]


def _still_wanted(change: IsrChange, partition: Partition | None) -> bool:
    return (partition is not None and partition.is_leader and partition.leader_epoch == change.leader_epoch
            and partition.pending_isr == change.new_isr)


__all__ = ["AlterPartitionManager", "IsrChange"]
