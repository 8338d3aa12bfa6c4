"""Proves the consumer's batch-level API (``poll_batches``, ``poll_arrow``) hands out exactly what
``poll`` would, as whole v2 batches or Arrow columns: every record once, in order, control batches
never, a batch that begins before the position rebuilt from the position on (valid CRC, same
producer state and leader epoch), and positions and commits past exactly what was handed out; on
real encoded batches, and through real consumers against a real ReplicaManager core, no Ray."""
from __future__ import annotations

import random

import numpy as np
import pyarrow as pa
import pytest
from crc32c import crc32c

from actors.core.log.record_batch import parse_batches, read_header, stamp_batch, verify_crc
from actors.codecs.record_batches import BatchBuilder, fetch_extent, read_records, with_producer_state
from orchestration.clients.arrow_records import arrow_schema, record_batches_to_arrow
from orchestration.clients.fetched import FetchedPartition, trim_batch
from tests.support.core_driver import make_batch
from tests.unit.test_client_history import (
    TOPIC, CoreBroker, _produce_request, leading_broker, make_consumer,
)
from tests.unit.test_consumer_group_client import CoreCoordinator, FakeChannel

ROUNDS = 20  # polls a test makes at most while waiting for data (each waits 10 ms)


def encoded_batch(values, base_offset: int, *, leader_epoch: int = 0, control: bool = False,
                  headers=None, timestamp_ms: int = 1_700_000_000_000) -> bytes:
    builder = BatchBuilder(batch_size=1 << 20)
    for index, value in enumerate(values):
        assert builder.try_append(f"k{index}".encode(), value, timestamp_ms + index, headers)
    batch = bytearray(builder.build())
    if control:
        batch[22] |= 0x20  # attributes (bytes 21-22): the control bit; nothing here checks this CRC
    stamp_batch(batch, parse_batches(batch, check_crc=False)[0], base_offset=base_offset,
                partition_leader_epoch=leader_epoch)
    return bytes(batch)


def fetched(buffer: bytes, fetch_offset: int) -> FetchedPartition:
    next_fetch_offset, record_count, _ = fetch_extent(buffer, fetch_offset)
    return FetchedPartition(TOPIC, 0, buffer, fetch_offset, next_fetch_offset, record_count)


def values_of(batches) -> list[bytes]:
    return [r.value for b in batches for r in read_records(TOPIC, 0, b.data, b.base_offset)]


# ------------------------------------------------------------------------- FetchedPartition
def test_whole_batches_are_handed_out_as_stored_without_a_copy_and_control_batches_never():
    stored = (encoded_batch([b"a", b"b"], 0, leader_epoch=3) + encoded_batch([b"marker"], 2, control=True)
              + encoded_batch([b"c"], 3, leader_epoch=4))
    buffer = np.frombuffer(stored, dtype=np.uint8)  # as a fetch answer arrives through Ray
    answer = fetched(buffer, 0)

    batches = answer.take_batches(1 << 20)

    assert [(b.base_offset, b.last_offset, b.record_count, b.leader_epoch) for b in batches] == [
        (0, 1, 2, 3), (3, 3, 1, 4)]
    assert bytes(batches[0].data) == stored[:len(batches[0].data)]
    assert np.shares_memory(np.frombuffer(batches[1].data, dtype=np.uint8), buffer), "a slice, not a copy"
    assert batches[0].data.readonly
    assert answer.exhausted and answer.position == 4


def test_a_batch_begun_before_the_position_is_rebuilt_from_the_position_with_its_header_kept():
    original = bytearray(encoded_batch([b"v0", b"v1", b"v2", b"v3"], 10, leader_epoch=7,
                                       headers=[("h", b"x")]))
    original = bytearray(with_producer_state(bytes(original), producer_id=42, producer_epoch=1, base_sequence=100))
    answer = fetched(bytes(original), 12)

    (batch,) = answer.take_batches(1 << 20)

    header = read_header(batch.data)
    verify_crc(batch.data, header)
    assert (batch.base_offset, batch.last_offset, batch.leader_epoch) == (12, 13, 7)
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (42, 1, 102)
    assert [(r.offset, r.value, r.headers, r.timestamp) for r in read_records(TOPIC, 0, batch.data, 0)] == [
        (12, b"v2", (("h", b"x"),), 1_700_000_000_002), (13, b"v3", (("h", b"x"),), 1_700_000_000_003)]


def test_a_rebuilt_batch_keeps_log_append_time():
    batch = bytearray(encoded_batch([b"v0", b"v1"], 0))
    batch[22] |= 0x08  # LogAppendTime: every record reads the batch's max timestamp
    batch[35:43] = (1_800_000_000_000).to_bytes(8, "big")  # max timestamp
    batch[17:21] = crc32c(bytes(batch[21:])).to_bytes(4, "big")

    rebuilt = trim_batch(memoryview(bytes(batch)), 1)

    verify_crc(rebuilt, read_header(rebuilt))
    assert read_header(rebuilt).attributes & 0x08
    assert [(r.offset, r.timestamp) for r in read_records(TOPIC, 0, rebuilt, 0)] == [(1, 1_800_000_000_000)]
    table = record_batches_to_arrow(fetched(bytes(batch), 0).take_batches(1 << 20))
    assert table.column("timestampType").to_pylist() == [1, 1]
    assert table.column("timestamp").cast(pa.int64()).to_pylist() == [1_800_000_000_000] * 2


def test_max_bytes_stops_between_batches_but_one_batch_always_goes():
    stored = b"".join(encoded_batch([bytes(100)], offset) for offset in range(3))
    answer = fetched(stored, 0)

    first = answer.take_batches(1)
    rest = answer.take_batches(1 << 20)

    assert [b.base_offset for b in first] == [0]
    assert [b.base_offset for b in rest] == [1, 2] and answer.exhausted


def test_a_torn_last_batch_is_left_for_the_next_fetch():
    stored = encoded_batch([b"a"], 0) + encoded_batch([b"b"], 1)
    answer = fetched(stored[:-5], 0)

    assert [b.base_offset for b in answer.take_batches(1 << 20)] == [0]
    assert answer.exhausted and answer.next_fetch_offset == 1


@pytest.mark.parametrize("seed", range(30))
def test_records_and_batches_taken_in_any_order_hand_out_every_record_once(seed):
    rng = random.Random(seed)
    stored, offset = b"", 0
    for _ in range(rng.randint(1, 6)):
        count = rng.randint(1, 5)
        control = rng.random() < 0.2
        stored += encoded_batch([f"v{offset + i}".encode() for i in range(count)], offset, control=control)
        offset += count
    fetch_offset = rng.randint(0, offset - 1)
    expected = [r.value for r in read_records(TOPIC, 0, stored, fetch_offset)]
    answer, handed_out = fetched(stored, fetch_offset), []
    while not answer.exhausted:
        if rng.random() < 0.5:
            handed_out += [r.value for r in answer.take_records(rng.randint(1, 3))]
        else:
            handed_out += values_of(answer.take_batches(rng.randint(1, 200)))
    assert handed_out == expected
    assert answer.position == offset


def test_arrow_table_has_spark_kafka_source_columns_and_the_records():
    stored = encoded_batch([b"a", None], 0, headers=[("h", b"x")]) + encoded_batch([b"c"], 2, leader_epoch=1)
    answer = fetched(stored, 1)

    table = record_batches_to_arrow(answer.take_batches(1 << 20), with_headers=True)

    assert table.schema == arrow_schema(True)
    assert table.column_names == ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType",
                                  "headers"]
    assert table.to_pydict() == {
        "key": [b"k1", b"k0"], "value": [None, b"c"], "topic": [TOPIC, TOPIC], "partition": [0, 0],
        "offset": [1, 2], "timestamp": table.column("timestamp").to_pylist(), "timestampType": [0, 0],
        "headers": [[{"key": "h", "value": b"x"}], []]}
    assert table.column("timestamp").cast(pa.int64()).to_pylist() == [1_700_000_000_001, 1_700_000_000_000]
    assert record_batches_to_arrow([]).num_rows == 0


# ---------------------------------------------------------------------------- the consumer
def poll_batches(consumer, **options) -> dict:
    for _ in range(ROUNDS):
        batches = consumer.poll_batches(timeout_ms=10, **options)
        if batches:
            return batches
    raise AssertionError(f"no batches in {ROUNDS} polls")


def loaded_broker(partitions: int = 1) -> CoreBroker:
    broker = leading_broker(partitions=partitions)
    for values in ([b"v0", b"v1", b"v2"], [b"v3", b"v4"], [b"v5"]):
        broker.ask("handle_produce", _produce_request(make_batch(values)))
    return broker


def test_poll_batches_moves_the_position_past_exactly_the_batches_handed_out():
    consumer = make_consumer(loaded_broker(), None)
    consumer.assign([(TOPIC, 0)])

    first = poll_batches(consumer, max_bytes=1)
    assert list(first) == [(TOPIC, 0)] and [b.base_offset for b in first[(TOPIC, 0)]] == [0]
    assert consumer.position((TOPIC, 0)) == 3
    rest = poll_batches(consumer)
    assert [(b.base_offset, b.last_offset) for b in rest[(TOPIC, 0)]] == [(3, 4), (5, 5)]
    assert consumer.position((TOPIC, 0)) == 6
    assert consumer.poll_batches(timeout_ms=10) == {}


def test_poll_then_poll_batches_then_a_seek_into_a_batch_never_repeat_or_skip_a_record():
    consumer = make_consumer(loaded_broker(), None, **{"max.poll.records": "2"})
    consumer.assign([(TOPIC, 0)])

    records = [r.value for r in consumer.poll(timeout_ms=10) or consumer.poll(timeout_ms=100)]
    batches = poll_batches(consumer)[(TOPIC, 0)]
    assert records == [b"v0", b"v1"]
    assert values_of(batches) == [b"v2", b"v3", b"v4", b"v5"]
    assert batches[0].base_offset == 2, "the first batch rebuilt from the position"

    consumer.seek((TOPIC, 0), 4)
    table = None
    for _ in range(ROUNDS):
        table = consumer.poll_arrow(timeout_ms=10)
        if table.num_rows:
            break
    assert table.column("offset").to_pylist() == [4, 5]
    assert table.column("value").to_pylist() == [b"v4", b"v5"]
    assert consumer.position((TOPIC, 0)) == 6


def test_commit_after_poll_batches_stores_the_offset_after_the_last_batch_handed_out():
    broker = loaded_broker()
    channel = FakeChannel({"coordinator-1": CoreCoordinator(1)})
    group = {"group.id": "g", "enable.auto.commit": "false"}
    first = make_consumer(broker, None, channel=channel, **group, **{"client.id": "a"})
    first.subscribe([TOPIC])
    assert [b.base_offset for b in poll_batches(first, max_bytes=1)[(TOPIC, 0)]] == [0]
    first.commit()
    assert first.committed([(TOPIC, 0)]) == {(TOPIC, 0): 3}
    first.close()

    successor = make_consumer(broker, None, channel=channel, **group, **{"client.id": "b"})
    successor.subscribe([TOPIC])
    assert values_of(poll_batches(successor)[(TOPIC, 0)]) == [b"v3", b"v4", b"v5"]


def test_poll_batches_rejects_a_max_bytes_that_is_not_positive():
    consumer = make_consumer(loaded_broker(), None)
    with pytest.raises(ValueError):
        consumer.poll_batches(max_bytes=0)


def test_a_directory_without_data_answers_an_empty_table_with_the_schema():
    consumer = make_consumer(leading_broker(), None, **{"auto.offset.reset": "earliest"})
    consumer.assign([(TOPIC, 0)])
    table = consumer.poll_arrow(timeout_ms=10, headers=True)
    assert table.num_rows == 0 and table.schema == arrow_schema(True)


@pytest.mark.parametrize("seed", range(25))
def test_arrow_columns_equal_what_poll_returns(seed):
    rng = random.Random(seed)
    stored, offset = b"", 0
    for _ in range(rng.randint(1, 4)):
        builder, count = BatchBuilder(batch_size=1 << 22), rng.randint(1, 40)
        with_headers = rng.random() < 0.3
        for index in range(count):
            key = None if rng.random() < 0.2 else rng.randbytes(rng.choice([0, 3, 200]))
            value = None if rng.random() < 0.1 else rng.randbytes(rng.choice([0, 1, 100, 20_000]))
            headers = [("h", rng.randbytes(2))] if with_headers and rng.random() < 0.5 else None
            assert builder.try_append(key, value, rng.randint(0, 2 ** 41), headers)
        batch = bytearray(builder.build())
        stamp_batch(batch, parse_batches(batch)[0], base_offset=offset, partition_leader_epoch=1)
        stored += bytes(batch)
        offset += count
    for headers in (False, True):
        table = record_batches_to_arrow(fetched(stored, 0).take_batches(1 << 30), with_headers=headers)
        records = read_records(TOPIC, 0, stored, 0)
        assert table.column("offset").to_pylist() == [r.offset for r in records]
        assert table.column("key").to_pylist() == [r.key for r in records]
        assert table.column("value").to_pylist() == [r.value for r in records]
        assert table.column("timestamp").cast(pa.int64()).to_pylist() == [r.timestamp for r in records]
        if headers:
            assert table.column("headers").to_pylist() == [
                [{"key": k, "value": v} for k, v in r.headers] for r in records]
