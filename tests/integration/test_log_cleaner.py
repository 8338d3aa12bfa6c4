"""Log compaction on a real 3-broker cluster through confluent-kafka: each broker's log cleaner actor
compacts a topic written with many values per key down to the latest value per key (tombstoned keys
go after delete.retention.ms), a cleaner killed in the middle of a round leaves a whole log and the
one its broker starts finishes the job, a keyless record on a compacted topic is refused and changes
nothing, and a coordinator failover after __consumer_offsets was compacted returns every group's
committed offsets; small segments, a small min.cleanable.dirty.ratio and a short backoff make it
quick, and every wait polls a condition with a bound."""
from __future__ import annotations

import uuid

import pytest
import ray

from actors.codecs.record_batches import KafkaRecordCodec
from orchestration.admin.wait import wait_until
from tests.support.clusters import running_cluster

pytestmark = pytest.mark.integration

BROKER_CONFIG = {
    "log.cleaner.backoff.ms": "200",
    # Slow enough that a round over the larger topic below lasts seconds: a kill then lands in one.
    "log.cleaner.io.max.bytes.per.second": "100000",
    "log.cleaner.min.cleanable.ratio": "0.01",  # __consumer_offsets takes the broker's default
    "offsets.topic.num.partitions": "1",
    "offsets.topic.segment.bytes": "4096",
}
COMPACTED = {"cleanup.policy": "compact", "segment.bytes": "2048", "min.cleanable.dirty.ratio": "0.01",
             "delete.retention.ms": "1000"}
WAIT_S = 90


@pytest.fixture(scope="module")
def cluster(ray_session, tmp_path_factory):
    with running_cluster(tmp_path_factory, config=BROKER_CONFIG) as started:
        yield started


def _producer(servers: str):
    from confluent_kafka import Producer
    return Producer({"bootstrap.servers": servers, "acks": "all", "linger.ms": 0})


def _write(producer, topic: str, pairs, *, batch: int = 10) -> None:
    """``pairs`` of (key, value) in order, a few records a batch (so, many small segments)."""
    for index, (key, value) in enumerate(pairs):
        producer.produce(topic, key=key, value=value)
        if index % batch == batch - 1:
            producer.flush(30)
    assert producer.flush(30) == 0


def _read_all(servers: str, topic: str) -> list[tuple[int, bytes, bytes | None]]:
    """(offset, key, value) of every record from the start to the high watermark, as a consumer reads."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition
    consumer = Consumer({"bootstrap.servers": servers, "group.id": f"r-{uuid.uuid4().hex[:6]}",
                         "enable.auto.commit": False, "enable.partition.eof": True})
    try:
        consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        records = []

        def at_end() -> bool:
            # Everything the consumer has in hand at each poll, not one record per poll: the wait
            # sleeps between polls, and one record per sleep reads 20 records a second.
            for message in consumer.consume(num_messages=500, timeout=1):
                if message.error() is not None:
                    if message.error().code() == KafkaError._PARTITION_EOF:
                        return True
                    continue
                records.append((message.offset(), message.key(), message.value()))
            return False
        wait_until(at_end, WAIT_S, f"a read of {topic} to its end")
        return records
    finally:
        consumer.close()


def _values(key_count: int, rounds: int, size: int = 50):
    return [(b"k%02d" % key, (b"k%02d-%04d" % (key, round_)).ljust(size, b"."))
            for round_ in range(rounds) for key in range(key_count)]


def _cleaner(cluster, broker_id: int) -> dict:
    return ray.get(cluster.broker(broker_id).log_cleaner.remote(), timeout=30)


def _only_latest(records, written, gone=()) -> bool:
    """True when ``records`` hold each written key once, with its latest value, and none of
    ``gone``; else raises, saying what was read (the wait's timeout message shows the last)."""
    latest = dict(written)
    keyed = [(key, value) for _, key, value in records if key in latest]
    if sorted(key for key, _ in keyed) == sorted(set(latest) - set(gone)) and all(
            value == latest[key] for key, value in keyed):
        return True
    raise AssertionError(f"{len(keyed)} records of the {len(written)} written to {len(latest)} keys read, "
                         f"{sum(1 for key, _ in keyed if key in gone)} of them of tombstoned keys")


def test_a_compacted_topic_keeps_the_latest_value_per_key_and_drops_tombstones(cluster):
    servers = cluster.bootstrap_servers
    cluster.create_topic("compacted", partitions=1, replication_factor=3, config=COMPACTED)
    producer = _producer(servers)
    written = _values(10, 30)
    _write(producer, "compacted", written)
    _write(producer, "compacted", [(b"k00", None), (b"k01", None)])  # tombstones
    fillers = iter(range(1_000_000))

    def compacted() -> bool:
        # New records roll the segments holding the last values out of the active one, and move the
        # cleaner's delete horizon past the tombstones.
        _write(producer, "compacted", [(b"filler-%d" % next(fillers), b"x" * 50) for _ in range(20)])
        return _only_latest(_read_all(servers, "compacted"), written, gone=(b"k00", b"k01"))
    wait_until(compacted, WAIT_S, "the log cleaners to leave one value per key and drop the tombstoned keys")
    assert all(_cleaner(cluster, broker_id)["started"] == 1 for broker_id in cluster.broker_ids)


def test_a_keyless_record_on_a_compacted_topic_is_refused_and_changes_nothing(cluster):
    from confluent_kafka import KafkaError
    servers = cluster.bootstrap_servers
    cluster.create_topic("keyed", partitions=1, replication_factor=3, config=COMPACTED)
    producer = _producer(servers)
    _write(producer, "keyed", [(b"a", b"1"), (b"b", b"2")])
    before = _read_all(servers, "keyed")
    errors = []
    producer.produce("keyed", value=b"no key", on_delivery=lambda error, message: errors.append(error))
    producer.flush(30)
    assert [error.code() for error in errors] == [KafkaError.INVALID_RECORD]
    assert _read_all(servers, "keyed") == before == [(0, b"a", b"1"), (1, b"b", b"2")]


# A fault story of about a minute: `make chaos` runs it (CI runs both), keeping `make test` near 25 minutes.
@pytest.mark.chaos
def test_a_cleaner_killed_mid_round_leaves_a_whole_log_and_its_successor_finishes(cluster):
    servers = cluster.bootstrap_servers
    cluster.create_topic("killed", partitions=1, replication_factor=3,
                         config={**COMPACTED, "segment.bytes": "4096"})
    producer = _producer(servers)
    written = _values(20, 100, size=100)  # about 220 KB: a round takes seconds at the throttle
    _write(producer, "killed", written, batch=20)
    victim = 0
    wait_until(lambda: "killed" in ray.get(_cleaner(cluster, victim)["actor"].describe.remote(), timeout=30)["phase"],
               WAIT_S, f"broker {victim}'s log cleaner to be cleaning the topic")
    cluster.kill("log-cleaner", victim)
    records = _read_all(servers, "killed")
    by_key: dict[bytes, list[bytes]] = {}
    for _, key, value in records:
        by_key.setdefault(key, []).append(value)
    latest = dict(written)
    assert {key: values[-1] for key, values in by_key.items()} == latest, "every key's latest value is there"
    assert all(values == sorted(values) for values in by_key.values()), "no value out of its place"
    wait_until(lambda: _cleaner(cluster, victim)["started"] == 2, WAIT_S, f"broker {victim} to start a new cleaner")
    fillers = iter(range(1_000_000))

    def compacted() -> bool:
        _write(producer, "killed", [(b"filler-%d" % next(fillers), b"x") for _ in range(40)], batch=40)
        return _only_latest(_read_all(servers, "killed"), written)
    wait_until(compacted, WAIT_S, "the new cleaners to compact the topic")
    replacement = ray.get(_cleaner(cluster, victim)["actor"].describe.remote(), timeout=30)
    assert replacement["rounds"] >= 1, replacement


def _offsets_records(cluster, broker_id: int) -> int:
    """How many records broker ``broker_id``'s replica of __consumer_offsets-0 holds."""
    broker, offset, count = cluster.broker(broker_id), 0, 0
    while True:
        records, next_offset, end = ray.get(broker.read_log.remote("__consumer_offsets", 0, offset, 1 << 20), timeout=30)
        count += len(KafkaRecordCodec.decode(records, offset))
        if next_offset >= end or next_offset == offset:
            return count
        offset = next_offset


def test_a_coordinator_failover_after_compaction_returns_every_groups_offsets(cluster):
    from confluent_kafka import Consumer, TopicPartition
    servers = cluster.bootstrap_servers
    cluster.create_topic("committed", partitions=1, replication_factor=3)
    groups, commits = [f"g{index}" for index in range(5)], 60
    for group in groups:
        consumer = Consumer({"bootstrap.servers": servers, "group.id": group, "enable.auto.commit": False})
        try:
            for offset in range(1, commits + 1):
                consumer.commit(offsets=[TopicPartition("committed", 0, offset)], asynchronous=False)
        finally:
            consumer.close()
    wait_until(lambda: all(_offsets_records(cluster, broker_id) < len(groups) * commits // 2
                           for broker_id in cluster.broker_ids), WAIT_S,
               f"every replica of __consumer_offsets-0 to be compacted below half its {len(groups) * commits} commits")
    leader = next(entry["leader"] for entry in ray.get(cluster.broker(0).describe_partitions.remote(), timeout=30)
                  if entry["topic"] == "__consumer_offsets")
    cluster.kill("broker", leader)  # Ray starts it again; the coordinator moves with the leadership

    def all_committed() -> bool:
        for group in groups:
            consumer = Consumer({"bootstrap.servers": servers, "group.id": group, "enable.auto.commit": False})
            try:
                found = consumer.committed([TopicPartition("committed", 0)], timeout=10)
            except Exception:  # the coordinator is moving: ask again
                return False
            finally:
                consumer.close()
            if found[0].offset != commits:
                return False
        return True
    wait_until(all_committed, WAIT_S, "every group's last commit from the coordinator after the failover")
