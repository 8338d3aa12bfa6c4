"""Stock Kafka clients (confluent-kafka, kafka-python, aiokafka, and kcat when installed) talk to a
real 3-broker raykafka cluster through its Kafka listeners: each produces with acks 0, 1 and all
and reads every record back at its acknowledged offset; three consumers of each library share six
partitions two by two and commit to the end; each admin client creates, describes and deletes a
topic."""
from __future__ import annotations

import shutil
import subprocess

import pytest

from orchestration.admin.wait import wait_until
from tests.support.kafka_clients import LIBRARIES, confluent_consume

pytestmark = pytest.mark.integration

RECORDS = 60


@pytest.fixture(scope="module")
def bootstrap(cluster):
    servers = cluster.bootstrap_servers
    assert servers.count(",") == 2, f"three brokers' listeners expected, got {servers!r}"
    return servers


@pytest.mark.parametrize("acks", ["0", "1", "all"])
@pytest.mark.parametrize("library", sorted(LIBRARIES))
def test_produce_and_consume_with_each_acks(cluster, bootstrap, library, acks):
    client = LIBRARIES[library]
    topic = f"wire-{library}-acks-{acks}"
    cluster.create_topic(topic, partitions=2, replication_factor=3)
    values = [f"{library}-{acks}-{i}".encode() for i in range(RECORDS)]
    acked = client["produce"](bootstrap, topic, values, client["acks"][acks])
    assert sorted(v for _, _, v in acked) == sorted(values)
    read = client["consume"](bootstrap, topic, [0, 1], RECORDS)
    assert sorted(v for _, _, v in read) == sorted(values), "every produced record is read back once"
    if acks != "0":  # acks=0 gets no offsets back
        assert {(p, o): v for p, o, v in acked} == {(p, o): v for p, o, v in read}


@pytest.mark.parametrize("library", sorted(LIBRARIES))
def test_a_group_of_three_splits_six_partitions_and_commits(cluster, bootstrap, library):
    client = LIBRARIES[library]
    topic = f"wire-{library}-group"
    cluster.create_topic(topic, partitions=6, replication_factor=2)
    acked = []
    for partition in range(6):  # records in every partition, so every member has something to commit
        acked += LIBRARIES["confluent-kafka"]["produce"](bootstrap, topic, [b"r%d-%d" % (partition, i) for i in range(20)],
                                                         "all", partition=partition)
    end_offsets = {p: 0 for p in range(6)}
    for partition, offset, _ in acked:
        end_offsets[partition] = max(end_offsets[partition], offset + 1)
    assignments, committed = client["group"](bootstrap, topic, f"group-{library}", end_offsets)
    assert sorted(p for a in assignments for p in a) == list(range(6)), assignments
    assert committed == end_offsets


@pytest.mark.parametrize("library", sorted(LIBRARIES))
def test_admin_client_creates_describes_and_deletes_a_topic(cluster, bootstrap, library):
    topic = f"wire-{library}-admin"
    described = LIBRARIES[library]["admin"](bootstrap, topic)
    assert described == {"partitions": 3, "replicas": [2, 2, 2], "min.insync.replicas": "2"}
    wait_until(lambda: topic not in cluster.topics(), 60, f"the controller to finish deleting {topic}")


def test_list_offsets_by_timestamp_agrees_between_confluent_kafka_and_the_python_api(cluster, bootstrap):
    from confluent_kafka import Consumer, Producer, TopicPartition
    topic = "wire-timestamps"
    cluster.create_topic(topic, partitions=1, replication_factor=3)
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": False})
    for index in range(10):  # one record per batch: timestamps 1000, 1100, ..., 1900
        producer.produce(topic, value=b"%d" % index, partition=0, timestamp=1000 + 100 * index)
        assert producer.flush(30) == 0
    reader = Consumer({"bootstrap.servers": bootstrap, "group.id": "timestamps"})
    try:
        answers = {t: reader.offsets_for_times([TopicPartition(topic, 0, t)], timeout=30)[0].offset
                   for t in (1000, 1050, 1900)}
        assert answers == {1000: 0, 1050: 1, 1900: 9}
    finally:
        reader.close()
    consumer = cluster.consumer()
    assert {t: consumer.offsets_for_times({(topic, 0): t})[(topic, 0)] for t in (1000, 1050, 1900, 5000)} == \
        {1000: 0, 1050: 1, 1900: 9, 5000: None}


@pytest.mark.parametrize("compression", ["gzip", "lz4"])
def test_offsets_for_times_answers_the_exact_record_inside_a_compressed_batch(cluster, bootstrap, compression):
    """librdkafka writes many records per compressed batch; its offsets_for_times gets the record
    itself (Kafka's time index and record scan), not the start of the batch that holds it."""
    import ray
    from confluent_kafka import Consumer, Producer, TopicPartition

    from actors.core.log.record_batch import parse_batches
    topic = f"wire-timestamps-{compression}"
    cluster.create_topic(topic, partitions=1, replication_factor=3)
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "compression.type": compression,
                         "linger.ms": 200, "batch.num.messages": 1000, "enable.idempotence": False})
    for index in range(3000):  # timestamps 1_000_000 + offset
        producer.produce(topic, value=b"record-%d" % index, partition=0, timestamp=1_000_000 + index)
    assert producer.flush(30) == 0
    records, _, _ = ray.get(cluster.broker(0).read_log.remote(topic, 0, 0, 8 << 20), timeout=60)
    batches = parse_batches(records, check_crc=False)
    targets = [header.base_offset + header.records_count // 2 for header in batches if header.records_count > 10]
    assert targets and all(header.attributes & 0x07 for header in batches), \
        f"compressed batches of many records expected, got {[h.records_count for h in batches]}"
    reader = Consumer({"bootstrap.servers": bootstrap, "group.id": f"timestamps-{compression}"})
    try:
        asked = [TopicPartition(topic, 0, 1_000_000 + offset) for offset in targets[:5]]
        answers = [reader.offsets_for_times([tp], timeout=30)[0] for tp in asked]
        assert [(a.error, a.offset) for a in answers] == [(None, offset) for offset in targets[:5]]
    finally:
        reader.close()


def test_an_idempotent_confluent_kafka_producer_gets_an_id_and_writes_each_record_once(cluster, bootstrap):
    """librdkafka's idempotent producer: InitProducerId is answered from the broker's producer-id
    block, every batch carries the id and its sequence, and every record is in the log once."""
    from confluent_kafka import Producer
    topic = "wire-idempotence"
    cluster.create_topic(topic, partitions=1, replication_factor=3)
    errors, acked = [], []
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 5,
                         "error_cb": errors.append})

    def delivered(error, message):
        (errors if error is not None else acked).append(error or (message.offset(), message.value()))
    values = [b"i%d" % i for i in range(500)]
    for value in values:
        producer.produce(topic, value=value, partition=0, on_delivery=delivered)
        producer.poll(0)
    assert producer.flush(60) == 0 and not errors, errors[:3]
    assert sorted(acked) == list(enumerate(values))
    stored = confluent_consume(bootstrap, topic, [0], len(values))
    assert [(offset, value) for _, offset, value in stored] == list(enumerate(values))


def test_librdkafka_sends_the_flexible_versions_raykafka_advertises(cluster, bootstrap):
    """librdkafka's protocol debug log names each request's version as it goes out: ApiVersions,
    InitProducerId and Produce go at flexible versions (KIP-482), Metadata at the highest both
    sides have (v9, whose all-topics form librdkafka writes with a byte too many, read as Kafka
    reads it: frames.py), and the records are stored."""
    import logging
    import re

    from confluent_kafka import Producer
    from kio.index import load_request_schema

    from actors.wire.versions import SUPPORTED_VERSIONS
    lines: list[str] = []

    class Capture(logging.Handler):
        def emit(self, record):
            lines.append(record.getMessage())
    logger = logging.getLogger("librdkafka-protocol")
    logger.setLevel(logging.DEBUG)
    logger.addHandler(Capture())
    topic = "wire-flexible-versions"
    cluster.create_topic(topic, partitions=1, replication_factor=1)
    producer = Producer({"bootstrap.servers": bootstrap, "debug": "protocol", "logger": logger,
                         "enable.idempotence": True})
    producer.produce(topic, value=b"flexible", partition=0)
    assert producer.flush(30) == 0
    sent = {name: int(version) for name, version in re.findall(r"Sent (\w+)Request \(v(\d+)", "\n".join(lines))}
    keys = {"ApiVersion": 18, "InitProducerId": 22, "Produce": 0}
    assert set(keys) | {"Metadata"} <= set(sent), sorted(sent)
    for name, key in keys.items():
        assert load_request_schema(key, sent[name]).__flexible__, (name, sent[name])
        assert sent[name] <= SUPPORTED_VERSIONS[key][1], (name, sent[name])
    assert sent["Metadata"] == SUPPORTED_VERSIONS[3][1]  # librdkafka 2.x has Metadata up to v12
    assert sent["Produce"] >= 9 and sent["InitProducerId"] >= 2
    assert [value for _, _, value in confluent_consume(bootstrap, topic, [0], 1)] == [b"flexible"]


def test_kcat_lists_metadata_produces_and_consumes(cluster, bootstrap):
    kcat = shutil.which("kcat") or shutil.which("kafkacat")
    if kcat is None:
        pytest.skip("kcat is not installed (Debian package kcat); the kcat check did not run")
    topic = "wire-kcat"
    cluster.create_topic(topic, partitions=1, replication_factor=3)
    listing = subprocess.run([kcat, "-b", bootstrap, "-L", "-t", topic], capture_output=True, text=True, timeout=60)
    assert listing.returncode == 0 and topic in listing.stdout, listing.stderr
    produced = subprocess.run([kcat, "-b", bootstrap, "-P", "-t", topic, "-p", "0"], input="a\nb\nc\n",
                              capture_output=True, text=True, timeout=60)
    assert produced.returncode == 0, produced.stderr
    consumed = subprocess.run([kcat, "-b", bootstrap, "-C", "-t", topic, "-p", "0", "-o", "beginning", "-c", "3",
                               "-e", "-f", "%o:%s\n"], capture_output=True, text=True, timeout=60)
    assert consumed.stdout.split() == ["0:a", "1:b", "2:c"], consumed.stderr


def test_the_spark_load_jobs_producer_can_be_confluent_kafka(cluster, bootstrap):
    """The load job's producer task with ``client: confluent-kafka`` (run here without Spark):
    every record acknowledged at a distinct offset, with the same per-record rows as the Python API's."""
    import uuid

    import ray

    from orchestration.spark import jobs
    from orchestration.spark.session import RayTarget
    topic = "wire-load-job"
    cluster.create_topic(topic, partitions=2, replication_factor=3)
    progress_name = jobs.progress_actor_name(uuid.uuid4().hex[:8])
    progress = jobs.JobProgress.options(name=progress_name, namespace=cluster.namespace).remote()
    try:
        task = jobs.ProducerTask(process="p0", topic=topic, records=300, duration_s=None, rate_per_s=0.0,
                                 message_size=100, key_distributor="KEY_ROUND_ROBIN", partitions=2,
                                 config={"acks": "all", "linger.ms": "5"}, client="confluent-kafka")
        rows, _ = jobs.split_results(jobs.run_producer(RayTarget.of(cluster), task, progress_name))
    finally:
        ray.kill(progress)
    assert len(rows) == 300 and {row[8] for row in rows} == {"ok"}, {row[8] for row in rows}
    assert len({(row[6], row[7]) for row in rows}) == 300 and {row[6] for row in rows} == {0, 1}
