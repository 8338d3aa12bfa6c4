"""What a follower's replica fetchers sent over each carrier (a broker's channels or Ray), and a
write that makes both small and large Fetch answers: for the tests of actors/broker_channel.py's
use (tests/integration/test_replication.py, test_replication_ray_path.py)."""
from __future__ import annotations

import ray

from orchestration.admin.wait import wait_until


def carried(cluster, broker_id: int) -> dict:
    """How many calls broker ``broker_id``'s fetchers made, per (leg, carrier), summed."""
    totals = {(leg, carrier): 0 for leg in ("leader_calls", "local_calls") for carrier in ("channel", "ray")}
    for entry in ray.get(cluster.broker(broker_id).fetchers.remote(), timeout=30).values():
        described = ray.get(entry["actor"].describe.remote(), timeout=30)
        for leg in ("leader_calls", "local_calls"):
            for carrier, count in described[leg].items():
                totals[leg, carrier] += count
    return totals


def write_small_then_a_backlog(cluster, topic: str, follower_id: int) -> int:
    """30 small acks=all writes one at a time, then 2 MiB written while the follower is paused,
    so that it catches up with answers of 512 KiB and more; the records written."""
    producer = cluster.producer({"acks": "all", "linger.ms": "0"})
    for i in range(30):
        producer.send(topic, value=b"small-%d" % i, partition=0)
        producer.flush(timeout=60)
    follower = cluster.broker(follower_id)
    backlog = cluster.producer({"acks": "1", "linger.ms": "5", "batch.size": "1000000"})
    ray.get(follower.pause.remote(), timeout=30)
    try:
        for _ in range(2000):
            backlog.send(topic, value=b"L" * 1024, partition=0)
        backlog.flush(timeout=60)
    finally:
        ray.get(follower.resume.remote(), timeout=30)
    return 2030


def copied_whole(cluster, topic: str, records: int) -> bool:
    description = cluster.describe_topic(topic)[0]
    digests = cluster.replica_digests(topic, 0, description.log_end_offset)
    return (description.log_end_offset == description.high_watermark == records and len(digests) == 2
            and len({tuple(d) for d in digests.values()}) == 1)


def replicate_small_and_large(cluster, topic: str) -> tuple[int, dict, dict]:
    """A topic on brokers 0 (leader) and 1, written small then large (``write_small_then_a_backlog``)
    until both replicas hold it whole: (records written, what broker 1's fetchers had carried
    before, and after)."""
    cluster.create_topic(topic, assignment=[[0, 1]], config={"min.insync.replicas": "2"})
    wait_until(lambda: len(cluster.describe_topic(topic)[0].isr) == 2, 30, "a full ISR")
    before = carried(cluster, 1)
    records = write_small_then_a_backlog(cluster, topic, follower_id=1)
    wait_until(lambda: copied_whole(cluster, topic, records), 60, "the backlog copied whole to the follower")
    return records, before, carried(cluster, 1)
