"""Kafka's own perf tools, ``kafka-producer-perf-test`` and ``kafka-consumer-perf-test``, run from
the fetched jars (orchestration/apache_kafka.py) against any bootstrap, and their summary lines
parsed: the figures Kafka's users quote.

The producer writes ``records`` values of ``record_bytes`` bytes unthrottled (``--throughput -1``)
with the settings the benchmark's confluent-kafka producer uses (``PRODUCER_PROPERTIES``, Kafka's
names for ``_wire.PRODUCER``); the consumer then reads as many from the earliest offset, in a group
of its own, fetching as the benchmark's consumer does (``_wire.CONSUMER``'s byte limits). Their
``MB`` is what the tools print: 2^20 bytes (``MIB_PER_S_NOTE``), unlike the benchmark's 10^6.
Both run with a JVM made for throughput (``PERF_JVM_OPTS``), not the quick-start one the
short-lived tools get.
"""
from __future__ import annotations

import re
import uuid

from benchmarks import _wire as wire

PERF_JVM_OPTS = ("-Xmx1g", "-XX:+UseG1GC", "-Djava.awt.headless=true")
PRODUCER_PROPERTIES = {"linger.ms": wire.PRODUCER["linger.ms"], "batch.size": wire.PRODUCER["batch.size"],
                       "enable.idempotence": "false", "buffer.memory": 268_435_456}
CONSUMER_FETCH_SIZE = wire.CONSUMER["max.partition.fetch.bytes"]
CONSUMER_PROPERTIES = {"fetch.max.bytes": wire.CONSUMER["fetch.max.bytes"]}
MIB_PER_S_NOTE = "the tools' MB is 2^20 bytes"
TIMEOUT_S = 300
# The consumer gives up after this long without a record (its --timeout); what it read is then its figure.
CONSUMER_IDLE_TIMEOUT_MS = 20_000

# "1000 records sent, 7692.3 records/sec (7.51 MB/sec), 61.20 ms avg latency, 98.00 ms max latency,
# 62 ms 50th, 95 ms 95th, 97 ms 99th, 98 ms 99.9th."
_PRODUCER_TOTAL = re.compile(
    r"(?P<records>\d+) records sent, (?P<records_per_s>[\d.]+) records/sec \((?P<mib_per_s>[\d.]+) MB/sec\), "
    r"(?P<latency_avg_ms>[\d.]+) ms avg latency, (?P<latency_max_ms>[\d.]+) ms max latency"
    r"(?:, (?P<latency_p50_ms>\d+) ms 50th, (?P<latency_p95_ms>\d+) ms 95th, (?P<latency_p99_ms>\d+) ms 99th, "
    r"(?P<latency_p999_ms>\d+) ms 99.9th)?")
# The consumer's header names its columns; its last line holds their values, comma separated.
_CONSUMER_COLUMNS = {"data.consumed.in.MB": "mib", "MB.sec": "mib_per_s", "data.consumed.in.nMsg": "records",
                     "nMsg.sec": "records_per_s", "rebalance.time.ms": "rebalance_ms", "fetch.time.ms": "fetch_ms",
                     "fetch.MB.sec": "fetch_mib_per_s", "fetch.nMsg.sec": "fetch_records_per_s"}


class PerfTestFailed(RuntimeError):
    """A perf tool exited with an error or printed no summary; the message has its output's tail."""


def parse_producer(stdout: str) -> dict:
    """The producer's last total line (it prints one per reporting interval, then the total)."""
    totals = [m for line in stdout.splitlines() if (m := _PRODUCER_TOTAL.search(line))
              and "records sent" in line and "99.9th" in line]
    if not totals:
        raise PerfTestFailed(f"kafka-producer-perf-test printed no total: {stdout[-1500:]}")
    return {name: (int(value) if name == "records" else float(value))
            for name, value in totals[-1].groupdict().items() if value is not None}


def parse_consumer(stdout: str) -> dict:
    """The consumer's summary: the values under its header, by the header's names."""
    lines = [line.strip() for line in stdout.splitlines() if line.strip()]
    header = next((i for i, line in enumerate(lines) if line.startswith("start.time")), None)
    if header is None or header + 1 >= len(lines):
        raise PerfTestFailed(f"kafka-consumer-perf-test printed no summary: {stdout[-1500:]}")
    names = [name.strip() for name in lines[header].split(",")]
    values = [value.strip() for value in lines[header + 1].split(",")]
    parsed = {}
    for name, value in zip(names, values):
        if name in _CONSUMER_COLUMNS:
            key = _CONSUMER_COLUMNS[name]
            parsed[key] = int(value) if key in ("records", "rebalance_ms", "fetch_ms") else float(value)
    return parsed


def _properties(settings: dict) -> list[str]:
    return [f"{key}={value}" for key, value in settings.items()]


def produce(libs, bootstrap: str, topic: str, records: int, record_bytes: int, acks: str) -> dict:
    from orchestration.apache_kafka import run_tool
    done = run_tool(libs, "kafka-producer-perf-test", "--bootstrap-server", bootstrap, "--topic", topic,
                    "--num-records", str(records), "--record-size", str(record_bytes), "--throughput", "-1",
                    "--reporting-interval", "60000",
                    "--command-property", f"acks={acks}", *_properties(PRODUCER_PROPERTIES),
                    timeout_s=TIMEOUT_S, jvm_opts=PERF_JVM_OPTS)
    if done.returncode != 0:
        raise PerfTestFailed(f"kafka-producer-perf-test exited {done.returncode}: {done.stderr[-1500:]}")
    return parse_producer(done.stdout)


def consume(libs, bootstrap: str, topic: str, records: int) -> dict:
    from orchestration.apache_kafka import run_tool
    done = run_tool(libs, "kafka-consumer-perf-test", "--bootstrap-server", bootstrap, "--topic", topic,
                    "--num-records", str(records), "--group", f"perf-{uuid.uuid4().hex[:8]}",
                    "--timeout", str(CONSUMER_IDLE_TIMEOUT_MS), "--fetch-size", str(CONSUMER_FETCH_SIZE),
                    "--command-property", *_properties(CONSUMER_PROPERTIES),
                    timeout_s=TIMEOUT_S, jvm_opts=PERF_JVM_OPTS)
    if done.returncode != 0:
        raise PerfTestFailed(f"kafka-consumer-perf-test exited {done.returncode}: {done.stderr[-1500:]}")
    return parse_consumer(done.stdout)


def run_pair(libs, bootstrap: str, topic: str, records: int, record_bytes: int, acks: str) -> dict:
    """The producer perf test into ``topic`` (created by the caller), then the consumer perf test
    reading what it wrote."""
    producer = produce(libs, bootstrap, topic, records, record_bytes, acks)
    return {"producer": producer, "consumer": consume(libs, bootstrap, topic, producer["records"])}
