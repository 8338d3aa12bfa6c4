"""A controller request-send thread as a Ray actor: one per broker, FIFO, one request in flight.

Like Kafka's ``RequestSendThread``, it takes control requests for its one broker from a bounded
queue in order, sends each and waits for the answer, retrying with backoff (tenacity) for as long
as it takes (the broker may be restarting), and hands every answer back to the controller as an
event. The controller owns it: it is created when a broker registers and killed when the broker is
fenced. If it dies, the controller makes a new one and re-sends that broker the current state.

At the queue's limit (``raykafka.controller.queue.size.max``) it drops what is queued and asks
the controller for a full resync of its broker, which supersedes every dropped request: each
carries an epoch, so a newer full state makes the older ones redundant.
"""
from __future__ import annotations

import asyncio
import collections

import ray
from loguru import logger
from ray.exceptions import ActorDiedError, GetTimeoutError, RayActorError
from ray.util.metrics import Gauge
from tenacity import AsyncRetrying, retry_if_exception_type, wait_exponential_jitter

from actors.core.messages.leader_and_isr import LeaderAndIsrRequest
from actors.core.messages.stop_replica import StopReplicaRequest
from actors.core.messages.update_metadata import UpdateMetadataRequest
from actors.shell_support import OrderedInbox
from actors.transport import CONTROLLER_NODE, LinkDown, broker_node, shell_transport

HANDLERS = {
    LeaderAndIsrRequest: "handle_leader_and_isr",
    UpdateMetadataRequest: "handle_update_metadata",
    StopReplicaRequest: "handle_stop_replica",
}
QUEUE_SIZE_MAX_DEFAULT = 10_000
REQUEST_TIMEOUT_S = 30.0
# While idle the thread probes its broker this often, so that Ray's word that the broker's actor
# died reaches the controller without waiting for a request or the heartbeat session to run out.
IDLE_PROBE_INTERVAL_S = 0.5

_queue_size_gauge = None


def _gauge() -> Gauge:
    global _queue_size_gauge
    if _queue_size_gauge is None:
        _queue_size_gauge = Gauge("raykafka_controller_channel_queue_size",
                                  description="Control requests queued for a broker (Kafka's QueueSize)",
                                  tag_keys=("broker_id",))
    return _queue_size_gauge


class RequestSendThreadActor:
    def __init__(self, *, broker_id: int, broker_epoch: int, broker_actor_name: str, namespace: str,
                 controller, queue_size_max: int = QUEUE_SIZE_MAX_DEFAULT) -> None:
        # Created inside a running event loop (Ray runs an async actor's constructor in it).
        assert queue_size_max > 0
        self.broker_id = broker_id
        self.broker_epoch = broker_epoch
        self._broker_actor_name = broker_actor_name
        self._namespace = namespace
        self._controller = controller
        self._queue_size_max = queue_size_max
        self._queue: collections.deque = collections.deque()
        self._inbox = OrderedInbox()  # batches join the queue in the controller's order
        self._wakeup: asyncio.Event | None = None
        self._worker: asyncio.Task | None = None
        self._broker = None
        self._sent = 0
        # The controller and this broker talk over the network: network faults apply here.
        self._transport = shell_transport(CONTROLLER_NODE, namespace)
        self._ensure_worker()

    async def enqueue(self, sequence: int, requests: list) -> int:
        """Queue one batch of requests, in order; returns the queue size after (the gauge's value).

        Ray does not promise that an async actor runs one caller's calls in the order they were
        sent, so the controller numbers its batches from 0 and batches join the queue strictly in
        that order: one that arrives early waits for the gap to fill.
        """
        for batch in self._inbox.offer(sequence, list(requests)):
            if len(self._queue) + len(batch) > self._queue_size_max:
                logger.warning("send queue for broker {} full ({}): dropping it and asking for a resync",
                               self.broker_id, len(self._queue))
                self._queue.clear()
                self._controller.resync_broker.remote(self.broker_id)
                continue
            self._queue.extend(batch)
        if self._queue:
            self._wakeup.set()
        _gauge().set(len(self._queue), tags={"broker_id": str(self.broker_id)})
        return len(self._queue)

    async def queue_size(self) -> int:
        return len(self._queue)

    async def stats(self) -> dict:
        return {"broker_id": self.broker_id, "queue_size": len(self._queue), "sent": self._sent}

    def _ensure_worker(self) -> None:
        if self._worker is None:
            self._wakeup = asyncio.Event()
            self._worker = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        while True:
            if not self._queue:
                self._wakeup.clear()
                try:
                    await asyncio.wait_for(self._wakeup.wait(), IDLE_PROBE_INTERVAL_S)
                except asyncio.TimeoutError:
                    await self._probe()
                continue
            request = self._queue[0]
            response = await self._send_until_answered(request)
            logger.debug("broker {} answered {} (broker epoch {}) with {}", self.broker_id,
                         type(request).__name__, request.broker_epoch, getattr(response, "error_code", None))
            self._queue.popleft()
            self._sent += 1
            _gauge().set(len(self._queue), tags={"broker_id": str(self.broker_id)})
            self._controller.on_control_response.remote(self.broker_id, request, response)

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
