"""Proves that every codec Kafka has (none, gzip, snappy, lz4, zstd) is built by the Python producer
and read by the consumer's readers (records, batches, Arrow), also from batches librdkafka built,
and that a leader stores a batch in its topic's ``compression.type`` (rebuilt when the codec differs,
as sent for Kafka's ``producer`` default), by running the real producer and consumer without Ray
against a real ReplicaManager core and reading the stored batch headers."""
from __future__ import annotations

import pytest

from actors.core.config import BROKER_DEFAULTS
from actors.core.errors import ErrorCode, KafkaProtocolError
from actors.core.log.compression import PRODUCER_CODECS
from actors.core.log.record_batch import COMPRESSION_CODEC_MASK, CRC_START_POSITION, parse_batches, stamp_batch
from actors.core.topic_configs import validate_topic_config
from actors.codecs.record_batches import BatchBuilder, read_records, with_producer_state
from orchestration.clients.arrow_records import record_batches_to_arrow
from orchestration.clients.fetched import batch_of, trim_batch
from orchestration.errors import KafkaError
from tests.support.core_driver import CoreDriver
from tests.support.librdkafka_batches import librdkafka_batches
from tests.unit.test_client_history import (  # noqa: F401 (close_producers: an autouse fixture)
    TOPIC, WAIT_S, close_producers, leading_broker, log_end_offset, make_consumer, make_producer,
)

CODECS = sorted(PRODUCER_CODECS, key=PRODUCER_CODECS.get)  # none, gzip, snappy, lz4, zstd
# Compressible values, as a user's JSON or log lines are: every codec makes them smaller.
VALUES = [b'{"user": "user-%d", "action": "click", "page": "/products/%d"}' % (i % 50, i % 20) for i in range(500)]


def stored_batches(driver: CoreDriver, partition: int = 0) -> bytes:
    log = driver.manager.partitions[(TOPIC, partition)].log
    return bytes(log.read(0, 1 << 30).records)


def codecs_of(buffer) -> list[int]:
    return [header.attributes & COMPRESSION_CODEC_MASK for header in parse_batches(buffer)]


def built_batch(values, codec: int, base_offset: int = 0) -> bytes:
    builder = BatchBuilder(batch_size=1 << 30, compression_type=codec)
    for index, value in enumerate(values):
        assert builder.try_append(b"k%d" % index, value, 1_700_000_000_000 + index, [("h", b"%d" % index)])
    buffer = bytearray(builder.build())
    stamp_batch(buffer, parse_batches(buffer)[0], base_offset=base_offset, partition_leader_epoch=3)
    return bytes(buffer)


# ------------------------------------------------------------------------------- the producer
@pytest.mark.parametrize("compression_type", CODECS)
def test_the_producer_builds_every_batch_with_its_compression_type_and_the_consumer_reads_it_back(
        compression_type):
    broker = leading_broker()
    producer = make_producer(broker, None, **{"compression.type": compression_type, "linger.ms": "60000"})
    futures = [producer.send(TOPIC, value=value, partition=0) for value in VALUES]
    producer.flush(timeout=WAIT_S)
    assert [future.result(timeout=WAIT_S).offset for future in futures] == list(range(len(VALUES)))
    stored = stored_batches(broker.driver)
    assert set(codecs_of(stored)) == {PRODUCER_CODECS[compression_type]}
    if compression_type != "none":
        assert len(stored) < sum(map(len, VALUES)) // 3, "compressible records take far fewer bytes"
    consumer = make_consumer(broker, None)
    consumer.assign([(TOPIC, 0)])
    read = []
    for _ in range(50):  # bounded
        read += consumer.poll(timeout_ms=10)
        if len(read) >= len(VALUES):
            break
    consumer.close()
    assert [r.value for r in read] == VALUES


def test_an_idempotent_producer_stamps_its_compressed_batches_and_the_leader_accepts_them():
    broker = leading_broker()
    producer = make_producer(broker, None, acks="all", **{"compression.type": "zstd", "enable.idempotence": "true"})
    futures = [producer.send(TOPIC, value=value, partition=0) for value in VALUES]
    producer.flush(timeout=WAIT_S)
    assert [future.result(timeout=WAIT_S).offset for future in futures] == list(range(len(VALUES)))
    headers = parse_batches(stored_batches(broker.driver))
    assert {h.attributes & COMPRESSION_CODEC_MASK for h in headers} == {4} and all(h.producer_id >= 0 for h in headers)


def test_an_unknown_compression_type_is_refused_naming_the_key():
    broker = leading_broker()
    with pytest.raises(KafkaError) as refused:
        make_producer(broker, None, **{"compression.type": "brotli"})
    assert refused.value.error_code == ErrorCode.INVALID_CONFIG and "compression.type" in str(refused.value)


# ------------------------------------------------------------------------------- the consumer
@pytest.mark.parametrize("compression_type", CODECS)
def test_the_consumer_reads_every_codec_aiokafka_builds_as_records_batches_and_arrow(compression_type):
    buffer = built_batch(VALUES[:50], PRODUCER_CODECS[compression_type], base_offset=100)
    assert codecs_of(buffer) == [PRODUCER_CODECS[compression_type]]
    records = read_records(TOPIC, 0, buffer, 120)
    assert [(r.offset, r.key, r.value, r.headers, r.leader_epoch) for r in records] == [
        (100 + i, b"k%d" % i, VALUES[i], (("h", b"%d" % i),), 3) for i in range(20, 50)]
    table = record_batches_to_arrow([batch_of(TOPIC, 0, memoryview(buffer))])
    assert table.column("value").to_pylist() == VALUES[:50]
    trimmed = trim_batch(memoryview(buffer), 140)  # what poll_batches hands out after a seek into it
    assert [(r.offset, r.value) for r in read_records(TOPIC, 0, trimmed, 0)] == [
        (100 + i, VALUES[i]) for i in range(40, 50)]


@pytest.mark.parametrize("compression_type", CODECS)
def test_the_consumer_reads_every_codec_librdkafka_builds(compression_type):
    buffer = librdkafka_batches(VALUES, compression_type)
    # Every batch in the producer's codec, except that librdkafka sends a batch uncompressed when
    # compressing would not make it smaller (a small last batch, where a busy machine's timing cut
    # the records into batches differently): the codec must be there, and nothing but it or none.
    codec = PRODUCER_CODECS[compression_type]
    assert codec in codecs_of(buffer) and set(codecs_of(buffer)) <= {codec, 0}, codecs_of(buffer)
    records = read_records(TOPIC, 0, buffer, 0)
    assert [(r.offset, r.key, r.value, r.headers) for r in records] == [
        (i, b"k%d" % (i % 7), value, (("h", b"%d" % i),)) for i, value in enumerate(VALUES)]


# ------------------------------------------------------------------------- the leader's rule
def become_leader(config: dict | None) -> CoreDriver:
    driver = CoreDriver()
    driver.become(TOPIC, 0, leader=0, config=config)
    return driver


def produced(driver: CoreDriver, batch: bytes):
    response = driver.answers[driver.produce(TOPIC, 0, batch)]
    return response.responses[0].partition_responses[0]


@pytest.mark.parametrize("topic_type, sent, stored", [
    ("gzip", "none", 1),          # the slow path: decompressed (here: read) and built again
    ("gzip", "zstd", 1),
    ("uncompressed", "lz4", 0),
    ("snappy", "snappy", 2),      # the fast path: the codec is the topic's already
    ("producer", "snappy", 2),    # Kafka's default: as the producer sent it
    ("producer", "none", 0),
])
def test_the_leader_stores_a_batch_in_its_topics_compression_type(topic_type, sent, stored):
    driver = become_leader({"compression.type": topic_type})
    first = produced(driver, built_batch(VALUES[:100], PRODUCER_CODECS[sent]))
    second = produced(driver, built_batch(VALUES[100:150], PRODUCER_CODECS[sent]))
    assert (first.error_code, first.base_offset, second.error_code, second.base_offset) == (0, 0, 0, 100)
    buffer = stored_batches(driver)
    assert codecs_of(buffer) == [stored, stored]
    assert [(r.offset, r.key, r.value, r.headers, r.timestamp) for r in read_records(TOPIC, 0, buffer, 0)] == [
        (i, b"k%d" % (i % 100), VALUES[i], (("h", b"%d" % (i % 100)),), 1_700_000_000_000 + i % 100)
        for i in range(150)]


def test_the_leader_does_not_touch_a_batch_of_its_topics_codec():
    driver = become_leader({"compression.type": "gzip"})
    batch = built_batch(VALUES, PRODUCER_CODECS["gzip"])
    assert produced(driver, batch).error_code == ErrorCode.NONE
    assert stored_batches(driver)[CRC_START_POSITION:] == batch[CRC_START_POSITION:], "stored as sent"


def test_a_rebuilt_batch_keeps_its_producer_id_epoch_and_sequence():
    driver = become_leader({"compression.type": "lz4"})
    batch = with_producer_state(built_batch(VALUES[:10], 0), producer_id=7, producer_epoch=2, base_sequence=0)
    assert produced(driver, batch).error_code == ErrorCode.NONE
    (header,) = parse_batches(stored_batches(driver))
    assert (header.attributes & COMPRESSION_CODEC_MASK, header.producer_id, header.producer_epoch, header.base_sequence,
            header.records_count) == (3, 7, 2, 0, 10)
    retried = produced(driver, batch)  # the same batch again: a duplicate, answered with its offsets
    assert (retried.error_code, retried.base_offset, log_end_offset_of(driver)) == (0, 0, 10)


def log_end_offset_of(driver: CoreDriver) -> int:
    return driver.manager.partitions[(TOPIC, 0)].log.log_end_offset


def test_a_batch_that_does_not_decompress_is_corrupt_message_and_the_log_is_unchanged():
    driver = become_leader({"compression.type": "zstd"})
    buffer = bytearray(built_batch(VALUES, PRODUCER_CODECS["gzip"]))
    buffer[70:90] = b"\xff" * 20  # inside the gzip stream; the CRC is made again so only the data is bad
    batch = with_producer_state(buffer, producer_id=-1, producer_epoch=-1, base_sequence=-1)
    answer = produced(driver, batch)
    assert answer.error_code == ErrorCode.CORRUPT_MESSAGE, answer
    assert log_end_offset_of(driver) == 0


def test_compression_type_is_a_topic_config_with_kafkas_values_and_the_brokers_default_is_producer():
    assert BROKER_DEFAULTS["compression.type"] == "producer"
    for value in ("uncompressed", "gzip", "snappy", "lz4", "zstd", "producer"):
        validate_topic_config({"compression.type": value})
    for value in ("none", "brotli", "GZIP "):
        with pytest.raises(KafkaProtocolError) as refused:
            validate_topic_config({"compression.type": value})
        assert refused.value.error_code == ErrorCode.INVALID_CONFIG and "compression.type" in str(refused.value)


def test_a_broker_level_compression_type_is_every_topics_default():
    driver = CoreDriver(config={"compression.type": "gzip"})
    driver.become(TOPIC, 0, leader=0)
    assert produced(driver, built_batch(VALUES, 0)).error_code == ErrorCode.NONE
    assert codecs_of(stored_batches(driver)) == [1]


def test_a_broker_with_an_unknown_compression_type_does_not_start_and_names_the_key():
    with pytest.raises(KafkaProtocolError) as refused:
        CoreDriver(config={"compression.type": "brotli"})
    assert refused.value.error_code == ErrorCode.INVALID_CONFIG and "compression.type" in str(refused.value)
