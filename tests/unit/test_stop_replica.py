"""StopReplica without delete keeps the partition, as Kafka 2.4 does: its high watermark stays in the
checkpoint, its leader epoch still fences older LeaderAndIsr states, and it answers data requests
NOT_LEADER_OR_FOLLOWER until the controller names its role again; driven step by step, no Ray."""
from __future__ import annotations

from actors.core.effects import RemovePartitionsFromFetcher
from actors.core.errors import ErrorCode
from actors.core.log.checkpoints import REPLICATION_OFFSET_CHECKPOINT, OffsetCheckpointFile
from actors.core.messages.stop_replica import StopReplicaRequest, StopReplicaTopic
from tests.support.core_driver import CoreDriver, fetch_result, make_batch, produce_result

CHECKPOINT_INTERVAL_MS = 100


def stop_replica(driver, *, delete: bool, topic: str = "t", partition: int = 0):
    return driver.ask("handle_stop_replica", StopReplicaRequest(
        controller_id=-1, controller_epoch=1, broker_epoch=-1, delete_partitions=delete,
        topics=(StopReplicaTopic(name=topic, partition_indexes=(partition,)),)))


def leader_with_two_records(isr=(0,)) -> CoreDriver:
    """Broker 0 leads t-0 at leader epoch 5 with offsets 0-1 committed."""
    driver = CoreDriver(broker_id=0, config={
        "replica.high.watermark.checkpoint.interval.ms": str(CHECKPOINT_INTERVAL_MS)})
    driver.become("t", 0, leader=0, replicas=(0, 1), isr=isr, leader_epoch=5)
    driver.produce("t", 0, make_batch([b"a", b"b"]))
    if 1 in isr:
        driver.fetch("t", 0, 2, replica_id=1)
    assert driver.manager.partitions[("t", 0)].high_watermark == 2
    return driver


def checkpointed_high_watermarks(driver) -> dict:
    return OffsetCheckpointFile(driver.storage, REPLICATION_OFFSET_CHECKPOINT).read()


def test_the_high_watermark_checkpoint_keeps_the_entry_of_a_replica_stopped_without_delete():
    driver = leader_with_two_records()
    assert stop_replica(driver, delete=False).error_code == ErrorCode.NONE
    driver.advance(CHECKPOINT_INTERVAL_MS)
    assert checkpointed_high_watermarks(driver) == {("t", 0): 2}
    partition = driver.manager.partitions[("t", 0)]
    assert (partition.leader_epoch, partition.high_watermark, partition.log_end_offset) == (5, 2, 2)
    # The next process starts from that checkpoint, not from zero.
    driver.shutdown()
    restarted = CoreDriver(storage=driver.storage)
    assert restarted.manager.partitions[("t", 0)].high_watermark == 2


def test_after_stop_replica_without_delete_an_older_leader_epoch_is_still_refused():
    driver = leader_with_two_records()
    stop_replica(driver, delete=False)
    # Kafka 2.4's becomeLeaderOrFollower answers a leader epoch that is not newer with
    # STALE_CONTROLLER_EPOCH in the partition's error (FENCED_LEADER_EPOCH came with KIP-570, for
    # StopReplica, in 2.6).
    older = driver.become("t", 0, leader=1, replicas=(0, 1), isr=(1,), leader_epoch=4)
    assert older.partition_errors[0].error_code == ErrorCode.STALE_CONTROLLER_EPOCH
    same = driver.become("t", 0, leader=0, replicas=(0, 1), isr=(0,), leader_epoch=5)
    assert same.partition_errors[0].error_code == ErrorCode.STALE_CONTROLLER_EPOCH
    partition = driver.manager.partitions[("t", 0)]
    assert (partition.leader_epoch, partition.is_leader) == (5, False)
    newer = driver.become("t", 0, leader=0, replicas=(0, 1), isr=(0,), leader_epoch=6)
    assert newer.partition_errors[0].error_code == ErrorCode.NONE
    assert partition.is_leader and partition is driver.manager.partitions[("t", 0)]
    assert produce_result(driver.answers[driver.produce("t", 0, make_batch([b"c"]))]).base_offset == 2


def test_a_stopped_replica_answers_produce_and_fetch_not_leader_or_follower():
    driver = leader_with_two_records(isr=(0, 1))
    parked_produce = driver.produce("t", 0, make_batch([b"waits"]), acks=-1)
    parked_fetch = driver.fetch("t", 0, 2, max_wait_ms=500, min_bytes=1 << 20)
    assert parked_produce not in driver.answers and parked_fetch not in driver.answers
    stop_replica(driver, delete=False)
    # Delayed requests are completed at once rather than left to time out.
    assert produce_result(driver.answers[parked_produce]).error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert fetch_result(driver.answers[parked_fetch]).error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    produced = produce_result(driver.answers[driver.produce("t", 0, make_batch([b"x"]))])
    assert produced.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert fetch_result(driver.answers[driver.fetch("t", 0, 0)]).error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    follower = fetch_result(driver.answers[driver.fetch("t", 0, 0, replica_id=1)])
    assert follower.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert driver.manager.partitions[("t", 0)].log_end_offset == 3, "StopReplica without delete keeps the log"


def test_a_stopped_follower_leaves_its_fetcher_and_keeps_its_log():
    driver = CoreDriver(broker_id=0)
    driver.become("t", 0, leader=1, replicas=(1, 0), isr=(1, 0), leader_epoch=3)
    effects = driver.manager.handle_stop_replica(99, StopReplicaRequest(
        controller_id=-1, controller_epoch=1, broker_epoch=-1, delete_partitions=False,
        topics=(StopReplicaTopic(name="t", partition_indexes=(0,)),)), driver.now_ms)
    assert any(isinstance(e, RemovePartitionsFromFetcher) and ("t", 0) in e.partitions for e in effects)
    partition = driver.manager.partitions[("t", 0)]
    assert (partition.leader_epoch, partition.leader_id) == (3, -1)
    assert "t-0" in driver.storage.list_dir("")


def test_stop_replica_with_delete_after_a_stop_without_delete_removes_the_partition_and_its_checkpoint_entry():
    driver = leader_with_two_records()
    stop_replica(driver, delete=False)
    stop_replica(driver, delete=True)
    assert ("t", 0) not in driver.manager.partitions and "t-0" not in driver.storage.list_dir("")
    assert checkpointed_high_watermarks(driver) == {}
    # A topic created again under the same name starts again from leader epoch 0.
    again = driver.become("t", 0, leader=0, replicas=(0, 1), isr=(0,), leader_epoch=0)
    assert again.partition_errors[0].error_code == ErrorCode.NONE
