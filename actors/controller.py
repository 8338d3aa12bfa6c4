"""The controller actor: the Ray home of a ``ControllerDriver`` (actors/drivers/controller.py).

It builds the core in ``__init__`` from the metadata store on the Ray cluster's key-value store,
which claims a new controller epoch, so a controller that Ray restarts after a kill resumes with
a higher epoch and the same cluster state. It then publishes itself as the active controller
(brokers look it up there). Here is only Ray's part: each send thread is a ``RequestSendThreadActor``
on its broker's node (as the cluster placed the broker), fed numbered batches (Ray may reorder an
async actor's calls) and watched, so that one that dies, or whose worker has stopped, is replaced
(the driver resyncs its broker); a periodic tick; and ``pause``/``resume``, which hold every
event (a long GC pause), which is how a test makes a zombie controller.
"""
from __future__ import annotations

import asyncio
import os
import random
from typing import Any

import ray
from loguru import logger
from ray.exceptions import ActorUnavailableError
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from actors.core.config import KafkaConfig
from actors.core.controller.channel_queue import ChannelQueueStatus
from actors.core.controller.controller import ControllerCore
from actors.core.controller.metadata_store import MetadataStore
from actors.drivers.controller import ControllerDriver
from actors.ray_metadata_store import RayKeyValueStore, set_active_controller
from actors.ray_seams import RayClock, RayEventLog, RayMessenger, monotonic_ms, tick_forever
from actors.request_send_thread import RequestSendThreadRemote
from actors.shell_support import CallNumbers

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


class _Messenger(RayMessenger):
    """The controller's destinations on Ray: its send threads, ``send-thread:<broker id>``."""

    def __init__(self, actor: "ControllerActor") -> None:
        super().__init__("controller", self._no_calls)
        self._actor = actor
        self.threads: dict[int, Any] = {}
        self._calls = CallNumbers()

    async def _no_calls(self, destination: str, request, timeout_s: float):
        raise AssertionError(f"the controller calls no one ({destination})")

    def start(self, destination: str, *, broker_id: int, broker_epoch: int, broker_host: str,
              queue_size_max: int, socket_timeout_ms: int) -> None:
        # The thread runs on its broker's node (the broker's placement-group bundle, or its custom
        # resources), so its blocking send-and-wait is a local call and it follows the bundle when
        # Ray moves it. It is still the controller's: it dies with the controller, which owns it.
        # A broker the cluster placed nothing for gets the thread on the controller's node.
        placed = self._actor.send_thread_options.get(broker_id) or {
            "scheduling_strategy": NodeAffinitySchedulingStrategy(ray.get_runtime_context().get_node_id(), soft=False)}
        self.threads[broker_id] = RequestSendThreadRemote.options(num_cpus=0, max_restarts=0, **placed).remote(
            broker_id=broker_id, broker_epoch=broker_epoch, broker_actor_name=broker_host,
            namespace=self._actor.namespace, controller=ray.get_runtime_context().current_actor,
            queue_size_max=queue_size_max, socket_timeout_ms=socket_timeout_ms)
        self._calls.reset(broker_id)

    def stop(self, destination: str) -> None:
        thread = self.threads.pop(int(destination.split(":")[1]), None)
        if thread is not None:
            ray.kill(thread, no_restart=True)

    def tell(self, destination: str, batch) -> None:
        broker_id = int(destination.split(":")[1])
        self.threads[broker_id].enqueue.remote(self._calls.next(broker_id), list(batch.requests), batch.full_state)


class ControllerActor:
    def __init__(self, *, namespace: str, actor_name: str, config: dict[str, str] | None = None,
                 send_thread_options: dict[int, dict] | None = None) -> None:
        self.namespace = namespace
        self.actor_name = actor_name
        self.config = dict(config or {})
        # Per broker id, the Ray options that place its send thread on the broker's node.
        self.send_thread_options = {int(k): dict(v) for k, v in (send_thread_options or {}).items()}
        core = ControllerCore(store=MetadataStore(RayKeyValueStore(namespace), claimant=actor_name),
                              config=KafkaConfig(self.config), now_ms=monotonic_ms(), random_source=random.Random())
        self._messenger = _Messenger(self)
        self._driver = ControllerDriver(core, self._messenger, RayClock(self._wakeup, "controller"), RayEventLog())
        set_active_controller(namespace, actor_name, core.controller_epoch)
        logger.info("controller {} active with epoch {}", actor_name, core.controller_epoch)
        self._unanswered_checks: dict[int, int] = {}  # broker id -> checks its thread left unanswered
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
        self._background = [loop.create_task(tick_forever(TICK_INTERVAL_S, self._tick, "controller")),
                            loop.create_task(self._watch_send_threads())]
        self._driver.start()

    def _wakeup(self) -> None:
        if self._running is not None and self._running.is_set():
            self._driver.on_wakeup()

    async def _tick(self) -> None:
        await self._running.wait()
        self._driver.on_wakeup()

    async def _call(self, request: Any) -> Any:
        await self._ensure_started()
        await self._running.wait()
        answer = asyncio.get_running_loop().create_future()
        self._driver.handle(request, lambda response: answer.done() or answer.set_result(response))
        return await answer

    async def _watch_send_threads(self) -> None:
        """A dead or stopped send thread is replaced, and its broker sent the current state again."""
        while True:
            await asyncio.sleep(SEND_THREAD_CHECK_INTERVAL_S)
            for broker_id, thread in list(self._messenger.threads.items()):
                reason = await self._check_send_thread(broker_id, thread)
                if reason is None or self._messenger.threads.get(broker_id) is not thread:
                    continue
                logger.warning("send thread for broker {} is gone ({})", broker_id, reason)
                self._unanswered_checks.pop(broker_id, None)
                self._driver.on_send_thread_died(broker_id)

    async def _check_send_thread(self, broker_id: int, thread) -> str | None:
        """Why ``thread`` must be replaced, or None while it is alive (or only slow so far)."""
        try:
            await asyncio.wait_for(thread.status.remote(), timeout=SEND_THREAD_CHECK_TIMEOUT_S)
        except (asyncio.TimeoutError, ActorUnavailableError) as exc:
            if self._messenger.threads.get(broker_id) is not thread:
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

    # -------------------------------------------------------------- brokers' and admin requests
    async def handle(self, request):
        """Every request the controller serves (actors/core/apis.py), dispatched by its type."""
        return await self._call(request)

    # ------------------------------------------------------------------- from send threads
    async def on_event(self, event) -> None:
        """A send thread's event: a broker's answer, a resync wanted, or its broker gone."""
        await self._ensure_started()
        await self._running.wait()
        self._driver.on_event(event)

    async def resync_broker(self, broker_id: int) -> None:
        """Send ``broker_id`` the full state again (a send thread dropped requests at its queue's limit)."""
        await self._ensure_started()
        await self._running.wait()
        self._driver.resync(broker_id)

    # ---------------------------------------------------------------------------- observation
    async def ping(self) -> dict:
        await self._ensure_started()
        return {"controller_epoch": self._driver.core.controller_epoch, "active": self._driver.core.active,
                "pid": os.getpid()}

    async def controller_epoch(self) -> int:
        return self._driver.core.controller_epoch

    async def describe_cluster(self) -> dict:
        await self._ensure_started()
        return self._driver.core.describe_cluster()

    async def describe_topic(self, name: str) -> list[dict] | None:
        await self._ensure_started()
        return self._driver.core.describe_topic(name)

    async def describe_topic_config(self, name: str) -> dict | None:
        await self._ensure_started()
        return self._driver.core.describe_topic_config(name)

    async def send_thread(self, broker_id: int):
        """The send-thread actor for ``broker_id`` (fault injection kills it)."""
        return self._messenger.threads.get(broker_id)

    async def queue_sizes(self) -> dict[int, ChannelQueueStatus | None]:
        """Per broker, its send queue: waiting requests (Kafka's QueueSize) and queue times; None
        for a send thread that did not answer (it is dead or stopped, and about to be replaced)."""
        sizes: dict[int, ChannelQueueStatus | None] = {}
        for broker_id, thread in list(self._messenger.threads.items()):
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
