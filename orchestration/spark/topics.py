"""Topics as DataFrames, the way Spark's own Kafka source and sink present them.

Reading (``read_topic``): the driver turns ``starting_offsets``/``ending_offsets`` (``earliest``,
``latest`` or explicit offsets per partition, as Spark's options) into one offset range per topic
partition, asking the partition leaders (ListOffsets) for ``earliest`` (the log start offset) and
``latest`` (the high watermark). Each range becomes one Spark partition, split further into ranges
of at most ``max_records_per_partition`` offsets. A Spark task reads its range with raykafka's
consumer (whole fetches, never one Ray call per record) and yields rows with the columns of Spark's
Kafka source: ``key``, ``value`` (binary), ``topic``, ``partition``, ``offset``, ``timestamp``,
``timestampType`` (0, CreateTime: the only timestamp type raykafka's brokers keep), and with
``include_headers`` (Spark's ``includeHeaders``) ``headers``: array<struct<key: string, value: binary>>.

Writing (``write_topic``): each Spark task runs one raykafka producer with the producer settings
given (Kafka's keys, with or without Spark's ``kafka.`` prefix) over its rows' ``value`` and
optional ``key``, ``partition``, ``topic`` and ``headers`` columns (the sink's types), then flushes. A record the cluster refuses
fails the task and so the job (``spark.task.maxFailures`` is 1: a retried task would write its
records twice); the driver raises ``KafkaError`` with the refusal's Kafka error name.
"""
from __future__ import annotations

import re
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from actors.core.errors import ErrorCode
from orchestration.errors import KafkaError
from orchestration.spark.session import RayTarget

EARLIEST, LATEST = -2, -1  # Spark's spelling of the two positions in offset JSON
CREATE_TIME = 0
READ_TIMEOUT_S = 120  # a range not read to its end by then fails the task
SETTLE_TIMEOUT_S = 60  # how long a failed write waits for Spark to stop its other tasks
READ_CONSUMER_DEFAULTS = {"max.partition.fetch.bytes": str(4 << 20), "fetch.max.bytes": str(16 << 20),
                          "max.poll.records": "100000", "fetch.max.wait.ms": "200",
                          "auto.offset.reset": "none"}
KAFKA_SOURCE_COLUMNS = ("key", "value", "topic", "partition", "offset", "timestamp", "timestampType")
HEADERS = "headers"  # with include_headers, after KAFKA_SOURCE_COLUMNS, as Spark's source adds it
_ERROR_IN_TRACEBACK = re.compile(r"KafkaError: ([A-Z_]+) \(-?\d+\)")


def kafka_settings(config: dict | None) -> dict[str, str]:
    """Kafka client settings; Spark's ``kafka.``-prefixed option names are accepted too."""
    return {(k[6:] if str(k).startswith("kafka.") else str(k)): str(v) for k, v in (config or {}).items()}


def headers_type():
    """Spark's Kafka type for headers: array<struct<key: string, value: binary>>."""
    from pyspark.sql.types import ArrayType, BinaryType, StringType, StructField, StructType
    return ArrayType(StructType([StructField("key", StringType()), StructField("value", BinaryType())]))


def kafka_source_schema(include_headers: bool = False):
    from pyspark.sql.types import (
        BinaryType, IntegerType, LongType, StringType, StructField, StructType,
    )
    fields = [StructField("key", BinaryType()), StructField("value", BinaryType()),
              StructField("topic", StringType(), False), StructField("partition", IntegerType(), False),
              StructField("offset", LongType(), False), StructField("timestamp_ms", LongType(), False),
              StructField("timestampType", IntegerType(), False)]
    return StructType(fields + ([StructField(HEADERS, headers_type())] if include_headers else []))


def header_pairs(headers) -> list[tuple[str, bytes | None]] | None:
    """Headers as the producer takes them ((key, value) pairs) from a row's ``headers`` (Spark's
    structs, or pairs); keys as text, values as bytes."""
    if headers is None:
        return None
    pairs = []
    for header in headers:
        key, value = (header["key"], header["value"]) if hasattr(header, "asDict") else header
        key = key.decode() if isinstance(key, (bytes, bytearray)) else str(key)
        pairs.append((key, None if value is None else bytes(value)))
    return pairs


# ------------------------------------------------------------------------------------- reading
@dataclass(frozen=True)
class OffsetRange:
    """Offsets [start, end) of one topic partition: the unit a Spark task reads."""
    topic: str
    partition: int
    start: int
    end: int


def _offset_spec(spec, topic: str, partition: int, default: int) -> int:
    """One partition's offset from ``earliest``/``latest``, a {partition: offset} dict, or Spark's
    {topic: {partition: offset}} (partitions left out get ``default``)."""
    if isinstance(spec, str):
        if spec not in ("earliest", "latest"):
            raise ValueError(f"offsets must be 'earliest', 'latest' or a dict of offsets, not {spec!r}")
        return EARLIEST if spec == "earliest" else LATEST
    if isinstance(spec, dict) and topic in spec:
        spec = spec[topic]
    if isinstance(spec, dict):
        found = spec.get(partition, spec.get(str(partition), default))
        return int(found)
    raise ValueError(f"offsets must be 'earliest', 'latest' or a dict of offsets, not {spec!r}")


def plan_ranges(topic: str, bounds: dict[int, tuple[int, int]], starting, ending,
                max_records_per_partition: int | None = None) -> list[OffsetRange]:
    """The offset ranges to read: per partition from the start to the end asked for, where
    ``bounds`` holds each partition's (log start offset, high watermark). Pure: no cluster here."""
    ranges = []
    for partition in sorted(bounds):
        log_start, high_watermark = bounds[partition]
        resolve = {EARLIEST: log_start, LATEST: high_watermark}
        start = _offset_spec(starting, topic, partition, EARLIEST)
        end = _offset_spec(ending, topic, partition, LATEST)
        start, end = resolve.get(start, start), resolve.get(end, end)
        if start < log_start or end > high_watermark:
            raise KafkaError(ErrorCode.OFFSET_OUT_OF_RANGE, f"{topic}-{partition}: [{start}, {end}) is outside "
                                                            f"[{log_start}, {high_watermark})")
        step = max_records_per_partition or max(1, end - start)
        for first in range(start, end, step):
            ranges.append(OffsetRange(topic, partition, first, min(end, first + step)))
    return ranges


def partition_bounds(target: RayTarget, topic: str) -> dict[int, tuple[int, int]]:
    """(log start offset, high watermark) of every partition of ``topic``, from its leaders."""
    from orchestration.clients.consumer import Consumer
    directory = target.directory()
    partitions = sorted(directory.partitions_for(topic))
    consumer = Consumer(directory, {"auto.offset.reset": "earliest"})
    try:
        wanted = [(topic, p) for p in partitions]
        consumer.assign(wanted)
        consumer.seek_to_beginning(wanted)
        ends = consumer.end_offsets(wanted)
        return {p: (consumer.position((topic, p)), ends[(topic, p)]) for p in partitions}
    finally:
        consumer.close()


def read_ranges(target: RayTarget, ranges: Iterable[OffsetRange], config: dict | None = None,
                timeout_s: float = READ_TIMEOUT_S, include_headers: bool = False) -> Iterator[tuple]:
    """Rows (key, value, topic, partition, offset, timestamp ms, timestampType[, headers]) of every
    offset in ``ranges``; runs in a Spark task (or anywhere connected to the cluster's Ray)."""
    from orchestration.clients.consumer import Consumer
    consumer = Consumer(target.directory(), {**READ_CONSUMER_DEFAULTS, **kafka_settings(config)})
    try:
        for offsets in ranges:
            tp = (offsets.topic, offsets.partition)
            consumer.assign([tp])
            if offsets.start >= offsets.end:
                continue
            consumer.seek(tp, offsets.start)
            deadline = time.monotonic() + timeout_s
            while consumer.position(tp) < offsets.end:
                if time.monotonic() > deadline:
                    raise KafkaError(ErrorCode.REQUEST_TIMED_OUT, f"{tp[0]}-{tp[1]}: read only up to offset "
                                     f"{consumer.position(tp)} of [{offsets.start}, {offsets.end}) in {timeout_s}s")
                for record in consumer.poll(timeout_ms=500):
                    if record.offset < offsets.end:
                        row = (record.key, record.value, record.topic, record.partition, record.offset,
                               record.timestamp, CREATE_TIME)
                        yield row + (header_pairs(record.headers),) if include_headers else row
    finally:
        consumer.close()


def read_topic(spark, target: RayTarget, topic: str, *, starting_offsets="earliest", ending_offsets="latest",
               max_records_per_partition: int | None = None, consumer_config: dict | None = None,
               include_headers: bool = False):
    """``topic`` (or the offset ranges asked for) as a DataFrame with Spark's Kafka-source columns
    (``headers`` too with ``include_headers``, as Spark's ``includeHeaders`` option adds it)."""
    from pyspark.sql import functions as F
    ranges = plan_ranges(topic, partition_bounds(target, topic), starting_offsets, ending_offsets,
                         max_records_per_partition)
    config = dict(consumer_config or {})
    rows = spark.sparkContext.parallelize(ranges, max(1, len(ranges))).mapPartitions(
        lambda part: read_ranges(target, part, config, include_headers=include_headers))
    frame = spark.createDataFrame(rows, kafka_source_schema(include_headers))
    return frame.select("key", "value", "topic", "partition", "offset",
                        F.expr("timestamp_millis(timestamp_ms)").alias("timestamp"), "timestampType",
                        *([HEADERS] if include_headers else []))


# ------------------------------------------------------------------------------------- writing
@dataclass(frozen=True)
class WriteResult:
    records: int
    bytes: int
    # (topic, partition, offset, key, value) of every acknowledged record, when asked for.
    acknowledged: list | None = None


def produce_rows(target: RayTarget, rows: Iterable, topic: str | None, config: dict,
                 collect_metadata: bool) -> Iterator[tuple]:
    """Produce ``rows`` (with ``value`` and optional ``key``, ``partition``, ``topic``, ``headers``) with one
    producer; yields ("summary", records, bytes) and, when ``collect_metadata``, one
    ("ack", topic, partition, offset, key, value) per record. Raises the first refusal."""
    from orchestration.clients.producer import Producer
    producer = Producer(target.directory(), config)
    sent, size = [], 0
    try:
        for row in rows:
            fields = row.asDict() if hasattr(row, "asDict") else dict(row)
            destination = fields.get("topic") or topic
            if not destination:
                raise ValueError("a row has no 'topic' and write_topic was given no topic")
            value, key = fields.get("value"), fields.get("key")
            value = bytes(value) if value is not None else None
            key = bytes(key) if key is not None else None
            future = producer.send(destination, value=value, key=key, partition=fields.get("partition"),
                                   headers=header_pairs(fields.get(HEADERS)))
            sent.append((future, key, value) if collect_metadata else (future, None, None))
            size += len(value or b"") + len(key or b"")
        producer.flush()
    finally:
        producer.close()
    for future, key, value in sent:
        error = future.exception()
        if error is not None:
            raise error
        if collect_metadata:
            metadata = future.result()
            yield ("ack", metadata.topic, metadata.partition, metadata.offset, key, value)
    yield ("summary", len(sent), size)


def write_topic(frame, target: RayTarget, topic: str | None = None, producer_config: dict | None = None,
                *, collect_metadata: bool = False) -> WriteResult:
    """Produce every row of ``frame`` (Spark's Kafka sink: ``value``, optional ``key``,
    ``partition``, ``topic``, ``headers``); raises ``KafkaError`` with the Kafka error of a refused record."""
    from pyspark.sql import functions as F
    columns = set(frame.columns)
    if "value" not in columns:
        raise ValueError(f"a DataFrame to write needs a 'value' column; it has {sorted(columns)}")
    if topic is None and "topic" not in columns:
        raise ValueError("give write_topic a topic, or the DataFrame a 'topic' column")
    selected = [F.col("value").cast("binary").alias("value")]
    selected += [F.col("key").cast("binary").alias("key")] if "key" in columns else []
    selected += [F.col("partition").cast("int").alias("partition")] if "partition" in columns else []
    selected += [F.col("topic").cast("string").alias("topic")] if "topic" in columns else []
    selected += [F.col(HEADERS).cast(headers_type()).alias(HEADERS)] if HEADERS in columns else []
    config = kafka_settings(producer_config)
    try:
        answers = frame.select(*selected).rdd.mapPartitions(
            lambda rows: produce_rows(target, rows, topic, config, collect_metadata)).collect()
    except Exception as exc:
        wait_for_running_tasks(frame.sparkSession.sparkContext)
        translated = spark_failure_as_kafka_error(exc)
        if translated is exc:
            raise
        raise translated from exc
    summaries = [a for a in answers if a[0] == "summary"]
    acknowledged = [tuple(a[1:]) for a in answers if a[0] == "ack"] if collect_metadata else None
    return WriteResult(sum(s[1] for s in summaries), sum(s[2] for s in summaries), acknowledged)


def wait_for_running_tasks(spark_context, timeout_s: float = SETTLE_TIMEOUT_S) -> bool:
    """Wait until no executor runs a task (bounded); True if none does.

    A failed job returns before Spark has killed its other tasks on the executors; killing a task
    also ends the Python worker it ran in, and a worker already handed to the next job's task dies
    under it ("Socket closed"). So a failed write returns only once its tasks are gone."""
    tracker = spark_context._jsc.sc().statusTracker()
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if sum(info.numRunningTasks() for info in tracker.getExecutorInfos()) == 0:
            return True
        time.sleep(0.1)
    return False


def spark_failure_as_kafka_error(exc: BaseException) -> BaseException:
    """A failed Spark job whose task raised ``KafkaError`` as that ``KafkaError`` (the job's error
    carries the task's traceback as text); any other failure as it is."""
    found = _ERROR_IN_TRACEBACK.search(str(exc))
    if found and found.group(1) in ErrorCode.__members__:
        return KafkaError(ErrorCode[found.group(1)], f"a Spark task's record was refused: {found.group(0)}")
    return exc
