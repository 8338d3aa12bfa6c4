"""Proves the logs' disk waits that now run after the step that planned them keep Kafka's order of
what is durable before what: a crash (the in-memory disk cut back to its fsyncs) or a killed process
(the storage work not yet run is lost) between a roll, truncation, leadership change, deletion or
clean shutdown and its storage work still recovers a consistent log, and nothing that depends on
the work (a recovery point, a truncation's or a deletion's answer) moves before it is done. Driven
step by step with held storage work; no Ray."""
from __future__ import annotations

import copy

from actors.core.errors import ErrorCode
from actors.core.log.checkpoints import (
    RECOVERY_POINT_OFFSET_CHECKPOINT, OffsetCheckpointFile,
)
from actors.core.log.log import Log
from actors.core.log.log_config import LogConfig
from actors.core.log.storage import InMemoryStorage
from actors.core.messages.stop_replica import StopReplicaRequest, StopReplicaTopic
from actors.core.fetcher.follower_messages import (
    FollowerAppendPartition, FollowerAppendRequest, FollowerTruncatePartition, FollowerTruncateRequest,
    TruncationMode,
)
from actors.codecs.record_batches import read_records
from tests.support.core_driver import CoreDriver, make_batch

FLUSH_INTERVAL_MS = 1_000
# One batch of one small record per segment: every append after the first rolls.
CONFIG = {"log.segment.bytes": "100", "log.flush.offset.checkpoint.interval.ms": str(FLUSH_INTERVAL_MS),
          "replica.high.watermark.checkpoint.interval.ms": "600000"}


def values(log: Log) -> list[bytes]:
    """Every value in the log, read batch by batch (a torn or missing batch fails the read)."""
    found, offset = [], log.log_start_offset
    while offset < log.log_end_offset:
        info = log.read(offset, 1)
        assert info.records, f"{log} has no batch at {offset}"
        found += [record.value for record in read_records("t", 0, info.records, 0)]
        offset = info.last_offset + 1
    return found


def leader(storage=None, leader_epoch: int = 0) -> CoreDriver:
    driver = CoreDriver(storage=storage, config=CONFIG, hold_storage_work=True)
    driver.become("t", 0, leader=0, leader_epoch=leader_epoch)
    driver.finish_storage_work()
    return driver


def restart(storage) -> CoreDriver:
    """A new process over ``storage``; what the last one held back is lost with it."""
    return CoreDriver(storage=storage, config=CONFIG, hold_storage_work=True)


def log_of(driver: CoreDriver) -> Log:
    return driver.manager.partitions[("t", 0)].log


def recovery_points(storage) -> dict:
    return OffsetCheckpointFile(storage, RECOVERY_POINT_OFFSET_CHECKPOINT).read()


# ------------------------------------------------------------------------------------- the roll
def test_a_roll_advances_the_recovery_point_and_writes_the_snapshot_only_after_its_fsync():
    driver = leader()
    driver.produce("t", 0, make_batch([b"a"]))
    driver.produce("t", 0, make_batch([b"b"]))  # rolls: the segment holding "a" is flushed later
    assert log_of(driver).number_of_segments == 2 and driver.storage_works
    assert log_of(driver).recovery_point == 0, "the recovery point moved before the roll's fsync"
    assert not driver.storage.exists("t-0/00000000000000000001.snapshot"), \
        "the snapshot at the roll is written after the fsync of the batches it describes"

    crashed = copy.deepcopy(driver.storage)
    crashed.simulate_crash()  # the machine dies before the roll's work
    assert values(log_of(restart(crashed))) == [], "only what no fsync covered is lost, and the log is whole"

    driver.finish_storage_work()
    assert log_of(driver).recovery_point == 1
    assert driver.storage.exists("t-0/00000000000000000001.snapshot")
    driver.storage.simulate_crash()  # the machine dies after it: "a" was made durable by the roll
    assert values(log_of(restart(driver.storage))) == [b"a"]


# ------------------------------------------------------------------------------- the truncation
def follower_with(values_: list[bytes]) -> CoreDriver:
    driver = CoreDriver(config=CONFIG, hold_storage_work=True)
    driver.become("t", 0, leader=1, replicas=(0, 1), isr=(1, 0))
    source = Log.open(InMemoryStorage(), "t-0", LogConfig())
    for offset, value in enumerate(values_):
        source.append_as_leader(make_batch([value]), leader_epoch=0)
        answer = driver.ask("handle_follower_append", FollowerAppendRequest(partitions=(FollowerAppendPartition(
            topic="t", partition=0, current_leader_epoch=0, fetch_offset=offset,
            records=source.read(offset, 1).records, leader_high_watermark=0),)))
        assert answer.partitions[0].error_code == ErrorCode.NONE, answer
    driver.finish_storage_work()
    return driver


def test_a_truncation_is_answered_with_its_recovery_point_checkpoint_durable_and_not_before():
    driver = follower_with([b"a", b"b", b"c"])
    driver.advance(FLUSH_INTERVAL_MS)  # the periodic flush: everything fsynced and checkpointed
    driver.finish_storage_work()
    assert recovery_points(driver.storage) == {("t", 0): 3}

    request_id = driver.call("handle_follower_truncate", FollowerTruncateRequest(partitions=(FollowerTruncatePartition(
        topic="t", partition=0, current_leader_epoch=0, mode=TruncationMode.TO_OFFSET, offset=1),)))
    assert request_id not in driver.answers, "the truncation was answered before it was durable"
    assert log_of(driver).log_end_offset == 1
    # A crash now: the cut is on disk, the checkpoint still says 3; the log opens at its end.
    assert values(log_of(restart(driver.storage))) == [b"a"]

    retried = driver.call("handle_follower_truncate", FollowerTruncateRequest(partitions=(FollowerTruncatePartition(
        topic="t", partition=0, current_leader_epoch=0, mode=TruncationMode.TO_OFFSET, offset=1),)))
    assert retried not in driver.answers, "a retried truncation was answered before the first was durable"
    driver.finish_storage_work()
    assert driver.answers[request_id].partitions[0].log_end_offset == 1
    assert driver.answers[retried].partitions[0].log_end_offset == 1
    assert recovery_points(driver.storage) == {("t", 0): 1}, \
        "a recovery point above the cut would let a restart trust segments written after it unflushed"

    # What the follower appends next rolls segments whose fsyncs have not run when the machine dies:
    # the restart rescans from the cut and keeps a whole log.
    source = Log.open(InMemoryStorage(), "t-0", LogConfig())
    source.append_as_leader(make_batch([b"a"]), leader_epoch=0)
    for value in (b"x", b"y"):
        offset = source.log_end_offset
        source.append_as_leader(make_batch([value]), leader_epoch=1)
        driver.ask("handle_follower_append", FollowerAppendRequest(partitions=(FollowerAppendPartition(
            topic="t", partition=0, current_leader_epoch=0, fetch_offset=offset,
            records=source.read(offset, 1).records, leader_high_watermark=0),)))
    driver.storage.simulate_crash()
    reopened = log_of(restart(driver.storage))
    assert values(reopened)[:1] == [b"a"] and reopened.recovery_point <= reopened.log_end_offset


# --------------------------------------------------------------------------------- leader epochs
def test_a_lost_epoch_checkpoint_write_is_rebuilt_from_the_batches_on_disk():
    driver = leader()
    driver.produce("t", 0, make_batch([b"a"]))
    driver.produce("t", 0, make_batch([b"b"]))
    driver.advance(FLUSH_INTERVAL_MS)
    driver.finish_storage_work()
    driver.become("t", 0, leader=0, leader_epoch=1)  # the new epoch's checkpoint write is held
    driver.produce("t", 0, make_batch([b"c"]))
    assert b"1 2" not in driver.storage.read_file("t-0/leader-epoch-checkpoint")
    reopened = log_of(restart(driver.storage))  # the process is killed before the write ran
    assert values(reopened) == [b"a", b"b", b"c"]
    assert reopened.end_offset_for_epoch(0) == (0, 2), "epoch 0 ends where epoch 1's batch begins"
    assert reopened.latest_epoch == 1


# ------------------------------------------------------------------------------------ deletion
def test_a_deleted_partition_is_renamed_at_once_answered_when_gone_and_a_leftover_removed_at_start():
    driver = leader()
    driver.produce("t", 0, make_batch([b"a"]))
    driver.finish_storage_work()
    request_id = driver.call("handle_stop_replica", StopReplicaRequest(
        controller_id=-1, controller_epoch=1, broker_epoch=-1, delete_partitions=True,
        topics=(StopReplicaTopic(name="t", partition_indexes=(0,)),)))
    assert request_id not in driver.answers, "the deletion was answered before it was durable"
    assert "t-0" not in driver.storage.list_dir("") and "t-0.0-delete" in driver.storage.list_dir("")

    restarted = restart(driver.storage)  # killed before the work: the renamed directory is left
    assert ("t", 0) not in restarted.manager.partitions
    restarted.advance(1)
    restarted.finish_storage_work()
    assert not any(name.startswith("t-0") for name in restarted.storage.list_dir("")), \
        restarted.storage.list_dir("")

    driver.finish_storage_work()
    assert driver.answers[request_id].error_code == ErrorCode.NONE


# ------------------------------------------------------------------------------- clean shutdown
def test_a_clean_shutdown_checkpoints_the_log_end_only_with_the_fsyncs_that_reach_it():
    driver = leader()
    driver.produce("t", 0, make_batch([b"a"]))
    driver.finish_storage_work()
    driver._apply(driver.manager.shutdown())  # the last work is planned, not yet run
    assert recovery_points(driver.storage).get(("t", 0), 0) == 0
    crashed = copy.deepcopy(driver.storage)
    crashed.simulate_crash()
    assert values(log_of(restart(crashed))) == []

    driver.finish_storage_work()
    assert recovery_points(driver.storage) == {("t", 0): 1}
    driver.storage.simulate_crash()
    after = restart(driver.storage)
    assert values(log_of(after)) == [b"a"] and after.manager.partitions[("t", 0)].high_watermark == 1
