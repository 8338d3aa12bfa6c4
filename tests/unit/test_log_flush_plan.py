"""Proves the periodic log flush is planned by the core, run by someone else and committed only
after: the recovery point and its checkpoint do not move before the fsyncs are reported done, a
commit after a truncation is void, and a crash between plan and commit (the in-memory disk cut back
to what was fsynced) loses only what no finished flush covered; driven step by step, no Ray."""
from __future__ import annotations

from actors.core.effects import StorageWork
from actors.core.log.checkpoints import (
    RECOVERY_POINT_OFFSET_CHECKPOINT, REPLICATION_OFFSET_CHECKPOINT, OffsetCheckpointFile,
)
from actors.core.log.log import Log
from actors.core.log.log_config import LogConfig
from actors.core.log.storage import InMemoryStorage
from actors.codecs.record_batches import read_records
from tests.support.core_driver import CoreDriver, make_batch

FLUSH_INTERVAL_MS = 1_000
CONFIG = {"log.flush.offset.checkpoint.interval.ms": str(FLUSH_INTERVAL_MS),
          "replica.high.watermark.checkpoint.interval.ms": "600000"}


def values(log: Log) -> list[bytes]:
    records = read_records("t", 0, log.read(log.log_start_offset, 1 << 20).records, 0) \
        if log.log_end_offset > log.log_start_offset else []
    return [r.value for r in records]


def leader(storage=None) -> CoreDriver:
    driver = CoreDriver(storage=storage, config=CONFIG, hold_storage_work=True)
    driver.become("t", 0, leader=0)
    driver.finish_storage_work()  # the new leader's epoch checkpoint
    return driver


def checkpointed_recovery_points(storage) -> dict:
    return OffsetCheckpointFile(storage, RECOVERY_POINT_OFFSET_CHECKPOINT).read()


# ------------------------------------------------------------------------------------ the log
def test_a_flush_plan_names_the_unflushed_segments_and_moves_nothing_until_committed():
    storage = InMemoryStorage()
    log = Log.open(storage, "t-0", LogConfig.from_properties({}))
    log.append_as_leader(make_batch([b"a", b"b"]), leader_epoch=0)
    plan = log.plan_flush()
    assert plan.target_offset == 2 and "t-0/00000000000000000000.log" in plan.paths
    assert log.recovery_point == 0 and storage.unsynced_bytes("t-0/00000000000000000000.log") > 0
    for path in plan.paths:
        storage.fsync(path)
    assert log.commit_flush(plan) and log.recovery_point == 2
    assert log.plan_flush() is None, "nothing left to flush"


def test_a_commit_after_a_truncation_is_void():
    storage = InMemoryStorage()
    log = Log.open(storage, "t-0", LogConfig.from_properties({}))
    log.append_as_leader(make_batch([b"a"]), leader_epoch=0)
    log.append_as_leader(make_batch([b"b"]), leader_epoch=0)
    plan = log.plan_flush()
    log.truncate_to(1)
    log.append_as_leader(make_batch([b"c"]), leader_epoch=1)  # offset 1 again, never fsynced
    for path in plan.paths:
        storage.fsync(path)
    assert not log.commit_flush(plan)
    assert log.recovery_point <= 1, "the recovery point must not cover the unflushed offset 1"


# ---------------------------------------------------------------------------- the replica manager
def test_the_recovery_point_and_its_checkpoint_move_only_when_the_flush_is_done():
    driver = leader()
    driver.produce("t", 0, make_batch([b"a", b"b"]))
    driver.advance(FLUSH_INTERVAL_MS)
    assert [type(work) for work in driver.storage_works] == [StorageWork]
    work = driver.storage_works[0]
    assert work.fsync_paths and not work.files, "the checkpoints wait for the fsyncs"
    log = driver.manager.partitions[("t", 0)].log
    assert log.recovery_point == 0
    assert checkpointed_recovery_points(driver.storage) == {}
    driver.advance(FLUSH_INTERVAL_MS)
    assert len(driver.storage_works) == 1, "one flush at a time"
    driver.finish_storage_work()
    assert log.recovery_point == 2
    assert checkpointed_recovery_points(driver.storage) == {("t", 0): 2}


def test_a_crash_between_plan_and_commit_loses_only_what_no_finished_flush_covered():
    driver = leader()
    driver.produce("t", 0, make_batch([b"flushed"]))
    driver.advance(FLUSH_INTERVAL_MS)
    driver.finish_storage_work()
    driver.produce("t", 0, make_batch([b"planned, never fsynced"]))
    driver.advance(FLUSH_INTERVAL_MS)
    assert driver.storage_works, "a flush is planned and not yet run"
    driver.storage.simulate_crash()  # the machine dies before the worker's fsync
    restarted = CoreDriver(storage=driver.storage, config=CONFIG)
    log = restarted.manager.partitions[("t", 0)].log
    assert values(log) == [b"flushed"]
    assert log.recovery_point == 1


def test_the_high_watermark_checkpoint_is_written_by_the_storage_work():
    driver = CoreDriver(config={"replica.high.watermark.checkpoint.interval.ms": "100"}, hold_storage_work=True)
    driver.become("t", 0, leader=0)
    driver.finish_storage_work()  # the new leader's epoch checkpoint
    driver.produce("t", 0, make_batch([b"a"]))
    driver.advance(100)
    assert not driver.storage.exists(REPLICATION_OFFSET_CHECKPOINT)
    assert [work.files[0][0] for work in driver.storage_works] == [REPLICATION_OFFSET_CHECKPOINT]
    driver.finish_storage_work()
    assert OffsetCheckpointFile(driver.storage, REPLICATION_OFFSET_CHECKPOINT).read() == {("t", 0): 1}


def test_a_failed_flush_commits_nothing_and_takes_the_log_directory_offline():
    """As Kafka's flush on an IOException: after a failed fsync nothing more is planned or trusted."""
    driver = leader()
    driver.produce("t", 0, make_batch([b"a"]))
    driver.advance(FLUSH_INTERVAL_MS)
    driver.fail_storage_work("OSError: disk gone")
    assert driver.manager.partitions[("t", 0)].log.recovery_point == 0
    assert driver.manager.log_dir_failure_channel.offline
    driver.advance(FLUSH_INTERVAL_MS)
    assert driver.storage_works == []  # the flusher stopped: no flush or checkpoint any more
    assert driver.manager.partitions[("t", 0)].log.recovery_point == 0
