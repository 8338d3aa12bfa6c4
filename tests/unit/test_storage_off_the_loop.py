"""Proves a broker keeps answering while its disk is slow: under the Ray storage worker the periodic
flush's fsync runs on a thread of its own, and Metadata, Produce and Fetch are answered on the event
loop while that fsync is held; the recovery point moves only once the fsync finished. A real asyncio
loop and threads over an in-memory disk whose fsync waits on an event; no Ray."""
from __future__ import annotations

import asyncio
import threading

from actors.core.config import KafkaConfig
from actors.core.errors import ErrorCode
from actors.core.messages.broker_registration import BrokerRegistrationResponse
from actors.core.messages.metadata import MetadataRequest, MetadataResponse
from actors.core.broker.broker_core import BrokerCore
from actors.drivers.broker import BrokerDriver
from actors.ray_seams import RayStorageWorker
from tests.support.broker_driver_seams import WAIT_LIMIT_S, Seams, SlowDisk, ask, wait_until
from tests.support.core_driver import (
    fetch_request, fetch_result, leader_and_isr_request, make_batch, produce_request, produce_result,
    update_metadata_request,
)

FLUSH_INTERVAL_MS = 1_000


async def slow_fsync_story() -> None:
    disk, seams = SlowDisk(), Seams()
    core = BrokerCore(broker_id=0, storage=disk, config=KafkaConfig({
        "log.flush.offset.checkpoint.interval.ms": str(FLUSH_INTERVAL_MS),
        "replica.high.watermark.checkpoint.interval.ms": "600000"}),
        host="broker-0", incarnation_id="incarnation", cluster_id="cluster", now_ms=0)
    worker = RayStorageWorker("test-storage")
    driver = BrokerDriver(core, seams, seams, seams, worker)
    try:
        driver.start()
        seams.replies.pop()(BrokerRegistrationResponse(broker_epoch=1))
        ask(driver, leader_and_isr_request("t", 0, leader=0))
        ask(driver, update_metadata_request("t", 0, leader=0))
        assert produce_result(ask(driver, produce_request("t", 0, make_batch([b"a"])))) \
            .error_code == ErrorCode.NONE
        log = core.replica_manager.partitions[("t", 0)].log

        disk.hold = ("fsync", lambda path: path.endswith(".log"))  # a segment's fsync
        seams.now = FLUSH_INTERVAL_MS
        driver.on_wakeup()  # the flush falls due
        entered = await asyncio.get_running_loop().run_in_executor(None, disk.entered.wait, WAIT_LIMIT_S)
        assert entered, "the flush's fsync never started"

        # The fsync is held; the broker answers meanwhile.
        assert isinstance(ask(driver, MetadataRequest(topics=("t",))), MetadataResponse)
        produced = produce_result(ask(driver, produce_request("t", 0, make_batch([b"b"]))))
        assert (produced.error_code, produced.base_offset) == (ErrorCode.NONE, 1)
        fetched = fetch_result(ask(driver, fetch_request("t", 0, 0)))
        assert fetched.error_code == ErrorCode.NONE and fetched.high_watermark == 2
        assert not disk.release.is_set() and not disk.released_by_limit, \
            "the requests were answered only after the fsync ended: it ran on the event loop"
        assert threading.get_ident() not in disk.held_threads, "the fsync ran on the event loop's thread"
        assert log.recovery_point == 0, "the recovery point moved before its fsync finished"

        disk.release.set()
        await wait_until(lambda: log.recovery_point == 1, "the flush planned at offset 1 to be committed")
    finally:
        disk.release.set()
        await worker.drain()
        worker.shutdown()


def test_requests_are_answered_while_the_flush_fsync_is_held():
    asyncio.run(slow_fsync_story())
