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
