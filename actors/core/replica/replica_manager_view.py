"""What the replica manager's request handlers see of it: the partitions it hosts, its purgatories
and the few operations they share.

Theory of operation. ``ReplicaManager`` keeps the per-request work in helper modules (``produce``,
``fetch``, ``replication``), as Kafka's ``ReplicaManager`` hands acks=all produce and long-poll
fetch to ``DelayedProduce`` and ``DelayedFetch``. The helpers need the manager's state, and the
manager calls the helpers, so the helpers are written against this protocol instead of the
manager's class: the dependency runs one way, from the manager to its helpers and from both to
this module. ``ReplicaManager`` satisfies the protocol; nothing else needs to.
"""
from __future__ import annotations

from typing import Any, Protocol

from actors.core.effects import Effect
from actors.core.replica.alter_partition_manager import AlterPartitionManager
from actors.core.replica.fetch_session import FetchSessionCache
from actors.core.fetcher.fetcher_manager import FetcherManager
from actors.core.replica.partition import Partition
from actors.core.replica.purgatory import DelayedOperation, Purgatory

TopicPartition = tuple[str, int]


class ReplicaManagerView(Protocol):
    broker_id: int
    broker_epoch: int
    partitions: dict[TopicPartition, Partition]
    fetch_purgatory: Purgatory
    fetch_sessions: FetchSessionCache
    produce_purgatory: Purgatory
    fetcher_manager: FetcherManager
    alter_partition_manager: AlterPartitionManager
    truncation_policy: str
    # Proposals whose AlterPartition got no answer: (leader epoch, when to send again) by partition.
    unanswered_isr_proposals: dict[TopicPartition, tuple[int, int]]

    def leader_partition(self, topic_partition: TopicPartition) -> Partition:
        """The partition if this broker leads it; else raises the Kafka error a client should see."""

    def try_complete_delayed(self, topic_partition: TopicPartition, now_ms: int) -> list[Effect]:
        """Try to complete every delayed produce and fetch watching ``topic_partition``."""

    def park(self, purgatory: Purgatory, operation: DelayedOperation) -> list[Effect]:
        """Put ``operation`` in ``purgatory`` until it completes or its deadline passes."""

    def wrap_records(self, records: bytes, *, for_replica: bool) -> Any:
        """Record bytes in the form the shell hands to the requester."""


__all__ = ["ReplicaManagerView", "TopicPartition"]
