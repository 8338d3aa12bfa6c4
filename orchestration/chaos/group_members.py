"""The group members and probes that the consumer-group rows of the failover matrix drive.

Members: a ``GroupReader`` is a member polling in a thread of the driver, committing after every
poll that returned records and recording its polls in the run's history; a ``ConsumerProcess`` is
a member in a Ray actor, so that it can die as a crashed process would (``ActorPoller`` keeps it
polling); ``SpreadLoad`` is a steady load spread evenly over a topic's partitions. Probes, as an
operator would use kafka-consumer-groups: ``group_state`` (state, members, generation,
coordinator; cheap enough to poll quickly), ``stable_with``, ``assignment_problem`` and
``caught_up`` over ``Cluster.describe_group``, and ``wait_or_require``, a bounded wait that
records its outcome as one of the row's requirements.

Every wait is bounded; threads are daemons, stopped and joined by their owners.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

import ray
from loguru import logger

from actors.core.messages.describe_groups import DescribeGroupsRequest
from orchestration.admin.groups import find_coordinator
from orchestration.chaos.runner import Run
from orchestration.clients.broker_directory import BrokerDirectory
from orchestration.clients.consumer import Consumer
from orchestration.clients.consumer_coordinator import CommitFailedError
from orchestration.errors import KafkaError

SESSION_TIMEOUT_MS = 6000
# What every group member here runs with; max.poll.interval.ms (the rebalance timeout) is lowered
# from 300 s so that a rebalance waiting for a member that will not come back stays short.
GROUP_CONSUMER_CONFIG = {"session.timeout.ms": str(SESSION_TIMEOUT_MS), "heartbeat.interval.ms": "500",
                         "enable.auto.commit": "false", "auto.offset.reset": "earliest",
                         "max.poll.interval.ms": "20000", "default.api.timeout.ms": "10000"}
POLL_MS = 200
READER_JOIN_TIMEOUT_S = 30


@dataclass(frozen=True)
class GroupState:
    coordinator: int
    state: str
    members: int
    generation: int


def group_state(directory: BrokerDirectory, group: str) -> GroupState:
    """State, member count, generation and coordinator only: two requests, so it can be polled
    every few milliseconds (``Cluster.describe_group`` also reads offsets and high watermarks)."""
    node_id, coordinator = find_coordinator(directory, group)
    described = ray.get(coordinator.handle.remote(DescribeGroupsRequest(groups=(group,))),
                        timeout=5).groups[0]
    if described.error_code != 0:
        raise KafkaError(described.error_code, group)
    return GroupState(node_id, described.group_state, len(described.members), described.generation_id)


def stable_with(run: Run, group: str, members: int):
    """The group's description when it is Stable with exactly ``members`` members, each assigned."""
    description = run.cluster.describe_group(group)
    if description.state != "Stable" or len(description.members) != members:
        return None
    return description


def assignment_problem(description, topic: str, partitions: int) -> str:
    """'' when the members' assignments cover every partition of ``topic`` exactly once."""
    owned = sorted(tp for member in description.members for tp in member.assignment)
    wanted = [(topic, p) for p in range(partitions)]
    if owned == wanted:
        return ""
    return f"members own {owned}, wanted each of {wanted} exactly once"


def caught_up(run: Run, group: str, topic: str, partitions: int):
    """Per partition (committed, high watermark) when every one is committed at its high watermark."""
    offsets = run.cluster.describe_group(group).offsets
    ends = {p: (offsets[(topic, p)].committed_offset, offsets[(topic, p)].log_end_offset)
            for p in range(partitions) if (topic, p) in offsets}
    done = len(ends) == partitions and all(hw >= 0 and committed == hw for committed, hw in ends.values())
    return ends if done else None


def wait_or_require(run: Run, condition, what: str, timeout_s: float, detail=None):
    """``run.wait`` as a requirement: met (with ``detail(result)``, else how long it took) or
    failed on the timeout, which does not end the script. Returns the result, None on a timeout."""
    started = time.monotonic()
    try:
        result = run.wait(condition, what, timeout_s)
    except TimeoutError as exc:
        run.require(False, what, str(exc))
        return None
    run.require(True, what, detail(result) if detail is not None else f"after {time.monotonic() - started:.1f}s")
    return result


def offsets_text(ends: dict) -> str:
    return ", ".join(f"p{p}={hw}" for p, (_, hw) in sorted(ends.items()))


@dataclass
class Assignment:
    """One ``on_partitions_assigned`` a reader saw, and the first offset it then read per partition."""
    at: float  # time.monotonic()
    partitions: list[tuple[str, int]]
    first_offsets: dict[tuple[str, int], int] = field(default_factory=dict)


class GroupReader:
    """A group member polling in a thread of the driver: poll, commit synchronously after every
    poll that returned records, repeat; every poll goes to the run's history as ``process``.

    It is its own rebalance listener, so it knows each assignment it got and the first offset it
    read afterwards in each partition. The consumer is only ever touched by its thread (created
    and subscribed before the thread starts), which closes it when told to stop."""

    def __init__(self, run: Run, topic: str, group: str, process: str, **config) -> None:
        self.process = process
        self.consumer = run.cluster.consumer({**GROUP_CONSUMER_CONFIG, "group.id": group, "client.id": process,
                                              **config}, history=run.history, process=process)
        self.consumer.subscribe([topic], listener=self)
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self.assignments: list[Assignment] = []
        self.records_read = 0
        self.commits = 0
        self.commit_failures: list[str] = []  # CommitFailedError: the group rebalanced meanwhile
        self.errors: list[str] = []  # anything else the consumer raised
        self._thread = threading.Thread(target=self._run, daemon=True, name=f"raykafka-chaos-{process}")

    # rebalance listener (called inside poll, on the reader's thread)
    def on_partitions_revoked(self, partitions) -> None:
        pass

    def on_partitions_assigned(self, partitions) -> None:
        with self._lock:
            self.assignments.append(Assignment(time.monotonic(), sorted(partitions)))

    def start(self) -> GroupReader:
        self._thread.start()
        return self

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                try:
                    records = self.consumer.poll(timeout_ms=POLL_MS)
                except KafkaError as exc:
                    self._error(f"poll: {exc!r}")
                    continue
                if not records:
                    continue
                with self._lock:
                    self.records_read += len(records)
                    current = self.assignments[-1] if self.assignments else None
                    for record in records:
                        tp = (record.topic, record.partition)
                        if current is not None and tp in current.partitions:
                            current.first_offsets.setdefault(tp, record.offset)
                try:
                    self.consumer.commit()
                    self.commits += 1
                except CommitFailedError as exc:
                    self.commit_failures.append(exc.error_code.name)
                except KafkaError as exc:
                    self._error(f"commit: {exc!r}")
        except Exception as exc:  # a bug, not a fault: the requirement on errors reports it
            logger.exception("chaos reader {} died", self.process)
            self.errors.append(f"unexpected: {exc!r}")
        finally:
            try:
                self.consumer.close(timeout_ms=10000)
            except Exception as exc:
                logger.warning("chaos reader {} did not close cleanly: {!r}", self.process, exc)

    def _error(self, text: str) -> None:
        self.errors.append(text)
        self._stop.wait(0.1)

    def first_assignment_after(self, at: float, including: list[tuple[str, int]]) -> Assignment | None:
        with self._lock:
            return next((a for a in self.assignments if a.at >= at and set(including) <= set(a.partitions)), None)

    def stop(self, run: Run) -> None:
        self._stop.set()
        self._thread.join(timeout=READER_JOIN_TIMEOUT_S)
        if self._thread.is_alive():
            run.note(f"reader {self.process} did not stop within {READER_JOIN_TIMEOUT_S}s")

    def summary(self) -> str:
        return (f"{self.process}: {self.records_read} records read, {self.commits} commits, "
                f"{len(self.commit_failures)} commits refused by a rebalance, {len(self.assignments)} assignments")


@ray.remote(num_cpus=0)
class ConsumerProcess:
    """A group member in a process of its own, so that it can die as a crashed consumer does
    (``ray.kill``: no LeaveGroup, no last commit). It commits after every poll with records."""

    def __init__(self, namespace: str, broker_ids: list[int], config: dict, topic: str) -> None:
        self.consumer = Consumer(BrokerDirectory(namespace=namespace, bootstrap_broker_ids=broker_ids), config)
        self.consumer.subscribe([topic])

    def poll_and_commit(self, timeout_ms: int) -> int:
        records = self.consumer.poll(timeout_ms=timeout_ms)
        if records:
            try:
                self.consumer.commit()
            except CommitFailedError:
                pass  # rebalanced meanwhile: the next owner re-reads from the last commit
        return len(records)

    def assignment(self) -> list:
        return sorted(self.consumer.assignment())


class ActorPoller:
    """Keeps calling a ``ConsumerProcess`` from a driver thread, as its own poll loop would."""

    def __init__(self, actor) -> None:
        self.actor = actor
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="raykafka-chaos-actor-poller")

    def start(self) -> ActorPoller:
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                ray.get(self.actor.poll_and_commit.remote(POLL_MS), timeout=30)
            except Exception as exc:
                self.errors.append(repr(exc))
                self._stop.wait(0.2)

    def stop(self) -> None:
        """Returns once no call to the actor is in flight (or after a bounded wait)."""
        self._stop.set()
        self._thread.join(timeout=READER_JOIN_TIMEOUT_S + 5)


def broker_directory(run: Run) -> BrokerDirectory:
    return BrokerDirectory(namespace=run.cluster.namespace, bootstrap_broker_ids=run.cluster.broker_ids)


class SpreadLoad:
    """``rate_per_s`` sends per second spread evenly over every partition: one ``Load`` per
    partition, so every partition (and every member's share) gets a steady, known rate, which a
    keyless ``Load`` gives only on average. Same surface as ``Load`` for what the rows use."""

    def __init__(self, run: Run, topic: str, partitions: int, rate_per_s: float) -> None:
        self._loads = [run.start_load(topic, producers=1, rate_per_s=rate_per_s / partitions, partition=p)
                       for p in range(partitions)]
        self._run = run

    @property
    def acknowledged(self) -> int:
        return sum(load.acknowledged for load in self._loads)

    def wait_acknowledged(self, count: int, timeout_s: float = 60) -> None:
        self._run.wait(lambda: self.acknowledged >= count, f"{count} acknowledged sends", timeout_s)

    def stop(self) -> None:
        for load in self._loads:
            load.stop()

    def summary(self) -> str:
        return (f"load: {sum(x.sent for x in self._loads)} sent, {self.acknowledged} acknowledged, "
                f"{sum(x.failed for x in self._loads)} not")
