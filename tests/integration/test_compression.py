"""On a real 3-broker cluster, compressed batches take fewer bytes on disk and every record still
reads back: the Python producer's gzip batches, a gzip topic's recompression of uncompressed ones,
and confluent-kafka's snappy, lz4 and zstd batches read by the Python consumer; checked by reading
the brokers' segment files and every record back."""
from __future__ import annotations

from pathlib import Path

import pytest

from actors.core.log.compression import PRODUCER_CODECS
from actors.core.log.record_batch import COMPRESSION_CODEC_MASK
from actors.core.log.record_batch import scan_valid_prefix
from tests.support.kafka_clients import CONFLUENT_PRODUCER
from tests.support.reading import read_to_high_watermark

pytestmark = pytest.mark.integration

RECORDS = 5000
# Compressible, as a user's JSON events are.
VALUES = [b'{"user": "user-%d", "action": "click", "page": "/products/%d"}' % (i % 50, i % 20)
          for i in range(RECORDS)]


def segment_files(cluster, topic: str) -> list[Path]:
    """Every segment file of ``topic`` on every broker (replication factor 1: one copy)."""
    return sorted(path for broker_id in cluster.broker_ids
                  for path in Path(cluster.broker_log_dir(broker_id)).glob(f"{topic}-*/*.log"))


def stored(cluster, topic: str) -> tuple[int, set[int]]:
    """(bytes on disk, the codecs of the stored batches) of ``topic``."""
    size, codecs = 0, set()
    for path in segment_files(cluster, topic):
        data = path.read_bytes()
        headers, _, _ = scan_valid_prefix(data)
        size += sum(header.size_in_bytes for header in headers)
        codecs |= {header.attributes & COMPRESSION_CODEC_MASK for header in headers}
    return size, codecs


def python_produce(cluster, topic: str, config: dict) -> None:
    producer = cluster.producer({"acks": "all", "linger.ms": "5", **config})
    try:
        futures = [producer.send(topic, value=value, partition=0) for value in VALUES]
        producer.flush(timeout=120)
        assert sorted(future.result(timeout=30).offset for future in futures) == list(range(RECORDS))
    finally:
        producer.close()


def values_read_back(cluster, topic: str) -> list[bytes]:
    return [record.value for _, record in sorted(read_to_high_watermark(cluster, topic, 1).items())]


def test_the_python_producer_with_gzip_takes_clearly_fewer_bytes_on_disk(cluster):
    for topic, compression_type in (("python-none", "none"), ("python-gzip", "gzip")):
        cluster.create_topic(topic, partitions=1, replication_factor=1)
        python_produce(cluster, topic, {"compression.type": compression_type})
        assert values_read_back(cluster, topic) == VALUES
    plain_bytes, plain_codecs = stored(cluster, "python-none")
    gzip_bytes, gzip_codecs = stored(cluster, "python-gzip")
    assert (plain_codecs, gzip_codecs) == ({0}, {1})
    assert gzip_bytes * 3 < plain_bytes, f"gzip {gzip_bytes} bytes, uncompressed {plain_bytes}"


def test_a_gzip_topic_stores_an_uncompressed_producers_batches_as_gzip(cluster):
    topic = "topic-gzip"
    cluster.create_topic(topic, partitions=1, replication_factor=1, config={"compression.type": "gzip"})
    python_produce(cluster, topic, {"compression.type": "none"})
    assert values_read_back(cluster, topic) == VALUES
    size, codecs = stored(cluster, topic)
    assert codecs == {1} and size * 3 < sum(map(len, VALUES)), (size, codecs)


@pytest.mark.parametrize("compression_type", ["snappy", "lz4", "zstd"])
def test_confluent_kafkas_compressed_batches_are_kept_and_read_by_the_python_consumer(cluster, compression_type):
    from confluent_kafka import Producer
    topic = f"confluent-{compression_type}"
    cluster.create_topic(topic, partitions=1, replication_factor=1)
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all",
                         "compression.type": compression_type, **CONFLUENT_PRODUCER})
    for value in VALUES:
        producer.produce(topic, value=value, partition=0)
        producer.poll(0)
    assert producer.flush(120) == 0, "every record acknowledged within 120 s"
    assert values_read_back(cluster, topic) == VALUES
    size, codecs = stored(cluster, topic)
    assert codecs == {PRODUCER_CODECS[compression_type]}, "stored as the producer sent it (compression.type=producer)"
    assert size * 3 < sum(map(len, VALUES)), size
