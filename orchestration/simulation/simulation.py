"""A deterministic, single-threaded simulation of a raykafka cluster: the shipped drivers, no Ray.

Theory of operation. ``Simulation`` runs the drivers the Ray actors run (actors/drivers/): one
``ControllerDriver``, a ``BrokerDriver`` per broker (each core over its own ``InMemoryStorage``,
which outlives it so a restart recovers from it), the ``FetcherDriver`` per (follower, leader,
fetcher id) and the ``RequestSendThreadDriver`` per registered broker that those drivers start,
with ``group_coordinators`` a ``GroupCoordinatorDriver`` per broker, with ``log.cleaner.enable`` a
log cleaner per broker (orchestration/simulation/log_cleaner.py), consumers in groups
(orchestration/simulation/consumer.py) and a client. Only the seams differ from Ray's: every call
between nodes is a ``Message`` on the ``Network`` (orchestration/simulation/network.py), time a fake
clock (orchestration/simulation/seams.py, orchestration/simulation/nodes.py).

Time is a fake clock in milliseconds. One step is either one delivered message, chosen by the
seeded random source among the messages due now, or one clock advance that fires what is due at
the new time (call timeouts, then node ticks: every ``tick_interval_ms`` for brokers, fetchers and
the controller, as the shells' periodic ticks, plus the deadlines their ``ArmTimer`` effects ask
for). Each message takes ``latency_ms`` (a seeded draw from a range) to arrive, so a step never
delivers what it sends.

Faults: ``kill`` (a process kill; with ``clean=True`` a clean shutdown that flushes and
checkpoints first), ``restart`` (a new process over the same disk; ``lose_unflushed`` first cuts
every file back to what was fsynced, ``lose_disk`` gives it an empty disk), ``kill_fetcher`` (its
broker replaces it after a second, as the shell's watcher does), ``restart_coordinator`` (Ray
starts a killed group coordinator again, empty), ``kill_cleaner`` (its broker replaces it after a
second), ``pause``/``resume`` (a broker's process
stops and continues), ``restart_controller`` (a controller failover), ``stop_consumer`` (a consumer's process dies
without leaving its group), and message rules (``hold``, ``release``, ``drop``). A node that goes
down loses its in-flight messages, and every call made to it, in flight, already delivered and
unanswered, or answered with the answer still in flight, fails with NETWORK_EXCEPTION at the caller.

After every step the invariants are checked (orchestration/simulation/invariants.py) on what the
step reached, and on everything every simulated second and at the end of every run; a broken one
raises ``SimulationInvariantError`` naming the seed and the step, so the run replays from the seed.

Observing: ``leader`` / ``isr`` / ``leader_epoch`` (the controller's view), ``replica``,
``high_watermark``, ``log_end_offset``, ``log_of`` (each broker's own), ``check`` (what a history
checker reports: acknowledged values lost, offsets where replicas differ), and the histories
``acknowledged``, ``truncations``, ``isr_joins``, ``elections``, ``cleaner_rounds`` (the log
cleaners' rounds and how each ended), ``log_events`` and ``trace``; ``cleaner`` (a broker's log
cleaner); for
groups ``coordinator``, ``coordinators_of`` (the brokers whose coordinator coordinates a group
now) and ``consumer`` (a ``GroupMember``: its state, generation, assignment and commits).

Limits: every run is bounded (``limit_steps`` / ``limit_ms``) and raises ``SimulationStalled``
when the bound is hit before its goal.
"""
from __future__ import annotations

import collections
import itertools
import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from actors.core.config import KafkaConfig
from actors.core.controller.controller import ControllerCore
from actors.core.controller.metadata_store import InMemoryKeyValueStore, MetadataStore
from actors.core.errors import ErrorCode
from actors.core.log.storage import InMemoryStorage
from actors.core.log.storage_faults import FaultyStorage
from actors.core.messages.create_topics import (
    CreatableReplicaAssignment, CreatableTopic, CreateableTopicConfig, CreateTopicsRequest,
)
from actors.core.messages.produce import PartitionProduceData, ProduceRequest, ProduceResponse, TopicProduceData
from actors.core.broker.broker_core import BrokerCore
from actors.codecs.record_batches import BatchBuilder, next_offset_after, read_records
from orchestration.simulation.consumer import GroupMember
from orchestration.simulation.invariants import (
    Election, Invariants, IsrJoin, SimulationInvariantError,
)
from orchestration.simulation.network import Network
from orchestration.simulation.node_map import NodeMap
from orchestration.simulation.nodes import (
    CLIENT, CONTROLLER, FETCHER_REPLACEMENT_DELAY_MS, Nodes, TopicPartition, Truncation, _ChannelNode, _Node,
)

__all__ = ["Election", "IsrJoin", "ProduceResult", "Simulation", "SimulationInvariantError", "SimulationStalled",
           "Truncation"]

# Fast timeouts for simulated clusters; a scenario's config overrides any of them.
SIM_DEFAULTS = {
    "broker.heartbeat.interval.ms": "500", "broker.session.timeout.ms": "3000",
    "replica.lag.time.max.ms": "3000", "replica.fetch.wait.max.ms": "100", "replica.fetch.backoff.ms": "100",
    "raykafka.registration.retry.backoff.ms": "100", "auto.leader.rebalance.enable": "false",
    "group.min.session.timeout.ms": "500", "group.initial.rebalance.delay.ms": "100",
    "offsets.topic.num.partitions": "3",
    # A log cleaner per broker (orchestration/simulation/log_cleaner.py) only where a run asks for it.
    "log.cleaner.enable": "false",
}
# The header that names a tombstone's send (its value is null), so that a reader can tell which.
SEND_ID_HEADER = "sim-send"

def make_batch(values: list[bytes | None], timestamp_ms: int = 1_700_000_000_000, *,
               keys: list[bytes | None] | None = None, headers: list[list] | None = None) -> bytes:
    """One v2 record batch of ``values`` (with ``keys`` and ``headers``, one per value, if given),
    as a producer would send it."""
    builder = BatchBuilder(batch_size=1 << 30)
    for index, value in enumerate(values):
        assert builder.try_append(None if keys is None else keys[index], value, timestamp_ms,
                                  None if headers is None else headers[index])
    return builder.build()


def record_text(record) -> str:
    """A record's value as the simulation's histories name it: a tombstone by its send's header."""
    if record.value is not None:
        return record.value.decode()
    return next((v.decode() for k, v in record.headers if k == SEND_ID_HEADER), "")


ACKS = {"all": -1, "-1": -1, "1": 1, "0": 0, -1: -1, 1: 1, 0: 0}


class SimulationStalled(AssertionError):
    """A bounded run hit its bound before reaching its goal."""


@dataclass
class ProduceResult:
    """One produce call: ``status`` is "pending", "acked" or "error" (with ``error`` naming the code)."""

    topic: str
    partition: int
    values: tuple[str, ...]
    acks: int
    status: str = "pending"
    base_offset: int = -1
    error: str | None = None
    keys: tuple[str, ...] = ()  # one per value, on a keyed send
    tombstones: frozenset[str] = frozenset()  # the values sent as tombstones (a null value)
    sent_ms: int = 0  # the simulated time the send was made, which its records' timestamps carry

    @property
    def offsets(self) -> list[int | None]:
        return [self.base_offset + i if self.status == "acked" else None for i in range(len(self.values))]


class Simulation(Invariants, Nodes):
    """A cluster of the real cores on a fake clock and a seeded network (see the module docstring)."""

    def __init__(self, brokers: Iterable[int] = (0, 1, 2), config: dict | None = None, seed: int = 0, *,
                 latency_ms: tuple[int, int] = (1, 3), tick_interval_ms: int = 10, start: bool = True,
                 trace_max: int = 400, group_coordinators: bool = False) -> None:
        assert latency_ms[0] >= 1 and latency_ms[1] >= latency_ms[0], latency_ms
        self.seed = seed
        self.rng = random.Random(seed)
        self.config = {**SIM_DEFAULTS, **{k: str(v) for k, v in (config or {}).items()}}
        self.kafka_config = KafkaConfig(self.config)
        self.latency_ms = latency_ms
        self.tick_interval_ms = tick_interval_ms
        self.now_ms = 0
        # Records' timestamps are this plus the simulated time of their send. The brokers' clock is
        # ``now_ms`` itself: a run that needs retention.ms to judge records by their age sets 0, so
        # producer and broker share one clock as they do on real hosts.
        self.record_clock_base_ms = 1_700_000_000_000
        self.step_count = 0
        self.network = Network()
        self.broker_ids = sorted(brokers)
        self.storages: dict[int, FaultyStorage] = {b: FaultyStorage(InMemoryStorage()) for b in self.broker_ids}
        self.nodes: NodeMap = NodeMap()  # name -> _Node
        self._incarnations: collections.Counter = collections.Counter()
        self.trace: collections.deque = collections.deque(maxlen=trace_max)
        self.log_events: list[tuple[int, str, str, str]] = []  # (ms, node, level, message)
        self.acknowledged: list[tuple[str, int, int, str]] = []  # (topic, partition, offset, value)
        self.produce_results: list[ProduceResult] = []
        self.truncations: list[Truncation] = []
        self.isr_joins: list[IsrJoin] = []
        self.elections: list[Election] = []
        self.cleaner_rounds: list = []  # CleanerRound, as the simulated log cleaners end them
        self._epoch_leaders: dict[tuple[TopicPartition, int], int] = {}
        self._leader_high_watermarks: dict[tuple, int] = {}
        self._controller_view: dict[TopicPartition, tuple[int, int, tuple[int, ...]]] = {}
        self._next_full_check_ms = 0
        self.kv = InMemoryKeyValueStore()
        self.metadata_store = MetadataStore(self.kv)
        self.group_coordinators = group_coordinators
        self.member_id_random = random.Random(seed + 1)
        self.controller_random = random.Random(seed)
        self._start_controller()
        self.nodes[CLIENT] = _Node(name=CLIENT, incarnation=self._next_incarnation(CLIENT), periodic=False)
        if start:
            self.nodes[CONTROLLER].driver.start()
            for broker_id in self.broker_ids:
                self._start_broker(broker_id)
                if group_coordinators:
                    self._start_coordinator(broker_id)
            self.run_until(lambda: all(self.is_registered(b) for b in self.broker_ids), limit_ms=10_000,
                           what="every broker registered")

    # =============================================================================== queries
    @property
    def controller(self) -> ControllerCore:
        return self.nodes[CONTROLLER].core

    def broker(self, broker_id: int) -> BrokerCore | None:
        node = self.nodes.get(f"broker:{broker_id}")
        return None if node is None else node.core

    def is_up(self, broker_id: int) -> bool:
        return f"broker:{broker_id}" in self.nodes

    def is_registered(self, broker_id: int) -> bool:
        core = self.broker(broker_id)
        return core is not None and core.lifecycle.broker_epoch >= 0 and \
            broker_id in self.controller.context.brokers

    def describe(self, topic: str, partition: int = 0) -> dict:
        described = self.controller.describe_topic(topic)
        assert described is not None, f"no topic {topic}"
        return described[partition]

    def leader(self, topic: str, partition: int = 0) -> int:
        """The leader the controller has elected (-1: none, the partition is offline)."""
        return self.describe(topic, partition)["leader"]

    def isr(self, topic: str, partition: int = 0) -> list[int]:
        return self.describe(topic, partition)["isr"]

    def leader_epoch(self, topic: str, partition: int = 0) -> int:
        return self.describe(topic, partition)["leader_epoch"]

    def replica(self, broker_id: int, topic: str, partition: int = 0):
        """The broker's ``Partition`` object, or None if it is down or does not host the partition."""
        core = self.broker(broker_id)
        return None if core is None else core.replica_manager.partitions.get((topic, partition))

    def high_watermark(self, broker_id: int, topic: str, partition: int = 0) -> int | None:
        replica = self.replica(broker_id, topic, partition)
        return None if replica is None else replica.high_watermark

    def log_end_offset(self, broker_id: int, topic: str, partition: int = 0) -> int | None:
        replica = self.replica(broker_id, topic, partition)
        return None if replica is None else replica.log_end_offset

    def log_of(self, broker_id: int, topic: str, partition: int = 0) -> list[tuple[int, str]] | None:
        """Every record in the broker's replica as (offset, value); None if it is down or has none."""
        replica = self.replica(broker_id, topic, partition)
        if replica is None:
            return None
        log, records = replica.log, []
        offset = log.log_start_offset
        while offset < log.log_end_offset:
            buffer = log.read(offset, 1 << 20).records
            if not len(buffer):
                break
            records += [(r.offset, record_text(r)) for r in read_records(topic, partition, buffer, offset)]
            offset = next_offset_after(buffer, offset)
        return records

    def partition_count(self, topic: str) -> int:
        described = self.controller.describe_topic(topic)
        return 0 if described is None else len(described)

    def coordinator(self, broker_id: int):
        """The group coordinator driver of ``broker_id`` (None while it is down)."""
        node = self.nodes.get(f"coordinator:{broker_id}")
        return None if node is None else node.driver

    def coordinators_of(self, group_id: str) -> list[int]:
        """The brokers whose coordinator has ``group_id`` loaded and coordinates it now."""
        return sorted(b for b in self.broker_ids if (c := self.coordinator(b)) is not None
                      and c.core.manager.is_group_local(group_id) and not c.core.manager.is_group_loading(group_id)
                      and group_id in c.core.groups)

    def consumer(self, name: str) -> GroupMember:
        return self.nodes[f"consumer:{name}"].driver

    def truncations_of(self, broker_id: int, topic: str, partition: int = 0) -> list[Truncation]:
        return [t for t in self.truncations if t.broker_id == broker_id and t.topic_partition == (topic, partition)]

    def check(self, topic: str, partition: int = 0) -> dict:
        """What a history checker would report now: acknowledged values missing from the leader's log
        at their offset (``lost``), offsets where two live replicas hold different values
        (``divergent_offsets``), and the logs themselves."""
        logs = {b: dict(log) for b in self.describe(topic, partition)["replicas"]
                if (log := self.log_of(b, topic, partition)) is not None}
        leader = self.leader(topic, partition)
        reference = logs.get(leader)
        acknowledged = [(o, v) for t, p, o, v in self.acknowledged if (t, p) == (topic, partition)]
        lost = None if reference is None else [v for o, v in acknowledged if reference.get(o) != v]
        divergent = sorted({o for a, b in itertools.combinations(sorted(logs), 2)
                            for o in logs[a].keys() & logs[b].keys() if logs[a][o] != logs[b][o]})
        return {"leader": leader, "lost": lost, "divergent_offsets": divergent,
                "logs": {b: [v for _, v in sorted(log.items())] for b, log in logs.items()}}

    # ============================================================================ the client
    def create_topic(self, name: str, partitions: int = 1, replication_factor: int = -1, config: dict | None = None,
                     *, assignment: list[list[int]] | dict | None = None, wait: bool = True) -> str:
        """CreateTopics through the controller; with ``wait`` also until every live replica has
        applied its LeaderAndIsr. Returns the error code's name ("NONE" on success)."""
        if isinstance(assignment, dict):
            assignment = [assignment[k] for k in sorted(assignment, key=int)]
        topic = CreatableTopic(
            name=name, num_partitions=-1 if assignment else partitions,
            replication_factor=-1 if assignment else replication_factor,
            assignments=tuple(CreatableReplicaAssignment(partition_index=i, broker_ids=tuple(r))
                              for i, r in enumerate(assignment or ())),
            configs=tuple(CreateableTopicConfig(name=k, value=str(v)) for k, v in (config or {}).items()))
        answer: list = []
        self._client_call(CONTROLLER, CreateTopicsRequest(topics=(topic,)), answer.append, timeout_ms=30_000)
        self.run_until(lambda: answer, limit_ms=30_000, what=f"CreateTopics {name} answered")
        response = answer[0]
        code = response if isinstance(response, ErrorCode) else ErrorCode(response.topics[0].error_code)
        if wait and code == ErrorCode.NONE:
            self.run_until(lambda: self._topic_ready(name), limit_ms=30_000, what=f"topic {name} led everywhere")
        return code.name

    def _topic_ready(self, name: str) -> bool:
        for described in self.controller.describe_topic(name):
            if described["leader"] < 0:
                return False
            for broker_id in described["replicas"]:
                replica = self.replica(broker_id, name, described["partition"])
                if self.is_up(broker_id) and (replica is None or replica.leader_epoch < described["leader_epoch"]):
                    return False
        return True

    def produce(self, topic: str, partition: int, values: Iterable[str], acks: int | str = -1, *,
                wait: bool = True, timeout_ms: int = 30_000, to_broker: int | None = None,
                limit_ms: int | None = None, keys: Iterable[str] | None = None,
                tombstones: Iterable[str] = ()) -> ProduceResult:
        """Send ``values`` as one batch to the partition's leader (the controller's view, or
        ``to_broker``). With ``wait``, runs until answered or ``limit_ms`` (then it stays pending).
        Records carry the simulated time in their timestamps (``record_clock_base_ms``).
        ``keys`` (one per value) makes it a keyed send; a value in ``tombstones`` is sent as a null value, named by a header."""
        acks = ACKS[acks if isinstance(acks, int) else str(acks).lower()]
        leader = self.leader(topic, partition) if to_broker is None else to_broker
        result = ProduceResult(topic=topic, partition=partition, values=tuple(values), acks=acks,
                               keys=tuple(keys or ()), tombstones=frozenset(tombstones), sent_ms=self.now_ms)
        assert not result.keys or len(result.keys) == len(result.values), result
        self.produce_results.append(result)
        if leader < 0:
            result.status, result.error = "error", ErrorCode.LEADER_NOT_AVAILABLE.name
            return result
        request = ProduceRequest(acks=acks, timeout_ms=timeout_ms, topic_data=(TopicProduceData(
            name=topic, partition_data=(PartitionProduceData(
                index=partition, records=self._batch_of(result)),)),))
        self._client_call(f"broker:{leader}", request, lambda response: self._on_produced(result, response),
                          timeout_ms=timeout_ms + 5_000)
        if wait:
            self.run_until(lambda: result.status != "pending", limit_ms=limit_ms or timeout_ms + 10_000,
                           what="produce answered", stall_ok=limit_ms is not None)
        return result

    def _batch_of(self, result: ProduceResult) -> bytes:
        timestamp_ms = self.record_clock_base_ms + result.sent_ms
        if not result.keys:
            return make_batch([v.encode() for v in result.values], timestamp_ms)
        return make_batch([None if v in result.tombstones else v.encode() for v in result.values],
                          timestamp_ms, keys=[k.encode() for k in result.keys],
                          headers=[[(SEND_ID_HEADER, v.encode())] if v in result.tombstones else None
                                   for v in result.values])

    def _on_produced(self, result: ProduceResult, response: Any) -> None:
        if isinstance(response, ErrorCode):
            result.status, result.error = "error", response.name
            return
        assert isinstance(response, ProduceResponse), response
        answer = response.responses[0].partition_responses[0]
        if answer.error_code != ErrorCode.NONE:  # a base offset >= 0 says the leader appended it
            result.status, result.error = "error", ErrorCode(answer.error_code).name
            result.base_offset = answer.base_offset
            return
        result.status, result.base_offset = "acked", answer.base_offset
        self.acknowledged += [(result.topic, result.partition, o, v) for o, v in zip(result.offsets, result.values)]

    def _client_call(self, destination: str, request: Any, on_reply: Callable[[Any], None], *, timeout_ms: int) -> None:
        self.call(self.nodes[CLIENT], destination, None, request, on_reply, timeout_ms=timeout_ms,
                  timeout_error=ErrorCode.REQUEST_TIMED_OUT)

    def add_consumer(self, name: str, group_id: str, topics: Iterable[str], **timeouts: int) -> GroupMember:
        """A consumer that joins ``group_id`` subscribed to ``topics`` and stays in it (see sim_consumer)."""
        assert self.group_coordinators, "start the simulation with group_coordinators=True"
        return self._start_consumer(name, group_id, tuple(topics), **timeouts)

    def stop_consumer(self, name: str) -> None:
        """The consumer's process dies without leaving its group: its session must expire."""
        node = self.nodes[f"consumer:{name}"]
        node.driver.stopped = True
        self._take_down(node)

    # ================================================================================ faults
    def restart_coordinator(self, broker_id: int) -> None:
        """Kill the group coordinator actor; Ray starts it again at once, with nothing in memory."""
        node = self.nodes.get(f"coordinator:{broker_id}")
        if node is not None:
            self.record(f"kill coordinator {broker_id}")
            self._take_down(node)
        self._start_coordinator(broker_id)

    def kill(self, broker_id: int, *, clean: bool = False, notify_controller: bool = True) -> None:
        """Stop the broker process: ``clean`` flushes and checkpoints first (a clean shutdown); a
        plain kill keeps what the OS has (page cache included). ``notify_controller`` stands for Ray
        reporting the actor dead to the controller's send thread (the controller otherwise notices
        only when the heartbeat session expires)."""
        node = self.nodes.get(f"broker:{broker_id}")
        assert node is not None, f"broker {broker_id} is already down"
        if clean:
            node.driver.shutdown()
            node.storage_worker.finish_due()  # the shell waits for the shutdown's last work
        self.record(f"kill broker {broker_id}{' (clean)' if clean else ''}")
        self._take_down(node)
        channel = self.nodes.get(f"channel:{broker_id}")
        if notify_controller and channel is not None:
            channel.driver.on_broker_died()  # Ray's word that the actor died, as its send thread hears it
        self._check_invariants()

    def restart(self, broker_id: int, *, lose_unflushed: bool = False, lose_disk: bool = False,
                clean: bool = False) -> None:
        """Start the broker again (killing it first if it is up, as Ray restarting the actor):
        ``lose_unflushed`` cuts every file back to its last fsync (a machine crash),
        ``lose_disk`` starts it with an empty log directory."""
        if self.is_up(broker_id):
            self.kill(broker_id, clean=clean, notify_controller=False)
        if lose_disk:
            self.storages[broker_id] = FaultyStorage(InMemoryStorage())
        elif lose_unflushed:
            self.storages[broker_id].simulate_crash()
        self.record(f"restart broker {broker_id} (lose_unflushed={lose_unflushed}, lose_disk={lose_disk})")
        self._start_broker(broker_id)
        self._check_invariants()

    def fail_storage(self, broker_id: int, fault: str, *, room_bytes: int = 0) -> None:
        """The broker's disk fills up, or fails writes or fsyncs, until its process ends: its log
        directory goes offline at the next call the fault breaks, and it halts and restarts."""
        self.record(f"storage fault {fault} on broker {broker_id} (room {room_bytes} bytes)")
        self.storages[broker_id].inject(fault, room_bytes=room_bytes)

    def flush(self, broker_id: int) -> None:
        """Run the broker's periodic log flush now (fsync every log, checkpoint recovery points)."""
        self.broker(broker_id).replica_manager.flush_and_checkpoint_recovery_points()

    def checkpoint_high_watermarks(self, broker_id: int) -> None:
        self.broker(broker_id).replica_manager.checkpoint_high_watermarks()

    def kill_fetcher(self, broker_id: int, leader_id: int, fetcher_id: int = 0) -> None:
        """Kill one fetcher actor; its broker replaces it a second later from where its logs end."""
        broker = self.nodes[f"broker:{broker_id}"]
        fetcher = broker.fetchers.pop((leader_id, fetcher_id))
        self._take_down(fetcher)
        broker.replace_fetchers[(leader_id, fetcher_id)] = self.now_ms + FETCHER_REPLACEMENT_DELAY_MS
        broker.timers.add(self.now_ms + FETCHER_REPLACEMENT_DELAY_MS)

    # ============================================================================= running
    def run(self, ms: int, *, limit_steps: int = 1_000_000) -> None:
        """Run for ``ms`` of simulated time."""
        until_ms = self.now_ms + ms
        for _ in range(limit_steps):
            if not self._step(until_ms):
                self._check_invariants()
                return
        raise SimulationStalled(f"{self._where()}: {limit_steps} steps did not cover {ms} ms")

    def run_until(self, condition: Callable[[], Any], *, limit_ms: int = 60_000, limit_steps: int = 1_000_000,
                  what: str = "the condition", stall_ok: bool = False) -> bool:
        """Run until ``condition()`` is true; raise ``SimulationStalled`` at the bounds unless ``stall_ok``."""
        until_ms = self.now_ms + limit_ms
        for _ in range(limit_steps):
            if condition():
                self._check_invariants()
                return True
            if not self._step(until_ms):
                break
        self._check_invariants()
        if condition():
            return True
        if stall_ok:
            return False
        raise SimulationStalled(f"{self._where()}: {what} not reached within {limit_ms} ms / {limit_steps} steps")

    def run_until_quiet(self, limit_steps: int = 300_000, *, quiet_ms: int | None = None,
                        limit_ms: int = 120_000) -> int:
        """Run until nothing observable (leaders, epochs, ISRs, log end offsets, high watermarks,
        queued control requests, client calls) has changed for ``quiet_ms``. Returns the steps."""
        if quiet_ms is None:
            quiet_ms = max(1_000, 4 * (self.kafka_config.get_int("replica.fetch.wait.max.ms")
                                       + self.kafka_config.get_int("replica.fetch.backoff.ms")))
        start_step, start_ms = self.step_count, self.now_ms
        fingerprint, since_ms = self._fingerprint(), self.now_ms
        while self.step_count - start_step < limit_steps and self.now_ms - start_ms < limit_ms:
            self._step(self.now_ms + quiet_ms)
            current = self._fingerprint()
            if current != fingerprint:
                fingerprint, since_ms = current, self.now_ms
            elif self.now_ms - since_ms >= quiet_ms:
                self._check_invariants()
                return self.step_count - start_step
        raise SimulationStalled(f"{self._where()}: not quiet within {limit_steps} steps / {limit_ms} ms")

    def _fingerprint(self) -> tuple:
        replicas = tuple(
            (node.name, tp, p.leader_id, p.leader_epoch, p.log_end_offset, p.high_watermark, p.isr, p.pending_isr)
            for node in self._brokers() for tp, p in sorted(node.core.replica_manager.partitions.items()))
        leadership = tuple(sorted((tp, l.leader, l.leader_epoch, l.isr)
                                  for tp, l in self.controller.context.leadership.items()))
        channels = tuple((n.name, n.queue.queue_size + (n.queue.in_flight is not None))
                         for n in self.nodes.values() if isinstance(n, _ChannelNode))
        client_calls = sum(1 for c in self.network.calls.values() if c.caller == CLIENT)
        return replicas, leadership, channels, client_calls, len(self.network.held())

    def _step(self, until_ms: int) -> bool:
        """One step: deliver one due message, or move the clock to the next event (not past
        ``until_ms``) and fire what is due. False when nothing happens before ``until_ms``."""
        chosen = self.network.choose_due(self.now_ms, self.rng.choice)
        if chosen is not None:
            message = self.network.take(chosen)
            self.step_count += 1
            self.record(f"deliver {message.describe()}")
            self._deliver(message)
            self._check_invariants(touched=message.destination)
            return True
        candidates = [self.network.next_due_ms(), self.network.next_call_deadline_ms(),
                      (self.now_ms // self.tick_interval_ms + 1) * self.tick_interval_ms]
        if self.network.paused:
            candidates += [min(n.timers) for n in self.nodes.values() if n.timers and not self.network.is_paused(n.name)]
        else:
            candidates.append(self.nodes.next_deadline_ms())
        next_ms = max(self.now_ms + 1, min(c for c in candidates if c is not None))
        if next_ms > until_ms:
            self.now_ms = max(self.now_ms, until_ms)
            return False
        self.now_ms = next_ms
        self.step_count += 1
        self._fire_timeouts()
        self._fire_ticks()
        self._check_invariants(touched="")
        return True
