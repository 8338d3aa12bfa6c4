"""Proves the v2 header code agrees with kafka-python's independent encoder and decoder: batches
built by kafka-python parse to the right fields, stamping keeps the CRC valid (kafka-python's
reader checks it), and each kind of damage, table-driven, is refused with CORRUPT_MESSAGE."""
from __future__ import annotations

import struct

import numpy as np
import pytest
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

from actors.core.errors import ErrorCode, KafkaProtocolError
from actors.core.log.record_batch import (
    HEADER_SIZE_BYTES, parse_batches, read_header, scan_valid_prefix, stamp_batch, verify_crc)


def make_batch(record_count: int, *, value_size_bytes: int = 10, first_timestamp: int = 1000) -> bytes:
    builder = DefaultRecordBatchBuilder(
        magic=2, compression_type=0, is_transactional=False, producer_id=-1, producer_epoch=-1,
        base_sequence=-1, batch_size=1 << 24)
    for index in range(record_count):
        builder.append(index, timestamp=first_timestamp + index, key=None,
                       value=bytes([index % 256]) * value_size_bytes, headers=[])
    return bytes(builder.build())


def patched(data: bytes, position: int, fmt: str, value) -> bytes:
    buffer = bytearray(data)
    struct.pack_into(fmt, buffer, position, value)
    return bytes(buffer)


def test_parse_single_batch_fields():
    data = make_batch(5, first_timestamp=2000)
    (header,) = parse_batches(data)
    assert header.position == 0
    assert header.base_offset == 0
    assert header.last_offset == 4
    assert header.last_offset_delta == 4
    assert header.records_count == 5
    assert header.size_in_bytes == len(data)
    assert header.max_timestamp == 2004
    assert header.base_timestamp == 2000
    assert header.magic == 2
    assert header.producer_id == -1


def test_parse_concatenated_batches_gives_positions():
    first, second, third = make_batch(1), make_batch(3), make_batch(2)
    headers = parse_batches(first + second + third)
    assert [header.position for header in headers] == [0, len(first), len(first) + len(second)]
    assert [header.records_count for header in headers] == [1, 3, 2]


@pytest.mark.parametrize("wrap", [bytes, bytearray, memoryview, lambda data: np.frombuffer(data, dtype=np.uint8)])
def test_parse_accepts_any_bytes_like(wrap):
    data = make_batch(2) + make_batch(3)
    assert [header.records_count for header in parse_batches(wrap(data))] == [2, 3]


_GOOD = make_batch(3)

CORRUPTIONS = [
    ("empty", b"", "empty"),
    ("torn header", _GOOD[:HEADER_SIZE_BYTES - 1], "truncated batch header"),
    ("torn body", _GOOD[:-1], "needs"),
    ("trailing bytes", _GOOD + b"\x00" * 10, "truncated batch header"),
    ("magic 1", patched(_GOOD, 16, ">b", 1), "magic"),
    ("batch_length too small", patched(_GOOD, 8, ">i", 48), "batch_length"),
    ("batch_length past end", patched(_GOOD, 8, ">i", len(_GOOD)), "needs"),
    ("negative records_count", patched(_GOOD, 57, ">i", -1), "records_count"),
    ("negative last_offset_delta", patched(_GOOD, 23, ">i", -1), "last_offset_delta"),
    ("flipped payload byte", patched(_GOOD, len(_GOOD) - 3, ">B", _GOOD[-3] ^ 0xFF), "CRC"),
    ("flipped attributes byte", patched(_GOOD, 22, ">B", _GOOD[22] ^ 0x01), "CRC"),
]


@pytest.mark.parametrize("name, data, message", CORRUPTIONS, ids=[row[0] for row in CORRUPTIONS])
def test_damage_is_corrupt_message(name, data, message):
    with pytest.raises(KafkaProtocolError) as raised:
        parse_batches(data)
    assert raised.value.error_code == ErrorCode.CORRUPT_MESSAGE
    assert message in str(raised.value)


@pytest.mark.parametrize("name, data, message", CORRUPTIONS[1:], ids=[row[0] for row in CORRUPTIONS[1:]])
def test_damage_after_a_good_batch_is_reported_at_its_position(name, data, message):
    with pytest.raises(KafkaProtocolError) as raised:
        parse_batches(np.frombuffer(_GOOD + data, dtype=np.uint8))
    assert raised.value.error_code == ErrorCode.CORRUPT_MESSAGE
    position = len(_GOOD) * (2 if name == "trailing bytes" else 1)  # those follow a whole good batch
    assert message in str(raised.value) and f"position {position}" in str(raised.value)


def test_parsed_headers_are_what_read_header_reads_at_each_batch():
    buffer = bytearray(make_batch(1) + make_batch(4) + make_batch(2))
    headers = parse_batches(buffer)
    stamp_batch(buffer, headers[1], base_offset=7, partition_leader_epoch=3)
    for header in parse_batches(buffer):
        assert header == read_header(buffer, header.position)
        assert type(header) is type(read_header(buffer, header.position))
        assert header._asdict() == read_header(buffer, header.position)._asdict()
    assert parse_batches(buffer)[1].partition_leader_epoch == 3 and parse_batches(buffer)[1].last_offset == 10


def test_second_batch_damage_is_caught():
    data = _GOOD + patched(_GOOD, len(_GOOD) - 1, ">B", _GOOD[-1] ^ 0x10)
    with pytest.raises(KafkaProtocolError, match="position 1"):
        parse_batches(data)


def test_crc_check_can_be_skipped():
    damaged = patched(_GOOD, len(_GOOD) - 3, ">B", _GOOD[-3] ^ 0xFF)
    assert parse_batches(damaged, check_crc=False)[0].records_count == 3


def test_read_header_needs_only_the_header():
    header = read_header(_GOOD[:HEADER_SIZE_BYTES])
    assert header.size_in_bytes == len(_GOOD)
    with pytest.raises(KafkaProtocolError):
        verify_crc(_GOOD[:HEADER_SIZE_BYTES], header)


def test_stamp_keeps_crc_valid_and_kafka_python_reads_the_result():
    data = bytearray(make_batch(2) + make_batch(3))
    headers = parse_batches(data)
    stamped_first = stamp_batch(data, headers[0], base_offset=100, partition_leader_epoch=7)
    stamped_second = stamp_batch(data, headers[1], base_offset=102, partition_leader_epoch=7)
    assert (stamped_first.base_offset, stamped_first.last_offset) == (100, 101)
    assert (stamped_second.base_offset, stamped_second.last_offset) == (102, 104)
    reparsed = parse_batches(data)  # verifies CRCs
    assert [(h.base_offset, h.last_offset, h.partition_leader_epoch) for h in reparsed] == [
        (100, 101, 7), (102, 104, 7)]
    second = DefaultRecordBatch(bytes(data[headers[1].position:]))
    assert second.validate_crc()
    assert second.leader_epoch == 7
    assert [record.offset for record in second] == [102, 103, 104]


SCANS = [
    # name, buffer, expected_base_offset, batches kept, stops with
    ("intact", _GOOD + _GOOD, None, 2, None),
    ("torn tail", _GOOD + _GOOD[:-5], None, 1, "needs"),
    ("torn header", _GOOD + _GOOD[:30], None, 1, "truncated"),
    ("bad crc in the middle", _GOOD + patched(_GOOD, 70, ">B", _GOOD[70] ^ 1) + _GOOD, None, 1, "CRC"),
    ("contiguous offsets", _GOOD + patched(_GOOD, 0, ">q", 3), 0, 2, None),
    ("offset gap (a cleaned log's)", _GOOD + patched(_GOOD, 0, ">q", 4), 0, 2, None),
    ("overlapping offsets", _GOOD + patched(_GOOD, 0, ">q", 2), 0, 1, "expected 3"),
    ("first offset below the segment's", _GOOD, 5, 0, "expected 5"),
]


@pytest.mark.parametrize("name, data, expected, kept, why", SCANS, ids=[row[0] for row in SCANS])
def test_scan_valid_prefix(name, data, expected, kept, why):
    headers, end, why_stopped = scan_valid_prefix(data, expected_base_offset=expected)
    assert len(headers) == kept
    assert end == kept * len(_GOOD)
    if why is None:
        assert why_stopped is None
    else:
        assert why in why_stopped
