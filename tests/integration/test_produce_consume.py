"""A real 3-broker cluster on a local Ray keeps every acknowledged record at its acknowledged
offset, also across a ray.kill of a broker that Ray restarts, and answers bad input with Kafka's
error codes while staying up."""
from __future__ import annotations

import pytest
import ray

from actors.core.errors import ErrorCode
from actors.core.messages.produce import PartitionProduceData, ProduceRequest, TopicProduceData
from orchestration import KafkaError
from orchestration.admin.wait import wait_until
from orchestration.clients.partitioner import partition_for_key
from tests.support.core_driver import make_batch
from tests.support.reading import read_to_high_watermark

pytestmark = pytest.mark.integration

RECORDS = 10_000
# Generous: a restart on a busy 2-core machine takes seconds, and the wait ends when it is done.
RESTART_TIMEOUT_S = 120


def assert_read_back(cluster, topic: str, partitions: int, acknowledged: dict) -> None:
    """Every acknowledged (key, value) is read back at its (partition, offset); the read goes up to
    each partition's high watermark, so a duplicate a retried send wrote cannot end it early."""
    seen = {k: (r.key, r.value) for k, r in read_to_high_watermark(cluster, topic, partitions).items()}
    lost = {k: v for k, v in acknowledged.items() if seen.get(k) != v}
    assert not lost, f"{len(lost)} acknowledged records lost or changed, e.g. {sorted(lost.items())[:3]}"


def test_ten_thousand_keyed_records_read_back_at_their_offsets_also_after_a_broker_restart(cluster):
    cluster.create_topic("keyed", partitions=3, replication_factor=1)
    producer = cluster.producer({"acks": "1", "linger.ms": "5"})
    sends = []
    for i in range(RECORDS):
        key, value = f"key-{i % 997}".encode(), f"value-{i}".encode()
        sends.append((key, value, producer.send("keyed", key=key, value=value)))
    producer.flush(timeout=120)
    acknowledged = {}
    for key, value, future in sends:
        metadata = future.result(timeout=10)
        assert metadata.partition == partition_for_key(key, 3), "Kafka's murmur2 partitioning"
        acknowledged[(metadata.partition, metadata.offset)] = (key, value)
    assert len(acknowledged) == RECORDS

    assert_read_back(cluster, "keyed", 3, acknowledged)

    victim = cluster.describe_topic("keyed")[0].leader
    before = ray.get(cluster.broker(victim).ping.remote())
    cluster.kill("broker", victim, restart=True)

    def restarted():
        after = ray.get(cluster.broker(victim).ping.remote(), timeout=5)
        return after if after["incarnation_id"] != before["incarnation_id"] else None

    after = wait_until(restarted, RESTART_TIMEOUT_S, f"Ray to restart broker {victim} as a new incarnation")
    assert after["pid"] != before["pid"], "Ray restarted the broker in a new process"

    def led_again_at_a_new_epoch():
        # Partition 0's only replica is the victim: it must lead again, at a later leader epoch,
        # with its log recovered (the controller names the leader before the broker reports it).
        description = cluster.describe_topic("keyed")[0]
        led = description.leader == victim and description.leader_epoch >= 1 and description.log_end_offset >= 0
        return description if led else None

    description = wait_until(led_again_at_a_new_epoch, RESTART_TIMEOUT_S,
                             f"broker {victim} to lead partition 0 of 'keyed' again at a new leader epoch")

    assert_read_back(cluster, "keyed", 3, acknowledged)
    # The restarted broker leads again, at a new leader epoch, and appends after its old data.
    assert description.leader_epoch >= 1 and description.log_end_offset == description.high_watermark
    more = producer.send("keyed", key=b"after", value=b"restart", partition=0).result(timeout=60)
    assert more.offset == description.log_end_offset


def test_bad_input_gets_kafkas_error_codes_and_the_broker_keeps_serving(cluster):
    cluster.create_topic("strict", partitions=1, replication_factor=1, config={"max.message.bytes": "2000"})
    producer = cluster.producer({"acks": "1"})
    assert producer.send("strict", value=b"first").result(timeout=30).offset == 0

    cases = {
        "UNKNOWN_TOPIC_OR_PARTITION": lambda: cluster.producer({"max.block.ms": "500"}).send(
            "no-such-topic", value=b"x").result(timeout=30),
        "MESSAGE_TOO_LARGE": lambda: producer.send("strict", value=b"x" * 5000).result(timeout=30),
        "INVALID_REQUIRED_ACKS": lambda: cluster.producer({"acks": "2"}).send("strict", value=b"x").result(timeout=30),
        "INVALID_TOPIC_EXCEPTION": lambda: cluster.create_topic("bad/name"),
        "INVALID_PARTITIONS": lambda: cluster.create_topic("zero", partitions=0),
        "TOPIC_ALREADY_EXISTS": lambda: cluster.create_topic("strict"),
    }
    for name, action in cases.items():
        with pytest.raises(KafkaError) as raised:
            action()
        assert raised.value.name == name, f"{name}: got {raised.value}"

    leader = cluster.describe_topic("strict")[0].leader
    corrupt = bytearray(make_batch([b"corrupt me"]))
    corrupt[-1] ^= 0xFF
    response = ray.get(cluster.broker(leader).handle.remote(ProduceRequest(
        acks=1, timeout_ms=1000, topic_data=(TopicProduceData(name="strict", partition_data=(
            PartitionProduceData(index=0, records=bytes(corrupt)),)),))))
    assert response.responses[0].partition_responses[0].error_code == ErrorCode.CORRUPT_MESSAGE

    description = cluster.describe_topic("strict")[0]
    assert description.log_end_offset == 1, "no refused request appended anything"
    assert producer.send("strict", value=b"second").result(timeout=30).offset == 1

    # Many small records in one batch over max.message.bytes: the producer splits the refused
    # batch, as Kafka's does, and every record is written once, in send order.
    batching = cluster.producer({"acks": "all", "linger.ms": "60000"})  # one batch, sent by flush
    values = {(0, 2 + i): (None, b"small-%03d-" % i + b"x" * 90) for i in range(60)}  # about 6 KiB
    sent = [batching.send("strict", value=value, partition=0) for _, value in values.values()]
    batching.flush(timeout=60)
    assert [future.result(timeout=0).offset for future in sent] == list(range(2, 62))
    assert_read_back(cluster, "strict", 1, values)


def test_consumer_outside_the_log_resets_or_raises_per_auto_offset_reset(cluster):
    cluster.create_topic("reset", partitions=1, replication_factor=1)
    producer = cluster.producer({"acks": "1"})
    for i in range(5):
        producer.send("reset", value=f"v{i}".encode())
    producer.flush(timeout=30)

    strict = cluster.consumer({"auto.offset.reset": "none"})
    strict.assign([("reset", 0)])
    strict.seek(("reset", 0), 42)
    with pytest.raises(KafkaError) as raised:
        for _ in range(20):
            strict.poll(timeout_ms=200)
    assert raised.value.name == "OFFSET_OUT_OF_RANGE"

    earliest = cluster.consumer({"auto.offset.reset": "earliest"})
    earliest.assign([("reset", 0)])
    earliest.seek(("reset", 0), 42)
    values = []
    for _ in range(20):
        values += [r.value for r in earliest.poll(timeout_ms=200)]
        if len(values) == 5:
            break
    assert values == [f"v{i}".encode() for i in range(5)]
