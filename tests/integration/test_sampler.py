"""Proves the sampler, on a real 3-broker cluster taking acks=all writes, records a sample of every
partition with all three replicas and agreeing digests, and that the checker finds no broken
invariant in those samples."""
from __future__ import annotations

import pytest

from orchestration.chaos.checker import INVARIANT_KINDS, check
from orchestration.admin.wait import wait_until
from orchestration.history import HistoryWriter, read_history
from orchestration.chaos.sampler import Sampler

pytestmark = pytest.mark.integration

TOPIC = "sampled"
PARTITIONS = 3
RECORDS = 300


def caught_up(cluster) -> bool:
    """Every partition has its full ISR and the leader's HW at its LEO."""
    return all(len(p.isr) == 3 and 0 <= p.high_watermark == p.log_end_offset for p in cluster.describe_topic(TOPIC))


def test_sampler_records_agreeing_replicas_of_every_partition(cluster, tmp_path):
    cluster.create_topic(TOPIC, partitions=PARTITIONS, replication_factor=3)
    wait_until(lambda: caught_up(cluster), 60, "a full ISR on every partition")
    path = tmp_path / "history.jsonl"
    with HistoryWriter(path) as history:
        sampler = Sampler(cluster, history, topics=[TOPIC], interval_s=0.25)
        with sampler:
            producer = cluster.producer({"acks": "all", "linger.ms": "5"})
            futures = [producer.send(TOPIC, value=f"v{i}".encode()) for i in range(RECORDS)]
            producer.flush(timeout=60)
            acknowledged = [future.result(timeout=1) for future in futures]
            producer.close()
            wait_until(lambda: caught_up(cluster) and sampler.rounds >= 4, 60,
                       "replicas caught up and a few rounds sampled")
        assert sampler.errors == 0
        final = sampler.sample_once(full_digests=True)

    assert len(acknowledged) == RECORDS
    assert sorted(e["value"]["partition"] for e in final) == list(range(PARTITIONS))
    for event in final:
        value = event["value"]
        assert value["leader"] is not None and value["leader"] in value["isr"]
        assert sorted(value["replicas"]) == ["0", "1", "2"]
        assert value["digests_agree_below_hw"] is True
        assert {r["log_end_offset"] for r in value["replicas"].values()} == {
            value["replicas"][str(value["leader"])]["high_watermark"]}
    assert sum(value["replicas"][str(value["leader"])]["high_watermark"]
               for value in (e["value"] for e in final)) == RECORDS

    events = list(read_history(path))
    samples = [e for e in events if e["f"] == "sample"]
    assert len(samples) == sampler.samples_written > len(final)
    assert {e["value"]["partition"] for e in samples} == set(range(PARTITIONS))
    assert all(e["value"]["digests_agree_below_hw"] for e in samples)
    report = check(events)
    assert report.kinds() & set(INVARIANT_KINDS) == set(), report.table()
    assert report.stats["samples"] == len(samples)
