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
import dataclasses
import os
import time
import uuid
from typing import Any, Callable

import numpy as np
import ray
from loguru import logger
from ray.exceptions import ActorUnavailableError
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from actors.core.config import KafkaConfig
from actors.core.effects import (
    AddPartitionsToFetcher, ArmTimer, CoordinatorLeadershipChange, CoordinatorMetadataUpdate, LogEvent,
    RemovePartitionsFromFetcher, Respond, Send,
)
from actors.core.errors import ErrorCode
from actors.core.log.record_batch import read_header
from actors.core.messages.alter_partition import AlterPartitionRequest
from actors.core.messages.broker_heartbeat import BrokerHeartbeatRequest
from actors.core.messages.broker_registration import BrokerRegistrationRequest
from actors.core.messages.controlled_shutdown import ControlledShutdownRequest
from actors.core.messages.create_topics import CreateTopicsRequest
from actors.core.replica.broker_core import BrokerCore
from actors.core.replica.follower_messages import FollowerAppendRequest
from actors.core.replica.replica_manager import OFFSETS_TOPIC
from actors.file_storage import FileStorage
from actors.kafka_listener import KafkaListener
from actors.ray_metadata_store import active_controller
from actors.records import next_offset_after
from actors.shell_support import CallNumbers, PendingRequests, check_request, monotonic_ms
from actors.transport import CONTROLLER_NODE, broker_node, shell_transport

# Payloads at least this large go to Ray as uint8 arrays: Ray stores them in shared memory and the
# reader maps them without a copy (Ray inlines small objects, where a copy is cheap anyway).
ZERO_COPY_THRESHOLD_BYTES = 100 * 1024
TICK_INTERVAL_S = 0.05
FETCHER_CHECK_INTERVAL_S = 1.0
FETCHER_CHECK_TIMEOUT_S = 10.0
# A fetcher that leaves this many checks in a row unanswered is taken for hung and replaced.
FETCHER_UNANSWERED_CHECKS_MAX = 6
CONTROLLER_CALL_TIMEOUT_S = 5.0
CONTROLLER_METHODS = {
    BrokerRegistrationRequest: "handle_broker_registration",
    BrokerHeartbeatRequest: "handle_broker_heartbeat",
    ControlledShutdownRequest: "handle_controlled_shutdown",
    AlterPartitionRequest: "handle_alter_partition",
    CreateTopicsRequest: "handle_create_topics",
}


def broker_actor_name(broker_id: int) -> str:
    return f"raykafka-broker-{broker_id}"


def group_coordinator_actor_name(broker_id: int) -> str:
    return f"raykafka-group-coordinator-{broker_id}"


def _wrap_records(records: bytes, for_replica: bool) -> Any:
    """Large payloads as uint8 arrays (read from shared memory without a copy); for a follower's
    fetcher as an object ref, which it hands to its broker without ever reading the payload."""
    if len(records) < ZERO_COPY_THRESHOLD_BYTES:
        return records
    array = np.frombuffer(records, dtype=np.uint8)
    return ray.put(array) if for_replica else array


def replica_digest(log, end_offset: int, start_offset: int = 0) -> list[tuple[int, int, int, int]]:
    """Per batch below ``end_offset``: (base offset, last offset, leader epoch, CRC). Batches are
    compared whole, since every replica stores the leader's batches byte for byte. The digest
    starts at the batch holding ``start_offset`` (or at the log start), so a caller that checks
    often can look at a recent window instead of reading the whole log each time."""
    digest, offset = [], max(log.log_start_offset, start_offset)
    while offset < min(end_offset, log.log_end_offset):
        records = log.read(offset, 1 << 20, max_offset=end_offset).records
        if not records:
            break
        view, position = memoryview(records), 0
        while position < len(view):
            header = read_header(view, position)
            digest.append((header.base_offset, header.last_offset, header.partition_leader_epoch, header.crc))
            position = header.end_position
            offset = header.next_offset
    return digest


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
        # Stock Kafka clients' TCP listeners: bound before registering, which advertises them.
        self._kafka_listener = KafkaListener(broker=self, broker_id=broker_id, namespace=namespace,
                                             config=dict(config or {}), log_dir=log_dir)
        self._core = BrokerCore(broker_id=broker_id, storage=self._storage, config=KafkaConfig(config or {}),
                                host=broker_actor_name(broker_id), incarnation_id=self.incarnation_id,
                                cluster_id=namespace, now_ms=monotonic_ms(), wrap_records=_wrap_records,
                                coordinator_host=group_coordinator_actor_name,
                                listeners=self._kafka_listener.bind())
        logger.info("broker {} started in {:.2f}s with {} recovered partitions from {}", broker_id,
                    time.monotonic() - started, len(self._core.replica_manager.recovered_partitions), log_dir)
        self._pending = PendingRequests(f"broker {broker_id}")
        self._ticker: asyncio.Task | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._timer_deadline_ms: int | None = None
        self._controller = None
        self._controller_tasks: set[asyncio.Task] = set()
        self._transport = shell_transport(broker_node(broker_id), namespace)  # network faults, when injected
        self._stopped = False
        self._running = asyncio.Event()  # cleared by pause(): a stop-the-world pause, for fault injection
        self._running.set()
        self._config = dict(config or {})
        self._fetchers: dict[tuple[int, int], Any] = {}  # (leader id, fetcher id) -> fetcher actor
        self._fetcher_calls = CallNumbers()  # Ray may reorder an async actor's calls: number them
        self._fetcher_watch = asyncio.get_running_loop().create_task(self._watch_fetchers())
        # Register with the controller now: after a Ray restart nobody else will call us first.
        self._ensure_ticker()
        self._apply(self._core.start(monotonic_ms()))
        asyncio.get_running_loop().create_task(self._kafka_listener.start())

    # ------------------------------------------------------------------------ the shell proper
    async def _call(self, handler: Callable, request: Any) -> Any:
        if self._stopped:
            raise RuntimeError(f"broker {self.broker_id} is shut down")
        await self._running.wait()
        self._ensure_ticker()
        return await self._pending.call(handler, request, self._apply)

    def _apply(self, effects: list) -> None:
        for effect in effects:
            if isinstance(effect, Respond):
                self._pending.respond(effect)
            elif isinstance(effect, ArmTimer):
                self._arm(effect.deadline_ms)
            elif isinstance(effect, Send):
                assert effect.destination == "controller", effect.destination
                task = asyncio.get_running_loop().create_task(self._ask_controller(effect.message))
                self._controller_tasks.add(task)
                task.add_done_callback(self._controller_tasks.discard)
            elif isinstance(effect, AddPartitionsToFetcher):
                key = (effect.leader_id, effect.fetcher_id)
                if key not in self._fetchers:
                    self._start_fetcher(key)
                self._to_fetcher(key, "add_partitions", list(effect.partitions))
            elif isinstance(effect, RemovePartitionsFromFetcher):
                key = (effect.leader_id, effect.fetcher_id)
                if key in self._fetchers:
                    self._to_fetcher(key, "remove_partitions", list(effect.partitions))
                    if effect.stop_fetcher:
                        ray.kill(self._fetchers.pop(key), no_restart=True)
            elif isinstance(effect, (CoordinatorLeadershipChange, CoordinatorMetadataUpdate)):
                self._tell_coordinator(effect)
            elif isinstance(effect, LogEvent):
                logger.log(effect.level.upper(), effect.message)
            else:
                raise AssertionError(f"broker shell cannot apply {effect!r}")

    def _tell_coordinator(self, change: CoordinatorLeadershipChange | CoordinatorMetadataUpdate) -> None:
        """The group coordinator fences leadership changes by leader epoch and metadata views by
        version, so order and loss are harmless: a coordinator that missed one asks this broker for
        its leaderships and its metadata when it (re)starts."""
        try:
            coordinator = ray.get_actor(group_coordinator_actor_name(self.broker_id), namespace=self.namespace)
        except ValueError:
            return
        if isinstance(change, CoordinatorLeadershipChange):
            coordinator.on_leadership_change.remote(change.partition, change.leader_epoch, change.is_leader)
        else:
            coordinator.on_metadata_update.remote(change)

    # ----------------------------------------------------------------------------- fetchers
    def _start_fetcher(self, key: tuple[int, int]) -> None:
        from actors.replica_fetcher import ReplicaFetcherRemote
        leader_id, fetcher_id = key
        # A fetcher is a thread of its broker: it runs on the broker's node and dies with it.
        here = NodeAffinitySchedulingStrategy(ray.get_runtime_context().get_node_id(), soft=False)
        self._fetchers[key] = ReplicaFetcherRemote.options(num_cpus=0, max_restarts=0, scheduling_strategy=here).remote(
            broker_id=self.broker_id, leader_id=leader_id, fetcher_id=fetcher_id,
            leader_actor_name=broker_actor_name(leader_id), namespace=self.namespace, config=self._config,
            broker=ray.get_runtime_context().current_actor)
        self._fetcher_calls.reset(key)

    def _to_fetcher(self, key: tuple[int, int], method: str, payload: list) -> None:
        getattr(self._fetchers[key], method).remote(self._fetcher_calls.next(key), payload)

    async def _watch_fetchers(self) -> None:
        """Kafka's fetcher manager keeps its threads alive; a dead fetcher actor is replaced here and
        its partitions handed over from where this broker's logs end now.

        A fetcher Ray reports dead is replaced at once. A slow answer alone is no death: on a busy
        machine a new fetcher can take longer than a check to start, and replacing it then would
        only start another slow one (and leave the first fetching beside it). So a fetcher is taken
        for hung only after ``FETCHER_UNANSWERED_CHECKS_MAX`` checks in a row go unanswered, and is
        then killed before its replacement starts."""
        unanswered: dict[tuple[int, int], int] = {}
        while True:
            await asyncio.sleep(FETCHER_CHECK_INTERVAL_S)
            for key in set(unanswered) - set(self._fetchers):
                del unanswered[key]
            for key, fetcher in list(self._fetchers.items()):
                try:
                    await asyncio.wait_for(fetcher.ping.remote(), timeout=FETCHER_CHECK_TIMEOUT_S)
                    unanswered.pop(key, None)
                    continue
                except (asyncio.TimeoutError, ActorUnavailableError) as exc:
                    if self._fetchers.get(key) is not fetcher:
                        continue
                    unanswered[key] = unanswered.get(key, 0) + 1
                    if unanswered[key] < FETCHER_UNANSWERED_CHECKS_MAX:
                        logger.info("broker {}: fetcher {} left check {} of {} unanswered ({})", self.broker_id,
                                    key, unanswered[key], FETCHER_UNANSWERED_CHECKS_MAX, type(exc).__name__)
                        continue
                    reason = f"{unanswered[key]} checks unanswered"
                    ray.kill(fetcher, no_restart=True)
                except Exception as exc:  # dead (RayActorError)
                    if self._fetchers.get(key) is not fetcher:
                        continue
                    reason = type(exc).__name__
                unanswered.pop(key, None)
                logger.warning("broker {}: fetcher {} is gone ({}); starting a new one", self.broker_id, key, reason)
                self._start_fetcher(key)
                self._to_fetcher(key, "add_partitions", self._core.replica_manager.fetch_states_for(key))

    async def _ask_controller(self, request) -> None:
        """One request to the active controller; its answer, or the failure, goes back to the core."""
        try:
            if self._controller is None:
                found = active_controller(self.namespace)
                if found is None:
                    raise LookupError("no active controller yet")
                self._controller = ray.get_actor(found["actor_name"], namespace=self.namespace)
            method = getattr(self._controller, CONTROLLER_METHODS[type(request)])
            response = await self._transport.call(CONTROLLER_NODE, lambda: method.remote(request),
                                                  CONTROLLER_CALL_TIMEOUT_S)
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
        if not self._stopped and self._running.is_set():
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

    async def handle_internal_produce(self, request):
        """Appends from this broker's group coordinator, the one writer of __consumer_offsets
        (a client's produce to an internal topic is INVALID_TOPIC_EXCEPTION)."""
        return await self._call(self._core.handle_internal_produce, request)

    async def handle_fetch(self, request):
        return await self._call(self._core.handle_fetch, request)

    async def handle_list_offsets(self, request):
        return await self._call(self._core.handle_list_offsets, request)

    async def handle_metadata(self, request):
        return await self._call(self._core.handle_metadata, request)

    async def handle_find_coordinator(self, request):
        return await self._call(self._core.handle_find_coordinator, request)

    async def offsets_partitions_led(self) -> list[tuple[int, int]]:
        """(partition, leader epoch) of each __consumer_offsets partition this broker leads."""
        return [(p.partition, p.leader_epoch) for (topic, _), p in self._core.replica_manager.partitions.items()
                if topic == OFFSETS_TOPIC and p.is_leader]

    async def coordinator_metadata(self) -> CoordinatorMetadataUpdate:
        """The partitions this broker's metadata cache holds, for its group coordinator."""
        return self._core.coordinator_metadata()

    async def read_log(self, topic: str, partition: int, offset: int, max_bytes: int) -> tuple[bytes, int, int]:
        """Whole batches from ``offset`` up to the log end (for the group coordinator's load):
        (records, the offset after them, the log end offset)."""
        replica = self._core.replica_manager.partitions.get((topic, partition))
        if replica is None:
            return b"", offset, offset
        end_offset = replica.log_end_offset
        start = max(offset, replica.log_start_offset)
        if start >= end_offset:
            return b"", start, end_offset
        records = bytes(replica.log.read(start, max_bytes).records)
        return records, next_offset_after(records, start), end_offset

    async def handle_offset_for_leader_epoch(self, request):
        return await self._call(self._core.handle_offset_for_leader_epoch, request)

    async def handle_follower_truncate(self, request):
        return await self._call(self._core.handle_follower_truncate, request)

    async def handle_follower_append(self, request: FollowerAppendRequest):
        check_request(request, FollowerAppendRequest, f"broker {self.broker_id}")  # before reading it here
        # Large payloads arrive as object refs from the leader; map them from shared memory here.
        refs = [p.records for p in request.partitions if isinstance(p.records, ray.ObjectRef)]
        if refs:
            resolved = dict(zip(refs, await asyncio.gather(*refs)))
            request = FollowerAppendRequest(partitions=tuple(
                dataclasses.replace(p, records=resolved[p.records]) if isinstance(p.records, ray.ObjectRef) else p
                for p in request.partitions))
        return await self._call(self._core.handle_follower_append, request)

    async def fetchers(self) -> dict:
        """This broker's fetcher actors (fault injection kills them) and their partitions."""
        return {key: {"actor": handle, "partitions": self._core.replica_manager.fetcher_manager.partitions_of(key)}
                for key, handle in self._fetchers.items()}

    async def handle_leader_and_isr(self, request):
        return await self._call(self._core.handle_leader_and_isr, request)

    async def handle_update_metadata(self, request):
        return await self._call(self._core.handle_update_metadata, request)

    async def handle_stop_replica(self, request):
        return await self._call(self._core.handle_stop_replica, request)

    # -------------------------------------------------------------------------- observation
    async def pause(self) -> None:
        """Hold every request and timer until ``resume``, as a long GC pause would: no heartbeats,
        no fetch answers, no checkpoints. Calls already being handled finish."""
        self._running.clear()

    async def resume(self) -> None:
        self._running.set()

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

    async def replica_digest(self, topic: str, partition: int, end_offset: int,
                             start_offset: int = 0) -> list[tuple[int, int, int, int]]:
        """(base offset, last offset, leader epoch, CRC) of each batch below ``end_offset`` here,
        from the batch holding ``start_offset``: enough to check that replicas agree, without
        shipping their data."""
        replica = self._core.replica_manager.partitions.get((topic, partition))
        if replica is None:
            return []
        return replica_digest(replica.log, end_offset, start_offset)

    async def describe_broker(self) -> dict:
        lifecycle = self._core.lifecycle
        return {"broker_id": self.broker_id, "state": lifecycle.state.name, "broker_epoch": lifecycle.broker_epoch,
                "controller_epoch": self._core.replica_manager.controller_epoch,
                "incarnation_id": self.incarnation_id}

    async def shutdown(self) -> None:
        """A clean shutdown: flush and checkpoint, so the next start need not recover. The actor
        stops its background work and its fetchers; it is killed right after."""
        if self._stopped:
            return
        self._stopped = True
        await self._kafka_listener.close()
        for task in (self._ticker, self._fetcher_watch):
            if task is not None:
                task.cancel()
        if self._timer is not None:
            self._timer.cancel()
        for fetcher in self._fetchers.values():
            ray.kill(fetcher, no_restart=True)
        self._fetchers.clear()
        self._core.shutdown()


BrokerActorRemote = ray.remote(BrokerActor)
