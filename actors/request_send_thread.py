"""A controller request-send thread as a Ray actor: one per broker, FIFO, one request in flight.

Like Kafka's ``RequestSendThread``, it takes control requests for its one broker from a bounded
queue in order, sends each and waits for the answer, retrying with backoff (tenacity) for as long
as it takes (the broker may be restarting), and hands every answer back to the controller as an
event (the queue item's callback). The controller owns it: it is created when a broker registers
and killed when the broker is fenced. If it dies, the controller makes a new one and re-sends that
broker the current state.

The queue and its limit are the pure ``ControllerChannelQueue`` (actors/core/controller/
channel_queue.py): at ``raykafka.controller.queue.size.max`` waiting requests it drops the waiting
backlog, never the request in flight, and this shell asks the controller for a full resync of
its broker, which supersedes what was dropped. Metrics are Kafka's: the queue-size gauge counts
waiting requests only, and each request's queue time (enqueue to take) goes to a histogram.

The worker loop cannot die unnoticed: any exception it does not expect is logged and ends this
actor's process, so the controller's watch on its send threads finds it dead, replaces it and
resynchronises its broker. Were the loop to end while the actor still answered, that broker
would never get another control request, so ``status`` also refuses to answer once it has ended.
"""
from __future__ import annotations

import asyncio
import os
from typing import Any

import ray
from loguru import logger
from ray.exceptions import ActorDiedError, GetTimeoutError, RayActorError
from ray.util.metrics import Gauge, Histogram
from tenacity import AsyncRetrying, retry_if_exception_type, wait_exponential_jitter

from actors.core.controller.channel_queue import (
    QUEUE_SIZE_MAX_DEFAULT, ChannelQueueStatus, ControllerChannelQueue, QueueItem,
)
from actors.core.messages.leader_and_isr import LeaderAndIsrRequest
from actors.core.messages.stop_replica import StopReplicaRequest
from actors.core.messages.update_metadata import UpdateMetadataRequest
from actors.shell_support import OrderedInbox, monotonic_ms
from actors.transport import CONTROLLER_NODE, LinkDown, broker_node, shell_transport

HANDLERS = {
    LeaderAndIsrRequest: "handle_leader_and_isr",
    UpdateMetadataRequest: "handle_update_metadata",
    StopReplicaRequest: "handle_stop_replica",
}
REQUEST_TIMEOUT_S = 30.0
# While idle the thread probes its broker this often, so that Ray's word that the broker's actor
# died reaches the controller without waiting for a request or the heartbeat session to run out.
IDLE_PROBE_INTERVAL_S = 0.5
# Exit status of a send thread whose worker loop failed (the controller replaces it).
WORKER_FAILED_EXIT_STATUS = 70
QUEUE_TIME_BOUNDARIES_MS = [1, 5, 10, 50, 100, 500, 1_000, 5_000, 10_000, 60_000]

_metrics: dict[str, Any] = {}


def _queue_size_gauge() -> Gauge:
    if "queue_size" not in _metrics:
        _metrics["queue_size"] = Gauge(
            "raykafka_controller_channel_queue_size",
            description="Control requests waiting for a broker, the one in flight excluded (Kafka's QueueSize)",
            tag_keys=("broker_id",))
    return _metrics["queue_size"]


def _queue_time_histogram() -> Histogram:
    if "queue_time" not in _metrics:
        _metrics["queue_time"] = Histogram(
            "raykafka_controller_channel_request_queue_time_ms",
            description="Time from enqueue to send of each control request (Kafka's RequestRateAndQueueTimeMs)",
            boundaries=QUEUE_TIME_BOUNDARIES_MS, tag_keys=("broker_id",))
    return _metrics["queue_time"]


class SendThreadStopped(RuntimeError):
    """The worker loop has ended: this send thread sends nothing more and must be replaced."""


class RequestSendThreadActor:
    def __init__(self, *, broker_id: int, broker_epoch: int, broker_actor_name: str, namespace: str,
                 controller, queue_size_max: int = QUEUE_SIZE_MAX_DEFAULT) -> None:
        # Created inside a running event loop (Ray runs an async actor's constructor in it).
        self.broker_id = broker_id
        self.broker_epoch = broker_epoch
        self._broker_actor_name = broker_actor_name
        self._namespace = namespace
        self._controller = controller
        self._queue = ControllerChannelQueue(broker_id=broker_id, queue_size_max=queue_size_max)
        self._tags = {"broker_id": str(broker_id)}
        self._inbox = OrderedInbox()  # batches join the queue in the controller's order
        self._wakeup = asyncio.Event()
        self._broker = None
        self._sent = 0
        self._injected_failure: BaseException | None = None
        # The controller and this broker talk over the network: network faults apply here.
        self._transport = shell_transport(CONTROLLER_NODE, namespace)
        self._worker = asyncio.get_running_loop().create_task(self._run())

    async def enqueue(self, sequence: int, requests: list, full_state: bool = False) -> int:
        """Queue one batch of requests, in order; returns the number waiting after (the gauge's value).

        Ray does not promise that an async actor runs one caller's calls in the order they were
        sent, so the controller numbers its batches from 0 and batches join the queue strictly in
        that order: one that arrives early waits for the gap to fill. ``full_state`` marks the
        controller's resync of this broker, which supersedes every request before it.
        """
        for batch, batch_full_state in self._inbox.offer(sequence, (list(requests), full_state)):
            result = self._queue.enqueue(batch, monotonic_ms(), callback=self._report_response,
                                         full_state=batch_full_state)
            if result.dropped:
                logger.warning("send queue for broker {} full ({} waiting at most): dropped {} waiting requests{}",
                               self.broker_id, self._queue.queue_size_max, result.dropped,
                               "; asking the controller for a resync" if result.resync_needed else "")
            if result.resync_needed:
                self._controller.resync_broker.remote(self.broker_id)
        if self._queue.queue_size:
            self._wakeup.set()
        _queue_size_gauge().set(self._queue.queue_size, tags=self._tags)
        return self._queue.queue_size

    async def status(self) -> ChannelQueueStatus:
        """The queue's size and queue times; raises ``SendThreadStopped`` once the worker ended."""
        if self._worker.done():
            raise SendThreadStopped(f"the send thread for broker {self.broker_id} has stopped")
        return self._queue.status(monotonic_ms())

    async def queue_size(self) -> int:
        return self._queue.queue_size

    async def stats(self) -> dict:
        return {"broker_id": self.broker_id, "queue_size": self._queue.queue_size, "sent": self._sent}

    async def fail_worker(self) -> None:
        """Fault injection: the worker loop meets an exception it does not expect, as a bug in it
        would make it do; the controller must find this thread gone and replace it."""
        self._injected_failure = RuntimeError(f"injected failure of broker {self.broker_id}'s send thread")
        self._wakeup.set()

    def _report_response(self, request, response) -> None:
        """The queue item's callback: the controller handles every answer as an event."""
        self._controller.on_control_response.remote(self.broker_id, request, response)

    async def _run(self) -> None:
        try:
            while True:
                if self._injected_failure is not None:
                    raise self._injected_failure
                item = self._queue.take(monotonic_ms())
                if item is None:
                    await self._wait_for_work()
                    continue
                _queue_time_histogram().observe(self._queue.last_queue_time_ms, tags=self._tags)
                _queue_size_gauge().set(self._queue.queue_size, tags=self._tags)
                await self._deliver(item)
        except asyncio.CancelledError:
            raise  # the actor is going away
        except BaseException:
            logger.exception("send thread for broker {} failed; exiting so that the controller replaces it",
                             self.broker_id)
            os._exit(WORKER_FAILED_EXIT_STATUS)

    async def _wait_for_work(self) -> None:
        self._wakeup.clear()
        if self._queue.queue_size:
            return
        try:
            await asyncio.wait_for(self._wakeup.wait(), IDLE_PROBE_INTERVAL_S)
        except asyncio.TimeoutError:
            await self._probe()

    async def _deliver(self, item: QueueItem) -> None:
        response = await self._send_until_answered(item.request)
        logger.debug("broker {} answered {} (broker epoch {}) with {}", self.broker_id,
                     type(item.request).__name__, item.request.broker_epoch, getattr(response, "error_code", None))
        self._queue.complete()
        self._sent += 1
        if item.callback is not None:
            item.callback(item.request, response)

    async def _send_until_answered(self, request):
        method = HANDLERS[type(request)]
        retrying = AsyncRetrying(retry=retry_if_exception_type((RayActorError, GetTimeoutError,
                                                                asyncio.TimeoutError, ValueError, LinkDown)),
                                 wait=wait_exponential_jitter(initial=0.05, max=1.0), reraise=True)
        async for attempt in retrying:
            with attempt:
                return await self._send_once(method, request)

    async def _probe(self) -> None:
        try:
            await self._send_once("ping", None)
        except Exception:
            pass  # restarting, slow or gone: _send_once already told the controller if Ray says gone

    async def _send_once(self, method: str, request):
        if self._broker is None:
            # Raises ValueError while the broker actor does not exist (yet, or any more).
            self._broker = ray.get_actor(self._broker_actor_name, namespace=self._namespace)
        try:
            call = getattr(self._broker, method)
            return await self._transport.call(
                broker_node(self.broker_id), lambda: call.remote() if request is None else call.remote(request),
                REQUEST_TIMEOUT_S)
        except ActorDiedError:
            # Ray says this incarnation is gone for good: tell the controller, look the name up again.
            self._broker = None
            self._controller.on_broker_unreachable.remote(self.broker_id, self.broker_epoch)
            raise


RequestSendThreadRemote = ray.remote(RequestSendThreadActor)
