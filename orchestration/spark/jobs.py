"""The load job and the consume job: Spark tasks running raykafka clients, recording every record.

Theory of operation. The load job has one Spark task per producer (``producersPerTopic`` per
topic); each runs a raykafka producer at its share of ``producerRate`` for the workload's duration
or its share of ``recordCount``, and records, per record, its send time, its acknowledgement time
and partition and offset, or its error. The consume job has one task per consumer of each
subscription (a consumer group per subscription); each subscribes and reads until its whole
group has read every partition up to the end the load job acknowledged (or the driver's deadline
passes),
recording every record read and when. Consumers start with the producers (when there are task
slots for both), so end-to-end latency is what a live consumer sees.

The clients record their own history (``Producer``/``Consumer`` with a history): in a task that
history is a ``TaskHistory``, which keeps the events in memory with wall-clock times instead of
writing a file; the task returns them with its per-record rows, and the driver writes them into
the run's ``HistoryWriter`` for ``orchestration.chaos.checker``. So a send's outcome (ok, fail, or info
when it may have been written) is the producer's own judgement.

Values are unique across a run: ``<producer>:<sequence>``, then ``|`` and padding up to
``messageSize``. Histories and rows carry only the part before ``|``.

While the jobs run, tasks report their counts to a ``JobProgress`` actor every
``PROGRESS_INTERVAL_S`` (one Ray call per interval, not per record); the driver's progress
display, the fault schedule's ``after_acks`` triggers and the consumers' stop condition read it.
Each task also reports once where it runs (its Ray node's IP), so a run shows which hosts its load
came from.

Consumers are raykafka's (its Python API, through Ray) or, with ``client="confluent-kafka"``,
librdkafka's over Kafka's wire protocol to the brokers' advertised listeners
(``orchestration.spark.confluent_consumer``), as producers are.
"""
from __future__ import annotations

import json
import random
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import ray

from orchestration.spark.session import RayTarget

PROGRESS_INTERVAL_S = 0.5
VALUE_SEPARATOR = b"|"
LOAD_COLUMNS = ("producer", "topic", "value", "bytes", "send_time", "ack_time", "partition", "offset",
                "outcome", "error")
CONSUME_COLUMNS = ("subscription", "consumer", "topic", "partition", "offset", "value", "bytes", "read_time",
                   "create_time", "consumer_started")


def record_id(value: bytes | bytearray | memoryview | str | None) -> str:
    """The unique part of a value (before the padding), as histories and rows carry it."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value.split("|", 1)[0]
    return bytes(value).split(VALUE_SEPARATOR, 1)[0].decode("utf-8", errors="backslashreplace")


class TaskHistory:
    """What a client in a Spark task writes its history to: the ``HistoryWriter`` calls the
    producer and consumer make, kept in memory with wall-clock times (``time.time()``, comparable
    across the processes of one run), values cut to their unique part."""

    def __init__(self) -> None:
        self.events: list[tuple] = []  # (wall time, process, type, f, value dict)

    def _add(self, process: str, type_: str, f: str, value: dict) -> None:
        self.events.append((time.time(), process, type_, f, value))

    def invoke(self, process, topic, partition, value, time=None, *, key=None, tombstone=False) -> None:
        event = {"topic": topic, "partition": partition, "value": record_id(value)}
        if key is not None:
            event["key"] = key
        if tombstone:
            event["tombstone"] = True
        self._add(process, "invoke", "send", event)

    def ok(self, process, topic, partition, offset, value, time=None) -> None:
        self._add(process, "ok", "send", {"topic": topic, "partition": int(partition), "offset": int(offset),
                                          "value": record_id(value)})

    def fail(self, process, value, error, time=None) -> None:
        from orchestration.history import error_name
        self._add(process, "fail", "send", {"value": record_id(value), "error": error_name(error)})

    def info(self, process, value, error, time=None) -> None:
        from orchestration.history import error_name
        self._add(process, "info", "send", {"value": record_id(value), "error": error_name(error)})

    def poll(self, process, records, positions_before, time=None) -> None:
        self._add(process, "ok", "poll", {
            "records": [[r.topic, int(r.partition), int(r.offset), record_id(r.value)] for r in records],
            "positions_before": {str(k): int(v) for k, v in positions_before.items()}})


@ray.remote(num_cpus=0)
class JobProgress:
    """Counts the tasks report: records sent, acknowledged, failed, read; per subscription the
    highest offset read + 1 per partition; per client (process), the IP of the Ray node its task
    ran on. One per run, named in the cluster's namespace."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {"sent": 0, "acknowledged": 0, "failed": 0, "read": 0}
        self.read_ends: dict[str, dict[str, int]] = {}
        self.hosts: dict[str, str] = {}
        self.load_started_at: float | None = None
        self.targets: dict[str, int] | None = None  # set when the load is over
        self.deadline = float("inf")

    def report(self, counts: dict[str, int], read_ends: dict[str, dict[str, int]] | None = None,
               started_at: float | None = None, host: tuple[str, str] | None = None) -> None:
        if host is not None:
            process, node_ip = host
            self.hosts[str(process)] = str(node_ip)
        for key, value in counts.items():
            self.counts[key] = self.counts.get(key, 0) + int(value)
        for subscription, ends in (read_ends or {}).items():
            known = self.read_ends.setdefault(subscription, {})
            for tp, end in ends.items():
                known[tp] = max(known.get(tp, 0), int(end))
        if started_at is not None and (self.load_started_at is None or started_at < self.load_started_at):
            self.load_started_at = started_at

    def set_targets(self, targets: dict[str, int], deadline: float) -> None:
        """The load is over: consumers read up to ``targets`` ("topic-partition" -> end offset),
        and give up at wall-clock ``deadline``."""
        self.targets, self.deadline = dict(targets), deadline

    def consumer_state(self, subscription: str, topic: str) -> str:
        """``wait`` (the load goes on), ``done`` (``subscription`` has read every partition of
        ``topic`` up to its target) or ``give-up`` (the deadline has passed)."""
        from orchestration.history import split_topic_partition
        if self.targets is None:
            return "wait"
        ends = self.read_ends.get(subscription, {})
        if all(ends.get(tp, 0) >= end for tp, end in self.targets.items() if split_topic_partition(tp)[0] == topic):
            return "done"
        return "give-up" if time.time() > self.deadline else "wait"

    def snapshot(self) -> dict:
        return {"counts": dict(self.counts), "load_started_at": self.load_started_at,
                "read_ends": {s: dict(e) for s, e in self.read_ends.items()}, "hosts": dict(self.hosts)}


def progress_actor_name(run_id: str) -> str:
    return f"raykafka-job-progress-{run_id}"


@dataclass(frozen=True)
class ProducerTask:
    process: str
    topic: str
    records: int | None  # None: run for duration_s
    duration_s: float | None
    rate_per_s: float  # 0: as fast as the producer takes records
    message_size: int
    key_distributor: str
    partitions: int
    config: dict = field(default_factory=dict)
    seed: int = 0
    client: str = "raykafka"  # or "confluent-kafka": librdkafka over Kafka's wire protocol


@dataclass(frozen=True)
class ConsumerTask:
    process: str
    subscription: str  # the group id
    topic: str
    config: dict = field(default_factory=dict)
    timeout_s: float = 3600.0  # a safety net only: the driver's deadline (JobProgress) ends a consumer
    client: str = "raykafka"  # or "confluent-kafka": librdkafka over Kafka's wire protocol


class _Reporter:
    """Sends a task's counts to the progress actor at most every PROGRESS_INTERVAL_S."""

    def __init__(self, progress) -> None:
        self.progress = progress
        self.pending: dict[str, int] = {}
        self.last = time.monotonic()
        self._lock = threading.Lock()  # the producer's sender thread adds acknowledgements

    def add(self, key: str, count: int = 1) -> None:
        with self._lock:
            self.pending[key] = self.pending.get(key, 0) + count

    def flush(self, force: bool = False, **extra) -> None:
        if not force and time.monotonic() - self.last < PROGRESS_INTERVAL_S and not extra:
            return
        with self._lock:
            counts, self.pending, self.last = self.pending, {}, time.monotonic()
        self.progress.report.remote(counts, **extra)


def _payload(record_value: str, size: int) -> bytes:
    head = record_value.encode() + VALUE_SEPARATOR
    return head + b"x" * max(0, size - len(head))


def _key(task: ProducerTask, sequence: int, rng: random.Random) -> bytes | None:
    if task.key_distributor == "KEY_ROUND_ROBIN":
        return f"key-{sequence % max(1, task.partitions)}".encode()
    if task.key_distributor == "RANDOM_NANO":
        return f"key-{rng.getrandbits(63)}".encode()
    return None


def run_producer(target: RayTarget, task: ProducerTask, progress_name: str) -> Iterator[tuple]:
    """One producer of the load job; yields ("row", LOAD_COLUMNS...) and ("event", ...) tuples."""
    directory = target.directory()
    progress = ray.get_actor(progress_name, namespace=target.namespace)
    history = TaskHistory()
    if task.client == "confluent-kafka":
        from orchestration.spark.confluent_producer import ConfluentLoadProducer
        producer = ConfluentLoadProducer(target.bootstrap_servers, task.config, history=history, process=task.process)
    else:
        from orchestration.clients.producer import Producer
        producer = Producer(directory, task.config, history=history, process=task.process)
    reporter = _Reporter(progress)
    rng = random.Random(task.seed)
    started = time.time()
    reporter.flush(started_at=started, host=(task.process, ray.util.get_node_ip_address()))
    interval_s = 1.0 / task.rate_per_s if task.rate_per_s > 0 else 0.0
    sizes: dict[str, int] = {}
    sequence, next_at = 0, time.monotonic()

    def on_done(future) -> None:
        reporter.add("acknowledged" if future.exception() is None else "failed")

    try:
        while (task.records is None or sequence < task.records) and (
                task.duration_s is None or time.time() - started < task.duration_s):
            value = f"{task.process}:{sequence}"
            payload = _payload(value, task.message_size)
            key = _key(task, sequence, rng)
            sizes[value] = len(payload) + len(key or b"")
            try:
                producer.send(task.topic, value=payload, key=key).add_done_callback(on_done)
            except Exception:  # refused before it was queued; the history has its fail
                reporter.add("failed")
            reporter.add("sent")
            sequence += 1
            reporter.flush()
            if interval_s:
                next_at += interval_s
                pause = next_at - time.monotonic()
                if pause > 0:
                    time.sleep(pause)
        producer.flush()
    finally:
        producer.close()
        reporter.flush(force=True)
    yield from _load_rows(task, history.events, sizes)


def _load_rows(task: ProducerTask, events: list[tuple], sizes: dict[str, int]) -> Iterator[tuple]:
    sends: dict[str, list] = {}
    for when, process, type_, f, value in events:
        yield ("event", when, process, type_, f, json.dumps(value))
        if f != "send":
            continue
        if type_ == "invoke":
            sends[value["value"]] = [process, task.topic, value["value"], sizes.get(value["value"], 0), when,
                                     None, value["partition"], None, None, None]
        else:
            row = sends.get(value["value"])
            if row is None:
                continue
            row[5], row[8] = when, type_
            if type_ == "ok":
                row[6], row[7] = value["partition"], value["offset"]
            else:
                row[9] = value["error"]
    for row in sends.values():
        if row[8] is None:
            row[8], row[9] = "info", "NO_OUTCOME"  # the task ended before the send completed
        yield ("row", *row)


def run_consumer(target: RayTarget, task: ConsumerTask, progress_name: str) -> Iterator[tuple]:
    """One member of a subscription's group; reads until the whole group has read every partition
    up to the acknowledged ends (``JobProgress.targets``) or ``timeout_s`` passes."""
    from orchestration.history import topic_partition_key
    directory = target.directory()
    progress = ray.get_actor(progress_name, namespace=target.namespace)
    history = TaskHistory()
    settings = {"auto.offset.reset": "earliest", "enable.auto.commit": "false", **task.config,
                "group.id": task.subscription}
    if task.client == "confluent-kafka":
        from orchestration.spark.confluent_consumer import ConfluentLoadConsumer
        consumer = ConfluentLoadConsumer(target.bootstrap_servers, settings, history=history, process=task.process)
    else:
        from orchestration.clients.consumer import Consumer
        consumer = Consumer(directory, {"max.poll.records": "5000", **settings}, history=history,
                            process=task.process)
    reporter = _Reporter(progress)
    reporter.flush(force=True, host=(task.process, ray.util.get_node_ip_address()))
    rows, ends = [], {}
    deadline = time.monotonic() + task.timeout_s
    started = time.time()
    try:
        consumer.subscribe([task.topic])
        last_check = 0.0
        while time.monotonic() < deadline:
            records = consumer.poll(timeout_ms=200)
            now = time.time()
            for record in records:
                rows.append(("row", task.subscription, task.process, record.topic, record.partition, record.offset,
                             record_id(record.value), len(record.value or b"") + len(record.key or b""), now,
                             record.timestamp / 1000.0, started))
                key = topic_partition_key(record.topic, record.partition)
                ends[key] = max(ends.get(key, 0), record.offset + 1)
            if records:
                reporter.add("read", len(records))
                try:
                    consumer.commit()  # a partition moved by a rebalance resumes here
                except Exception:  # noqa: BLE001 a rebalance under way: the new owner re-reads from the last commit
                    reporter.add("commits_failed")
            if time.monotonic() - last_check >= PROGRESS_INTERVAL_S:
                reporter.flush(force=True, read_ends={task.subscription: dict(ends)})
                last_check = time.monotonic()
                if ray.get(progress.consumer_state.remote(task.subscription, task.topic), timeout=30) != "wait":
                    break
    finally:
        reporter.flush(force=True, read_ends={task.subscription: dict(ends)})
        consumer.close()
    for when, process, type_, f, value in history.events:
        yield ("event", when, process, type_, f, json.dumps(value))
    yield from rows


def task_slots(spark) -> int:
    """Tasks the session runs at once, from its configuration (``defaultParallelism`` is lower
    until every executor has registered)."""
    conf = spark.sparkContext.getConf()
    return int(conf.get("spark.executor.instances", "1")) * int(conf.get("spark.executor.cores", "1"))


def run_tasks(spark, target: RayTarget, tasks: list, runner, progress_name: str) -> list[tuple]:
    """Run ``runner`` over ``tasks``, one Spark task each, all at once; returns what they yield."""
    slots = task_slots(spark)
    if len(tasks) > slots:
        raise ValueError(f"{len(tasks)} clients need {len(tasks)} Spark task slots running at once, and the "
                         f"session has {slots}: start Spark with more (SparkSizing.task_slots)")
    rdd = spark.sparkContext.parallelize(tasks, len(tasks))
    return rdd.mapPartitions(lambda part: (row for task in part for row in runner(target, task, progress_name))
                             ).collect()


def split_results(results: Iterable[tuple]) -> tuple[list[tuple], list[tuple]]:
    """(per-record rows, history events) from what a job's tasks yielded."""
    rows, events = [], []
    for item in results:
        (rows if item[0] == "row" else events).append(item[1:])
    return rows, events


def write_events(history, events: Iterable[tuple], wall_zero: float) -> None:
    """Write task history events into the run's ``HistoryWriter``; ``wall_zero`` is the wall-clock
    time of the writer's zero (``time.time() - history.now()``)."""
    for when, process, type_, f, value in sorted(events, key=lambda e: e[0]):
        history.write(process, type_, f, json.loads(value), time=max(0.0, when - wall_zero))


def acknowledged_ends(load_rows: Iterable[tuple]) -> dict[str, int]:
    """Per "topic-partition", the offset after the highest acknowledged record."""
    from orchestration.history import topic_partition_key
    ends: dict[str, int] = {}
    for row in load_rows:
        if row[8] == "ok":
            key = topic_partition_key(row[1], row[6])
            ends[key] = max(ends.get(key, 0), row[7] + 1)
    return ends


def snapshot(progress) -> dict[str, Any]:
    return ray.get(progress.snapshot.remote(), timeout=30)
