"""Consumer-group lag per partition, as Burrow computes it from outside the consumers: the
partition's log end offset for consumers (its high watermark) minus the group's committed offset.

Kafka's own consumer reports ``records-lag`` (kafka.consumer:type=consumer-fetch-manager-metrics)
from its fetch position, which only a live consumer knows; the group coordinator knows the
committed offsets of every group it coordinates, including groups with no member running, which
is what ``kafka-consumer-groups --describe`` and Burrow show. The shell asks the partitions'
leaders for their latest offsets (ListOffsets) and hands both here.
"""
from __future__ import annotations

from collections.abc import Mapping

from actors.core import metrics
from actors.core.effects import Metric

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
