"""Proves the shipped broker driver halts its broker once when its log directory fails, whether the
storage error surfaces on the event loop (a produce on a full disk, answered KAFKA_STORAGE_ERROR)
or later on the Ray storage worker's thread (an fsync error in a roll's flush); a real asyncio loop
and the real storage worker over an in-memory disk behind the storage-fault seam; no Ray."""
from __future__ import annotations

import asyncio

from actors.core.config import KafkaConfig
from actors.core.errors import ErrorCode
from actors.core.log.storage import InMemoryStorage
from actors.core.log.storage_faults import DISK_FULL, FSYNC_ERROR, FaultyStorage
from actors.core.messages.broker_registration import BrokerRegistrationResponse
from actors.core.broker.broker_core import BrokerCore
from actors.drivers.broker import BrokerDriver
from actors.ray_seams import RayStorageWorker
from tests.support.broker_driver_seams import Seams, ask, wait_until
from tests.support.core_driver import (
    leader_and_isr_request, make_batch, produce_request, produce_result, update_metadata_request,
)

SEGMENT_BYTES = 100  # one small batch per segment: the second append rolls (and fsyncs the first)


def run(story) -> None:
    async def main():
        disk, seams, halts = FaultyStorage(InMemoryStorage()), Seams(), []
        core = BrokerCore(broker_id=0, storage=disk, config=KafkaConfig({
            "log.segment.bytes": str(SEGMENT_BYTES), "log.flush.offset.checkpoint.interval.ms": "600000"}),
            host="broker-0", incarnation_id="incarnation", cluster_id="cluster", now_ms=0)
        worker = RayStorageWorker("test-storage")
        driver = BrokerDriver(core, seams, seams, seams, worker, halt=halts.append)
        driver.start()
        seams.replies.pop()(BrokerRegistrationResponse(broker_epoch=1))
        ask(driver, leader_and_isr_request("t", 0, leader=0))
        ask(driver, update_metadata_request("t", 0, leader=0))
        try:
            await story(driver, disk, worker, halts)
        finally:
            await worker.drain()
            worker.shutdown()
    asyncio.run(main())


def produce(driver: BrokerDriver, value: bytes):
    return produce_result(ask(driver, produce_request("t", 0, make_batch([value]))))


def test_a_full_disk_on_the_event_loop_answers_kafka_storage_error_and_halts_the_broker():
    async def story(driver, disk, worker, halts):
        assert produce(driver, b"a").error_code == ErrorCode.NONE
        await worker.drain()
        disk.inject(DISK_FULL, room_bytes=10)
        assert produce(driver, b"b").error_code == ErrorCode.KAFKA_STORAGE_ERROR
        assert len(halts) == 1 and "ENOSPC" in halts[0], halts
        assert driver.stopped
    run(story)


def test_an_fsync_error_on_the_storage_worker_halts_the_broker():
    async def story(driver, disk, worker, halts):
        assert produce(driver, b"a").error_code == ErrorCode.NONE
        await worker.drain()
        disk.inject(FSYNC_ERROR)
        assert produce(driver, b"b").error_code == ErrorCode.NONE  # written; its roll's fsync fails later
        await wait_until(lambda: halts, "the broker to halt on the fsync error reported by the storage worker")
        assert len(halts) == 1 and "EIO" in halts[0], halts
        assert driver.stopped
        assert driver.core.replica_manager.partitions[("t", 0)].log.recovery_point == 0
    run(story)
