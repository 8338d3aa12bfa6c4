"""ListOffsets by timestamp answers the exact first record at or after a time, also inside a
compressed batch, through each segment's Kafka time index, reading about an index interval of the
log and not the whole of it: checked against a brute-force answer over every record, on logs in
memory and in files, after recovery from the files, after truncation, and with timestamps out of
order."""
from __future__ import annotations

import random

import pytest
from kafka.record.default_records import DefaultRecordBatchBuilder

from actors.core.errors import ErrorCode
from actors.core.log.log import Log
from actors.core.log.log_config import LogConfig
from actors.core.log.storage import InMemoryStorage
from actors.core.log.time_index import TIME_INDEX_ENTRY, TimeIndex
from actors.core.log.timestamps import offset_for_timestamp
from tests.support.core_driver import CoreDriver, produce_result

DIRECTORY = "clicks-0"
GZIP = 1
LZ4 = 3


def timed_batch(timestamps, *, compression_type: int = 0, value_size_bytes: int = 100) -> bytes:
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=compression_type, is_transactional=False,
                                        producer_id=-1, producer_epoch=-1, base_sequence=-1, batch_size=1 << 30)
    for index, timestamp in enumerate(timestamps):
        value = (b"%d-" % index) * (value_size_bytes // 4 + 1)  # compressible, not trivially so
        assert builder.append(index, timestamp=timestamp, key=None, value=value[:value_size_bytes], headers=[])
    return bytes(builder.build())


def expected_answer(records: list[tuple[int, int]], target_ms: int, start_offset: int = 0):
    """The brute-force answer: the first (offset, timestamp) at or after both, in offset order."""
    return next(((offset, ts) for offset, ts in records if offset >= start_offset and ts >= target_ms), None)


def answer(log: Log, target_ms: int):
    found = offset_for_timestamp(log, target_ms, log.log_end_offset)
    return None if found is None else (found.offset, found.timestamp)


class CountingStorage(InMemoryStorage):
    """In-memory storage that counts the bytes read from segment .log files."""

    def __init__(self) -> None:
        super().__init__()
        self.log_bytes_read = 0

    def read(self, path: str, position: int, size: int) -> bytes:
        data = super().read(path, position, size)
        if path.endswith(".log"):
            self.log_bytes_read += len(data)
        return data


def fill(log: Log, rng: random.Random, batch_count: int, *, ordered: bool) -> list[tuple[int, int]]:
    """Appends batches of 1-30 records (every third gzip), timestamps rising or scattered;
    returns every record's (offset, timestamp)."""
    records, clock = [], 1_000_000
    for index in range(batch_count):
        count = rng.randint(1, 30)
        if ordered:
            timestamps = [clock + 10 * i for i in range(count)]
            clock += 10 * count
        else:  # producers' clocks disagree: jumps back and forward, repeats
            timestamps = [clock + rng.randint(-5_000, 5_000) for _ in range(count)]
            clock += rng.choice((0, 100, 2_000))
        info = log.append_as_leader(timed_batch(timestamps, compression_type=GZIP if index % 3 == 0 else 0), 0)
        records += [(info.first_offset + i, ts) for i, ts in enumerate(timestamps)]
    return records


# -- the index itself -----------------------------------------------------------------------

def test_time_index_appends_only_rising_timestamps_and_cuts_at_an_offset():
    index = TimeIndex()
    written = b"".join(index.maybe_append(ts, offset) for ts, offset in [(100, 3), (100, 9), (90, 12), (150, 20), (200, 20)])
    assert list(zip(index.timestamps, index.relative_offsets)) == [(100, 3), (150, 20), (200, 20)]
    assert TimeIndex.from_file_data(written, relative_offset_end=21).timestamps == index.timestamps
    assert index.lookup(99) == (None, (100, 3))
    assert index.lookup(150) == ((150, 20), (200, 20))
    assert index.lookup(999) == ((200, 20), None)
    assert index.truncate_to(20) == TIME_INDEX_ENTRY.size and list(index.timestamps) == [100]


@pytest.mark.parametrize("data", [
    TIME_INDEX_ENTRY.pack(100, 3)[:-1],                             # a torn entry
    TIME_INDEX_ENTRY.pack(100, 3) + TIME_INDEX_ENTRY.pack(100, 4),  # timestamps not rising
    TIME_INDEX_ENTRY.pack(100, 5) + TIME_INDEX_ENTRY.pack(200, 4),  # offsets going back
    TIME_INDEX_ENTRY.pack(100, 21),                                 # past the segment's end
], ids=["torn", "flat timestamps", "offsets back", "past the end"])
def test_a_time_index_file_that_fails_the_sanity_check_is_refused(data):
    assert TimeIndex.from_file_data(data, relative_offset_end=21) is None


def test_each_segment_has_a_time_index_file_that_recovery_rebuilds_and_deletion_removes(storage):
    log = Log.open(storage, DIRECTORY, LogConfig(segment_bytes=64 * 1024, index_interval_bytes=1024))
    records = fill(log, random.Random(7), 200, ordered=True)
    assert log.number_of_segments > 2
    files = {segment.time_index_path: storage.read_file(segment.time_index_path) for segment in log.segments}
    assert all(len(data) % 12 == 0 and data for data in files.values()), "an entry per index interval"
    log.close()
    first = log.segments[0]
    storage.write_file_atomically(first.time_index_path, b"\x7f" * 13)  # garbage: rebuilt on use
    storage.delete(log.segments[1].time_index_path)  # missing (a segment from before time indexes)
    storage.append(f"{DIRECTORY}/00000000000000099999.timeindex", b"")  # an orphan: deleted on open
    reopened = Log.open(storage, DIRECTORY, LogConfig(segment_bytes=64 * 1024, index_interval_bytes=1024),
                        recovery_point=log.log_end_offset)  # older segments load as they are
    for ts in (0, *(ts + delta for _, ts in records[::7] for delta in (-1, 0, 1)), 10**13):
        assert answer(reopened, ts) == expected_answer(records, ts), ts
    assert {s.time_index_path: storage.read_file(s.time_index_path) for s in reopened.segments} == files
    assert "00000000000000099999.timeindex" not in storage.list_dir(DIRECTORY)
    reopened.maybe_increment_log_start_offset(reopened.segments[2].base_offset)
    assert first.time_index_path.split("/")[1] not in storage.list_dir(DIRECTORY)
    assert answer(reopened, 0) == expected_answer(records, 0, reopened.log_start_offset)


# -- the answers ----------------------------------------------------------------------------

@pytest.mark.parametrize("ordered", [True, False], ids=["rising", "out of order"])
def test_answers_are_the_exact_record_before_and_after_recovery_and_truncation(storage, ordered):
    config = LogConfig(segment_bytes=48 * 1024, index_interval_bytes=512)
    log = Log.open(storage, DIRECTORY, config)
    records = fill(log, random.Random(11), 300, ordered=ordered)
    targets = sorted({0, 10**13, *(ts + delta for _, ts in records[::11] for delta in (-1, 0, 1))})
    assert [answer(log, ts) for ts in targets] == [expected_answer(records, ts) for ts in targets]
    log.close()
    recovered = Log.open(storage, DIRECTORY, config)  # recovery point 0: every segment rescanned
    assert [answer(recovered, ts) for ts in targets] == [expected_answer(records, ts) for ts in targets]
    cut = records[len(records) * 2 // 3][0]
    recovered.truncate_to(cut)
    kept = [(o, ts) for o, ts in records if o < recovered.log_end_offset]
    kept += fill(recovered, random.Random(12), 40, ordered=ordered)  # appends after the cut index anew
    targets = sorted({ts + delta for _, ts in kept[::7] for delta in (-1, 0, 1)})
    assert [answer(recovered, ts) for ts in targets] == [expected_answer(kept, ts) for ts in targets]


def test_a_record_in_the_middle_of_a_compressed_batch_is_answered_exactly():
    driver = CoreDriver()
    driver.become("t", 0, leader=0)
    driver.produce("t", 0, timed_batch([1000 + i for i in range(5)]))  # offsets 0..4
    produced = produce_result(driver.answers[driver.produce("t", 0, timed_batch(
        [2000 + 10 * i for i in range(100)], compression_type=GZIP))])  # offsets 5..104
    assert produced.base_offset == 5
    found = driver.list_offset("t", 0, 2345)  # between records 34 (2340) and 35 (2350)
    assert (found.error_code, found.offset, found.timestamp) == (ErrorCode.NONE, 5 + 35, 2350)
    assert (driver.list_offset("t", 0, 2990).offset, driver.list_offset("t", 0, 2991).offset) == (104, -1)


def test_a_record_in_the_middle_of_an_lz4_batch_is_answered_exactly_with_the_brokers_codecs():
    from aiokafka.record.default_records import DefaultRecordBatchBuilder as AiokafkaBuilder

    builder = AiokafkaBuilder(magic=2, compression_type=LZ4, is_transactional=0, producer_id=-1,
                              producer_epoch=-1, base_sequence=-1, batch_size=1 << 30)
    for index in range(1000):
        builder.append(index, timestamp=5000 + index, key=None, value=b"v%d" % index, headers=[])
    driver = CoreDriver()  # with the broker's codecs (KafkaCompressionCodecs), as the broker shell's core
    driver.become("t", 0, leader=0)
    driver.produce("t", 0, bytes(builder.build()))
    found = driver.list_offset("t", 0, 5345)
    assert (found.offset, found.timestamp) == (345, 5345)


def test_the_answer_carries_the_leader_epoch_of_the_records_batch():
    driver = CoreDriver()
    driver.become("t", 0, leader=0, leader_epoch=1)
    driver.produce("t", 0, timed_batch([1000, 1001]))
    driver.become("t", 0, leader=0, leader_epoch=4)
    driver.produce("t", 0, timed_batch([2000, 2001]))
    assert [(a.offset, a.leader_epoch) for a in (driver.list_offset("t", 0, ts) for ts in (1001, 2000))] == \
        [(1, 1), (2, 4)]


def test_a_lookup_reads_about_an_index_interval_of_the_log_not_all_of_it():
    storage = CountingStorage()
    driver = CoreDriver(storage=storage)
    driver.become("t", 0, leader=0, config={"segment.bytes": str(1 << 20)})
    clock = 1_000_000
    for _ in range(800):  # ~3 KiB batches: about 2.5 MiB in 3 segments
        driver.produce("t", 0, timed_batch([clock + i for i in range(40)]))
        clock += 40
    log = driver.manager.partitions[("t", 0)].log
    assert log.size_in_bytes > 2_500_000 and log.number_of_segments >= 3
    for target in (1_000_000 + 40 * 640 + 17, 1_000_000 + 40 * 333 + 39, 1_000_000 + 7):
        storage.log_bytes_read = 0
        found = driver.list_offset("t", 0, target)
        assert (found.offset, found.timestamp) == (target - 1_000_000, target)
        # The index interval (4096) on either side of the start, and the batch that holds it.
        assert storage.log_bytes_read <= 4 * 4096 + 2 * 8192, (target, storage.log_bytes_read)
