"""The controller actor: a thin async Ray shell around ``ControllerCore`` and its channel manager.

It builds the core in ``__init__`` from the metadata store on the Ray cluster's key-value store,
which claims a new controller epoch, so a controller that Ray restarts after a kill resumes with
a higher epoch and the same cluster state. It then publishes itself as the active controller
(brokers look it up there). The channel manager is here: one ``RequestSendThreadActor`` per
registered broker, created and killed as the core says (``AddBrokerChannel`` /
``RemoveBrokerChannel``), each fed the core's ``Send`` effects for its broker in order, with a
queue of at most ``raykafka.controller.queue.size.max`` waiting requests. A send thread that
dies, or whose worker has stopped, is replaced and its broker resynchronised; a resync's batch is
marked as the broker's full state, which lets the send thread's queue drop what it supersedes.
``pause``/``resume`` hold every event (a long GC pause), which is how a test makes a zombie
controller.
"""
from __future__ import annotations

import asyncio
import collections
import random
from typing import Any, Callable

import ray
from loguru import logger
from ray.exceptions import ActorUnavailableError
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from actors.core.config import KafkaConfig
from actors.core.controller.channel_queue import QUEUE_SIZE_MIN, ChannelQueueStatus
from actors.core.controller.controller import ControllerCore
from actors.core.controller.metadata_store import MetadataStore
from actors.core.effects import (
    AddBrokerChannel, ArmTimer, LogEvent, Metric, RemoveBrokerChannel, Respond, Send,
)
from actors.ray_metadata_store import RayKeyValueStore, set_active_controller
from actors.request_send_thread import RequestSendThreadRemote
from actors.shell_support import CallNumbers, PendingRequests, monotonic_ms

TICK_INTERVAL_S = 0.2
SEND_THREAD_CHECK_INTERVAL_S = 1.0
SEND_THREAD_CHECK_TIMEOUT_S = 10.0
# A send thread that leaves this many checks in a row unanswered is taken for hung and replaced.
# One that Ray reports dead, or whose worker has stopped, is replaced at once; but a slow answer
# alone is no death: a new send thread can take longer than a check to start on a busy machine,
# and replacing it then would only start another slow one.
SEND_THREAD_UNANSWERED_CHECKS_MAX = 6


def controller_actor_name(generation: int = 0) -> str:
    return "raykafka-controller" if generation == 0 else f"raykafka-controller-{generation}"


class ControllerActor:
    def __init__(self, *, namespace: str, actor_name: str, config: dict[str, str] | None = None) -> None:
        self.namespace = namespace
        self.actor_name = actor_name
        self.config = dict(config or {})
        self._core = ControllerCore(store=MetadataStore(RayKeyValueStore(namespace), claimant=actor_name),
                                    config=KafkaConfig(self.config), now_ms=monotonic_ms(),
                                    random_source=random.Random())
        set_active_controller(namespace, actor_name, self._core.controller_epoch)
        logger.info("controller {} active with epoch {}", actor_name, self._core.controller_epoch)
        # Read once here, so that an invalid value stops the controller from starting at all.
        self._queue_size_max = self._core.config.get_int("raykafka.controller.queue.size.max", QUEUE_SIZE_MIN)
        self._pending = PendingRequests("controller")
        self._threads: dict[int, Any] = {}
        self._thread_epochs: dict[int, int] = {}
        self._unanswered_checks: dict[int, int] = {}  # broker id -> checks its thread left unanswered
        self._thread_calls = CallNumbers()  # Ray may reorder an async actor's calls: number them
        self._started = False
        self._running: asyncio.Event | None = None
        self._background: list[asyncio.Task] = []

    # ------------------------------------------------------------------------ the shell proper
    async def _ensure_started(self) -> None:
        if self._started:
            return
        self._started = True
        self._running = asyncio.Event()
        self._running.set()
        loop = asyncio.get_running_loop()
        self._background = [loop.create_task(self._tick_forever()), loop.create_task(self._watch_send_threads())]
        self._apply(self._core.start(monotonic_ms()))

    async def _event(self, step: Callable[[int], list]) -> None:
        """Run one core step that needs no answer (after any pause)."""
        await self._ensure_started()
        await self._running.wait()
        self._apply(step(monotonic_ms()))

    async def _call(self, handler: Callable, request: Any) -> Any:
        await self._ensure_started()
        await self._running.wait()
        return await self._pending.call(handler, request, self._apply)

    def _apply(self, effects: list, full_state_for: int | None = None) -> None:
        """Apply the core's effects; ``full_state_for`` names the broker whose resync they are."""
        sends: dict[int, list] = collections.defaultdict(list)
        for effect in effects:
            if isinstance(effect, Send):
                role, _, broker_id = effect.destination.partition(":")
                assert role == "broker", effect.destination
                sends[int(broker_id)].append(effect.message)
                continue
            self._flush_sends(sends, full_state_for)  # keep Sends and channel changes in the core's order
            if isinstance(effect, Respond):
                self._pending.respond(effect)
            elif isinstance(effect, AddBrokerChannel):
                self._add_channel(effect.broker_id, effect.broker_epoch)
            elif isinstance(effect, RemoveBrokerChannel):
                self._remove_channel(effect.broker_id)
            elif isinstance(effect, ArmTimer):
                pass  # the periodic tick is finer than any deadline the controller arms
            elif isinstance(effect, LogEvent):
                logger.log(effect.level.upper(), effect.message)
            elif isinstance(effect, Metric):
                pass
            else:
                raise AssertionError(f"controller shell cannot apply {effect!r}")
        self._flush_sends(sends, full_state_for)

    def _flush_sends(self, sends: dict[int, list], full_state_for: int | None) -> None:
        for broker_id, requests in sends.items():
            thread = self._threads.get(broker_id)
            if thread is None:
                logger.debug("dropping {} requests for broker {} with no channel", len(requests), broker_id)
                continue
            thread.enqueue.remote(self._thread_calls.next(broker_id), requests, broker_id == full_state_for)
        sends.clear()

    # ------------------------------------------------------------------------ channel manager
    def _add_channel(self, broker_id: int, broker_epoch: int) -> None:
        self._remove_channel(broker_id)
        # A send thread is a thread of the controller: it runs on the controller's node.
        here = NodeAffinitySchedulingStrategy(ray.get_runtime_context().get_node_id(), soft=False)
        self._threads[broker_id] = RequestSendThreadRemote.options(num_cpus=0, max_restarts=0,
                                                                   scheduling_strategy=here).remote(
            broker_id=broker_id, broker_epoch=broker_epoch,
            broker_actor_name=self._core.context.brokers[broker_id].host, namespace=self.namespace,
            controller=ray.get_runtime_context().current_actor,
            queue_size_max=self._queue_size_max)
        self._thread_epochs[broker_id] = broker_epoch
        self._unanswered_checks.pop(broker_id, None)
        self._thread_calls.reset(broker_id)

    def _remove_channel(self, broker_id: int) -> None:
        thread = self._threads.pop(broker_id, None)
        self._thread_epochs.pop(broker_id, None)
        if thread is not None:
            ray.kill(thread, no_restart=True)

    async def _watch_send_threads(self) -> None:
        """A dead or stopped send thread is replaced, and its broker sent the current state again."""
        while True:
            await asyncio.sleep(SEND_THREAD_CHECK_INTERVAL_S)
            for broker_id, thread in list(self._threads.items()):
                reason = await self._check_send_thread(broker_id, thread)
                if reason is None or self._threads.get(broker_id) is not thread:
                    continue
                logger.warning("send thread for broker {} is gone ({}); recreating it", broker_id, reason)
                self._add_channel(broker_id, self._thread_epochs.get(broker_id, -1))
                self._resync(broker_id)

    async def _check_send_thread(self, broker_id: int, thread) -> str | None:
        """Why ``thread`` must be replaced, or None while it is alive (or only slow so far)."""
        try:
            await asyncio.wait_for(thread.status.remote(), timeout=SEND_THREAD_CHECK_TIMEOUT_S)
        except (asyncio.TimeoutError, ActorUnavailableError) as exc:
            if self._threads.get(broker_id) is not thread:
                return None
            unanswered = self._unanswered_checks.get(broker_id, 0) + 1
            self._unanswered_checks[broker_id] = unanswered
            logger.info("send thread for broker {} left check {} of {} unanswered ({})", broker_id, unanswered,
                        SEND_THREAD_UNANSWERED_CHECKS_MAX, type(exc).__name__)
            return None if unanswered < SEND_THREAD_UNANSWERED_CHECKS_MAX else f"{unanswered} checks unanswered"
        except Exception as exc:  # dead (RayActorError), or its worker stopped (SendThreadStopped)
            return type(exc).__name__
        self._unanswered_checks.pop(broker_id, None)
        return None

    def _resync(self, broker_id: int) -> None:
        self._apply(self._core.resync_broker(broker_id, monotonic_ms()), full_state_for=broker_id)

    async def _tick_forever(self) -> None:
        while True:
            await asyncio.sleep(TICK_INTERVAL_S)
            await self._running.wait()
            try:
                self._apply(self._core.tick(monotonic_ms()))
            except Exception:
                logger.exception("controller tick failed")

    # ----------------------------------------------------------------------- brokers' requests
    async def handle_broker_registration(self, request):
        return await self._call(self._core.handle_broker_registration, request)

    async def handle_broker_heartbeat(self, request):
        return await self._call(self._core.handle_broker_heartbeat, request)

    async def handle_controlled_shutdown(self, request):
        return await self._call(self._core.handle_controlled_shutdown, request)

    async def handle_alter_partition(self, request):
        return await self._call(self._core.handle_alter_partition, request)

    # ------------------------------------------------------------------------ admin requests
    async def handle_create_topics(self, request):
        return await self._call(self._core.handle_create_topics, request)

    async def handle_delete_topics(self, request):
        return await self._call(self._core.handle_delete_topics, request)

    async def handle_elect_leaders(self, request):
        return await self._call(self._core.handle_elect_leaders, request)

    # ------------------------------------------------------------------- from send threads
    async def on_control_response(self, broker_id: int, request, response) -> None:
        await self._event(lambda now_ms: self._core.on_control_response(broker_id, request, response, now_ms))

    async def on_broker_unreachable(self, broker_id: int, broker_epoch: int) -> None:
        await self._event(lambda now_ms: self._core.on_broker_unreachable(broker_id, broker_epoch, now_ms))

    async def resync_broker(self, broker_id: int) -> None:
        """A send thread dropped requests at its queue's limit: send its broker the full state."""
        await self._ensure_started()
        await self._running.wait()
        self._resync(broker_id)

    # ---------------------------------------------------------------------------- observation
    async def ping(self) -> dict:
        await self._ensure_started()
        return {"controller_epoch": self._core.controller_epoch, "active": self._core.active}

    async def controller_epoch(self) -> int:
        return self._core.controller_epoch

    async def describe_cluster(self) -> dict:
        await self._ensure_started()
        return self._core.describe_cluster()

    async def describe_topic(self, name: str) -> list[dict] | None:
        await self._ensure_started()
        return self._core.describe_topic(name)

    async def send_thread(self, broker_id: int):
        """The send-thread actor for ``broker_id`` (fault injection kills it)."""
        return self._threads.get(broker_id)

    async def queue_sizes(self) -> dict[int, ChannelQueueStatus | None]:
        """Per broker, its send queue: waiting requests (Kafka's QueueSize) and queue times; None
        for a send thread that did not answer (it is dead or stopped, and about to be replaced)."""
        sizes: dict[int, ChannelQueueStatus | None] = {}
        for broker_id, thread in list(self._threads.items()):
            try:
                sizes[broker_id] = await asyncio.wait_for(thread.status.remote(), timeout=5)
            except Exception:
                sizes[broker_id] = None
        return sizes

    # ------------------------------------------------------------------------ fault injection
    async def pause(self) -> None:
        """Hold every event until ``resume``, as a stop-the-world pause would."""
        await self._ensure_started()
        self._running.clear()

    async def resume(self) -> None:
        self._running.set()


ControllerActorRemote = ray.remote(ControllerActor)
