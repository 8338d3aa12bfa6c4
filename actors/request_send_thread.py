"""A controller request-send thread as a Ray actor: the Ray home of a ``RequestSendThreadDriver``
(actors/drivers/send_thread.py), one per registered broker, owned by the controller.

The queue, its limit, the order of sends and the retries are the driver's and its core's
(actors/core/controller/send_thread.py). Here: the broker is looked up by its actor name (while
it does not exist, a send fails and is retried) and called through the network-fault seam between
the controller and that broker; the controller gets the thread's events as calls on its actor.
Ray's word that the broker's actor died (``ActorDiedError``) becomes ``on_broker_died``; while
idle, the thread probes its broker every ``IDLE_PROBE_INTERVAL_S`` so that this word reaches the
controller without waiting for a request or the heartbeat session to run out.

A thread that cannot go on must not go on answering: ``fail_worker`` (fault injection) and any
failure of the probe loop end this actor's process, so the controller's watch finds it dead,
replaces it and resynchronises its broker; ``status`` refuses to answer once the loop has ended.
"""
from __future__ import annotations

import asyncio
import os

import ray
from loguru import logger
from ray.exceptions import ActorDiedError

from actors.core.controller.channel_queue import QUEUE_SIZE_MAX_DEFAULT, ChannelQueueStatus
from actors.core.controller.send_thread import RequestSendThreadCore
from actors.drivers.send_thread import SEND_THREAD_CALL_TIMEOUT_MS, RequestSendThreadDriver
from actors.ray_seams import RayClock, RayEventLog, RayMessenger
from actors.shell_support import OrderedInbox
from actors.fault_network import CONTROLLER_NODE, broker_node, shell_fault_network

IDLE_PROBE_INTERVAL_S = 0.5
PROBE_TIMEOUT_S = 30.0
TICK_INTERVAL_S = 0.05
# Exit status of a send thread whose worker loop failed (the controller replaces it).
WORKER_FAILED_EXIT_STATUS = 70


class SendThreadStopped(RuntimeError):
    """The worker loop has ended: this send thread sends nothing more and must be replaced."""


class _Messenger(RayMessenger):
    def __init__(self, actor: "RequestSendThreadActor") -> None:
        super().__init__(f"send thread for broker {actor.broker_id}", actor._invoke)
        self._actor = actor

    def tell(self, destination: str, event) -> None:
        assert destination == "controller", destination
        self._actor._controller.on_event.remote(event)


class RequestSendThreadActor:
    def __init__(self, *, broker_id: int, broker_epoch: int, broker_actor_name: str, namespace: str,
                 controller, queue_size_max: int = QUEUE_SIZE_MAX_DEFAULT,
                 socket_timeout_ms: int = SEND_THREAD_CALL_TIMEOUT_MS) -> None:
        # Created inside a running event loop (Ray runs an async actor's constructor in it).
        self.broker_id = broker_id
        self.broker_epoch = broker_epoch
        self._broker_actor_name = broker_actor_name
        self._namespace = namespace
        self._controller = controller
        self._broker = None
        # The controller and this broker talk over the network: network faults apply here.
        self._network = shell_fault_network(CONTROLLER_NODE, namespace)
        core = RequestSendThreadCore(broker_id=broker_id, broker_epoch=broker_epoch, queue_size_max=queue_size_max)
        self._driver = RequestSendThreadDriver(core, _Messenger(self), RayClock(self._wakeup, "send thread"),
                                               RayEventLog(), socket_timeout_ms)
        self._inbox = OrderedInbox()  # batches join the queue in the controller's order
        self._injected_failure: BaseException | None = None
        self._worker = asyncio.get_running_loop().create_task(self._run())

    def _wakeup(self) -> None:
        self._driver.on_wakeup()

    async def _invoke(self, destination: str, request, timeout_s: float):
        return await self._call_broker(lambda broker: broker.handle.remote(request), timeout_s)

    async def _call_broker(self, call, timeout_s: float):
        """``call(broker handle)`` over the network seam; a broker Ray says is gone is told to the controller."""
        if self._broker is None:
            # Raises ValueError while the broker actor does not exist (yet, or any more).
            self._broker = ray.get_actor(self._broker_actor_name, namespace=self._namespace)
        broker = self._broker
        try:
            return await self._network.call(broker_node(self.broker_id), lambda: call(broker), timeout_s)
        except ActorDiedError:
            # Ray says this incarnation is gone for good: tell the controller, look the name up again.
            self._broker = None
            self._driver.on_broker_died()
            raise

    async def enqueue(self, sequence: int, requests: list, full_state: bool = False) -> int:
        """Queue one batch of requests, in order; returns the number waiting after (the gauge's value).

        Ray does not promise that an async actor runs one caller's calls in the order they were
        sent, so the controller numbers its batches from 0 and batches join the queue strictly in
        that order: one that arrives early waits for the gap to fill. ``full_state`` marks the
        controller's resync of this broker, which supersedes every request before it."""
        for batch, batch_full_state in self._inbox.offer(sequence, (list(requests), full_state)):
            self._driver.enqueue(batch, full_state=batch_full_state)
        return self._driver.core.queue.queue_size

    async def status(self) -> ChannelQueueStatus:
        """The queue's size and queue times; raises ``SendThreadStopped`` once the worker ended."""
        if self._worker.done():
            raise SendThreadStopped(f"the send thread for broker {self.broker_id} has stopped")
        return self._driver.status()

    async def queue_size(self) -> int:
        return self._driver.core.queue.queue_size

    async def stats(self) -> dict:
        return {"broker_id": self.broker_id, "queue_size": self._driver.core.queue.queue_size,
                "sent": self._driver.core.sent}

    async def fail_worker(self) -> None:
        """Fault injection: the worker loop meets an exception it does not expect, as a bug in it
        would make it do; the controller must find this thread gone and replace it."""
        self._injected_failure = RuntimeError(f"injected failure of broker {self.broker_id}'s send thread")

    async def _run(self) -> None:
        """Ticks the driver (its retries) and probes an idle broker; ends the process on failure."""
        try:
            since_probe_s = 0.0
            while True:
                await asyncio.sleep(TICK_INTERVAL_S)
                if self._injected_failure is not None:
                    raise self._injected_failure
                self._driver.on_wakeup()
                since_probe_s += TICK_INTERVAL_S
                if since_probe_s >= IDLE_PROBE_INTERVAL_S and self._driver.core.queue.in_flight is None:
                    since_probe_s = 0.0
                    self._driver.messenger.spawn(self._probe())
        except asyncio.CancelledError:
            raise  # the actor is going away
        except BaseException:
            logger.exception("send thread for broker {} failed; exiting so that the controller replaces it",
                             self.broker_id)
            os._exit(WORKER_FAILED_EXIT_STATUS)

    async def _probe(self) -> None:
        try:
            await self._call_broker(lambda broker: broker.ping.remote(), PROBE_TIMEOUT_S)
        except Exception:
            pass  # restarting, slow or gone: _call_broker already told the controller if Ray says gone


RequestSendThreadRemote = ray.remote(RequestSendThreadActor)
