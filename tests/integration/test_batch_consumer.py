"""A real 3-broker cluster on a local Ray serves the consumer's batch-level API as it serves poll:
records handed out as whole batches and as Arrow columns are every produced record exactly once in
offset order, commits after them resume a successor where they stopped, a seek into a batch is
honoured, and a group that rebalances between batch polls loses no record."""
from __future__ import annotations

import time

import pytest

from actors.codecs.record_batches import read_records

pytestmark = pytest.mark.integration

RECORDS_PER_PARTITION = 600
PARTITIONS = 2
WAIT_S = 120  # every wait here is bounded by this, and polls for its condition
SMALL_BATCHES = {"acks": "1", "linger.ms": "0", "batch.size": "4096"}  # many batches per partition


@pytest.fixture(scope="module")
def topic(cluster):
    """A topic whose partitions hold RECORDS_PER_PARTITION records each, values ``p<partition>-<n>``,
    in many small batches."""
    name = "batch-api"
    cluster.create_topic(name, partitions=PARTITIONS, replication_factor=3)
    producer = cluster.producer(SMALL_BATCHES)
    try:
        for n in range(RECORDS_PER_PARTITION):
            for partition in range(PARTITIONS):
                producer.send(name, key=f"k{n}".encode(), value=f"p{partition}-{n}".encode(), partition=partition)
        producer.flush(timeout=WAIT_S)
    finally:
        producer.close(timeout=60)
    return name


def poll_until(condition, what: str) -> None:
    """Call ``condition`` (which polls, and may fail an assertion) until it is true, for at most
    WAIT_S; unlike ``wait_until``, an assertion inside it fails the test at once."""
    deadline = time.monotonic() + WAIT_S
    while not condition():
        assert time.monotonic() < deadline, f"timed out after {WAIT_S}s waiting for {what}"


def expected(partition: int, start: int = 0) -> list[bytes]:
    return [f"p{partition}-{n}".encode() for n in range(start, RECORDS_PER_PARTITION)]


def read_batches(consumer, wanted: int, read: dict, **options) -> None:
    """poll_batches until ``wanted`` more records came, into ``read[partition]`` as (offset, value)."""
    counted = [0]

    def poll() -> bool:
        for (_, partition), batches in consumer.poll_batches(timeout_ms=200, **options).items():
            for batch in batches:
                records = read_records("", partition, batch.data, batch.base_offset)
                assert [r.offset for r in records] == list(range(batch.base_offset, batch.last_offset + 1))
                read.setdefault(partition, []).extend((r.offset, r.value) for r in records)
                counted[0] += len(records)
        return counted[0] >= wanted
    poll_until(poll, f"{wanted} records through poll_batches")


def test_batches_and_arrow_columns_hand_out_every_record_once_and_commits_resume_a_successor(cluster, topic):
    group = {"group.id": "batch-readers", "auto.offset.reset": "earliest", "enable.auto.commit": "false"}
    first = cluster.consumer(group)
    first.subscribe([topic])
    read: dict[int, list] = {}
    read_batches(first, RECORDS_PER_PARTITION // 2, read, max_bytes=2048)
    first.commit()
    committed = first.committed([(topic, p) for p in range(PARTITIONS)])
    for partition in range(PARTITIONS):
        offsets = [offset for offset, _ in read.get(partition, [])]
        assert offsets == list(range(len(offsets))), f"partition {partition} read in order from 0, once"
        assert committed[(topic, partition)] == len(offsets), "commit stores the offset after the last batch"
        assert first.position((topic, partition)) == len(offsets)
    first.close()

    successor = cluster.consumer(group)
    successor.subscribe([topic])
    rows: dict[int, list] = {p: [] for p in range(PARTITIONS)}

    def poll_arrow() -> bool:
        table = successor.poll_arrow(timeout_ms=200)
        for partition, offset, value in zip(*(table.column(c).to_pylist() for c in ("partition", "offset", "value"))):
            rows[partition].append((offset, value))
        return all(len(read.get(p, [])) + len(rows[p]) >= RECORDS_PER_PARTITION for p in range(PARTITIONS))
    poll_until(poll_arrow, "the rest of the records through poll_arrow")
    for partition in range(PARTITIONS):
        whole = read.get(partition, []) + rows[partition]
        assert [offset for offset, _ in whole] == list(range(RECORDS_PER_PARTITION)), f"partition {partition}"
        assert [value for _, value in whole] == expected(partition)
    successor.close()


def test_a_seek_into_a_batch_hands_out_that_batch_from_the_seek_on(cluster, topic):
    consumer = cluster.consumer({"auto.offset.reset": "earliest"})
    consumer.assign([(topic, 0)])
    consumer.seek((topic, 0), 7)
    read: dict[int, list] = {}
    read_batches(consumer, RECORDS_PER_PARTITION - 7, read)
    assert [value for _, value in read[0]] == expected(0, 7)
    assert consumer.position((topic, 0)) == RECORDS_PER_PARTITION
    consumer.close()


def test_a_group_rebalancing_between_batch_polls_loses_no_record(cluster, topic):
    group = {"group.id": "batch-rebalance", "auto.offset.reset": "earliest", "auto.commit.interval.ms": "100"}
    first = cluster.consumer(group)
    first.subscribe([topic])
    read_by_first: dict[int, list] = {}
    read_batches(first, 100, read_by_first, max_bytes=2048)
    second = cluster.consumer(group)
    second.subscribe([topic])
    read_by_second: dict[int, list] = {}

    def both_poll() -> bool:
        for consumer, read in ((first, read_by_first), (second, read_by_second)):
            for (_, partition), batches in consumer.poll_batches(timeout_ms=100, max_bytes=4096).items():
                for batch in batches:
                    read.setdefault(partition, []).extend(
                        (r.offset, r.value) for r in read_records("", partition, batch.data, batch.base_offset))
        return all({o for o, _ in read_by_first.get(p, []) + read_by_second.get(p, [])}
                   == set(range(RECORDS_PER_PARTITION)) for p in range(PARTITIONS))
    poll_until(both_poll, "every record read by one of the two members across the rebalance")
    for partition in range(PARTITIONS):
        for read in (read_by_first, read_by_second):
            wrong = [(offset, value) for offset, value in read.get(partition, [])
                     if value != f"p{partition}-{offset}".encode()]
            assert not wrong, f"records handed out at the wrong offset: {wrong[:3]}"
    first.close()
    second.close()
