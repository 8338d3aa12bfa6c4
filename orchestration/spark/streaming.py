"""The streaming workload (``job: streaming-aggregate``): a Structured Streaming job on Spark's own
Kafka source and sink reads a topic, keeps a running count and sum per key, and writes them to
another topic while the workload's faults (a broker kill) run; the summary checks the output
against the input.

Theory of operation. ``run_streaming`` creates the input topic (the workload's first topic) and the
output topic (``<input>-totals``, same partitions and replication), then starts the query
(``start_aggregation``): ``spark.readStream.format("kafka")`` from the earliest offset with
``includeHeaders``, ``groupBy(key).agg(count, sum)`` of the values (decimal integers), written
with ``writeStream.format("kafka")`` in ``update`` mode (each micro-batch writes the totals of the
keys it changed, as JSON ``{"count": n, "sum": s}``, with a ``source`` header naming the input
topic), its state and offsets checkpointed under the output directory. Meanwhile the driver
produces the input with raykafka's producer (``recordCount`` or ``testDurationMinutes`` at
``producerRate``, keys ``key-0`` .. ``key-9`` round robin, values 1..100) and runs the fault steps
as the load pipeline does (``after_acks`` counts this producer's acknowledgements). When the input
is written the driver waits (bounded by ``consumeTimeoutSeconds``) until a finished micro-batch
has read every partition to its high watermark; a query that failed is started again from its
checkpoint, as a Structured Streaming deployment restarts one, and the restart is noted.

The check (``orchestration.spark.summary.check_stream_totals``) reads both topics back with
``spark.read.format("kafka")``. Spark's state is exactly-once (checkpointed with the source
offsets), its Kafka sink at-least-once: a micro-batch retried after a failure writes its totals
again. So each key's highest count must equal the number of its records in the input topic and
its sum theirs, every output row must be a total some prefix of the input could have had (count
and sum at most the final ones), and repeated rows are counted and reported, not failed. Every
record the producer saw acknowledged must be in the input topic, at its offset.
"""
from __future__ import annotations

import json
import shutil
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from orchestration.spark.workload import Workload

KEYS = 10
TRIGGER = "1 second"
OUTPUT_SUFFIX = "-totals"
MAX_RESTARTS = 3
POLL_S = 0.5
SEND_CHUNK = 50  # records sent between rate and fault checks


@dataclass
class StreamingResult:
    workload: str
    output_dir: str
    spark_startup_s: float
    summary: dict
    lost: int
    notes: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return self.summary["check"]["passed"]


def amount(index: int) -> int:
    return index % 100 + 1


def start_aggregation(spark, servers: str, source: str, sink: str, checkpoint: str, trigger: str = TRIGGER):
    """The running query: Spark's Kafka source -> count and sum per key -> Spark's Kafka sink."""
    from pyspark.sql import functions as F
    records = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", servers)
               .option("subscribe", source).option("startingOffsets", "earliest")
               .option("includeHeaders", "true").load())
    totals = (records.select(F.col("key").cast("string").alias("key"),
                             F.col("value").cast("string").cast("long").alias("amount"))
              .groupBy("key").agg(F.count("*").alias("count"), F.sum("amount").alias("sum")))
    header = F.struct(F.lit("source").alias("key"), F.lit(source).cast("binary").alias("value"))
    rows = totals.select("key", F.to_json(F.struct("count", "sum")).alias("value"), F.array(header).alias("headers"))
    return (rows.writeStream.format("kafka").option("kafka.bootstrap.servers", servers).option("topic", sink)
            .option("checkpointLocation", checkpoint).outputMode("update").trigger(processingTime=trigger).start())


def read_back(spark, servers: str, topic: str) -> list:
    """Every record of ``topic`` with Spark's batch Kafka source: (partition, offset, key, value, headers)."""
    frame = (spark.read.format("kafka").option("kafka.bootstrap.servers", servers).option("subscribe", topic)
             .option("startingOffsets", "earliest").option("endingOffsets", "latest")
             .option("includeHeaders", "true").load())
    return [(r.partition, r.offset, None if r.key is None else bytes(r.key).decode(),
             None if r.value is None else bytes(r.value).decode(),
             [(h.key, None if h.value is None else bytes(h.value)) for h in (r.headers or [])])
            for r in frame.collect()]


def batch_offsets(progress: dict | None, topic: str) -> dict[int, int]:
    """The source offsets a finished micro-batch read up to, per partition (from its progress)."""
    if not progress:
        return {}
    for source in progress.get("sources", []):
        end = source.get("endOffset")
        end = json.loads(end) if isinstance(end, str) else end
        if isinstance(end, dict) and topic in end:
            return {int(p): int(o) for p, o in end[topic].items()}
    return {}


class _Input:
    """The driver's producer of the input topic, counting acknowledgements as they come."""

    def __init__(self, cluster, workload: Workload, topic: str, config: dict) -> None:
        self.producer = cluster.producer(config)
        self.workload, self.topic = workload, topic
        self.sent: list = []  # (future, key, value)
        self.counts = {"acknowledged": 0, "failed": 0}
        self.started_at: float | None = None
        self._lock = threading.Lock()

    def _done(self, future) -> None:
        with self._lock:
            self.counts["failed" if future.exception() is not None else "acknowledged"] += 1

    def run(self, on_tick) -> None:
        workload = self.workload
        self.started_at = time.monotonic()
        index = 0
        while True:
            elapsed = time.monotonic() - self.started_at
            if workload.record_count is not None and index >= workload.record_count:
                break
            if workload.duration_s is not None and elapsed >= workload.duration_s:
                break
            if workload.producer_rate and index > elapsed * workload.producer_rate:
                time.sleep(min(0.05, (index - elapsed * workload.producer_rate) / workload.producer_rate))
                continue
            end = index + SEND_CHUNK if workload.record_count is None else min(workload.record_count, index + SEND_CHUNK)
            for i in range(index, end):
                key, value = f"key-{i % KEYS}".encode(), str(amount(i)).encode()
                future = self.producer.send(self.topic, value=value, key=key, headers=[("producer", b"raykafka")])
                future.add_done_callback(self._done)
                self.sent.append((future, key, value))
            index = end
            on_tick(dict(self.counts), elapsed)
        self.producer.flush()
        on_tick(dict(self.counts), time.monotonic() - self.started_at)

    def acknowledged(self) -> list[tuple[int, int, str, str]]:
        """(partition, offset, key, value) of every acknowledged record."""
        rows = []
        for future, key, value in self.sent:
            if future.exception() is None:
                metadata = future.result()
                rows.append((metadata.partition, metadata.offset, key.decode(), value.decode()))
        return rows


def run_streaming(cluster, spark, workload: Workload, output_dir: str | Path, *, out=print) -> StreamingResult:
    """Run the streaming workload on a running cluster and Spark session (``SparkOnRay``, with
    Spark's Kafka connector on it); see the module docstring."""
    from orchestration.chaos.faults import Faults
    from orchestration.chaos.runner import Run, Scenario
    from orchestration.history import HistoryWriter
    from orchestration.spark.kafka_connector import kafka_options
    from orchestration.spark.fault_schedule import LOAD_PRODUCER_DEFAULTS, FaultSchedule
    from orchestration.spark.summary import check_stream_totals, save_summary, stream_lines
    from orchestration.spark.topics import partition_bounds
    from orchestration.spark.session import RayTarget
    output = Path(output_dir)
    output.mkdir(parents=True, exist_ok=True)
    source = workload.topic_names()[0]
    sink = source + OUTPUT_SUFFIX
    for topic in (source, sink):
        cluster.create_topic(topic, partitions=workload.partitions_per_topic,
                             replication_factor=workload.replication_factor,
                             config={"min.insync.replicas": str(workload.min_insync_replicas), **workload.topic_config})
    servers = kafka_options(cluster)["kafka.bootstrap.servers"]
    out(f"streaming job: {source} -> count and sum per key -> {sink} (Spark's Kafka source and sink, "
        f"kafka.bootstrap.servers={servers}, trigger {TRIGGER})")
    checkpoint = output / f"checkpoint-{uuid.uuid4().hex[:8]}"
    notes: list[str] = []
    session = spark.spark
    query = start_aggregation(session, servers, source, sink, str(checkpoint))
    restarts = 0
    history_path = output / "history.jsonl"
    history_path.unlink(missing_ok=True)
    producer_config = {**LOAD_PRODUCER_DEFAULTS, **workload.producer_config, "acks": workload.acks}
    try:
        with HistoryWriter(history_path) as history:
            run = Run(Scenario(name=workload.name, title=workload.name, criterion="", script=lambda r: None),
                      cluster, Faults(cluster, history), history, seed=0)
            schedule = FaultSchedule(workload, run, source)
            producer = _Input(cluster, workload, source, producer_config)
            try:
                producer.run(lambda counts, elapsed: schedule.maybe_run(counts, elapsed))
            finally:
                producer.producer.close()
            if schedule.steps:
                run.note(f"{len(schedule.steps)} fault step(s) never fired: the input ended first")
            notes += run.notes
        acknowledged = producer.acknowledged()
        out(f"input: {len(producer.sent)} records sent, {len(acknowledged)} acknowledged")
        ends = {p: hw for p, (_, hw) in partition_bounds(RayTarget.of(cluster), source).items()}
        deadline = time.monotonic() + workload.consume_timeout_seconds
        while True:
            if not query.isActive:
                restarts += 1
                failure = query.exception()
                notes.append(f"the streaming query stopped ({str(failure).splitlines()[0] if failure else 'no error'}); "
                             f"restart {restarts} from its checkpoint")
                if restarts > MAX_RESTARTS:
                    raise RuntimeError(f"the streaming query failed {restarts} times: {failure}")
                query = start_aggregation(session, servers, source, sink, str(checkpoint))
            read = batch_offsets(query.lastProgress, source)
            if all(read.get(p, -1) >= end for p, end in ends.items()):
                break
            if time.monotonic() > deadline:
                raise TimeoutError(f"the streaming query read {read} of {source}'s ends {ends} within "
                                   f"{workload.consume_timeout_seconds}s")
            time.sleep(POLL_S)
    finally:
        if query.isActive:
            query.stop()
    input_rows = read_back(session, servers, source)
    output_rows = read_back(session, servers, sink)
    check = check_stream_totals(acknowledged, [r[:4] for r in input_rows],
                                [(key, value) for _, _, key, value, _ in output_rows])
    headers = sorted({(k, v.decode()) for *_, hs in output_rows for k, v in hs if v is not None})
    summary = {"workload": workload.name, "job": "streaming-aggregate", "spark_startup_s": round(spark.startup_s, 2),
               "input_topic": source, "output_topic": sink, "bootstrap_servers": servers,
               "sent": len(producer.sent), "restarts": restarts, "output_headers": headers,
               "check": check, "notes": notes}
    save_summary(summary, output / "summary.json")
    shutil.rmtree(checkpoint, ignore_errors=True)
    out("")
    for line in stream_lines(summary):
        out(line)
    for note in notes:
        out(f"note: {note}")
    out(f"history and summary.json in {output}")
    return StreamingResult(workload.name, str(output), spark.startup_s, summary, check["lost"], notes)
