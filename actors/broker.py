"""The broker actor: a thin async Ray shell around the pure ``BrokerCore``.

It recovers the broker's logs from its log directory in ``__init__`` (Ray re-runs the constructor
when it restarts a killed actor, so a restart is a process restart with the disk intact) and
registers with the active controller, turns each request into one synchronous step of the core,
and applies the effects: ``Respond`` resolves the future the request is awaiting (the purgatory),
``ArmTimer`` schedules a tick, ``Send`` to the controller becomes a call to the controller actor
whose answer (or failure) goes back into the core. A periodic tick also runs, so heartbeats and
checkpoints happen and a lost timer only delays.
"""
from __future__ import annotations

import asyncio
import itertools
import os
import time
import uuid
from typing import Any, Callable

import numpy as np
import ray
from loguru import logger

from actors.core.config import KafkaConfig
from actors.core.effects import ArmTimer, LogEvent, Respond, Send
from actors.core.errors import ErrorCode
from actors.core.messages.broker_heartbeat import BrokerHeartbeatRequest
from actors.core.messages.broker_registration import BrokerRegistrationRequest
from actors.core.messages.controlled_shutdown import ControlledShutdownRequest
from actors.core.replica.broker_core import BrokerCore
from actors.file_storage import FileStorage
from actors.ray_metadata_store import active_controller

# Payloads at least this large go to Ray as uint8 arrays: Ray stores them in shared memory and the
# reader maps them without a copy (Ray inlines small objects, where a copy is cheap anyway).
ZERO_COPY_THRESHOLD_BYTES = 100 * 1024
TICK_INTERVAL_S = 0.05
CONTROLLER_CALL_TIMEOUT_S = 5.0
CONTROLLER_METHODS = {
    BrokerRegistrationRequest: "handle_broker_registration",
    BrokerHeartbeatRequest: "handle_broker_heartbeat",
    ControlledShutdownRequest: "handle_controlled_shutdown",
}


def _to_transport(records: bytes) -> Any:
    if len(records) >= ZERO_COPY_THRESHOLD_BYTES:
        return np.frombuffer(records, dtype=np.uint8)
    return records


def monotonic_ms() -> int:
    return int(time.monotonic() * 1000)


def broker_actor_name(broker_id: int) -> str:
    return f"raykafka-broker-{broker_id}"


class BrokerActor:
    def __init__(self, broker_id: int, log_dir: str, config: dict[str, str] | None = None,
                 namespace: str = "") -> None:
        os.makedirs(log_dir, exist_ok=True)
        self.broker_id = broker_id
        self.log_dir = log_dir
        self.namespace = namespace
        # A new incarnation per process start: the controller tells a restarted broker apart by it.
        self.incarnation_id = uuid.uuid4().hex
        self._storage = FileStorage(log_dir)
        started = time.monotonic()
        self._core = BrokerCore(broker_id=broker_id, storage=self._storage, config=KafkaConfig(config or {}),
                                host=broker_actor_name(broker_id), incarnation_id=self.incarnation_id,
                                cluster_id=namespace, now_ms=monotonic_ms(), wrap_records=_to_transport)
        logger.info("broker {} started in {:.2f}s with {} recovered partitions from {}", broker_id,
                    time.monotonic() - started, len(self._core.replica_manager.recovered_partitions), log_dir)
        self._pending: dict[int, asyncio.Future] = {}
        self._request_ids = itertools.count()
        self._ticker: asyncio.Task | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._timer_deadline_ms: int | None = None
        self._controller = None
        self._controller_tasks: set[asyncio.Task] = set()
        # Register with the controller now: after a Ray restart nobody else will call us first.
        self._ensure_ticker()
        self._apply(self._core.start(monotonic_ms()))

    # ------------------------------------------------------------------------ the shell proper
    async def _call(self, handler: Callable, request: Any) -> Any:
        self._ensure_ticker()
        request_id = next(self._request_ids)
        future = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        try:
            effects = handler(request_id, request, monotonic_ms())
        except Exception:
            self._pending.pop(request_id, None)
            logger.exception("broker {} failed on {}", self.broker_id, type(request).__name__)
            raise
        self._apply(effects)
        return await future

    def _apply(self, effects: list) -> None:
        for effect in effects:
            if isinstance(effect, Respond):
                future = self._pending.pop(effect.request_id, None)
                if future is not None and not future.done():
                    future.set_result(effect.response)
            elif isinstance(effect, ArmTimer):
                self._arm(effect.deadline_ms)
            elif isinstance(effect, Send):
                assert effect.destination == "controller", effect.destination
                task = asyncio.get_running_loop().create_task(self._ask_controller(effect.message))
                self._controller_tasks.add(task)
                task.add_done_callback(self._controller_tasks.discard)
            elif isinstance(effect, LogEvent):
                logger.log(effect.level.upper(), effect.message)
            else:
                raise AssertionError(f"broker shell cannot apply {effect!r}")

    async def _ask_controller(self, request) -> None:
        """One request to the active controller; its answer, or the failure, goes back to the core."""
        try:
            if self._controller is None:
                found = active_controller(self.namespace)
                if found is None:
                    raise LookupError("no active controller yet")
                self._controller = ray.get_actor(found["actor_name"], namespace=self.namespace)
            method = getattr(self._controller, CONTROLLER_METHODS[type(request)])
            response = await asyncio.wait_for(method.remote(request), CONTROLLER_CALL_TIMEOUT_S)
        except Exception as exc:
            # Unreachable, restarting, paused or replaced: look the active controller up again.
            logger.debug("broker {} could not reach the controller: {!r}", self.broker_id, exc)
            self._controller = None
            response = ErrorCode.NETWORK_EXCEPTION
        self._apply(self._core.on_controller_response(request, response, monotonic_ms()))

    def _arm(self, deadline_ms: int) -> None:
        if self._timer_deadline_ms is not None and self._timer_deadline_ms <= deadline_ms:
            return
        if self._timer is not None:
            self._timer.cancel()
        loop = asyncio.get_running_loop()
        delay_s = max(0.0, (deadline_ms - monotonic_ms()) / 1000)
        self._timer_deadline_ms = deadline_ms
        self._timer = loop.call_later(delay_s, self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        self._timer_deadline_ms = None
        self._tick()

    def _tick(self) -> None:
        self._apply(self._core.tick(monotonic_ms()))

    def _ensure_ticker(self) -> None:
        if self._ticker is None:
            self._ticker = asyncio.get_running_loop().create_task(self._tick_forever())

    async def _tick_forever(self) -> None:
        while True:
            await asyncio.sleep(TICK_INTERVAL_S)
            try:
                self._tick()
            except Exception:
                logger.exception("broker {} tick failed", self.broker_id)

    # ----------------------------------------------------------------------------- Kafka APIs
    async def handle_produce(self, request):
        return await self._call(self._core.handle_produce, request)

    async def handle_fetch(self, request):
        return await self._call(self._core.handle_fetch, request)

    async def handle_list_offsets(self, request):
        return await self._call(self._core.handle_list_offsets, request)

    async def handle_metadata(self, request):
        return await self._call(self._core.handle_metadata, request)

    async def handle_leader_and_isr(self, request):
        return await self._call(self._core.handle_leader_and_isr, request)

    async def handle_update_metadata(self, request):
        return await self._call(self._core.handle_update_metadata, request)

    async def handle_stop_replica(self, request):
        return await self._call(self._core.handle_stop_replica, request)

    # -------------------------------------------------------------------------- observation
    async def ping(self) -> dict:
        self._ensure_ticker()
        return {"broker_id": self.broker_id, "incarnation_id": self.incarnation_id, "pid": os.getpid()}

    async def controlled_shutdown(self) -> str:
        """Ask the controller to move this broker's leaderships away; returns the outcome's name."""
        outcome = await self._call(self._core.begin_controlled_shutdown, None)
        return ErrorCode(outcome).name

    async def describe_partitions(self) -> list[dict]:
        """Each hosted replica as this broker sees it (for ``Cluster.describe_topic`` and tests)."""
        return [{
            "topic": p.topic, "partition": p.partition, "leader": p.leader_id,
            "leader_epoch": p.leader_epoch, "replicas": list(p.replicas), "isr": list(p.isr),
            "high_watermark": p.high_watermark, "log_end_offset": p.log_end_offset,
            "log_start_offset": p.log_start_offset, "is_leader": p.is_leader,
        } for p in self._core.replica_manager.partitions.values()]

    async def describe_broker(self) -> dict:
        lifecycle = self._core.lifecycle
        return {"broker_id": self.broker_id, "state": lifecycle.state.name, "broker_epoch": lifecycle.broker_epoch,
                "controller_epoch": self._core.replica_manager.controller_epoch,
                "incarnation_id": self.incarnation_id}

    async def shutdown(self) -> None:
        """A clean shutdown: flush and checkpoint, so the next start need not recover."""
        self._core.shutdown()


BrokerActorRemote = ray.remote(BrokerActor)
