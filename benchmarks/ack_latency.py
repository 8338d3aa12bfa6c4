"""acks=all produce latency beside Apache Kafka in the same run: one record at a time, and under a moderate load.

One run measures raykafka (a 3-broker cluster on a local Ray, 2 CPUs) and Apache Kafka (three
KRaft JVMs on 127.0.0.1, ``_kafka_peer``: started before Ray and stopped before Ray starts, so the
two never share the cores) with the same broker settings (the throughput benchmark's
``CLUSTER_CONFIG``, plus ``--set``), on one-partition topics at RF=1 and RF=3
(min.insync.replicas=2 at RF=3), and reports every figure of raykafka beside Kafka's and as a
ratio, raykafka ÷ Kafka:

* One sender, one record at a time: ``--records`` values of ``--size`` bytes (default 100), each
  sent once the previous one was acknowledged, acks=all, linger.ms=0, no idempotence; the time
  from the send to the delivery report of each (the first ``--warmup`` are left out); p50, p99,
  mean and max. Through confluent-kafka against both systems, and through raykafka's own Python
  ``Producer`` (a Ray call per request), which is set beside Kafka's confluent-kafka figure (Kafka
  has no Python API of its own).
* Under a moderate load, as OpenMessaging Benchmark reports latency: on a topic of its own, a
  short peak measurement (confluent-kafka with the throughput benchmark's producer settings,
  ``_wire.PRODUCER``: linger.ms=5, batch.size 1 MB; acks=all; ``--load-size`` byte records,
  default 1 KiB; about ``--peak-seconds``), then one producer with the same settings paced at half
  that peak rate for ``--duration`` seconds, each record's time from its send to its delivery
  report recorded; the rates sent and acknowledged, p50, p99, mean and max, how late the sends
  ran against their schedule (OMB's publish delay), and the cores the broker side (raykafka's
  broker and fetcher actors; Kafka's JVMs) and the producer's process kept busy meanwhile. Each
  system's peak is its own: raykafka is paced at half of raykafka's peak and Kafka at half of
  Kafka's, so the two loads differ, and the ratio of the rates says by how much. A paced run whose
  producer could not send at its target (one Python thread sharing the cores with the brokers) or
  whose records were acknowledged more slowly than sent is flagged in the output.
* At the same fixed rates for both systems (``--rates``, records/s, default 10,000 and 40,000,
  ``--rate-duration`` seconds each), on the RF=3 load topic, as the half-peak run: the latency two
  systems give one load, where each system's half peak sets each its own. At a rate this low a
  round of replication carries little, which is where its fixed costs show.

Before anything is timed, each RF=3 topic gets a first acks=all write (raykafka's replica fetchers
start there; ``_wire.first_acknowledged_writes``, its time in the JSON), and each load topic an
untimed 8 MiB write of ``--load-size`` records with acks=all, RF=3 first (the RF=3 one-at-a-time
topic when no load is measured), whose rate sizes its peak run: a JVM interprets its code until
the JIT compiles the hot paths, and Kafka's first timed figures would otherwise pay for that.
A ``--set KEY=VALUE`` broker setting goes to both systems, a ``raykafka.*`` one to raykafka
only. Where Java or Maven is missing (or with ``--no-kafka``) the run says so and measures
raykafka alone. Prints a table, saves JSON (settings, machine, every figure); asserts nothing.

    python benchmarks/ack_latency.py [--records 400] [--warmup 50] [--size 100] [--load-size 1024]
        [--peak-seconds 3] [--duration 10] [--load-rf 1,3] [--rates 10000,40000] [--rate-duration 5]
        [--no-kafka] [--set KEY=VALUE] [--out PATH]
"""
from __future__ import annotations

import argparse
import math
import os
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks._common import default_out, save_results  # noqa: E402

TIMEOUT_S = 60  # one record's acknowledgement, a flush, a topic's readiness
SERIAL_PRODUCER = {"acks": "all", "linger.ms": 0, "enable.idempotence": False}  # confluent-kafka, one at a time
PYTHON_PRODUCER = {"acks": "all", "linger.ms": "0"}  # raykafka's Python API, one at a time
LOAD_FRACTION = 0.5  # of each system's own peak, as OpenMessaging Benchmark's "moderate load"
CALIBRATION_BYTES = 8 * 1024 * 1024  # the untimed write that warms each system and sizes its peak run
REPORTS_EVERY = 100  # sends between two servings of delivery reports in a paced run's burst
PEAK_BYTES_MAX = 2 * 1024 ** 3  # a bound on one peak run's records (its client queues at most 1 GiB at a time)
RATIO_NOTE = "raykafka ÷ Kafka: above 1 means raykafka's latency is longer (or, for a rate, higher)"
PEAK_NOTE = ("each system's peak is its own: the load points pace raykafka at half of raykafka's peak "
             "and Kafka at half of Kafka's")


# ----------------------------------------------------------------------------- pure parts
def percentile(values: list[float], fraction: float) -> float:
    """The nearest-rank percentile of ``values`` (sorted or not): the smallest value with at least
    ``fraction`` of them at or below it."""
    if not values:
        raise ValueError("no values")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(fraction * len(ordered)) - 1))]


def summarize(latencies_ms: list[float], warmup: int = 0) -> dict:
    """p50, p99, mean and max of the latencies after the first ``warmup``, in ms."""
    measured = latencies_ms[warmup:]
    return {"records": len(measured), "p50_ms": round(percentile(measured, 0.5), 3),
            "p99_ms": round(percentile(measured, 0.99), 3), "mean_ms": round(statistics.fmean(measured), 3),
            "max_ms": round(max(measured), 3)}


def due_count(elapsed_s: float, rate: float, total: int) -> int:
    """How many of ``total`` records paced at ``rate`` per second are due ``elapsed_s`` after the
    start: record i is due at i / rate, the first at once."""
    if elapsed_s < 0:
        return 0
    return min(total, math.floor(elapsed_s * rate) + 1)


def due_at(index: int, rate: float) -> float:
    """Seconds after the start at which record ``index`` is due."""
    return index / rate


def ratio(ours: float | None, theirs: float | None) -> float | None:
    """raykafka ÷ Kafka, or None when either is missing or Kafka's is 0."""
    if ours is None or not theirs:
        return None
    return ours / theirs


# (key in a point's figures, how the table names it)
SERIAL_FIGURES = (("p50_ms", "p50 ms"), ("p99_ms", "p99 ms"), ("mean_ms", "mean ms"))
LOAD_FIGURES = (("peak_records_per_s", "own peak rec/s"), ("records_per_s", "sent rec/s"),
                ("acked_records_per_s", "acked rec/s"),
                ("p50_ms", "p50 ms"), ("p99_ms", "p99 ms"), ("mean_ms", "mean ms"),
                ("broker_cpu_cores", "broker CPU cores"), ("client_cpu_cores", "client CPU cores"))
FIXED_FIGURES = tuple(figure for figure in LOAD_FIGURES if figure[0] != "peak_records_per_s")
FIGURES = {"serial": SERIAL_FIGURES, "load": LOAD_FIGURES, "fixed": FIXED_FIGURES}


def pair(label: str, kind: str, rf: int, client: str, ours: dict | None, theirs: dict | None) -> dict:
    """One point of the JSON: raykafka's figures, Kafka's and raykafka ÷ Kafka for each figure both have."""
    figures = FIGURES[kind]
    ratios = {key: round(r, 3) for key, _ in figures
              if (r := ratio((ours or {}).get(key), (theirs or {}).get(key))) is not None}
    return {"point": label, "kind": kind, "replication_factor": rf, "client": client,
            "raykafka": ours, "kafka": theirs, "ratios": ratios}


def _cell(value, width: int) -> str:
    if value is None:
        return "-".rjust(width)
    if abs(value) >= 1000:
        return f"{value:,.0f}".rjust(width)
    return (f"{value:.2f}" if abs(value) < 100 else f"{value:.1f}").rjust(width)


def table(points: list[dict]) -> str:
    """One line per point and figure: raykafka, Kafka and raykafka ÷ Kafka."""
    widths = (46, 15, 10, 10, 8)
    head = ("point", "figure", "raykafka", "Kafka", "÷ Kafka")
    lines = ["".join(h.ljust(w) if i < 2 else h.rjust(w) for i, (h, w) in enumerate(zip(head, widths))),
             "-" * sum(widths)]
    for point in points:
        figures = FIGURES[point["kind"]]
        ours, theirs = point["raykafka"] or {}, point["kafka"] or {}
        for i, (key, name) in enumerate(figures):
            lines.append((point["point"] if i == 0 else "").ljust(widths[0]) + name.ljust(widths[1])
                         + _cell(ours.get(key), widths[2]) + _cell(theirs.get(key), widths[3])
                         + _cell(point["ratios"].get(key), widths[4]))
    return "\n".join(lines)


# ------------------------------------------------------------------------- measurements
def serial_wire(bootstrap: str, topic: str, records: int, warmup: int, size: int) -> list[float]:
    """confluent-kafka, one record at a time: each record's ms from ``produce`` to its delivery report."""
    from confluent_kafka import Producer
    producer = Producer({"bootstrap.servers": bootstrap, **SERIAL_PRODUCER})
    producer.list_topics(topic, timeout=30)  # connected and the topic's leader known before the first send
    value = b"x" * size
    latencies = []
    for i in range(warmup + records):
        report = []
        started = time.perf_counter()
        producer.produce(topic, value=value, partition=0,
                         on_delivery=lambda error, _m: report.append((error, time.perf_counter())))
        while not report:  # poll serves the report as soon as it arrives
            if time.perf_counter() - started > TIMEOUT_S:
                raise TimeoutError(f"record {i} to {topic!r} not acknowledged within {TIMEOUT_S}s")
            producer.poll(1.0)
        error, acknowledged = report[0]
        if error is not None:
            raise RuntimeError(f"record {i} to {topic!r}: {error}")
        latencies.append((acknowledged - started) * 1000)
    producer.flush(TIMEOUT_S)
    return latencies


def serial_python(cluster, topic: str, records: int, warmup: int, size: int) -> list[float]:
    """raykafka's Python ``Producer``, one record at a time: ms from ``send`` to its future's result."""
    producer = cluster.producer(PYTHON_PRODUCER)
    value = b"x" * size
    latencies = []
    try:
        for _ in range(warmup + records):
            started = time.perf_counter()
            producer.send(topic, value=value, partition=0).result(timeout=TIMEOUT_S)
            latencies.append((time.perf_counter() - started) * 1000)
    finally:
        producer.close()
    return latencies


def peak(bootstrap: str, topic: str, size: int, calibration: dict, seconds: float) -> dict:
    """The throughput benchmark's produce (``_wire.produce``, acks=all) of about ``seconds``' worth
    of records at the rate the untimed ``calibration`` write reached; once more, sized by its own
    rate, when that run lasted less than half of ``seconds`` (a short write underestimates a rate)."""
    from benchmarks import _wire as wire
    rate, runs = calibration["records"] / calibration["seconds"], []
    while True:
        records = max(calibration["records"], min(PEAK_BYTES_MAX // size, round(rate * seconds)))
        figures = wire.produce(bootstrap, topic, 1, records, size, "all", [0])
        if figures["failed"]:
            raise RuntimeError(f"peak run on {topic!r}: {figures['failed']} of {records} records not acknowledged")
        rate = figures["records"] / figures["seconds"]
        runs.append(round(figures["seconds"], 3))
        if figures["seconds"] >= seconds / 2 or records * size >= PEAK_BYTES_MAX or len(runs) == 2:
            break
    return {"records": figures["records"], "seconds": round(figures["seconds"], 3), "runs_s": runs,
            "records_per_s": round(rate, 1), "mb_per_s": round(figures["records"] * size / 1e6 / figures["seconds"], 2)}


def paced(bootstrap: str, topic: str, size: int, rate: float, seconds: float) -> dict:
    """One confluent-kafka producer (``_wire.PRODUCER``, acks=all) sending ``rate`` records per
    second for ``seconds``, record i due at i / rate (a producer behind its schedule stops at
    ``seconds`` all the same); each record's ms from its send to its delivery report, and how late
    each send ran against its schedule. Reports are served between sends (the
    client's ``poll``), and within a burst every REPORTS_EVERY sends, so a report waits at most for
    the sends due with it (or that many)."""
    from confluent_kafka import Producer

    from benchmarks import _wire as wire
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", **wire.PRODUCER})
    producer.list_topics(topic, timeout=30)
    total = max(1, round(rate * seconds))
    value = b"x" * size
    sent = [0.0] * total
    acknowledged = [0.0] * total
    failed = []

    def report(index: int):
        def done(error, _message) -> None:
            if error is None:
                acknowledged[index] = time.perf_counter()
            else:
                failed.append(error)
        return done
    interval = due_at(1, rate)
    start = time.perf_counter()
    lag = []  # seconds each send ran behind its due time
    index = 0
    while index < total:
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:  # a producer behind its schedule stops at the run's end all the same
            break
        due = due_count(elapsed, rate, total)
        while index < due:
            now = time.perf_counter()
            try:
                producer.produce(topic, value=value, partition=0, on_delivery=report(index))
            except BufferError:  # the client's queue is full: let it send, and try this record again
                producer.poll(0.01)
                continue
            sent[index] = now
            lag.append(now - start - index * interval)
            index += 1
            if index % REPORTS_EVERY == 0:  # a long burst (the producer behind its schedule) still serves reports
                producer.poll(0)
                if time.perf_counter() - start >= seconds:
                    break
        producer.poll(0)
        wait = start + due_at(index, rate) - time.perf_counter()
        if wait >= 0.002:
            producer.poll(wait - 0.001)  # returns early to serve a report
        elif wait > 0:
            time.sleep(wait)
    sending_s = time.perf_counter() - start
    left = producer.flush(TIMEOUT_S)
    total = index  # what was sent
    done = [(acknowledged[i] - sent[i]) * 1000 for i in range(total) if acknowledged[i]]
    if not done:
        raise RuntimeError(f"paced run on {topic!r}: no record acknowledged ({failed[:3]}, {left} left)")
    last_ack_s, last_send_s = max(acknowledged) - start, sent[total - 1] - start
    lags_ms = [x * 1000 for x in lag]
    return {"target_records_per_s": round(rate, 1), "seconds": round(sending_s, 3), "due": round(rate * seconds),
            "sent": total,
            "acknowledged": len(done), "failed": len(failed) + left,
            "records_per_s": round(total / sending_s, 1), "mb_per_s": round(total * size / 1e6 / sending_s, 2),
            # Acknowledged from the first send to the last report; below the sent rate, the system
            # fell behind the load, and ``drain_s`` is how long its last report came after the last send.
            "acked_records_per_s": round(len(done) / last_ack_s, 1), "drain_s": round(last_ack_s - last_send_s, 3),
            **summarize(done), "send_lag_p50_ms": round(percentile(lags_ms, 0.5), 3),
            "send_lag_p99_ms": round(percentile(lags_ms, 0.99), 3)}


def shortfalls(figures: dict, tolerance: float = 0.95) -> list[str]:
    """What a paced run did not do: send at its target rate (the client could not: one Python thread
    sharing the machine's cores with the brokers), or have its records acknowledged as fast as sent."""
    said = []
    if figures["records_per_s"] < tolerance * figures["target_records_per_s"]:
        said.append(f"sent {figures['records_per_s']:,.0f}/s of a {figures['target_records_per_s']:,.0f}/s target")
    if figures["acked_records_per_s"] < tolerance * figures["records_per_s"]:
        said.append(f"acknowledged {figures['acked_records_per_s']:,.0f}/s of {figures['records_per_s']:,.0f}/s sent, "
                    f"the last {figures['drain_s']:.2f} s after the last send")
    return said


class System:
    """One system's run: its topics and figures, measured through confluent-kafka at ``bootstrap``."""

    def __init__(self, name: str, bootstrap: str, args, say=print, pids=lambda: []) -> None:
        self.name, self.bootstrap, self.args, self.say, self.pids = name, bootstrap, args, say, pids
        self.serial: dict[tuple[str, int], dict] = {}  # (client, rf) -> summary
        self.load: dict[int, dict] = {}  # rf -> peak and paced figures
        self.fixed: dict[int, dict] = {}  # records/s -> paced figures at that rate, RF=3
        self.first_writes: dict[str, float] = {}  # topic -> seconds of its first acks=all write

    def create(self, topic: str, rf: int) -> None:
        from benchmarks import _kafka_peer as kafka_peer
        from benchmarks import _wire as wire
        wire.create_topic(self.bootstrap, topic, 1, rf, kafka_peer.topic_config(rf))
        kafka_peer.wait_topic_ready(self.bootstrap, topic, 1, rf)
        if rf > 1:  # the followers fetching before any clock (raykafka starts a fetcher process here)
            self.first_writes[topic] = round(wire.first_acknowledged_writes(self.bootstrap, topic, 1), 3)
            self.say(f"  {self.name} {topic}: first acks=all write acknowledged in {self.first_writes[topic]:.2f} s")

    def run(self, python_cluster=None) -> None:
        from benchmarks import _wire as wire
        args = self.args
        load_topics = {rf: f"ack-load-rf{rf}" for rf in args.load_rf}
        for rf in (1, 3):
            self.create(f"ack-latency-rf{rf}", rf)
            if rf in load_topics:
                self.create(load_topics[rf], rf)
        # Untimed writes that warm the JVM (or raykafka's fetchers) before anything is timed, and
        # size each peak run; to the RF=3 one-at-a-time topic when no load is measured.
        calibrations = {}
        records = max(1, CALIBRATION_BYTES // args.load_size)
        for rf, topic in sorted(load_topics.items(), reverse=True) or [(3, "ack-latency-rf3")]:
            calibrations[rf] = wire.produce(self.bootstrap, topic, 1, records, args.load_size, "all", [0])
            self.say(f"  {self.name} untimed warm-up, RF={rf}: {records:,} records of {args.load_size} B "
                     f"in {calibrations[rf]['seconds']:.2f} s")
        for rf in (1, 3):
            latencies = serial_wire(self.bootstrap, f"ack-latency-rf{rf}", args.records, args.warmup, args.size)
            self.serial[("confluent", rf)] = summarize(latencies, args.warmup)
            self._say_serial("confluent-kafka", rf)
        if python_cluster is not None:
            for rf in (1, 3):
                latencies = serial_python(python_cluster, f"ack-latency-rf{rf}", args.records, args.warmup, args.size)
                self.serial[("python", rf)] = summarize(latencies, args.warmup)
                self._say_serial("Python API", rf)
        for rf in sorted(load_topics, reverse=True):
            top = peak(self.bootstrap, load_topics[rf], args.load_size, calibrations[rf], args.peak_seconds)
            self.say(f"  {self.name} peak RF={rf}: {top['records_per_s']:,.0f} records/s ({top['mb_per_s']:.1f} MB/s)")
            self.load[rf] = self._paced(load_topics[rf], LOAD_FRACTION * top["records_per_s"], args.duration,
                                        peak=top, peak_records_per_s=top["records_per_s"])
            self._say_paced(f"RF={rf} at half its peak", self.load[rf])
        rf3_topic = load_topics.get(3, "ack-latency-rf3")
        for rate in args.rates:
            self.fixed[rate] = self._paced(rf3_topic, rate, args.rate_duration)
            self._say_paced(f"RF=3 at {rate:,} records/s", self.fixed[rate])

    def _paced(self, topic: str, rate: float, seconds: float, **extra) -> dict:
        """A paced run of ``topic`` at ``rate`` records/s, with the cores the broker side (raykafka's
        broker and fetcher actors; Kafka's JVMs) and this process (the producer, its librdkafka
        threads) kept busy meanwhile, and what fell short of the load."""
        from benchmarks._probe import BrokerProbe
        with BrokerProbe(self.pids) as probe:
            client_cpu, wall = time.process_time(), time.perf_counter()
            figures = paced(self.bootstrap, topic, self.args.load_size, rate, seconds)
            client_cpu, wall = time.process_time() - client_cpu, time.perf_counter() - wall
        return {**extra, **figures, "broker_cpu_cores": round(probe.cpu_seconds / wall, 2),
                "client_cpu_cores": round(client_cpu / wall, 2), "shortfalls": shortfalls(figures)}

    def _say_paced(self, what: str, figures: dict) -> None:
        self.say(f"  {self.name} {what}: {figures['records_per_s']:,.0f} records/s sent, "
                 f"{figures['acked_records_per_s']:,.0f}/s acknowledged, p50 {figures['p50_ms']:.2f} ms, "
                 f"p99 {figures['p99_ms']:.2f} ms, broker side {figures['broker_cpu_cores']:.2f} cores, "
                 f"client {figures['client_cpu_cores']:.2f}" + "".join(f"; {s}" for s in figures["shortfalls"]))

    def _say_serial(self, client: str, rf: int) -> None:
        row = self.serial[("confluent" if client == "confluent-kafka" else "python", rf)]
        self.say(f"  {self.name} {client} RF={rf} one at a time: p50 {row['p50_ms']:.2f} ms, "
                 f"p99 {row['p99_ms']:.2f} ms, mean {row['mean_ms']:.2f} ms")


def points(raykafka: System | None, kafka: System | None, load_rfs: list[int], load_size: int, size: int,
           rates: tuple[int, ...] = ()) -> list[dict]:
    """Every point of the run, raykafka's figures beside Kafka's (a Python API point beside Kafka's
    confluent-kafka one)."""
    ours = raykafka.serial if raykafka else {}
    theirs = kafka.serial if kafka else {}
    rows = []
    for client, name in (("confluent", "confluent-kafka"), ("python", "Python API")):
        for rf in (1, 3):
            if (client, rf) in ours or ("confluent", rf) in theirs:
                rows.append(pair(f"one at a time, {size} B, RF={rf}, {name}", "serial", rf, client,
                                 ours.get((client, rf)), theirs.get(("confluent", rf))))
    for rf in sorted(load_rfs, reverse=True):
        rows.append(pair(f"half own peak, {load_size} B, RF={rf}, confluent-kafka", "load", rf, "confluent",
                         raykafka.load.get(rf) if raykafka else None, kafka.load.get(rf) if kafka else None))
    for rate in rates:
        rows.append(pair(f"{rate:,} rec/s, {load_size} B, RF=3, confluent-kafka", "fixed", 3, "confluent",
                         raykafka.fixed.get(rate) if raykafka else None, kafka.fixed.get(rate) if kafka else None))
    return rows


# ------------------------------------------------------------------------------- the run
def split_settings(settings: list[str]) -> tuple[dict, dict]:
    """``--set KEY=VALUE`` settings as (raykafka's, Kafka's): a ``raykafka.*`` key is raykafka's alone."""
    pairs = dict(item.split("=", 1) for item in settings)
    return pairs, {key: value for key, value in pairs.items() if not key.startswith("raykafka.")}


def run_kafka(args, config: dict, say=print) -> tuple[System | None, str | None]:
    """Kafka's part, before Ray starts: (its figures, why it was not measured or stopped)."""
    from benchmarks import _kafka_peer as kafka_peer
    if args.no_kafka:
        return None, "Apache Kafka left out (--no-kafka)"
    libs, reason = kafka_peer.libs_or_reason()
    if reason:
        return None, f"Apache Kafka skipped: {reason}"
    with tempfile.TemporaryDirectory(prefix="raykafka-ack-latency-kafka-") as workdir:
        say(f"starting Apache Kafka, {kafka_peer.NODES} nodes")
        try:
            kafka = kafka_peer._start(libs, Path(workdir), config)
        except (RuntimeError, TimeoutError, OSError) as error:
            return None, f"Apache Kafka did not start: {error}"[:2000]
        system = System("Kafka", kafka.bootstrap_servers, args, say,
                        pids=lambda: [p.pid for p in kafka.processes if p.poll() is None])
        try:
            system.run()
        except Exception as error:  # what was measured is kept; raykafka's part still runs
            return system, (f"Apache Kafka stopped partway: {error!r}; node 1 log: {kafka.log_tail(1, 1000)}")[:3000]
        finally:
            kafka_peer._stop(kafka)
    return system, None


def run_raykafka(args, config: dict, say=print) -> System:
    import ray

    from benchmarks._probe import raykafka_broker_pids
    from benchmarks.throughput import BROKERS, _start_ray
    from orchestration import Cluster
    owns_ray = _start_ray()
    try:
        say(f"starting a {BROKERS}-broker raykafka cluster")
        with Cluster.start(brokers=BROKERS, config=config) as cluster:
            system = System("raykafka", cluster.bootstrap_servers, args, say, pids=raykafka_broker_pids)
            system.run(python_cluster=cluster)
    finally:
        if owns_ray:
            ray.shutdown()
    return system


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--records", type=int, default=400, help="records timed per one-at-a-time point")
    parser.add_argument("--warmup", type=int, default=50, help="sent first in each one-at-a-time point, left out")
    parser.add_argument("--size", type=int, default=100, help="bytes per record value, one at a time")
    parser.add_argument("--load-size", type=int, default=1024, help="bytes per record value under load")
    parser.add_argument("--peak-seconds", type=float, default=3.0, help="about how long each peak run lasts")
    parser.add_argument("--duration", type=float, default=10.0, help="seconds of each paced run at half the peak")
    parser.add_argument("--load-rf", default="1,3", help="RFs measured under load (e.g. 3; '' for none)")
    parser.add_argument("--rates", default="10000,40000",
                        help="fixed rates (records/s, RF=3) both systems are paced at ('' for none)")
    parser.add_argument("--rate-duration", type=float, default=5.0, help="seconds of each fixed-rate run")
    parser.add_argument("--no-kafka", action="store_true", help="leave Apache Kafka out: raykafka alone")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="a broker setting for both systems (a raykafka.* key for raykafka only), "
                             "e.g. replica.fetch.wait.max.ms=10")
    parser.add_argument("--out", default=default_out("ack_latency"))
    args = parser.parse_args(argv)
    args.load_rf = sorted({int(rf) for rf in args.load_rf.split(",") if rf.strip()})
    try:
        args.rates = tuple(sorted({int(rate) for rate in args.rates.split(",") if rate.strip()}))
    except ValueError:
        parser.error(f"--rates takes whole records/s, comma-separated: {args.rates!r}")
    if any(rate < 1 for rate in args.rates) or args.rate_duration <= 0:
        parser.error("--rates and --rate-duration must be positive")
    if args.records < 1 or args.warmup < 0 or args.size < 1 or args.load_size < 1 or args.duration <= 0:
        parser.error("--records, --size, --load-size and --duration must be positive, --warmup not negative")
    if any(rf not in (1, 3) for rf in args.load_rf):
        parser.error("--load-rf takes 1 and 3")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # unwind: Kafka's JVMs and Ray stop
    from benchmarks import _kafka_peer as kafka_peer
    from benchmarks import _wire as wire
    from benchmarks.throughput import BROKERS, CLUSTER_CONFIG, _machine
    ours_set, kafka_set = split_settings(args.set)
    raykafka_config, kafka_config = {**CLUSTER_CONFIG, **ours_set}, {**CLUSTER_CONFIG, **kafka_set}
    command = " ".join(["benchmarks/ack_latency.py"] + (sys.argv[1:] if argv is None else list(argv)))
    started = time.time()
    kafka, kafka_skipped = run_kafka(args, kafka_config)
    if kafka_skipped:
        print(kafka_skipped, flush=True)
    raykafka = run_raykafka(args, raykafka_config)
    rows = points(raykafka, kafka, args.load_rf, args.load_size, args.size, args.rates)
    results = {
        "command": command, "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
        "duration_s": round(time.time() - started, 1), "machine": _machine(),
        "settings": {"records": args.records, "warmup": args.warmup, "size": args.size, "load_size": args.load_size,
                     "peak_seconds": args.peak_seconds, "duration_s": args.duration, "load_fraction": LOAD_FRACTION,
                     "fixed_rates": list(args.rates), "fixed_rate_duration_s": args.rate_duration,
                     "load_rf": args.load_rf, "partitions": 1, "brokers": BROKERS,
                     "min_insync_replicas": {"1": 1, "3": 2}, "raykafka_broker_config": raykafka_config,
                     "kafka_broker_config": kafka_config, "serial_confluent_producer": SERIAL_PRODUCER,
                     "serial_python_producer": PYTHON_PRODUCER, "load_producer": {"acks": "all", **wire.PRODUCER},
                     "calibration_bytes": CALIBRATION_BYTES, "paced_reports_every": REPORTS_EVERY,
                     "kafka_nodes": kafka_peer.NODES,
                     "kafka_jvm_opts": kafka_peer.settings()["kafka_jvm_opts"]},
        "notes": {"ratios": RATIO_NOTE, "peaks": PEAK_NOTE,
                  "python_api": "a Python API point is set beside Kafka's confluent-kafka point at its RF"},
        "kafka_skipped": kafka_skipped,
        "first_acks_all_writes_s": {"raykafka": raykafka.first_writes, "kafka": kafka.first_writes if kafka else {}},
        "points": rows}
    print("\n" + table(rows))
    for row in rows:
        for name, system in (("raykafka", row["raykafka"]), ("Kafka", row["kafka"])):
            for said in (system or {}).get("shortfalls", []):
                print(f"{row['point']}, {name}: {said}")
    print(f"\n{RATIO_NOTE}; {PEAK_NOTE}." + (f"\n{kafka_skipped}" if kafka_skipped else ""))
    save_results(args.out, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
