"""The broker actor: the Ray home of a ``BrokerDriver`` (actors/drivers/broker.py).

It recovers the broker's logs from its log directory in ``__init__`` (Ray re-runs the constructor
when it restarts a killed actor, so a restart is a process restart with the disk intact) and
registers with the active controller. Here is only Ray's part: the controller looked up where it
publishes itself and called through the network-fault seam, the fetchers as actors on this node
(their calls numbered, since Ray may reorder an async actor's calls) and watched so that a dead
or hung one is replaced, its log cleaner as an actor on this node too (watched and replaced as a
fetcher is; it asks for rounds and hands back cleaned segments, which the broker swaps in on a
step of its own), the group coordinator by its actor name, large payloads through Ray's shared
memory, a periodic tick, and ``pause`` (a stop-the-world pause holds every request and timer).
Its storage is a ``FaultyStorage`` over its files, so a chaos row can fill its disk or fail its
writes or fsyncs (``inject_storage_fault``); when its log directory fails the driver halts it, and
the process exits (``os._exit``, Kafka's ``Exit.halt``) for Ray to start it again with a healthy disk.
"""
from __future__ import annotations

import asyncio
import os
import time
import uuid
from collections.abc import Callable
from typing import Any

import numpy as np
import ray
from loguru import logger
from ray.exceptions import ActorUnavailableError
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from actors.core.apis import api_of
from actors.core.config import KafkaConfig
from actors.core.effects import AddPartitionsToFetcher, CoordinatorLeadershipChange
from actors.core.errors import ErrorCode
from actors.core.log.storage_faults import FaultyStorage
from actors.core.metrics import REQUEST_TOTAL_TIME, broker_tags
from actors.core.broker.broker_core import BrokerCore
from actors.core.fetcher.follower_messages import FollowerAppendRequest, FollowerTruncateRequest
from actors.core.messages.fetch import FetchRequest
from actors.drivers.broker import BrokerDriver
from actors.file_storage import FileStorage
from actors.kafka_listener import KafkaListener
from actors.broker_channel import ChannelServer
from actors.ray_metadata_store import active_controller
from actors.codecs.compression import KafkaCompressionCodecs
from actors.ray_seams import RayClock, RayEventLog, RayStorageWorker, RayMessenger, monotonic_ms, tick_forever
from actors.shared_records import ZERO_COPY_THRESHOLD_BYTES, pack_together, resolve_shared_records
from actors.shell_support import CallNumbers
from actors.fault_network import CONTROLLER_NODE, broker_node, shell_fault_network
from actors.hop_trace import hop, enabled as hop_trace_enabled
from actors.process_memory import keep_freed_memory

TICK_INTERVAL_S = 0.05
FETCHER_CHECK_INTERVAL_S = 1.0
FETCHER_CHECK_TIMEOUT_S = 10.0
# A fetcher that leaves this many checks in a row unanswered is taken for hung and replaced.
FETCHER_UNANSWERED_CHECKS_MAX = 6
# How long a broker whose log directory failed lives on before it exits: long enough for the
# KAFKA_STORAGE_ERROR answers of that step to leave (nothing else is served meanwhile).
HALT_GRACE_S = 0.5


def broker_actor_name(broker_id: int) -> str:
    return f"raykafka-broker-{broker_id}"


def group_coordinator_actor_name(broker_id: int) -> str:
    return f"raykafka-group-coordinator-{broker_id}"


def resolve_log_dir(log_dir: str, *, node_id: str, node_ip: str) -> str:
    """The log directory on the node the broker runs on: ``{node_id}`` and ``{node_ip}`` in the
    configured path name that node (several Ray nodes on one machine then keep separate disks)."""
    return log_dir.replace("{node_id}", node_id).replace("{node_ip}", node_ip)


def _node_locations() -> dict:
    """Where this node keeps what an operator looks for: Ray's log directory (the actors' log
    files) and the port of its Prometheus endpoint (the brokers' metrics, per node)."""
    node = ray._private.worker.global_worker.node
    try:
        return {"ray_logs_dir": node.get_logs_dir_path(), "metrics_export_port": node.metrics_export_port}
    except Exception:  # a worker that cannot tell (an older Ray): the status leaves them out
        return {}


async def _get_object(ref):
    """The object a follower's append names; None for anything that is no object ref (bad input:
    that partition is then answered CORRUPT_MESSAGE)."""
    return await ref if isinstance(ref, ray.ObjectRef) else None


def _hop_name(broker_id: int, request) -> str:
    """What the hop trace calls a request at a broker: its type, and a follower's id for a Fetch."""
    name = f"broker-{broker_id} {type(request).__name__}"
    replica_id = getattr(request, "replica_id", None)
    return name if replica_id is None else f"{name} replica-{replica_id}"


class ControllerChanged(ConnectionError):
    """A call to the controller dropped because a newer controller took over meanwhile."""


class _Messenger(RayMessenger):
    """The broker's destinations on Ray: the active controller, its fetchers, its group coordinator."""

    def __init__(self, actor: "BrokerActor") -> None:
        super().__init__(f"broker {actor.broker_id}", self._invoke)
        self._actor = actor
        self._network = shell_fault_network(broker_node(actor.broker_id), actor.namespace)
        self._controller = None
        # The newest controller epoch this broker has been sent a control request by, and an event
        # set when a newer one shows up (``on_controller_epoch``): calls to the old one are dropped.
        self._controller_epoch = -1
        self._controller_changed = asyncio.Event()
        self.fetchers: dict[str, Any] = {}  # "fetcher:<leader>:<id>" -> actor
        # Idle fetchers kept for the next partitions of their leader: name -> (actor, idle since, monotonic s).
        self.idle_fetchers: dict[str, tuple[Any, float]] = {}
        self.idle_keep_s = KafkaConfig(actor.config).get_int("raykafka.replica.fetcher.idle.keep.ms") / 1000
        self._fetcher_calls = CallNumbers()

    async def _invoke(self, destination: str, request, timeout_s: float):
        assert destination == "controller", destination
        try:
            if self._controller is None:
                found = active_controller(self._actor.namespace)
                if found is None:
                    raise LookupError("no active controller yet")
                self._controller = ray.get_actor(found["actor_name"], namespace=self._actor.namespace)
            controller = self._controller
            response = await self._until_controller_changes(
                self._network.call(CONTROLLER_NODE, lambda: controller.handle.remote(request), timeout_s))
        except BaseException:
            self._controller = None  # unreachable, restarting, paused or replaced: look it up again
            raise
        if getattr(response, "error_code", None) == ErrorCode.NOT_CONTROLLER:
            # A controller that resigned (a newer epoch took over) answers everything so: the next
            # request goes to the one active now, as Kafka's brokers find the new controller. Kept,
            # the resigned one would take this broker's heartbeats while the active one fences it.
            self._controller = None
        return response

    async def _until_controller_changes(self, call):
        """``call``'s answer, unless a newer controller shows up first: then the call is dropped
        (``ControllerChanged``) and the broker asks again, of the new one. A controller that hangs
        (paused, or cut off) would otherwise hold this broker's heartbeat past its session while the
        new one fences it, as Kafka's brokers drop a request to a controller that lost its place."""
        changed = asyncio.ensure_future(self._controller_changed.wait())
        answer = asyncio.ensure_future(call)
        try:
            await asyncio.wait({answer, changed}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            changed.cancel()
            dropped = not answer.done()
            if dropped:  # a newer controller, or this wait itself cancelled (its caller's timeout)
                answer.cancel()
        if dropped:
            raise ControllerChanged(f"controller epoch {self._controller_epoch} took over")
        return answer.result()

    def on_controller_epoch(self, epoch: int) -> None:
        """A control request came with controller ``epoch``. Newer than one seen before (not the
        first: a starting broker asks the active controller already), the calls still out to the
        old controller are dropped and the next goes to the new one."""
        if epoch <= self._controller_epoch:
            return
        seen_before, self._controller_epoch = self._controller_epoch, epoch
        if seen_before >= 0:
            self._controller = None
            self._controller_changed.set()
            self._controller_changed = asyncio.Event()

    def start(self, destination: str, *, leader_id: int, fetcher_id: int) -> None:
        idle = self.idle_fetchers.pop(destination, None)
        if idle is not None:
            # The same actor, following nothing since it went idle; its calls stay numbered on.
            self.fetchers[destination] = idle[0]
            return
        from actors.replica_fetcher import ReplicaFetcherRemote
        actor = self._actor
        # A fetcher is a thread of its broker: it runs on the broker's node and dies with it. The
        # broker's own node is its bundle's node, and the broker (the fetcher's owner) is running
        # there now, so a hard affinity to it always holds; the fetcher needs no bundle of its own.
        here = NodeAffinitySchedulingStrategy(ray.get_runtime_context().get_node_id(), soft=False)
        self.fetchers[destination] = ReplicaFetcherRemote.options(
            num_cpus=0, max_restarts=0, scheduling_strategy=here).remote(
            broker_id=actor.broker_id, leader_id=leader_id, fetcher_id=fetcher_id,
            leader_actor_name=broker_actor_name(leader_id), namespace=actor.namespace, config=actor.config,
            broker=ray.get_runtime_context().current_actor, local_channel=actor._local_channel_address())
        self._fetcher_calls.reset(destination)

    def stop(self, destination: str, *, idle: bool = False) -> None:
        """A fetcher stopped for good is killed. An idle one (its last partitions went away) is told
        to drop whatever it still follows, in its calls' order, and kept for
        ``raykafka.replica.fetcher.idle.keep.ms``: Kafka stops an idle fetcher thread at once, but
        here a fetcher is a process, and starting one costs about a second of CPU on a busy host,
        paid by the next partitions of that leader (a topic created to be written at once)."""
        fetcher = self.fetchers.pop(destination, None)
        if fetcher is None:
            return
        if idle and self.idle_keep_s > 0:
            fetcher.follow_nothing.remote(self._fetcher_calls.next(destination))
            self.idle_fetchers[destination] = (fetcher, time.monotonic())
        else:
            ray.kill(fetcher, no_restart=True)

    def stop_idle_fetchers(self, *, kept_at_least_s: float) -> None:
        """Kill the idle fetchers kept this long (all of them with 0)."""
        now = time.monotonic()
        for name, (fetcher, since) in list(self.idle_fetchers.items()):
            if now - since >= kept_at_least_s:
                del self.idle_fetchers[name]
                ray.kill(fetcher, no_restart=True)

    def tell(self, destination: str, event) -> None:
        if destination == "coordinator":
            try:
                coordinator = ray.get_actor(group_coordinator_actor_name(self._actor.broker_id),
                                            namespace=self._actor.namespace)
            except ValueError:
                return  # not started yet: it asks for leaderships and metadata when it starts
            if isinstance(event, CoordinatorLeadershipChange):
                coordinator.on_leadership_change.remote(event.partition, event.leader_epoch, event.is_leader)
            else:
                coordinator.on_metadata_update.remote(event)
            return
        fetcher, call_number = self.fetchers[destination], self._fetcher_calls.next(destination)
        if isinstance(event, AddPartitionsToFetcher):
            fetcher.add_partitions.remote(call_number, list(event.partitions))
        else:
            fetcher.remove_partitions.remote(call_number, list(event.partitions))

    def pack(self, records, *, for_replica: bool):
        """Large payloads as uint8 arrays (read from shared memory without a copy)."""
        if len(records) < ZERO_COPY_THRESHOLD_BYTES:
            # A read may be a view of the bytes the log read (no copy there); Ray pickles bytes.
            return records if isinstance(records, bytes) else bytes(records)
        return np.frombuffer(records, dtype=np.uint8)

    def pack_together(self, payloads: list) -> list:
        """A follower's answer: its payloads as one object in shared memory, which its fetcher
        hands to its broker without ever reading it (actors/shared_records.py)."""
        return pack_together(payloads, ray.put)


class BrokerActor:
    def __init__(self, broker_id: int, log_dir: str, config: dict[str, str] | None = None,
                 namespace: str = "") -> None:
        # A new buffer reuses the pages of one freed (actors/process_memory.py); ping() says what was set.
        self._freed_memory_kept = keep_freed_memory(config)
        # Resolved here, on the node Ray placed (or restarted) the broker on: its disk is that node's.
        node_id, node_ip = ray.get_runtime_context().get_node_id(), ray.util.get_node_ip_address()
        log_dir = resolve_log_dir(log_dir, node_id=node_id, node_ip=node_ip)
        os.makedirs(log_dir, exist_ok=True)
        self.broker_id = broker_id
        self.log_dir = log_dir
        self.namespace = namespace
        self.config = dict(config or {})
        # A new incarnation per process start: the controller tells a restarted broker apart by it.
        self.incarnation_id = uuid.uuid4().hex
        started = time.monotonic()
        # Stock Kafka clients' TCP listeners: bound before registering, which advertises them.
        self._kafka_listener = KafkaListener(broker=self, broker_id=broker_id, namespace=namespace,
                                             config=self.config, log_dir=log_dir,
                                             coordinator_actor_name=group_coordinator_actor_name(broker_id),
                                             node_ip=node_ip, node_id=node_id)
        self._storage = FaultyStorage(FileStorage(log_dir))  # healthy until a fault is injected
        core = BrokerCore(broker_id=broker_id, storage=self._storage, config=KafkaConfig(self.config),
                          host=broker_actor_name(broker_id), incarnation_id=self.incarnation_id,
                          cluster_id=namespace, now_ms=monotonic_ms(), coordinator_host=group_coordinator_actor_name,
                          listeners=self._kafka_listener.bind(), codecs=KafkaCompressionCodecs(),
                          # Records' timestamps are on the wall clock; the core's now_ms is monotonic.
                          wall_clock_offset_ms=int(time.time() * 1000) - monotonic_ms(),
                          log_dir=os.path.abspath(log_dir))
        self._messenger = _Messenger(self)
        self._clock = RayClock(self._wakeup, f"broker {broker_id}")
        self._event_log = RayEventLog()
        self._running = asyncio.Event()  # cleared by pause(): a stop-the-world pause, for fault injection
        self._running.set()
        # Fsyncs and checkpoint writes run on a thread of their own, off the event loop.
        self._storage_worker = RayStorageWorker(f"broker-{broker_id}-storage", gate=self._running.wait)
        self._driver = BrokerDriver(core, self._messenger, self._clock, self._event_log, self._storage_worker,
                                    halt=self._halt)
        logger.info("broker {} started in {:.2f}s with {} recovered partitions from {}", broker_id,
                    time.monotonic() - started, core.describe_broker()["recovered_partitions"], log_dir)
        loop = asyncio.get_running_loop()
        self._background = [loop.create_task(tick_forever(TICK_INTERVAL_S, self._wakeup, f"broker {broker_id}")),
                            loop.create_task(self._watch_fetchers())]
        # Its fetchers' appends and truncations whose records travel inline come over a Unix
        # socket rather than as Ray calls, and followers' Fetches over TCP (actors/broker_channel.py);
        # listening before any fetcher starts, which is handed the local channel's address.
        self._local_channel = ChannelServer(f"broker-{broker_id}-local", self._serve_request,
                                            (FollowerAppendRequest, FollowerTruncateRequest))
        self._fetch_channel = ChannelServer(f"broker-{broker_id}-fetch", self._serve_follower_fetch, (FetchRequest,))
        settings = KafkaConfig(self.config)
        if settings.get_bool("raykafka.replica.local.channel.enable") and self._local_channel.listen_unix():
            self._background.append(loop.create_task(self._local_channel.serve()))
        if (settings.get_bool("raykafka.replica.fetch.channel.enable")
                and self._fetch_channel.listen_tcp(self._kafka_listener.replication_host())):
            self._background.append(loop.create_task(self._fetch_channel.serve()))
        # Kafka's LogCleaner thread: an actor of this broker's, started and kept alive here.
        self._log_cleaner = None
        self._log_cleaners_started = 0
        if KafkaConfig(self.config).get_bool("log.cleaner.enable"):
            self._start_log_cleaner()
            self._background.append(loop.create_task(self._watch_log_cleaner()))
        # Register with the controller now: after a Ray restart nobody else will call us first.
        self._driver.start()
        self._background.append(loop.create_task(self._kafka_listener.start()))

    # ------------------------------------------------------------------------ the shell proper
    def _wakeup(self) -> None:
        if self._running.is_set():
            self._driver.on_wakeup()

    async def _call(self, step: Callable[[Callable[[Any], Any]], None], api_name: str) -> Any:
        """``step(respond)`` hands a request to the driver; the answer is awaited and timed."""
        if self._driver.stopped:
            raise RuntimeError(f"broker {self.broker_id} is shut down")
        await self._running.wait()
        arrived_ms = monotonic_ms()
        answer = asyncio.get_running_loop().create_future()
        step(lambda response: answer.done() or answer.set_result(response))
        response = await answer
        # Kafka's RequestMetrics TotalTimeMs, per API (the table's name): from arrival to the
        # answer (a long poll's or an acks=all produce's wait in purgatory included, as in Kafka).
        self._event_log.metric(REQUEST_TOTAL_TIME, monotonic_ms() - arrived_ms,
                               broker_tags(self.broker_id, request=api_name))
        return response

    async def _watch_fetchers(self) -> None:
        """Kafka's fetcher manager keeps its threads alive; a dead fetcher actor is replaced.

        A fetcher Ray reports dead is replaced at once. A slow answer alone is no death: on a busy
        machine a new fetcher can take longer than a check to start, and replacing it then would
        only start another slow one (and leave the first fetching beside it). So a fetcher is taken
        for hung only after ``FETCHER_UNANSWERED_CHECKS_MAX`` checks in a row go unanswered, and is
        then killed before its replacement starts."""
        unanswered: dict[str, int] = {}
        fetchers = self._messenger.fetchers
        while True:
            await asyncio.sleep(FETCHER_CHECK_INTERVAL_S)
            self._messenger.stop_idle_fetchers(kept_at_least_s=self._messenger.idle_keep_s)
            for name in set(unanswered) - set(fetchers):
                del unanswered[name]
            for name, fetcher in list(fetchers.items()):
                try:
                    await asyncio.wait_for(fetcher.ping.remote(), timeout=FETCHER_CHECK_TIMEOUT_S)
                    unanswered.pop(name, None)
                    continue
                except (asyncio.TimeoutError, ActorUnavailableError) as exc:
                    if fetchers.get(name) is not fetcher:
                        continue
                    unanswered[name] = unanswered.get(name, 0) + 1
                    if unanswered[name] < FETCHER_UNANSWERED_CHECKS_MAX:
                        logger.info("broker {}: {} left check {} of {} unanswered ({})", self.broker_id, name,
                                    unanswered[name], FETCHER_UNANSWERED_CHECKS_MAX, type(exc).__name__)
                        continue
                    reason = f"{unanswered[name]} checks unanswered"
                except Exception as exc:  # dead (RayActorError)
                    if fetchers.get(name) is not fetcher:
                        continue
                    reason = type(exc).__name__
                unanswered.pop(name, None)
                logger.warning("broker {}: {} is gone ({}); starting a new one", self.broker_id, name, reason)
                self._messenger.stop(name)
                _, leader_id, fetcher_id = name.split(":")
                self._driver.on_fetcher_died((int(leader_id), int(fetcher_id)))

    def _start_log_cleaner(self) -> None:
        from actors.log_cleaner import LogCleanerRemote
        # Like a fetcher: on this broker's node (its log directory is that node's disk), owned by
        # this broker, so it dies with it; no bundle of its own.
        here = NodeAffinitySchedulingStrategy(ray.get_runtime_context().get_node_id(), soft=False)
        self._log_cleaner = LogCleanerRemote.options(num_cpus=0, max_restarts=0, scheduling_strategy=here).remote(
            broker_id=self.broker_id, log_dir=self.log_dir, config=self.config,
            broker=ray.get_runtime_context().current_actor)
        self._log_cleaners_started += 1

    async def _watch_log_cleaner(self) -> None:
        """A dead log cleaner is replaced, as a dead fetcher is (``_watch_fetchers``); one that
        leaves ``FETCHER_UNANSWERED_CHECKS_MAX`` checks in a row unanswered is killed first."""
        unanswered = 0
        while True:
            await asyncio.sleep(FETCHER_CHECK_INTERVAL_S)
            cleaner = self._log_cleaner
            try:
                await asyncio.wait_for(cleaner.ping.remote(), timeout=FETCHER_CHECK_TIMEOUT_S)
                unanswered = 0
                continue
            except (asyncio.TimeoutError, ActorUnavailableError):
                unanswered += 1
                if unanswered < FETCHER_UNANSWERED_CHECKS_MAX:
                    continue
                reason = f"{unanswered} checks unanswered"
            except Exception as exc:  # dead (RayActorError)
                reason = type(exc).__name__
            unanswered = 0
            logger.warning("broker {}: its log cleaner is gone ({}); starting a new one", self.broker_id, reason)
            ray.kill(cleaner, no_restart=True)
            self._start_log_cleaner()

    async def cleaner_plan(self):
        """The next round for this broker's log cleaner (a ``CleaningPlan``), or None."""
        await self._running.wait()
        return self._driver.grab_filthiest_log()

    async def cleaner_done(self, cleaned) -> None:
        """The log cleaner wrote a round's cleaned segments; the broker swaps them in."""
        await self._running.wait()
        self._driver.on_log_cleaned(cleaned)

    def _local_channel_address(self) -> tuple[tuple, bytes] | None:
        """Where this broker's fetchers reach its local channel, and its secret; None without one."""
        channel = self._local_channel
        return None if channel.address is None else (channel.address, channel.secret)

    async def fetch_channel(self) -> tuple[tuple, bytes] | None:
        """Where followers' fetchers send this broker their Fetches (TCP), and its secret; None
        without one (they send them as Ray calls). Asked through Ray, by a fetcher that has no
        connection to it yet."""
        await self._running.wait()
        channel = self._fetch_channel
        return None if channel.address is None else (channel.address, channel.secret)

    async def log_cleaner(self) -> dict:
        """This broker's log cleaner actor (fault injection kills it) and how many were started."""
        return {"actor": self._log_cleaner, "started": self._log_cleaners_started}

    # ----------------------------------------------------------------------------- Kafka APIs
    async def handle(self, request):
        """Every request this broker serves (actors/core/apis.py), dispatched by its type. A
        follower's append arrives with its leader's answer in shared memory, mapped here first."""
        return await self._serve_request(request)

    async def _serve_follower_fetch(self, request: FetchRequest):
        """A follower's Fetch over the fetch channel: its records answered as they are read (no
        shared-memory object; the channel sends them out of band)."""
        return await self._serve_request(request, shared_memory=False)

    async def _serve_request(self, request, *, shared_memory: bool = True):
        """``handle``'s work, for a Ray call and for the channels alike; ``shared_memory``: a
        follower's large Fetch answer travels as one object in Ray's shared memory."""
        traced = hop_trace_enabled() and _hop_name(self.broker_id, request)
        if traced:
            hop(traced + " in")
        if isinstance(request, FollowerAppendRequest):
            self._driver.check_request(request, FollowerAppendRequest)  # before reading it here
            request = await resolve_shared_records(request, _get_object)
        api = api_of(request)
        if traced:
            hop(traced + " resolved")
        response = await self._call(lambda respond: self._driver.handle(request, respond, shared_memory=shared_memory),
                                    api.name if api is not None else type(request).__name__)
        # A control request from a newer controller: what is still out to the old one is dropped.
        self._messenger.on_controller_epoch(self._driver.core.controller_epoch)
        if traced:
            hop(traced + " out")
        return response

    # ------------------------------------------------------------------ for the group coordinator
    async def coordinator_request(self, request):
        """A call from this broker's group coordinator: a write, a read of a load, or a look at us."""
        if self._driver.stopped:
            raise RuntimeError(f"broker {self.broker_id} is shut down")
        await self._running.wait()
        answer = asyncio.get_running_loop().create_future()
        self._driver.serve_coordinator(request, lambda response: answer.done() or answer.set_result(response))
        return await answer

    async def read_log(self, topic: str, partition: int, offset: int, max_bytes: int) -> tuple[bytes, int, int]:
        """Whole batches from ``offset``: (records, next offset, log end offset)."""
        await self._running.wait()
        return self._driver.core.read_log(topic, partition, offset, max_bytes)

    # -------------------------------------------------------------------------- observation
    async def fetchers(self) -> dict:
        """This broker's fetcher actors (fault injection kills them) and their partitions."""
        return {(int(name.split(":")[1]), int(name.split(":")[2])): {
            "actor": handle, "partitions": self._driver.core.fetcher_partitions(
                (int(name.split(":")[1]), int(name.split(":")[2])))}
            for name, handle in self._messenger.fetchers.items()}

    def _halt(self, reason: str) -> None:
        """The log directory failed (the driver stopped stepping): exit the process, uncleanly, as
        Kafka halts; Ray starts the actor again (``max_restarts``), which recovers from the disk."""
        logger.critical("broker {} exits in {} s: its log directory failed: {}", self.broker_id, HALT_GRACE_S, reason)
        self._messenger.stop_idle_fetchers(kept_at_least_s=0)
        self._local_channel.close()
        self._fetch_channel.close()
        asyncio.get_running_loop().call_later(HALT_GRACE_S, os._exit, 1)

    async def inject_storage_fault(self, fault: str, room_bytes: int = 0) -> None:
        """Fault injection: from now on this process's disk is full, or fails writes or fsyncs
        (actors/core/log/storage_faults.py); a restarted process has a healthy disk."""
        self._storage.inject(fault, room_bytes=room_bytes)
        logger.warning("broker {}: storage fault {} injected (room {} bytes)", self.broker_id, fault, room_bytes)

    async def pause(self) -> None:
        """Hold every request and timer until ``resume``, as a long GC pause would: no heartbeats,
        no fetch answers, no checkpoints. Calls already being handled finish."""
        self._running.clear()

    async def resume(self) -> None:
        self._running.set()

    async def ping(self) -> dict:
        return {"broker_id": self.broker_id, "incarnation_id": self.incarnation_id, "pid": os.getpid(),
                "node_id": ray.get_runtime_context().get_node_id(), "node_ip": ray.util.get_node_ip_address(),
                "log_dir": self.log_dir, "directory_id": self._driver.core.directory_id,
                "freed_memory_kept": self._freed_memory_kept, **_node_locations()}

    async def controlled_shutdown(self) -> str:
        """Ask the controller to move this broker's leaderships away; returns the outcome's name."""
        return ErrorCode(await self._call(self._driver.begin_controlled_shutdown, "begin_controlled_shutdown")).name

    async def describe_partitions(self) -> list[dict]:
        """Each hosted replica as this broker sees it (for ``Cluster.describe_topic`` and tests)."""
        return self._driver.core.describe_partitions()

    async def replica_digest(self, topic: str, partition: int, end_offset: int,
                             start_offset: int = 0) -> list[tuple[int, int, int, int]]:
        """(base offset, last offset, leader epoch, CRC) of each batch below ``end_offset`` here,
        from the batch holding ``start_offset``: enough to check that replicas agree, without
        shipping their data."""
        await self._running.wait()
        return self._driver.core.replica_digest(topic, partition, end_offset, start_offset)

    def cached_topics(self) -> frozenset[str]:
        """The topics in this broker's metadata cache (its Kafka listener's DescribeConfigs)."""
        return self._driver.core.cached_topics()

    async def describe_broker(self) -> dict:
        described = self._driver.core.describe_broker()
        return {key: described[key] for key in ("broker_id", "state", "broker_epoch", "controller_epoch")} | {
            "incarnation_id": self.incarnation_id}

    async def shutdown(self) -> None:
        """A clean shutdown: flush and checkpoint, so the next start need not recover. The actor
        stops its background work and its fetchers; it is killed right after."""
        if self._driver.stopped:
            return
        await self._kafka_listener.close()
        self._local_channel.close()
        self._fetch_channel.close()
        for task in self._background:
            task.cancel()
        if self._log_cleaner is not None:
            ray.kill(self._log_cleaner, no_restart=True)
        self._clock.cancel_all()
        # The last work (fsyncs, snapshots, checkpoints) runs on the storage thread after the
        # works given before it; the event loop waits for it without blocking.
        self._driver.shutdown()
        self._messenger.stop_idle_fetchers(kept_at_least_s=0)
        await self._storage_worker.drain()
        self._storage_worker.shutdown()


BrokerActorRemote = ray.remote(BrokerActor)
