"""Replication on a real 3-broker cluster: with replication factor 3 and min.insync.replicas=2,
every record acknowledged with acks=all survives a leader kill at its acknowledged offset and the
replicas agree below the high watermark; a dead follower leaves the ISR and rejoins; a killed
fetcher is replaced and catches up; with two brokers down acks=all is refused."""
from __future__ import annotations

import time

import pytest
import ray

from orchestration import KafkaError
from orchestration.cluster import wait_until
from tests.support.clusters import running_cluster

pytestmark = pytest.mark.integration

LAG_TIME_MAX_MS = 3000
CONFIG = {"replica.lag.time.max.ms": str(LAG_TIME_MAX_MS), "broker.session.timeout.ms": "6000",
          "broker.heartbeat.interval.ms": "500", "replica.fetch.wait.max.ms": "100",
          "replica.fetch.backoff.ms": "200", "auto.leader.rebalance.enable": "false"}
RECORDS = 20_000


@pytest.fixture(scope="module")
def cluster(ray_session, tmp_path_factory):
    with running_cluster(tmp_path_factory, CONFIG) as started:
        yield started


def replicas_agree_below_hw(cluster, topic: str, partition: int) -> bool:
    description = next(p for p in cluster.describe_topic(topic) if p.partition == partition)
    digests = cluster.replica_digests(topic, partition, description.high_watermark)
    return len(digests) == 3 and len({tuple(d) for d in digests.values()}) == 1


def read_back(cluster, topic: str, partitions: int, expected: int, timeout_s: float = 120) -> dict:
    consumer = cluster.consumer({"auto.offset.reset": "earliest"})
    consumer.assign([(topic, p) for p in range(partitions)])
    seen = {}
    deadline = time.monotonic() + timeout_s
    while len(seen) < expected and time.monotonic() < deadline:
        for record in consumer.poll(timeout_ms=500):
            seen[(record.partition, record.offset)] = record.value
    consumer.close()
    return seen


def test_acks_all_survives_a_leader_kill_and_replicas_agree(cluster):
    cluster.create_topic("durable", partitions=1, replication_factor=3, config={"min.insync.replicas": "2"})
    wait_until(lambda: len(cluster.describe_topic("durable")[0].isr) == 3, 30, "a full ISR")
    producer = cluster.producer({"acks": "all", "linger.ms": "5", "retries": "1000000",
                                 "delivery.timeout.ms": "120000"})
    futures = []
    leader = cluster.describe_topic("durable")[0].leader
    for i in range(RECORDS):
        futures.append((f"v{i}".encode(), producer.send("durable", value=f"v{i}".encode(), partition=0)))
        if i == RECORDS // 3:
            cluster.kill("broker", leader, restart=True)  # Ray restarts it; it rejoins as a follower
    producer.flush(timeout=180)
    acknowledged = {}
    failed = 0
    for value, future in futures:
        try:
            metadata = future.result(timeout=1)
        except KafkaError:
            failed += 1  # a send may fail for good; it is then not acknowledged, and not checked
            continue
        assert (0, metadata.offset) not in acknowledged, "two acknowledged sends at one offset"
        acknowledged[(0, metadata.offset)] = value
    assert len(acknowledged) >= RECORDS * 0.9, f"only {len(acknowledged)} acknowledged, {failed} failed"

    seen = read_back(cluster, "durable", 1, len(acknowledged))
    lost = {k: v for k, v in acknowledged.items() if seen.get(k) != v}
    assert not lost, f"{len(lost)} acknowledged records lost or changed, e.g. {sorted(lost.items())[:3]}"
    wait_until(lambda: len(cluster.describe_topic("durable")[0].isr) == 3, 60, "the restarted broker in the ISR")
    wait_until(lambda: replicas_agree_below_hw(cluster, "durable", 0), 60, "identical replicas below HW")


def test_dead_follower_leaves_the_isr_and_rejoins_after_restart(cluster):
    cluster.create_topic("isr", partitions=1, replication_factor=3)
    description = cluster.describe_topic("isr")[0]
    follower = next(r for r in description.replicas if r != description.leader)
    producer = cluster.producer({"acks": "1"})
    cluster.kill("broker", follower, restart=False)
    stopped_at = time.monotonic()
    for i in range(100):
        producer.send("isr", value=b"x", partition=0)
    producer.flush(timeout=30)
    wait_until(lambda: follower not in cluster.describe_topic("isr")[0].isr,
               (LAG_TIME_MAX_MS * 3) / 1000, "the dead follower to leave the ISR")
    print(f"\nfollower {follower} left the ISR {time.monotonic() - stopped_at:.2f}s after it stopped")
    cluster.restart_broker(follower)
    wait_until(lambda: follower in cluster.describe_topic("isr")[0].isr, 60, "the follower back in the ISR")
    wait_until(lambda: replicas_agree_below_hw(cluster, "isr", 0), 60, "identical replicas")


def test_killed_fetcher_is_replaced_and_catches_up(cluster):
    cluster.create_topic("refetch", partitions=3, replication_factor=3)
    producer = cluster.producer({"acks": "1", "linger.ms": "5"})
    follower = next(r for r in cluster.describe_topic("refetch")[0].replicas
                    if r != cluster.describe_topic("refetch")[0].leader)
    cluster.kill("replica-fetcher", follower)
    for i in range(3000):
        producer.send("refetch", value=f"r{i}".encode(), partition=i % 3)
    producer.flush(timeout=60)
    for partition in range(3):
        wait_until(lambda: replicas_agree_below_hw(cluster, "refetch", partition)
                   and cluster.describe_topic("refetch")[partition].high_watermark
                   == cluster.describe_topic("refetch")[partition].log_end_offset,
                   60, f"partition {partition} to be fully replicated")
    assert sum(p.high_watermark for p in cluster.describe_topic("refetch")) == 3000


def test_acks_all_is_refused_with_two_brokers_down_and_nothing_is_appended(cluster):
    cluster.create_topic("strict-isr", partitions=1, replication_factor=3, config={"min.insync.replicas": "2"})
    leader = cluster.describe_topic("strict-isr")[0].leader
    others = [b for b in cluster.broker_ids if b != leader]
    for broker_id in others:
        cluster.kill("broker", broker_id, restart=False)
    def leader_sees_isr_of_itself() -> bool:
        # The leader's own view (not only the controller's): it decides what to refuse.
        return any(e["topic"] == "strict-isr" and e["isr"] == [leader]
                   for e in ray.get(cluster.broker(leader).describe_partitions.remote(), timeout=10))
    wait_until(leader_sees_isr_of_itself, 60, "the leader to see an ISR of itself alone")
    end_before = cluster.describe_topic("strict-isr")[0].log_end_offset
    producer = cluster.producer({"acks": "all", "retries": "0"})
    with pytest.raises(KafkaError) as raised:
        producer.send("strict-isr", value=b"refused", partition=0).result(timeout=30)
    assert raised.value.name == "NOT_ENOUGH_REPLICAS"
    assert cluster.describe_topic("strict-isr")[0].log_end_offset == end_before
    for broker_id in others:
        cluster.restart_broker(broker_id)
