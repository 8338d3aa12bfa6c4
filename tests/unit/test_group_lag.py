"""Consumer-group lag gauges: committed offsets of every cached group against the partitions' end
offsets, one gauge per (group, partition), never below zero, and none for an unknown end."""
from __future__ import annotations

from types import SimpleNamespace

from actors.core.group.group_metadata import OffsetAndMetadata
from actors.core.group.lag import committed_offsets, lag_metrics
from actors.core.metrics import CONSUMER_GROUP_LAG


def test_lag_is_end_offset_minus_committed_per_group_partition():
    groups = {"readers": SimpleNamespace(offsets={("orders", 0): OffsetAndMetadata(offset=10),
                                                  ("orders", 1): OffsetAndMetadata(offset=7)}),
              "audit": SimpleNamespace(offsets={("orders", 0): OffsetAndMetadata(offset=30)})}
    committed = committed_offsets(groups)
    assert committed == {("audit", ("orders", 0)): 30, ("readers", ("orders", 0)): 10,
                         ("readers", ("orders", 1)): 7}
    gauges = lag_metrics(2, committed, {("orders", 0): 25})
    assert [(m.name, dict(m.tags)["group"], m.value) for m in gauges] == [
        (CONSUMER_GROUP_LAG, "audit", 0), (CONSUMER_GROUP_LAG, "readers", 15)]
    assert dict(gauges[1].tags) == {"broker_id": "2", "group": "readers", "topic": "orders", "partition": "0"}


def test_each_leader_is_asked_for_the_latest_offsets_of_the_wanted_partitions_it_leads():
    from actors.core.errors import ErrorCode
    from actors.core.group.lag import latest_offsets, latest_offsets_requests
    from actors.core.messages.list_offsets import (
        LATEST_TIMESTAMP, ListOffsetsPartitionResponse, ListOffsetsResponse, ListOffsetsTopicResponse,
    )
    from actors.core.messages.metadata import MetadataResponse, MetadataResponsePartition, MetadataResponseTopic
    metadata = MetadataResponse(brokers=(), topics=(MetadataResponseTopic(name="orders", partitions=(
        MetadataResponsePartition(partition_index=0, leader_id=1), MetadataResponsePartition(partition_index=1, leader_id=2),
        MetadataResponsePartition(partition_index=2, leader_id=1), MetadataResponsePartition(partition_index=3))),))
    requests = latest_offsets_requests(metadata, {("orders", 0), ("orders", 2), ("orders", 3)})
    assert sorted(requests) == [1]  # partition 1 is not wanted, partition 3 has no leader
    (topic,) = requests[1].topics
    assert (topic.name, [(p.partition_index, p.timestamp) for p in topic.partitions]) == (
        "orders", [(0, LATEST_TIMESTAMP), (2, LATEST_TIMESTAMP)])
    answer = ListOffsetsResponse(topics=(ListOffsetsTopicResponse(name="orders", partitions=(
        ListOffsetsPartitionResponse(partition_index=0, offset=40),
        ListOffsetsPartitionResponse(partition_index=2, error_code=ErrorCode.NOT_LEADER_OR_FOLLOWER))),))
    assert latest_offsets(answer) == {("orders", 0): 40}
