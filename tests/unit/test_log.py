"""Proves the segmented Log behaves as Kafka's does, on both InMemoryStorage and real files:
appends stamp offsets and epochs (checked with kafka-python's independent decoder), reads return
whole batches within max_bytes and the high watermark, refused appends change nothing, segments
roll and truncate, and reopening recovers exactly the valid prefix after torn, corrupt or
crash-lost tails."""
from __future__ import annotations

import os
import struct

import numpy as np
import pytest
from crc32c import crc32c
from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords

from actors.core.errors import ErrorCode, KafkaProtocolError
from actors.core.log import segment as segment_module
from actors.core.log.log import Log
from actors.core.log.log_config import LogConfig
from actors.core.log.storage import InMemoryStorage

DIRECTORY = "orders-0"


# -- helpers --------------------------------------------------------------------------------

def make_batch(record_count: int = 3, *, value_size_bytes: int = 10, first_timestamp: int = 1000) -> bytes:
    builder = DefaultRecordBatchBuilder(
        magic=2, compression_type=0, is_transactional=False, producer_id=-1, producer_epoch=-1,
        base_sequence=-1, batch_size=1 << 24)
    for index in range(record_count):
        builder.append(index, timestamp=first_timestamp + index, key=None,
                       value=bytes([index % 256]) * value_size_bytes, headers=[])
    return bytes(builder.build())


BATCH = make_batch(3)  # offsets n..n+2, len(BATCH) bytes


def decode(records: bytes) -> list[tuple[int, int, int]]:
    """(base_offset, last_offset, leader_epoch) per batch, via kafka-python, CRCs checked."""
    result = []
    memory_records = MemoryRecords(bytes(records))
    while (batch := memory_records.next_batch()) is not None:
        assert batch.validate_crc()
        offsets = [record.offset for record in batch]
        assert offsets == list(range(batch.base_offset, batch.base_offset + len(offsets)))
        result.append((batch.base_offset, offsets[-1], batch.leader_epoch))
    return result


def with_field(batch: bytes, position: int, fmt: str, value) -> bytes:
    """The batch with one header field changed and its CRC recomputed (a well-formed lie)."""
    buffer = bytearray(batch)
    struct.pack_into(fmt, buffer, position, value)
    struct.pack_into(">I", buffer, 17, crc32c(bytes(buffer[21:])))
    return bytes(buffer)


def corrupt_file(storage, path: str, position: int, data: bytes) -> None:
    if isinstance(storage, InMemoryStorage):
        storage.corrupt(path, position, data)
        return
    with open(os.path.join(storage.root, path), "r+b") as file:
        file.seek(position)
        file.write(data)


def all_batches(log: Log) -> list[tuple[int, int, int]]:
    """Every batch in the log, read as a consumer would: fetch, then continue after the last."""
    result, offset = [], log.log_start_offset
    for _ in range(10_000):
        if offset >= log.log_end_offset:
            return result
        info = log.read(offset, 1 << 30)
        batches = decode(info.records)
        result.extend(batches)
        offset = batches[-1][1] + 1
    raise AssertionError("read loop did not finish")


def open_log(storage, **config) -> Log:
    return Log.open(storage, DIRECTORY, LogConfig(**config))


def filled_log(storage, batch_count: int, *, leader_epoch: int = 0, **config) -> Log:
    log = open_log(storage, **config)
    for _ in range(batch_count):
        log.append_as_leader(BATCH, leader_epoch=leader_epoch)
    return log


# -- appends --------------------------------------------------------------------------------

def test_open_creates_an_empty_log(storage):
    log = open_log(storage)
    assert (log.log_start_offset, log.log_end_offset, log.latest_epoch) == (0, 0, -1)
    assert storage.list_dir(DIRECTORY) == ["00000000000000000000.index", "00000000000000000000.log",
                                           "00000000000000000000.timeindex"]
    assert log.number_of_segments == 1 and log.size_in_bytes == 0


def test_append_as_leader_stamps_offsets_and_epoch(storage):
    log = open_log(storage)
    records = make_batch(2) + make_batch(3, first_timestamp=5000) + make_batch(1)
    info = log.append_as_leader(records, leader_epoch=5)
    assert (info.first_offset, info.last_offset, info.batch_count, info.record_count) == (0, 5, 3, 6)
    assert info.max_timestamp == 5002 and info.size_in_bytes == len(records)
    info = log.append_as_leader(BATCH, leader_epoch=7)
    assert (info.first_offset, info.last_offset) == (6, 8)
    assert log.log_end_offset == 9
    assert decode(log.read(0, 1 << 20).records) == [(0, 1, 5), (2, 4, 5), (5, 5, 5), (6, 8, 7)]
    assert [tuple(entry) for entry in log.leader_epoch_cache.entries] == [(5, 0), (7, 6)]
    assert log.latest_epoch == 7


@pytest.mark.parametrize("wrap", [bytearray, memoryview, lambda data: np.frombuffer(data, dtype=np.uint8)])
def test_append_accepts_bytes_like_input(storage, wrap):
    log = open_log(storage)
    log.append_as_leader(wrap(BATCH), leader_epoch=0)
    assert decode(log.read(0, 1 << 20).records) == [(0, 2, 0)]


def refusals():
    good = BATCH
    flipped = bytearray(good)
    flipped[-1] ^= 0xFF
    return [
        # name, records, config, error
        ("empty", b"", {}, ErrorCode.CORRUPT_MESSAGE),
        ("bad crc", bytes(flipped), {}, ErrorCode.CORRUPT_MESSAGE),
        ("good then bad crc", good + bytes(flipped), {}, ErrorCode.CORRUPT_MESSAGE),
        ("torn", good + good[:-1], {}, ErrorCode.CORRUPT_MESSAGE),
        ("magic 1", with_field(good, 16, ">b", 1), {}, ErrorCode.CORRUPT_MESSAGE),
        ("too large", good + make_batch(1, value_size_bytes=500), {"max_message_bytes": 400},
         ErrorCode.MESSAGE_TOO_LARGE),
        ("larger than a segment", good * 4, {"segment_bytes": len(good) * 3}, ErrorCode.RECORD_LIST_TOO_LARGE),
        ("no records", with_field(with_field(good, 57, ">i", 0), 23, ">i", 0), {}, ErrorCode.INVALID_RECORD),
        ("count disagrees with offsets", with_field(good, 57, ">i", 2), {}, ErrorCode.INVALID_RECORD),
    ]


@pytest.mark.parametrize("name, records, config, error", refusals(), ids=[row[0] for row in refusals()])
def test_refused_append_changes_nothing(storage, name, records, config, error):
    log = filled_log(storage, 2, **config)
    files_before = {name: storage.read_file(f"{DIRECTORY}/{name}") for name in storage.list_dir(DIRECTORY)}
    with pytest.raises(KafkaProtocolError) as raised:
        log.append_as_leader(records, leader_epoch=9)
    assert raised.value.error_code == error
    assert log.log_end_offset == 6 and log.latest_epoch == 0
    files_after = {name: storage.read_file(f"{DIRECTORY}/{name}") for name in storage.list_dir(DIRECTORY)}
    assert files_after == files_before


def test_append_as_follower_keeps_leader_offsets_and_learns_epochs(storage):
    leader = Log.open(storage, "leader-0", LogConfig())
    leader.append_as_leader(BATCH, leader_epoch=1)
    leader.append_as_leader(BATCH + BATCH, leader_epoch=3)
    follower = Log.open(storage, "follower-0", LogConfig())
    fetched = leader.read(0, 1 << 20).records
    info = follower.append_as_follower(fetched)
    assert (info.first_offset, info.last_offset, info.batch_count) == (0, 8, 3)
    assert follower.read(0, 1 << 20).records == fetched
    assert follower.leader_epoch_cache.entries == leader.leader_epoch_cache.entries
    assert follower.end_offset_for_epoch(1) == (1, 3)


@pytest.mark.parametrize("first_offset", [0, 5])
def test_follower_append_must_not_start_below_the_log_end(storage, first_offset):
    follower = filled_log(storage, 2)  # LEO 6
    with pytest.raises(KafkaProtocolError) as raised:
        follower.append_as_follower(with_field(BATCH, 0, ">q", first_offset))
    assert raised.value.error_code == ErrorCode.UNKNOWN_SERVER_ERROR
    assert "expected at least 6" in str(raised.value)
    assert follower.log_end_offset == 6


def test_follower_append_takes_the_gaps_of_a_cleaned_leader_log_and_refuses_overlaps(storage):
    """Kafka's follower append: a batch past the log end (the leader's cleaner removed what was
    before it) is taken; batches that overlap are refused and nothing is written."""
    follower = filled_log(storage, 2)  # LEO 6
    follower.append_as_follower(with_field(BATCH, 0, ">q", 7))
    assert follower.log_end_offset == 10
    with pytest.raises(KafkaProtocolError):
        follower.append_as_follower(with_field(BATCH, 0, ">q", 14) + with_field(BATCH, 0, ">q", 15))
    assert follower.log_end_offset == 10


# -- reads ----------------------------------------------------------------------------------

@pytest.mark.parametrize("offset, expected_first_batch", [(0, 0), (1, 0), (2, 0), (3, 3), (7, 6), (8, 6)])
def test_read_returns_the_batch_holding_the_offset(storage, offset, expected_first_batch):
    log = filled_log(storage, 3)
    info = log.read(offset, len(BATCH))
    assert decode(info.records) == [(expected_first_batch, expected_first_batch + 2, 0)]
    assert (info.fetch_offset, info.first_offset, info.last_offset) == (
        offset, expected_first_batch, expected_first_batch + 2)


@pytest.mark.parametrize("max_bytes, min_one_batch, batches", [
    (len(BATCH) * 3, True, 3),
    (len(BATCH) * 3 - 1, True, 2),
    (len(BATCH) * 2 + 1, True, 2),
    (len(BATCH), True, 1),
    (1, True, 1),        # the first batch is returned whatever its size
    (0, True, 1),
    (len(BATCH) - 1, False, 0),
    (len(BATCH), False, 1),
])
def test_read_respects_max_bytes(storage, max_bytes, min_one_batch, batches):
    log = filled_log(storage, 3)
    info = log.read(0, max_bytes, min_one_batch=min_one_batch)
    assert len(decode(info.records)) == batches == info.batch_count
    assert len(info.records) == batches * len(BATCH)


@pytest.mark.parametrize("start_offset, max_offset, batch_bases", [
    (0, 9, [0, 3, 6]),
    (0, 6, [0, 3]),
    (0, 5, [0]),      # batch 3..5 reaches the high watermark: not returned
    (0, 3, [0]),
    (0, 2, []),       # even the first batch is above the high watermark
    (3, 3, []),       # at the high watermark
    (4, 3, []),       # above it, below the LEO: empty, not an error
    (4, 9, [3, 6]),
])
def test_read_stops_at_max_offset(storage, start_offset, max_offset, batch_bases):
    log = filled_log(storage, 3)
    info = log.read(start_offset, 1 << 20, max_offset=max_offset)
    assert [batch[0] for batch in decode(info.records)] == batch_bases


def test_read_at_log_end_is_empty(storage):
    log = filled_log(storage, 2)
    info = log.read(6, 1 << 20)
    assert (info.records, info.first_offset, info.last_offset) == (b"", -1, -1)


@pytest.mark.parametrize("offset", [7, 100, -1])
def test_read_out_of_range(storage, offset):
    log = filled_log(storage, 2)
    with pytest.raises(KafkaProtocolError) as raised:
        log.read(offset, 1 << 20)
    assert raised.value.error_code == ErrorCode.OFFSET_OUT_OF_RANGE


def test_read_below_log_start_is_out_of_range(storage):
    log = filled_log(storage, 3)
    assert log.maybe_increment_log_start_offset(4)
    with pytest.raises(KafkaProtocolError) as raised:
        log.read(3, 1 << 20)
    assert raised.value.error_code == ErrorCode.OFFSET_OUT_OF_RANGE
    assert decode(log.read(4, len(BATCH)).records) == [(3, 5, 0)]  # the batch holding 4


@pytest.mark.parametrize("index_interval_bytes", [0, 256, 4096])
def test_a_fetch_costs_one_storage_read(index_interval_bytes):
    storage = InMemoryStorage()
    log = open_log(storage, index_interval_bytes=index_interval_bytes)
    # Batches of very different sizes (70 bytes to ~6 KB), so index gaps vary.
    for index in range(120):
        log.append_as_leader(make_batch(1 + index % 4, value_size_bytes=(index * 37) % 1500),
                             leader_epoch=0)
    for offset in range(0, log.log_end_offset, 7):
        before = storage.reads
        info = log.read(offset, 8192)
        assert info.first_offset <= offset <= info.last_offset
        assert storage.reads - before == 1, offset


def test_index_is_keyed_by_last_offset_with_start_position(storage):
    log = filled_log(storage, 10, index_interval_bytes=len(BATCH) * 2)
    size = len(BATCH)
    # An entry goes in once MORE than 2 batches' bytes have come since the last one: every 3rd.
    assert log.active_segment.index_entries == ((11, 3 * size), (20, 6 * size), (29, 9 * size))
    for offset in range(30):
        assert log.read(offset, size).first_offset == offset - offset % 3


# -- segments -------------------------------------------------------------------------------

def test_segments_roll_at_segment_bytes_and_reads_cross_them(storage):
    log = filled_log(storage, 8, segment_bytes=len(BATCH) * 3, index_interval_bytes=0)
    assert [segment.base_offset for segment in log.segments] == [0, 9, 18]
    assert log.number_of_segments == 3
    assert "00000000000000000009.log" in storage.list_dir(DIRECTORY)
    # A read stays within the segment holding the offset.
    assert [batch[0] for batch in decode(log.read(0, 1 << 20).records)] == [0, 3, 6]
    assert [batch[0] for batch in decode(log.read(10, 1 << 20).records)] == [9, 12, 15]
    assert [batch[0] for batch in all_batches(log)] == list(range(0, 24, 3))
    assert log.recovery_point == 18  # rolling flushed the old segments


def test_one_append_never_splits_across_segments(storage):
    log = filled_log(storage, 2, segment_bytes=len(BATCH) * 3)
    log.append_as_leader(BATCH + BATCH, leader_epoch=0)
    assert [segment.base_offset for segment in log.segments] == [0, 6]
    assert log.segments[1].size_bytes == 2 * len(BATCH)


# -- truncation -----------------------------------------------------------------------------

@pytest.mark.parametrize("offset, expected_leo, expected_segments", [
    (30, 24, 3),   # beyond the LEO: nothing happens
    (24, 24, 3),
    (21, 21, 3),
    (22, 21, 3),   # inside a batch: the whole batch goes
    (18, 18, 3),   # the active segment's base: it stays, empty
    (17, 15, 2),   # inside the last batch of the second segment
    (9, 9, 2),
    (3, 3, 1),
    (0, 0, 1),
])
def test_truncate_to(storage, offset, expected_leo, expected_segments):
    log = filled_log(storage, 8, segment_bytes=len(BATCH) * 3)
    changed = log.truncate_to(offset)
    assert changed == (expected_leo != 24)
    assert log.log_end_offset == expected_leo
    assert log.number_of_segments == expected_segments
    assert log.recovery_point <= expected_leo
    assert [batch[0] for batch in all_batches(log)] == list(range(0, expected_leo, 3))
    info = log.append_as_leader(BATCH, leader_epoch=0)
    assert info.first_offset == expected_leo
    reopened = open_log(storage, segment_bytes=len(BATCH) * 3)
    assert reopened.log_end_offset == expected_leo + 3


def test_truncate_to_drops_later_epochs(storage):
    log = open_log(storage)
    for epoch in (1, 2, 3):
        log.append_as_leader(BATCH, leader_epoch=epoch)
    log.truncate_to(4)
    assert [tuple(entry) for entry in log.leader_epoch_cache.entries] == [(1, 0)]
    assert log.end_offset_for_epoch(1) == (1, 3)
    assert [tuple(entry) for entry in open_log(storage).leader_epoch_cache.entries] == [(1, 0)]


def test_truncate_fully_and_start_at_survives_reopen(storage):
    log = filled_log(storage, 5, segment_bytes=len(BATCH) * 2, leader_epoch=3)
    log.truncate_fully_and_start_at(100)
    assert (log.log_start_offset, log.log_end_offset, log.latest_epoch) == (100, 100, -1)
    assert log.number_of_segments == 1
    reopened = open_log(storage)
    assert (reopened.log_start_offset, reopened.log_end_offset, reopened.latest_epoch) == (100, 100, -1)
    assert reopened.append_as_leader(BATCH, leader_epoch=4).first_offset == 100
    with pytest.raises(KafkaProtocolError):
        reopened.read(99, 1 << 20)
    assert decode(reopened.read(100, 1 << 20).records) == [(100, 102, 4)]


def test_maybe_increment_log_start_offset_deletes_whole_segments_below(storage):
    log = filled_log(storage, 6, segment_bytes=len(BATCH) * 2)  # segments 0, 6, 12
    log.leader_epoch_cache.assign(1, 9)
    assert log.maybe_increment_log_start_offset(7)
    assert log.log_start_offset == 7
    assert [segment.base_offset for segment in log.segments] == [6, 12]
    assert [tuple(entry) for entry in log.leader_epoch_cache.entries] == [(0, 7), (1, 9)]
    assert not log.maybe_increment_log_start_offset(5)
    with pytest.raises(KafkaProtocolError) as raised:
        log.maybe_increment_log_start_offset(19)
    assert raised.value.error_code == ErrorCode.OFFSET_OUT_OF_RANGE


def test_log_start_at_log_end_keeps_an_empty_active_segment(storage):
    log = filled_log(storage, 3)
    assert log.maybe_increment_log_start_offset(9)
    assert [segment.base_offset for segment in log.segments] == [9]
    assert log.append_as_leader(BATCH, leader_epoch=0).first_offset == 9
    reopened = open_log(storage)
    assert (reopened.log_start_offset, reopened.log_end_offset) == (9, 12)


def test_open_honours_a_checkpointed_log_start_offset(storage):
    filled_log(storage, 3).close()
    log = Log.open(storage, DIRECTORY, LogConfig(), log_start_offset=4)
    assert log.log_start_offset == 4
    empty = Log.open(storage, "other-0", LogConfig(), log_start_offset=50)
    assert (empty.log_start_offset, empty.log_end_offset) == (50, 50)


# -- durability and recovery ----------------------------------------------------------------

def test_reopen_after_close_gives_the_same_log(storage):
    log = filled_log(storage, 7, segment_bytes=len(BATCH) * 3, index_interval_bytes=len(BATCH))
    log.append_as_leader(BATCH, leader_epoch=2)
    contents = [log.read(segment.base_offset, 1 << 20).records for segment in log.segments]
    indexes = [segment.index_entries for segment in log.segments]
    epochs = log.leader_epoch_cache.entries
    log.close()
    assert log.recovery_point == 24
    for recovery_point in (0, 24):
        reopened = Log.open(storage, DIRECTORY, LogConfig(segment_bytes=len(BATCH) * 3,
                                                          index_interval_bytes=len(BATCH)),
                            recovery_point=recovery_point)
        assert [reopened.read(s.base_offset, 1 << 20).records for s in reopened.segments] == contents
        assert [segment.index_entries for segment in reopened.segments] == indexes
        assert reopened.leader_epoch_cache.entries == epochs
        assert reopened.log_end_offset == 24


@pytest.mark.parametrize("cut_bytes", [1, len(BATCH) - 61, len(BATCH) - 10, len(BATCH) - 1])
def test_recovery_drops_a_torn_tail(storage, cut_bytes):
    log = filled_log(storage, 4)
    log.append_as_leader(BATCH, leader_epoch=1)
    log.close()
    path = f"{DIRECTORY}/00000000000000000000.log"
    storage.truncate(path, storage.file_size(path) - cut_bytes)
    reopened = open_log(storage)
    assert reopened.log_end_offset == 12
    assert storage.file_size(path) == 4 * len(BATCH)
    assert [batch[0] for batch in all_batches(reopened)] == [0, 3, 6, 9]
    assert reopened.latest_epoch == 0  # epoch 1's only batch was torn away


@pytest.mark.parametrize("position_in_batch", [0, 8, 16, 21, 40, 61, len(BATCH) - 1])
def test_recovery_drops_a_corrupted_last_batch(storage, position_in_batch):
    log = filled_log(storage, 5)
    log.close()
    path = f"{DIRECTORY}/00000000000000000000.log"
    position = 4 * len(BATCH) + position_in_batch
    original = storage.read(path, position, 1)
    corrupt_file(storage, path, position, bytes([original[0] ^ 0x5A]))
    reopened = open_log(storage)
    assert reopened.log_end_offset == 12
    assert [batch[0] for batch in all_batches(reopened)] == [0, 3, 6, 9]


@pytest.mark.parametrize("chunk_bytes", [1, 61, 100, 150, 1000, 8 << 20])
def test_recovery_in_chunks_smaller_than_batches(storage, monkeypatch, chunk_bytes):
    monkeypatch.setattr(segment_module, "RECOVERY_CHUNK_BYTES", chunk_bytes)
    big = make_batch(5, value_size_bytes=200)
    log = open_log(storage)
    for records in (BATCH, big, BATCH, big, BATCH):
        log.append_as_leader(records, leader_epoch=0)
    log.close()
    path = f"{DIRECTORY}/00000000000000000000.log"
    assert open_log(storage).log_end_offset == 19
    storage.truncate(path, storage.file_size(path) - 3)
    assert open_log(storage).log_end_offset == 16
    corrupt_file(storage, path, 2 * len(BATCH) + len(big) + 100, b"\x00\x01")
    reopened = open_log(storage)
    assert reopened.log_end_offset == 11
    assert [batch[0] for batch in all_batches(reopened)] == [0, 3, 8]


def test_corruption_in_an_old_segment_deletes_later_segments(storage):
    log = filled_log(storage, 8, segment_bytes=len(BATCH) * 3)  # segments 0, 9, 18
    log.close()
    corrupt_file(storage, f"{DIRECTORY}/00000000000000000009.log", len(BATCH) + 70, b"\xff\xff")
    reopened = open_log(storage, segment_bytes=len(BATCH) * 3)
    assert reopened.log_end_offset == 12
    assert [segment.base_offset for segment in reopened.segments] == [0, 9]
    assert "00000000000000000018.log" not in storage.list_dir(DIRECTORY)


def test_segments_below_the_recovery_point_are_not_rescanned(storage):
    log = filled_log(storage, 8, segment_bytes=len(BATCH) * 3)
    log.close()
    corrupt_file(storage, f"{DIRECTORY}/00000000000000000000.log", 70, b"\xff")
    trusted = Log.open(storage, DIRECTORY, LogConfig(segment_bytes=len(BATCH) * 3), recovery_point=24)
    assert trusted.log_end_offset == 24
    rescanned = Log.open(storage, DIRECTORY, LogConfig(segment_bytes=len(BATCH) * 3), recovery_point=0)
    assert rescanned.log_end_offset == 0


def test_crash_drops_unflushed_data_and_recovery_copes():
    storage = InMemoryStorage()
    log = filled_log(storage, 3, leader_epoch=1)
    log.flush()
    assert log.recovery_point == 9
    log.append_as_leader(BATCH, leader_epoch=2)
    log.append_as_leader(BATCH, leader_epoch=2)
    assert log.latest_epoch == 2
    storage.simulate_crash()
    recovered = Log.open(storage, DIRECTORY, LogConfig(), recovery_point=log.recovery_point)
    assert recovered.log_end_offset == 9
    assert [batch[0] for batch in all_batches(recovered)] == [0, 3, 6]
    # The epoch checkpoint was durable but its entry pointed past the surviving data.
    assert [tuple(entry) for entry in recovered.leader_epoch_cache.entries] == [(1, 0)]
    assert recovered.append_as_leader(BATCH, leader_epoch=3).first_offset == 9


def test_crash_loses_nothing_flushed_across_rolls():
    storage = InMemoryStorage()
    config = {"segment_bytes": len(BATCH) * 2}
    filled_log(storage, 5, **config)  # rolls flushed segments 0 and 6
    storage.simulate_crash()
    recovered = open_log(storage, **config)
    assert recovered.log_end_offset == 12
    assert [segment.base_offset for segment in recovered.segments] == [0, 6, 12]


def test_flush_up_to_an_offset():
    storage = InMemoryStorage()
    log = filled_log(storage, 4)
    log.flush(up_to_offset=6)
    assert log.recovery_point == 6
    log.flush(up_to_offset=3)  # never goes back
    assert log.recovery_point == 6
    log.flush(up_to_offset=100)  # capped at the LEO
    assert log.recovery_point == 12


def test_open_deletes_orphan_index_files(storage):
    storage.make_dir(DIRECTORY)
    storage.append(f"{DIRECTORY}/00000000000000000042.index", b"\x00" * 8)
    open_log(storage)
    assert "00000000000000000042.index" not in storage.list_dir(DIRECTORY)


def test_a_bad_index_file_is_rebuilt(storage):
    log = filled_log(storage, 8, segment_bytes=len(BATCH) * 3, index_interval_bytes=0)
    expected = log.segments[0].index_entries
    log.close()
    storage.write_file_atomically(f"{DIRECTORY}/00000000000000000000.index", b"\x7f" * 12)
    reopened = Log.open(storage, DIRECTORY, LogConfig(segment_bytes=len(BATCH) * 3, index_interval_bytes=0),
                        recovery_point=24)
    assert reopened.segments[0].index_entries == expected
    assert decode(reopened.read(4, len(BATCH)).records) == [(3, 5, 0)]


def test_delete_removes_the_directory(storage):
    log = filled_log(storage, 2)
    log.delete()
    assert not storage.exists(DIRECTORY)


# -- configuration --------------------------------------------------------------------------

@pytest.mark.parametrize("properties, expected", [
    ({}, LogConfig()),
    ({"segment.bytes": "1024", "index.interval.bytes": "0", "max.message.bytes": "100"},
     LogConfig(segment_bytes=1024, index_interval_bytes=0, max_message_bytes=100)),
    ({"min.insync.replicas": "2"}, LogConfig()),  # someone else's key
])
def test_config_from_properties(properties, expected):
    assert LogConfig.from_properties(properties) == expected


@pytest.mark.parametrize("properties", [
    {"segment.bytes": "lots"},
    {"segment.bytes": "13"},
    {"segment.bytes": str(2**31)},
    {"index.interval.bytes": "-1"},
    {"max.message.bytes": "1.5"},
])
def test_invalid_config(properties):
    with pytest.raises(KafkaProtocolError) as raised:
        LogConfig.from_properties(properties)
    assert raised.value.error_code == ErrorCode.INVALID_CONFIG


class ByteCountingStorage(InMemoryStorage):
    """In-memory storage that adds up the bytes each read of a ``.log`` file asked for."""

    def __init__(self) -> None:
        super().__init__()
        self.log_bytes_read = 0

    def read(self, path: str, position: int, size: int) -> bytes:
        self.log_bytes_read += size if path.endswith(".log") else 0
        return super().read(path, position, size)


@pytest.mark.parametrize("start_offset", [3, 5])
def test_a_read_after_a_large_batch_does_not_read_that_batch(start_offset):
    """A consumer reading large batches fetches at the base offset of the batch after the one it
    read last; the index entry at or below that offset is the batch already read. Only that
    batch's header is needed to step over it, not its bytes (Kafka scans batch headers only)."""
    storage = ByteCountingStorage()
    log = open_log(storage)
    large = make_batch(3, value_size_bytes=100_000)  # ~300 KB: each batch gets an index entry
    for _ in range(3):
        log.append_as_leader(large, leader_epoch=0)
    max_bytes = len(large) + 1000
    before = storage.log_bytes_read
    info = log.read(start_offset, max_bytes)
    assert decode(info.records) == [(3, 5, 0)]
    read_bytes = storage.log_bytes_read - before
    assert read_bytes < max_bytes + len(large) // 2, f"read {read_bytes} bytes to return one batch of {len(large)}"
