"""Consumer-group lag per partition, as Burrow computes it from outside the consumers: the
partition's log end offset for consumers (its high watermark) minus the group's committed offset.

Kafka's own consumer reports ``records-lag`` (kafka.consumer:type=consumer-fetch-manager-metrics)
from its fetch position, which only a live consumer knows; the group coordinator knows the
committed offsets of every group it coordinates, including groups with no member running, which
is what ``kafka-consumer-groups --describe`` and Burrow show. ``latest_offsets_requests`` says
which ListOffsets to ask of which leader (from the coordinator's broker's metadata), the shell
makes the calls, ``latest_offsets`` reads the answers, and ``lag_metrics`` makes the gauges.
"""
from __future__ import annotations

from collections.abc import Mapping

from actors.core import metrics
from actors.core.effects import Metric
from actors.core.errors import ErrorCode
from actors.core.messages.list_offsets import (
    LATEST_TIMESTAMP, ListOffsetsPartition, ListOffsetsRequest, ListOffsetsResponse, ListOffsetsTopic,
)
from actors.core.messages.metadata import MetadataResponse

TopicPartition = tuple[str, int]

# The most (group, partition) pairs one pass reports; beyond that the rest wait for a later pass,
# so a coordinator with very many groups does not flood the metrics endpoint in one go.
LAG_PAIRS_MAX = 10_000


def committed_offsets(groups: Mapping) -> dict[tuple[str, TopicPartition], int]:
    """(group id, partition) -> committed offset, for every group this coordinator holds."""
    found = {}
    for group_id, group in sorted(groups.items()):
        for topic_partition, committed in sorted(group.offsets.items()):
            if committed.offset >= 0:
                found[(group_id, topic_partition)] = committed.offset
            if len(found) >= LAG_PAIRS_MAX:
                return found
    return found


def lag_metrics(broker_id: int, committed: Mapping[tuple[str, TopicPartition], int],
                end_offsets: Mapping[TopicPartition, int]) -> list[Metric]:
    """One gauge per (group, partition) whose end offset is known; lag never below 0 (a commit
    past the end, possible after a truncation, is 0 lag, as kafka-consumer-groups shows it)."""
    return [metrics.consumer_group_lag(broker_id, group_id, tp[0], tp[1], max(0, end_offsets[tp] - offset))
            for (group_id, tp), offset in sorted(committed.items()) if tp in end_offsets]


def latest_offsets_requests(metadata: MetadataResponse, wanted: set[TopicPartition]) -> dict[int, ListOffsetsRequest]:
    """Leader id -> the ListOffsets (latest) for the ``wanted`` partitions it leads; a partition
    with no leader is left out of this pass."""
    by_leader: dict[int, dict[str, list[int]]] = {}
    for topic in metadata.topics:
        for p in topic.partitions:
            if (topic.name, p.partition_index) in wanted and p.leader_id >= 0:
                by_leader.setdefault(p.leader_id, {}).setdefault(topic.name, []).append(p.partition_index)
    return {leader: ListOffsetsRequest(topics=tuple(
        ListOffsetsTopic(name=name, partitions=tuple(ListOffsetsPartition(partition_index=i, timestamp=LATEST_TIMESTAMP)
                                                     for i in sorted(indexes)))
        for name, indexes in sorted(topics.items())))
        for leader, topics in sorted(by_leader.items())}


def latest_offsets(answer: ListOffsetsResponse) -> dict[TopicPartition, int]:
    """The partitions a leader answered without an error, with their latest offsets."""
    return {(topic.name, p.partition_index): p.offset for topic in answer.topics for p in topic.partitions
            if p.error_code == ErrorCode.NONE and p.offset >= 0}
