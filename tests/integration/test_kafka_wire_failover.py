"""A confluent-kafka producer with acks=all keeps writing through its Kafka connections while the
partition leader's broker actor is killed (Ray restarts it, and its listener binds the same port
again); every record the producer saw acknowledged is read back at its acknowledged offset."""
from __future__ import annotations

import threading
import time

import pytest
import ray

from orchestration.admin.wait import wait_until
from tests.support.clusters import running_cluster
from tests.support.kafka_clients import CONFLUENT_PRODUCER, confluent_consume

pytestmark = pytest.mark.integration

CONFIG = {"replica.lag.time.max.ms": "3000", "broker.session.timeout.ms": "6000",
          "broker.heartbeat.interval.ms": "500", "replica.fetch.wait.max.ms": "100",
          "replica.fetch.backoff.ms": "200", "auto.leader.rebalance.enable": "false"}
TOPIC = "wire-failover"
RECORDS_BEFORE_KILL = 300
RECORDS_TOTAL = 1500


@pytest.fixture(scope="module")
def cluster(ray_session, tmp_path_factory):
    with running_cluster(tmp_path_factory, CONFIG) as started:
        yield started


def leader_of(cluster, topic: str) -> int:
    (partition,) = cluster.describe_topic(topic)
    return partition.leader


def test_acks_all_records_survive_a_leader_kill_at_their_offsets(cluster):
    from confluent_kafka import Producer
    cluster.create_topic(TOPIC, partitions=1, replication_factor=3, config={"min.insync.replicas": "2"})
    bootstrap = cluster.bootstrap_servers
    old_leader = leader_of(cluster, TOPIC)
    (before,) = cluster.describe_topic(TOPIC)
    acked: dict[int, bytes] = {}
    failed: list[str] = []
    lock = threading.Lock()

    def delivered(error, message):
        with lock:
            if error is None:
                acked[message.offset()] = message.value()
            else:
                failed.append(str(error))

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "message.timeout.ms": 120000,
                         "retry.backoff.ms": 200, **CONFLUENT_PRODUCER})
    for i in range(RECORDS_TOTAL):
        producer.produce(TOPIC, value=b"record-%d" % i, on_delivery=delivered)
        producer.poll(0)
        if i == RECORDS_BEFORE_KILL:
            producer.flush(60)
            cluster.kill("broker", old_leader)  # Ray restarts it from its log directory
        time.sleep(0.002)
    assert producer.flush(150) == 0, "every record is acknowledged or failed within message.timeout.ms"
    assert len(acked) > RECORDS_BEFORE_KILL, f"acknowledged {len(acked)}, failures {failed[:3]}"
    wait_until(lambda: ray.get(cluster.broker(old_leader).describe_broker.remote(), timeout=10)["state"] == "RUNNING",
               60, f"broker {old_leader} to be back")
    assert set(cluster.bootstrap_servers.split(",")) == set(bootstrap.split(",")), \
        "the restarted broker listens on the port it had"
    (after,) = cluster.describe_topic(TOPIC)
    assert after.leader_epoch > before.leader_epoch, "the kill moved leadership while the producer ran"
    end = max(acked) + 1
    read = {offset: value for _, offset, value in confluent_consume(cluster.bootstrap_servers, TOPIC, [0], end, 120)
            if offset < end}
    lost = {offset: value for offset, value in acked.items() if read.get(offset) != value}
    assert not lost, f"{len(lost)} acknowledged records not at their offsets, e.g. {sorted(lost.items())[:3]}"
