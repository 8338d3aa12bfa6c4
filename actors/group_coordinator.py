"""The group coordinator actor: a thin async Ray shell around ``GroupCoordinatorCore``, one per
broker, named so that clients reach it from a FindCoordinator answer.

Its groups are those of the ``__consumer_offsets`` partitions its broker leads. The broker tells it
when that changes (``on_leadership_change``, fenced by the partition's leader epoch, Kafka's
coordinator epoch); on an election it reads the partition from its broker and loads the groups
(answering ``COORDINATOR_LOAD_IN_PROGRESS`` meanwhile), on a resignation it drops them. The
core's writes (``OffsetsLogAppendRequest``) become acks=all Produce requests to its own broker,
whose answers go back into the core. The broker also hands it its metadata cache's partitions
(``on_metadata_update``): the view OffsetCommit is checked against, and the deleted partitions whose
offsets the core removes. Created with ``max_restarts=-1``: after a kill, Ray runs the constructor
again, and the broker watch's first look (at once) asks the broker for that view and for the
offsets partitions it leads, and loads them; that watch is the one path that adopts the broker's
leaderships, so a restart loads each partition once.
"""
from __future__ import annotations

import asyncio
import collections
import functools
import os
import random
import uuid

import ray
from loguru import logger

from actors.core.effects import ArmTimer, CoordinatorMetadataUpdate, LogEvent, Respond, Send
from actors.core.errors import ErrorCode
from actors.core.group.coordinator import GroupCoordinatorCore
from actors.core.group.coordinator_epochs import CoordinatorEpochs
from actors.core.group.messages import OffsetsLogAppendRequest, OffsetsLogAppendResponse
from actors.core.messages.join_group import JoinGroupRequest
from actors.core.messages.produce import PartitionProduceData, ProduceRequest, TopicProduceData
from actors.core.replica.replica_manager import OFFSETS_TOPIC
from actors.shell_support import PendingRequests, monotonic_ms
from actors.records import BatchBuilder, read_records

TICK_INTERVAL_S = 0.1
BROKER_WATCH_INTERVAL_S = 0.5
BROKER_UNREACHABLE_S = 3.0
LOAD_BYTES_PER_READ = 4 * 1024 * 1024


class GroupCoordinatorActor:
    def __init__(self, *, broker_id: int, namespace: str, broker_actor_name: str,
                 config: dict[str, str] | None = None) -> None:
        self.broker_id = broker_id
        self.namespace = namespace
        self.incarnation_id = uuid.uuid4().hex  # new for every process start: tells a restart apart
        self._broker_actor_name = broker_actor_name
        self._core = GroupCoordinatorCore(broker_id=broker_id, now_ms=monotonic_ms(), config=dict(config or {}),
                                          member_id_random=random.Random())
        self._pending = PendingRequests(f"group coordinator {broker_id}")
        self._epochs = CoordinatorEpochs()
        self._tasks: set[asyncio.Task] = set()
        self._loads: collections.Counter[int] = collections.Counter()  # loads begun per offsets partition
        self._watch_rounds = 0
        # Ray runs an async actor's constructor inside its event loop, so tasks can start here.
        self._spawn(self._tick_forever())
        self._broker_incarnation: str | None = None
        self._spawn(self._watch_broker())

    # ------------------------------------------------------------------------- the shell
    def _spawn(self, coroutine) -> None:
        task = asyncio.get_running_loop().create_task(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _broker(self):
        return ray.get_actor(self._broker_actor_name, namespace=self.namespace)

    def _apply(self, effects: list) -> None:
        for effect in effects:
            if isinstance(effect, Respond):
                self._pending.respond(effect)
            elif isinstance(effect, Send):
                assert effect.destination == "offsets-log", effect.destination
                self._spawn(self._append(effect.message))
            elif isinstance(effect, ArmTimer):
                delay_s = max(0.0, (effect.deadline_ms - monotonic_ms()) / 1000)
                asyncio.get_running_loop().call_later(delay_s, self._tick)
            elif isinstance(effect, LogEvent):
                logger.log(effect.level.upper(), effect.message)
            else:
                raise AssertionError(f"group coordinator shell cannot apply {effect!r}")

    def _tick(self) -> None:
        self._apply(self._core.tick(monotonic_ms()))

    async def _tick_forever(self) -> None:
        while True:
            await asyncio.sleep(TICK_INTERVAL_S)
            try:
                self._tick()
            except Exception:
                logger.exception("group coordinator {} tick failed", self.broker_id)

    async def _call(self, handler, request):
        return await self._pending.call(handler, request, self._apply)

    async def _append(self, request: OffsetsLogAppendRequest) -> None:
        """One write to __consumer_offsets through this broker, with the acks the core asked for."""
        builder = BatchBuilder(batch_size=1 << 30)
        for key, value in request.records:
            builder.try_append(key, value, request.timestamp_ms, None)
        produce = ProduceRequest(acks=request.required_acks, timeout_ms=request.timeout_ms, topic_data=(
            TopicProduceData(name=OFFSETS_TOPIC, partition_data=(
                PartitionProduceData(index=request.partition, records=builder.build()),)),))
        try:
            response = await asyncio.wait_for(self._broker().handle_internal_produce.remote(produce),
                                               request.timeout_ms / 1000 + 5)
            answer = response.responses[0].partition_responses[0]
            result = OffsetsLogAppendResponse(append_id=request.append_id, partition=request.partition,
                                              error_code=answer.error_code, base_offset=answer.base_offset)
        except Exception as exc:
            logger.warning("group coordinator {}: append to {}-{} failed: {!r}", self.broker_id, OFFSETS_TOPIC,
                           request.partition, exc)
            result = ErrorCode.REQUEST_TIMED_OUT if isinstance(exc, asyncio.TimeoutError) \
                else ErrorCode.NOT_LEADER_OR_FOLLOWER
        self._apply(self._core.on_offsets_log_response(request, result, monotonic_ms()))

    # ------------------------------------------------------------- leadership of offsets partitions
    async def on_leadership_change(self, partition: int, leader_epoch: int, is_leader: bool) -> None:
        """The broker started or stopped leading an offsets partition (Kafka's onElection/onResignation)."""
        if not self._epochs.accept(partition, leader_epoch, is_leader=is_leader):
            return  # an older change that arrived late, or one already heard of
        if not is_leader:
            self._apply(self._core.on_resign(partition, monotonic_ms()))
            return
        self._loads[partition] += 1
        self._apply(self._core.begin_loading(partition))
        await self._load(partition, leader_epoch)

    async def on_metadata_update(self, update: CoordinatorMetadataUpdate) -> None:
        """The broker's metadata cache changed: the partitions that exist now, and those deleted."""
        if not isinstance(update, CoordinatorMetadataUpdate):
            logger.warning("group coordinator {} ignored a metadata update it cannot read: {!r}",
                           self.broker_id, update)
            return
        self._apply(self._core.on_metadata_update(update, monotonic_ms()))

    async def _load(self, partition: int, leader_epoch: int) -> None:
        records: list[tuple[bytes, bytes | None]] = []
        offset = 0
        broker = self._broker()
        while True:
            chunk, next_offset, end_offset = await broker.read_log.remote(
                OFFSETS_TOPIC, partition, offset, LOAD_BYTES_PER_READ)
            records.extend((r.key, r.value) for r in read_records(OFFSETS_TOPIC, partition, chunk, offset))
            if next_offset >= end_offset or next_offset == offset:
                break
            offset = next_offset
        if not self._epochs.is_current(partition, leader_epoch):
            return  # leadership moved again while loading; the newer change decides
        self._apply(self._core.on_become_leader(partition, records, monotonic_ms()))

    async def _watch_broker(self) -> None:
        """In Kafka the coordinator dies with its broker. Here it is its own actor, so it watches its
        broker: if Ray says the broker is gone, or it came back as a new process, every loaded group
        is dropped (its partitions may lead elsewhere now) and the current leaderships adopted again."""
        failing_since: float | None = None
        delay_s = 0.0  # the first look is at once: it adopts the broker's leaderships after a (re)start
        while True:
            await asyncio.sleep(delay_s)
            delay_s = BROKER_WATCH_INTERVAL_S
            self._watch_rounds += 1
            try:
                incarnation = (await asyncio.wait_for(self._broker().ping.remote(), 5))["incarnation_id"]
                failing_since = None
            except (ray.exceptions.ActorDiedError, ValueError):
                incarnation = None
            except Exception:
                # Slow or restarting: give it a while, then count it gone (it cannot write anyway).
                loop_time = asyncio.get_running_loop().time()
                failing_since = failing_since or loop_time
                if loop_time - failing_since < BROKER_UNREACHABLE_S:
                    continue
                incarnation = None
            if incarnation == self._broker_incarnation and incarnation is not None:
                continue
            if incarnation is None and not self._epochs.partitions():
                self._broker_incarnation = None
                continue
            if self._broker_incarnation is not None or incarnation is None:
                self._resign_all()
            self._broker_incarnation = incarnation
            if incarnation is not None:
                await self._adopt_current_leaderships()

    def _resign_all(self) -> None:
        for partition in self._epochs.partitions():
            logger.info("group coordinator {}: broker changed; dropping __consumer_offsets-{}", self.broker_id, partition)
            self._apply(self._core.on_resign(partition, monotonic_ms()))
        self._epochs.clear()

    async def _adopt_current_leaderships(self) -> None:
        """After a (re)start: take the broker's view of the partitions, then load every offsets
        partition the broker leads right now."""
        try:
            broker = self._broker()
            metadata = await broker.coordinator_metadata.remote()
            led = await broker.offsets_partitions_led.remote()
        except Exception as exc:
            logger.info("group coordinator {} found no broker yet ({!r}); it will be told", self.broker_id, exc)
            return
        self._apply(self._core.on_metadata_update(metadata, monotonic_ms()))
        for partition, leader_epoch in led:
            await self.on_leadership_change(partition, leader_epoch, True)

    # -------------------------------------------------------------------------- Kafka APIs
    async def handle_join_group(self, request, client_id: str = "", client_host: str = ""):
        handler = functools.partial(self._join, client_id=client_id, client_host=client_host)
        return await self._pending.call(handler, request, self._apply, request_type=JoinGroupRequest)

    def _join(self, request_id, request, now_ms, *, client_id, client_host):
        return self._core.handle_join_group(request_id, request, now_ms, client_id=client_id, client_host=client_host)

    async def handle_sync_group(self, request):
        return await self._call(self._core.handle_sync_group, request)

    async def handle_heartbeat(self, request):
        return await self._call(self._core.handle_heartbeat, request)

    async def handle_leave_group(self, request):
        return await self._call(self._core.handle_leave_group, request)

    async def handle_offset_commit(self, request):
        return await self._call(self._core.handle_offset_commit, request)

    async def handle_offset_fetch(self, request):
        return await self._call(self._core.handle_offset_fetch, request)

    async def handle_describe_groups(self, request):
        return await self._call(self._core.handle_describe_groups, request)

    async def handle_list_groups(self, request):
        return await self._call(self._core.handle_list_groups, request)

    async def ping(self) -> dict:
        return {"broker_id": self.broker_id, "groups": len(self._core.groups),
                "partitions": self._epochs.partitions(), "incarnation_id": self.incarnation_id, "pid": os.getpid(),
                "loads": dict(self._loads), "watch_rounds": self._watch_rounds,
                "appends_in_flight": self._core.manager.appends_in_flight()}


GroupCoordinatorRemote = ray.remote(GroupCoordinatorActor)
