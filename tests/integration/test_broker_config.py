"""A real one-broker cluster started with Kafka's broker keys obeys them: log.segment.bytes rolls a
topic's segments on disk at that size, message.max.bytes refuses a larger record, and a stock
producer writing to a topic nobody created gets it auto-created with num.partitions."""
from __future__ import annotations

from pathlib import Path

import pytest

from actors.core.errors import ErrorCode
from orchestration.errors import KafkaError
from tests.support.clusters import running_cluster
from tests.support.kafka_clients import confluent_produce

pytestmark = pytest.mark.integration

SEGMENT_BYTES = 4096
MESSAGE_MAX_BYTES = 3000
CONFIG = {"log.segment.bytes": str(SEGMENT_BYTES), "message.max.bytes": str(MESSAGE_MAX_BYTES),
          "num.partitions": "2", "offsets.topic.num.partitions": "1", "group.initial.rebalance.delay.ms": "0"}


@pytest.fixture(scope="module")
def cluster(ray_session, tmp_path_factory):
    with running_cluster(tmp_path_factory, config=CONFIG, brokers=1) as started:
        yield started


def test_log_segment_bytes_rolls_segments_on_disk_at_that_size(cluster):
    cluster.create_topic("segments", partitions=1, replication_factor=1)
    producer = cluster.producer({"acks": "all", "linger.ms": "0"})
    try:
        for i in range(40):  # one batch per send: each waits for the one before
            producer.send("segments", value=b"%03d" % i + b"x" * 500, partition=0).result(timeout=30)
    finally:
        producer.close()
    segments = sorted(Path(cluster.broker_log_dir(0), "segments-0").glob("*.log"))
    sizes = [path.stat().st_size for path in segments]
    assert len(segments) >= 5, f"about 20 KB in {SEGMENT_BYTES}-byte segments, got sizes {sizes}"
    assert max(sizes) <= SEGMENT_BYTES, sizes
    described = cluster.describe_topic_config("segments")
    assert described["segment.bytes"] == {"value": str(SEGMENT_BYTES), "source": "STATIC_BROKER_CONFIG",
                                          "synonym": "log.segment.bytes"}


def test_message_max_bytes_refuses_a_larger_record(cluster):
    cluster.create_topic("small", partitions=1, replication_factor=1)
    producer = cluster.producer({"acks": "all"})
    try:
        assert producer.send("small", value=b"x" * 100, partition=0).result(timeout=30).offset == 0
        with pytest.raises(KafkaError) as raised:
            producer.send("small", value=b"x" * (MESSAGE_MAX_BYTES + 100), partition=0).result(timeout=30)
    finally:
        producer.close()
    assert raised.value.error_code == ErrorCode.MESSAGE_TOO_LARGE


def test_a_stock_producer_auto_creates_an_unknown_topic_with_num_partitions(cluster):
    acked = confluent_produce(cluster.bootstrap_servers, "made-by-metadata", [b"a", b"b", b"c"], "all")
    assert sorted(value for _, _, value in acked) == [b"a", b"b", b"c"]
    assert len(cluster.describe_topic("made-by-metadata")) == 2
