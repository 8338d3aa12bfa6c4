"""The log start offset on a real 3-broker cluster through confluent-kafka: the low watermark rises
under retention.ms with small segments, AdminClient.delete_records moves it on every replica (and
raykafka's own admin client does too), and a consumer positioned below it resets per
auto.offset.reset; each wait polls a condition with a bound."""
from __future__ import annotations

import uuid

import pytest
import ray

from orchestration.admin.wait import wait_until
from tests.support.clusters import running_cluster

pytestmark = pytest.mark.integration

# The retention check runs every half second here (Kafka's default is five minutes).
BROKER_CONFIG = {"log.retention.check.interval.ms": "500"}
WAIT_S = 60


@pytest.fixture(scope="module")
def cluster(ray_session, tmp_path_factory):
    with running_cluster(tmp_path_factory, config=BROKER_CONFIG) as started:
        yield started


def _produce(servers: str, topic: str, count: int) -> None:
    from confluent_kafka import Producer
    producer = Producer({"bootstrap.servers": servers, "acks": "all", "linger.ms": 0})
    for index in range(count):
        producer.produce(topic, value=b"%04d" % index + b"x" * 100)
        producer.flush(30)  # one batch per record: many small segments
    assert producer.flush(30) == 0


def _watermarks(servers: str, topic: str) -> tuple[int, int]:
    from confluent_kafka import Consumer, TopicPartition
    consumer = Consumer({"bootstrap.servers": servers, "group.id": f"w-{uuid.uuid4().hex[:6]}"})
    try:
        return consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
    finally:
        consumer.close()


def _log_start_offsets(cluster, topic: str) -> dict[int, int]:
    """Each replica's log start offset as its broker sees it."""
    starts = {}
    for broker_id in cluster.broker_ids:
        for entry in ray.get(cluster.broker(broker_id).describe_partitions.remote(), timeout=30):
            if entry["topic"] == topic:
                starts[broker_id] = entry["log_start_offset"]
    return starts


def test_the_low_watermark_rises_under_retention_ms(cluster):
    servers = cluster.bootstrap_servers
    cluster.create_topic("retained", partitions=1, replication_factor=3,
                         config={"segment.bytes": "1024", "retention.ms": "2000"})
    _produce(servers, "retained", 40)  # about 7 segments
    wait_until(lambda: _watermarks(servers, "retained")[0] > 0, WAIT_S,
               "retention.ms to delete the old segments and move the low watermark")
    low, high = _watermarks(servers, "retained")
    assert 0 < low < high == 40, "the active segment stays"
    wait_until(lambda: all(start > 0 for start in _log_start_offsets(cluster, "retained").values()), WAIT_S,
               "every replica to delete its old segments")


def test_delete_records_moves_every_replica_and_a_consumer_below_the_start_resets(cluster):
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient
    servers = cluster.bootstrap_servers
    cluster.create_topic("purged", partitions=1, replication_factor=3, config={"segment.bytes": "1024"})
    _produce(servers, "purged", 20)
    admin = AdminClient({"bootstrap.servers": servers})
    deleted = admin.delete_records([TopicPartition("purged", 0, 12)], operation_timeout=30)
    assert next(iter(deleted.values())).result(60).low_watermark == 12
    assert _log_start_offsets(cluster, "purged") == {0: 12, 1: 12, 2: 12}, "answered once every ISR member moved"
    assert _watermarks(servers, "purged") == (12, 20)
    assert cluster.delete_records({("purged", 0): 15}) == {("purged", 0): 15}

    first_offsets = {}
    producer = Producer({"bootstrap.servers": servers, "acks": "all"})
    for reset in ("earliest", "latest"):
        consumer = Consumer({"bootstrap.servers": servers, "group.id": f"r-{uuid.uuid4().hex[:6]}",
                             "auto.offset.reset": reset, "enable.auto.commit": False})
        try:
            consumer.assign([TopicPartition("purged", 0, 3)])  # below the log start offset
            message = None

            def polled() -> bool:
                nonlocal message
                if reset == "latest":  # records keep coming, so that the reset to the end meets one
                    producer.produce("purged", value=b"late")
                    producer.flush(30)
                message = consumer.poll(1)
                return message is not None and message.error() is None
            wait_until(polled, WAIT_S, f"a record after the auto.offset.reset={reset} reset")
            first_offsets[reset] = message.offset()
        finally:
            consumer.close()
    assert first_offsets["earliest"] == 15, "reset to the log start offset"
    assert first_offsets["latest"] >= 20, "reset to the log end, past every record there before"
