"""Proves a broker keeps answering while the disk waits of its logs are held: a segment roll's fsync
and producer snapshot, a follower's truncation, a new leader's epoch checkpoint, a deleted
partition's removal and the clean shutdown's last flush each run on the Ray storage worker's thread
while Metadata (and Produce, Fetch) are answered on the event loop; a truncation and a deleting
StopReplica are answered only once durable. A real asyncio loop and threads over an in-memory disk
whose chosen operations wait on an event; no Ray."""
from __future__ import annotations

import asyncio
import threading

from actors.core.config import KafkaConfig
from actors.core.errors import ErrorCode
from actors.core.log.checkpoints import (
    RECOVERY_POINT_OFFSET_CHECKPOINT,
    OffsetCheckpointFile,
)
from actors.core.log.log import Log
from actors.core.log.log_config import LogConfig
from actors.core.log.storage import InMemoryStorage
from actors.core.messages.broker_registration import BrokerRegistrationResponse
from actors.core.messages.metadata import MetadataRequest, MetadataResponse
from actors.core.messages.stop_replica import StopReplicaRequest, StopReplicaTopic
from actors.core.broker.broker_core import BrokerCore
from actors.core.fetcher.follower_messages import (
    FollowerAppendPartition,
    FollowerAppendRequest,
    FollowerTruncatePartition,
    FollowerTruncateRequest,
    TruncationMode,
)
from actors.drivers.broker import BrokerDriver
from actors.ray_seams import RayStorageWorker
from tests.support.broker_driver_seams import WAIT_LIMIT_S, Seams, SlowDisk, ask, wait_until
from tests.support.core_driver import (
    fetch_request, fetch_result, leader_and_isr_request, make_batch, produce_request, produce_result,
    update_metadata_request,
)

# One batch of one small record per segment: the second append rolls.
SEGMENT_BYTES = 100


class Broker:
    """Broker 0 over a SlowDisk, registered, with the Ray storage worker."""

    def __init__(self) -> None:
        self.disk, self.seams = SlowDisk(), Seams()
        self.core = BrokerCore(broker_id=0, storage=self.disk, config=KafkaConfig({
            "log.segment.bytes": str(SEGMENT_BYTES), "log.flush.offset.checkpoint.interval.ms": "600000",
            "replica.high.watermark.checkpoint.interval.ms": "600000"}),
            host="broker-0", incarnation_id="incarnation", cluster_id="cluster", now_ms=0)
        self.worker = RayStorageWorker("test-storage")
        self.driver = BrokerDriver(self.core, self.seams, self.seams, self.seams, self.worker)
        self.driver.start()
        self.seams.replies.pop()(BrokerRegistrationResponse(broker_epoch=1))

    async def settle(self) -> None:
        """Wait until every storage work given so far is done and reported."""
        await self.worker.drain()
        await asyncio.sleep(0)  # the reports run on the loop after the thread finished

    async def hold(self, operation: str, test, step, what: str) -> None:
        """Hold ``operation`` on paths passing ``test``, run ``step`` and wait until it is held."""
        self.disk.hold = (operation, test)
        step()
        entered = await asyncio.get_running_loop().run_in_executor(None, self.disk.entered.wait, WAIT_LIMIT_S)
        assert entered, f"{what} never started"

    def answers_meanwhile(self) -> None:
        assert isinstance(ask(self.driver, MetadataRequest(topics=("t",))), MetadataResponse)
        assert not self.disk.release.is_set() and not self.disk.released_by_limit, \
            "the request was answered only after the held operation ended: it ran on the event loop"
        assert threading.get_ident() not in self.disk.held_threads, "the disk wait ran on the event loop's thread"

    async def close(self) -> None:
        self.disk.hold = None
        self.disk.release.set()
        await self.worker.drain()
        self.worker.shutdown()


def run(story) -> None:
    async def main():
        broker = Broker()
        try:
            await story(broker)
        finally:
            await broker.close()
    asyncio.run(main())


def lead(broker: Broker, leader_epoch: int = 0) -> None:
    ask(broker.driver, leader_and_isr_request("t", 0, leader=0, leader_epoch=leader_epoch))
    ask(broker.driver, update_metadata_request("t", 0, leader=0, leader_epoch=leader_epoch))


def produce(broker: Broker, value: bytes) -> int:
    answer = produce_result(ask(broker.driver, produce_request("t", 0, make_batch([value]))))
    assert answer.error_code == ErrorCode.NONE, answer
    return answer.base_offset


# ------------------------------------------------------------------------------------- the tests
def test_a_roll_answers_while_the_old_segment_fsync_is_held_and_commits_after():
    async def story(broker: Broker):
        lead(broker)
        produce(broker, b"a")
        await broker.settle()
        log = broker.core.replica_manager.partitions[("t", 0)].log
        await broker.hold("fsync", lambda path: path.endswith(".log"), lambda: produce(broker, b"b"),
                          "the roll's fsync")
        assert log.number_of_segments == 2, "the second batch rolled a new segment"
        broker.answers_meanwhile()
        assert produce(broker, b"c") == 2
        assert fetch_result(ask(broker.driver, fetch_request("t", 0, 0))).error_code == ErrorCode.NONE
        assert log.recovery_point == 0, "the recovery point moved before the roll's fsync finished"
        assert not any(name.endswith(".snapshot") for name in broker.disk.list_dir("t-0")), \
            "the producer snapshot was written before the fsync of the batches it describes"
        broker.disk.release.set()
        await wait_until(lambda: log.recovery_point >= 1, "the roll's flush to offset 1 to be committed")
        await wait_until(lambda: "00000000000000000001.snapshot" in broker.disk.list_dir("t-0"),
                         "the producer snapshot taken at the roll")
    run(story)


def follower_batches(count: int) -> list[bytes]:
    """``count`` batches as a leader at epoch 0 stamped them, one per read."""
    leader = Log.open(InMemoryStorage(), "t-0", LogConfig())
    for index in range(count):
        leader.append_as_leader(make_batch([b"v%d" % index]), leader_epoch=0)
    return [leader.read(offset, 1).records for offset in range(count)]  # one whole batch each


def test_a_follower_truncation_is_answered_once_durable_and_the_broker_answers_meanwhile():
    async def story(broker: Broker):
        follow = leader_and_isr_request("t", 0, leader=1, replicas=(0, 1), isr=(1, 0))
        ask(broker.driver, follow)
        ask(broker.driver, update_metadata_request("t", 0, leader=1, replicas=(0, 1)))
        for offset, records in enumerate(follower_batches(3)):
            appended = ask(broker.driver, FollowerAppendRequest(partitions=(
                FollowerAppendPartition(topic="t", partition=0, current_leader_epoch=0, fetch_offset=offset,
                                        records=records, leader_high_watermark=0),)))
            assert appended.partitions[0].error_code == ErrorCode.NONE, appended
        await broker.settle()
        truncated: list = []
        truncate = FollowerTruncateRequest(partitions=(FollowerTruncatePartition(
            topic="t", partition=0, current_leader_epoch=0, mode=TruncationMode.TO_OFFSET, offset=1),))
        await broker.hold("fsync", lambda path: path.endswith(".log"),
                          lambda: broker.driver.handle(truncate, truncated.append),
                          "the truncation's fsync")
        broker.answers_meanwhile()
        assert not truncated, "the truncation was answered before it was durable"
        assert broker.core.replica_manager.partitions[("t", 0)].log_end_offset == 1
        broker.disk.release.set()
        await wait_until(lambda: truncated, "the truncation's answer")
        assert truncated[0].partitions[0].log_end_offset == 1
        assert OffsetCheckpointFile(broker.disk, RECOVERY_POINT_OFFSET_CHECKPOINT).read()[("t", 0)] <= 1, \
            "the recovery-point checkpoint must not stay above the cut"
    run(story)


def test_a_new_leader_answers_while_its_epoch_checkpoint_write_is_held():
    async def story(broker: Broker):
        lead(broker)
        produce(broker, b"a")
        await broker.settle()
        checkpoint = "t-0/leader-epoch-checkpoint"
        await broker.hold("write", lambda path: path == checkpoint, lambda: lead(broker, leader_epoch=1),
                          "the epoch checkpoint's write")
        broker.answers_meanwhile()
        assert produce(broker, b"b") == 1
        log = broker.core.replica_manager.partitions[("t", 0)].log
        assert log.latest_epoch == 1
        broker.disk.release.set()
        await broker.settle()
        assert b"\n1 1\n" in broker.disk.read_file(checkpoint), "the new epoch reached the checkpoint file"
    run(story)


def test_a_deleting_stop_replica_is_answered_once_the_directory_is_gone_and_the_broker_answers_meanwhile():
    async def story(broker: Broker):
        lead(broker)
        produce(broker, b"a")
        await broker.settle()
        stopped: list = []
        stop = StopReplicaRequest(controller_id=-1, controller_epoch=1, broker_epoch=-1, delete_partitions=True,
                                  topics=(StopReplicaTopic(name="t", partition_indexes=(0,)),))
        await broker.hold("delete", lambda path: path.startswith("t-0"),
                          lambda: broker.driver.handle(stop, stopped.append),
                          "the partition directory's removal")
        broker.answers_meanwhile()
        assert not stopped, "the deletion was answered before the directory was removed"
        assert "t-0" not in broker.disk.list_dir(""), "the name must be free at once for a new replica"
        broker.disk.release.set()
        await wait_until(lambda: stopped, "the StopReplica answer")
        assert stopped[0].error_code == ErrorCode.NONE
        assert not any(name.startswith("t-0") for name in broker.disk.list_dir("")), broker.disk.list_dir("")
    run(story)


def test_the_clean_shutdown_flushes_on_the_storage_worker_while_the_loop_runs():
    async def story(broker: Broker):
        lead(broker)
        produce(broker, b"a")
        produce(broker, b"b")
        await broker.settle()
        ticks = 0

        async def tick():
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0.01)
        ticker = asyncio.get_running_loop().create_task(tick())
        try:
            await broker.hold("fsync", lambda path: path.endswith(".log"), broker.driver.shutdown,
                              "the shutdown's fsync")
            assert threading.get_ident() not in broker.disk.held_threads, "the shutdown fsynced on the event loop"
            seen = ticks
            await wait_until(lambda: ticks > seen, "the event loop to run while the shutdown's fsync is held")
            assert not broker.disk.released_by_limit
            assert broker.driver.stopped
            broker.disk.release.set()
            await broker.settle()
        finally:
            ticker.cancel()
        assert OffsetCheckpointFile(broker.disk, RECOVERY_POINT_OFFSET_CHECKPOINT).read() == {("t", 0): 2}
        assert "00000000000000000002.snapshot" in broker.disk.list_dir("t-0")
    run(story)
