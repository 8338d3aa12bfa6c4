"""Proves a storage error takes the log directory offline as Kafka's LogDirFailureChannel does: a
partial write (a full disk) leaves the log believing only what was wholly written, nothing after
the failure is appended or acknowledged even once the disk has room again, every partition answers
KAFKA_STORAGE_ERROR, parked acks=all produces are failed, and a reopened log keeps every
acknowledged record; driven on the pure log and replica manager over a ``FaultyStorage``."""
from __future__ import annotations

import errno

import pytest

from actors.core.errors import ErrorCode, KafkaProtocolError
from actors.core.log.log import Log
from actors.core.log.log_config import LogConfig
from actors.core.log.storage import InMemoryStorage
from actors.core.log.storage_faults import DISK_FULL, FSYNC_ERROR, WRITE_ERROR, FaultyStorage
from actors.codecs.record_batches import read_records
from tests.support.core_driver import CoreDriver, fetch_result, make_batch, produce_result

CONFIG = LogConfig.from_properties({"index.interval.bytes": "1"})  # an index entry per batch


def values(log: Log) -> list[bytes]:
    found, offset = [], log.log_start_offset
    while offset < log.log_end_offset:
        info = log.read(offset, 1 << 20)
        found += [r.value for r in read_records("t", 0, info.records, offset)]
        offset = info.last_offset + 1
    return found


def test_a_partial_write_then_a_healthy_disk_loses_no_acknowledged_record():
    storage = FaultyStorage(InMemoryStorage())
    log = Log.open(storage, "t-0", LogConfig.from_properties({}))  # Kafka's index.interval.bytes
    acknowledged = []
    for value in (b"a", b"b"):
        log.append_as_leader(make_batch([value]), leader_epoch=0)
        acknowledged.append(value)
    storage.inject(DISK_FULL, room_bytes=30)  # the next batch lands in part
    with pytest.raises((OSError, KafkaProtocolError)):
        log.append_as_leader(make_batch([b"torn"]), leader_epoch=0)
    storage.clear()  # room again (space freed): what happens to the next appends?
    for value in (b"c", b"d"):
        try:
            log.append_as_leader(make_batch([value]), leader_epoch=0)
        except KafkaProtocolError as refused:
            assert refused.error_code == ErrorCode.KAFKA_STORAGE_ERROR
            continue
        acknowledged.append(value)
    reopened = Log.open(storage, "t-0", LogConfig.from_properties({}))  # the restart: recovery scans the segment
    survived = values(reopened)
    assert [v for v in acknowledged if v not in survived] == [], f"acknowledged {acknowledged}, on disk {survived}"
    assert survived == [b"a", b"b"]  # the torn batch is cut, nothing after it was written


def test_a_failed_append_leaves_the_segment_as_it_was_and_the_log_refuses_everything_after():
    storage = FaultyStorage(InMemoryStorage())
    log = Log.open(storage, "t-0", CONFIG)
    for value in (b"a", b"b"):
        log.append_as_leader(make_batch([value]), leader_epoch=0)
    segment = log.active_segment
    size_before, entries_before = segment.size_bytes, segment.index_entries
    storage.inject(DISK_FULL, room_bytes=30)
    with pytest.raises(KafkaProtocolError) as failed:
        log.append_as_leader(make_batch([b"torn"]), leader_epoch=0)
    assert failed.value.error_code == ErrorCode.KAFKA_STORAGE_ERROR
    assert storage.file_size(segment.log_path) == size_before + 30  # the partial write is on disk
    assert (log.log_end_offset, segment.size_bytes, segment.index_entries) == (2, size_before, entries_before)
    assert all(position < segment.size_bytes for _, position in segment.index_entries)
    storage.clear()
    for operation in (lambda: log.read(0, 1 << 20), lambda: log.append_as_leader(make_batch([b"c"]), 0),
                      lambda: log.append_as_follower(make_batch([b"c"])), lambda: log.truncate_to(1)):
        with pytest.raises(KafkaProtocolError) as refused:
            operation()
        assert refused.value.error_code == ErrorCode.KAFKA_STORAGE_ERROR
    assert storage.file_size(segment.log_path) == size_before + 30  # nothing more written


def leader_with_a_follower(storage) -> CoreDriver:
    driver = CoreDriver(storage=storage, config={"min.insync.replicas": "1"})
    driver.become("t", 0, leader=0, replicas=(0, 1), isr=(0, 1))
    return driver


def test_the_replica_manager_answers_kafka_storage_error_and_acknowledges_nothing_after_the_failure():
    storage = FaultyStorage(InMemoryStorage())
    driver = leader_with_a_follower(storage)
    parked = driver.produce("t", 0, make_batch([b"waits-for-the-follower"]), acks=-1)
    assert parked not in driver.answers
    storage.inject(DISK_FULL, room_bytes=10)
    failed = driver.produce("t", 0, make_batch([b"hits-the-full-disk"]), acks=-1)
    assert produce_result(driver.answers[failed]).error_code == ErrorCode.KAFKA_STORAGE_ERROR
    assert produce_result(driver.answers[parked]).error_code == ErrorCode.KAFKA_STORAGE_ERROR
    assert len(driver.log_dir_failures) == 1 and "ENOSPC" in driver.log_dir_failures[0]
    storage.clear()
    later = driver.produce("t", 0, make_batch([b"after"]), acks=1)
    assert produce_result(driver.answers[later]).error_code == ErrorCode.KAFKA_STORAGE_ERROR
    fetched = driver.fetch("t", 0, 0, replica_id=1)
    assert fetch_result(driver.answers[fetched]).error_code == ErrorCode.KAFKA_STORAGE_ERROR
    assert driver.list_offset("t", 0, -1).error_code == ErrorCode.KAFKA_STORAGE_ERROR
    assert len(driver.log_dir_failures) == 1  # handled once


def test_a_failed_fsync_on_the_storage_worker_takes_the_log_directory_offline():
    storage = FaultyStorage(InMemoryStorage())
    driver = CoreDriver(storage=storage, config={"log.flush.offset.checkpoint.interval.ms": "1000"},
                        hold_storage_work=True)
    driver.become("t", 0, leader=0)
    driver.finish_storage_work()
    driver.produce("t", 0, make_batch([b"a"]))
    driver.advance(1000)
    storage.inject(FSYNC_ERROR)
    work = driver.storage_works[0]
    with pytest.raises(OSError) as failed:
        storage.fsync(work.fsync_paths[0])
    driver.fail_storage_work(f"OSError: {failed.value}")
    assert driver.log_dir_failures and "EIO" in driver.log_dir_failures[0]
    storage.clear()
    later = driver.produce("t", 0, make_batch([b"b"]))
    assert produce_result(driver.answers[later]).error_code == ErrorCode.KAFKA_STORAGE_ERROR


@pytest.mark.parametrize("fault, operation, code, left", [
    (DISK_FULL, lambda s: s.append("d/f", b"x" * 10), errno.ENOSPC, b"12345xxxx"),  # what fits
    (DISK_FULL, lambda s: s.write_file_atomically("d/f", b"new"), errno.ENOSPC, b"12345"),
    (WRITE_ERROR, lambda s: s.append("d/f", b"x"), errno.EIO, b"12345"),
    (WRITE_ERROR, lambda s: s.truncate("d/f", 0), errno.EIO, b"12345"),
    (FSYNC_ERROR, lambda s: s.fsync("d/f"), errno.EIO, b"12345"),
])
def test_each_fault_fails_its_calls_as_the_kernel_would(fault, operation, code, left):
    storage = FaultyStorage(InMemoryStorage())
    storage.make_dir("d")
    storage.append("d/f", b"12345")
    storage.inject(fault, room_bytes=4)
    with pytest.raises(OSError) as failed:
        operation(storage)
    assert failed.value.errno == code
    assert storage.read_file("d/f") == left
    storage.clear()
    operation(storage)  # healthy again
