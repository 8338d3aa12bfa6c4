"""Apache Kafka as the throughput benchmark's peer: the same points, clients and records as raykafka.

``run_kafka`` starts a real KRaft cluster of three combined broker+controller JVMs on 127.0.0.1
(orchestration/apache_kafka.py, the jars the conformance tests fetch; each JVM with the heap and
collector Kafka's own start scripts give, ``BENCHMARK_JVM_OPTS``) in a temporary directory, with the
broker settings raykafka's cluster runs with (the benchmark's ``CLUSTER_CONFIG``), before Ray
starts, so the two never share the machine's cores. For every (partitions, record size,
replication factor) a profile's points need it creates one topic (``min.insync.replicas`` as
raykafka's benchmark topics have it) and runs there what those points run: confluent-kafka
produces with each acks the points use (``_wire.produce``, the same settings), then one consume
reads the topic from the start (``_wire.consume``). Every point is compared with the Kafka figure of
its ``peer_key``: a Python API point too, with Kafka driven by confluent-kafka (Kafka has no Python
API of its own). A catch-up is Kafka's own (``run_catch_up``): a follower stopped with a
controlled shutdown while the backlog is produced, started again, and timed by its log's growth on
disk. CPU seconds per GB and peak
resident memory are those of the three JVMs (``_probe.BrokerProbe`` on their pids), which also
run Kafka's controllers. Then Kafka's own perf tools run there (``_perf_test``).

Where Java or Maven is missing, or Kafka fails to start, ``run_kafka`` says why and returns; the
run reports raykafka and Tansu without it.
"""
from __future__ import annotations

import tempfile
import time
from collections import defaultdict
from pathlib import Path

from benchmarks import _perf_test as perf_test
from benchmarks import _wire as wire
from benchmarks._profiles import Point, records_for

NODES = 3
ACKS_ORDER = {"0": 0, "1": 1, "all": 2}
TOPIC_READY_TIMEOUT_S = 60
CATCH_UP_POLL_S = 0.01
CATCH_UP_TIMEOUT_S = 300


def peer_key(point: Point) -> tuple | None:
    """The Kafka measurement a raykafka point is set beside: (op, partitions, record size, acks,
    replication factor). Every read is set beside Kafka's consume of the RF=1 topic."""
    if point.op == "produce":
        return ("produce", point.partitions, point.record_bytes, point.acks, point.replication_factor)
    if point.op == "catchup":
        return ("catchup", point.partitions, point.record_bytes, point.acks, point.replication_factor)
    return ("consume", point.partitions, point.record_bytes, "-", 1)


def kafka_plan(profile) -> dict[tuple[int, int, int], set[tuple[str, str]]]:
    """(partitions, record size, replication factor) -> the (op, acks) Kafka runs on that topic."""
    needed = defaultdict(set)
    for point in profile.points:
        op, partitions, size, acks, rf = peer_key(point)
        if op != "catchup":  # a catch-up has a topic of its own (``run_catch_up``)
            needed[(partitions, size, rf)].add((op, acks))
    return dict(needed)


def topic_config(replication_factor: int) -> dict:
    """As raykafka's benchmark topics are created (``_python_api.create_topic``)."""
    return {"min.insync.replicas": str(min(2, replication_factor))}


def wait_topic_ready(bootstrap: str, topic: str, partitions: int, replication_factor: int) -> None:
    """Until every partition has a leader and its full ISR in the metadata, bounded."""
    from confluent_kafka.admin import AdminClient
    admin = AdminClient({"bootstrap.servers": bootstrap})
    deadline = time.monotonic() + TOPIC_READY_TIMEOUT_S
    while time.monotonic() < deadline:
        described = admin.list_topics(topic, timeout=10).topics.get(topic)
        if (described is not None and described.error is None and len(described.partitions) == partitions
                and all(p.leader >= 0 and len(p.isrs) == replication_factor for p in described.partitions.values())):
            return
        time.sleep(0.2)
    raise TimeoutError(f"waited {TOPIC_READY_TIMEOUT_S}s for every partition of {topic!r} to have a leader "
                       f"and {replication_factor} in-sync replicas")


def peer_figures(figures: dict, record_bytes: int, probe) -> dict:
    """A peer's figures for one measurement (Tansu's and Kafka's rows alike)."""
    moved = figures["records"] * record_bytes
    return {"records": figures["records"], "seconds": round(figures["seconds"], 4),
            "mb_per_s": moved / 1e6 / figures["seconds"], "records_per_s": figures["records"] / figures["seconds"],
            "cpu_s_per_gb": probe.cpu_seconds / (moved / 1e9), "rss_peak_mb": probe.rss_peak_bytes / 1e6}


def settings() -> dict:
    """What the JSON records of how Kafka and its perf tools ran."""
    from orchestration.apache_kafka import BENCHMARK_JVM_OPTS
    return {"kafka_nodes": NODES, "kafka_jvm_opts": list(BENCHMARK_JVM_OPTS),
            "perf_test": {"producer": perf_test.PRODUCER_PROPERTIES, "consumer": perf_test.CONSUMER_PROPERTIES,
                          "consumer_fetch_size": perf_test.CONSUMER_FETCH_SIZE,
                          "jvm_opts": list(perf_test.PERF_JVM_OPTS), "units": perf_test.MIB_PER_S_NOTE}}


def _start(libs, workdir: Path, config: dict):
    from orchestration.apache_kafka import BENCHMARK_JVM_OPTS, ApacheKafkaCluster
    kafka = ApacheKafkaCluster(libs, workdir, nodes=NODES, config=config, jvm_opts=BENCHMARK_JVM_OPTS)
    kafka.start()
    return kafka


def _stop(kafka) -> None:
    """Its data is thrown away: SIGKILL at once rather than a controlled shutdown of every node."""
    for node in range(1, len(kafka.processes) + 1):
        kafka.kill_node(node)
    kafka.stop()


def libs_or_reason():
    """(the directory of Kafka's jars, None) or (None, why Kafka cannot run here)."""
    from orchestration.apache_kafka import KafkaUnavailable, fetch_kafka, unavailable_reason
    reason = unavailable_reason()
    if reason:
        return None, reason
    try:
        return fetch_kafka(), None
    except (KafkaUnavailable, OSError) as error:
        return None, str(error)


def run_kafka(runner, libs, cluster_config: dict, catch_up_records) -> None:
    """Measure Kafka at every point of ``runner.profile`` into ``runner.kafka`` and run its perf
    tools into ``runner.perf_tests``; if it fails to start or fails on the way, record why in
    ``runner.kafka_skipped`` (printed, and in the JSON) and return what it measured."""
    display = runner.display
    with tempfile.TemporaryDirectory(prefix="raykafka-bench-kafka-") as workdir:
        display.step(f"starting Apache Kafka, {NODES} nodes")
        try:
            kafka = _start(libs, Path(workdir), cluster_config)
        except (RuntimeError, TimeoutError, OSError) as error:
            runner.kafka_skipped = f"Apache Kafka did not start: {error}"[:2000]
            display.say(runner.kafka_skipped)
            return
        try:
            pids = lambda: [p.pid for p in kafka.processes if p.poll() is None]  # noqa: E731
            _warm_up(runner, kafka.bootstrap_servers)
            for (partitions, size, rf), ops in sorted(kafka_plan(runner.profile).items()):
                _run_topic(runner, kafka.bootstrap_servers, pids, partitions, size, rf, ops)
            for point in sorted({p for p in runner.profile.points if p.op == "catchup"}):
                run_catch_up(runner, kafka, pids, point, catch_up_records(point))
            for test in runner.profile.perf_tests:
                topic = f"perf-p{test.partitions}-s{test.record_bytes}-rf{test.replication_factor}"
                wire.create_topic(kafka.bootstrap_servers, topic, test.partitions, test.replication_factor,
                                  topic_config(test.replication_factor))
                wait_topic_ready(kafka.bootstrap_servers, topic, test.partitions, test.replication_factor)
                runner.run_perf_test("kafka", libs, kafka.bootstrap_servers, topic, test)
        except Exception as error:  # Kafka's part ends here; raykafka's and Tansu's are still measured and reported
            runner.kafka_skipped = (f"Apache Kafka stopped after {len(runner.kafka)} measurements: {error!r}; "
                                    f"node 1 log: {kafka.log_tail(1, 1000)}")[:3000]
            display.say(runner.kafka_skipped)
        finally:
            _stop(kafka)


def _warm_up(runner, bootstrap: str) -> None:
    """One point's worth of 1 KiB records produced to a replicated topic and read back, untimed: a
    JVM interprets its code before the JIT compiles the hot paths, and Kafka's first timed point
    would otherwise pay for that (raykafka's Python has no such phase)."""
    runner.display.step("Apache Kafka: warm-up")
    topic, records = "bench-kafka-warm-up", records_for(runner.profile, 1024)
    wire.create_topic(bootstrap, topic, NODES, NODES, topic_config(NODES))
    wait_topic_ready(bootstrap, topic, NODES, NODES)
    wire.produce(bootstrap, topic, NODES, records, 1024, "all", [0])
    wire.consume(bootstrap, topic, NODES, records, [0])


def _run_topic(runner, bootstrap: str, pids, partitions: int, size: int, rf: int, ops: set) -> None:
    topic = f"bench-kafka-p{partitions}-s{size}-rf{rf}"
    wire.create_topic(bootstrap, topic, partitions, rf, topic_config(rf))
    wait_topic_ready(bootstrap, topic, partitions, rf)
    records = records_for(runner.profile, size)
    # Every follower fetching before the clock, as for raykafka.
    first_writes = wire.first_writes_figures(bootstrap, topic, partitions, rf, runner.display.say, who="Kafka ")
    first_records = partitions if first_writes else 0
    produced = first_records
    for op, acks in sorted(ops, key=lambda o: (o[0] != "produce", ACKS_ORDER.get(o[1], 0))):
        if op == "consume" and produced == first_records:  # something to read
            produced = wire.produce(bootstrap, topic, partitions, records, size, "1", [0])["records"]
        if op == "consume":  # what the log holds: acks=0 promises nothing
            produced = wire.end_offsets(bootstrap, topic, partitions)
        what = f"produce RF={rf} acks={acks}" if op == "produce" else f"consume RF={rf}"
        label = f"Kafka {what} p={partitions} {size}B"
        count = runner.begin(label, records if op == "produce" else produced)
        with runner.probe(pids) as probe:
            if op == "produce":
                figures = wire.produce(bootstrap, topic, partitions, records, size, acks, count)
                produced += figures["records"]
            else:
                figures = wire.consume(bootstrap, topic, partitions, produced, count)
        runner.kafka[(op, partitions, size, acks, rf)] = {"replication_factor": rf,
                                                          **peer_figures(figures, size, probe),
                                                          **(first_writes if op == "produce" else {})}
        display_rate = figures["records"] * size / 1e6 / figures["seconds"]
        runner.display.done(f"  {label}: {display_rate:.1f} MB/s")


def _log_bytes(data_dir: Path, topic: str) -> int:
    """The bytes of ``topic``'s record batches in one node's log directory: its segments' sizes."""
    total = 0
    for directory in data_dir.glob(f"{topic}-*"):
        if directory.name[len(topic) + 1:].isdigit():
            for segment in directory.glob("*.log"):
                try:
                    total += segment.stat().st_size
                except FileNotFoundError:  # a segment deleted between the listing and the look
                    continue
    return total


class LogGrowth:
    """Samples a follower's log size for a topic every CATCH_UP_POLL_S on a thread, until it holds
    ``target`` bytes or ``stop``; ``timing`` reads the copy's window off the samples. ``cpu`` (if
    given) is read when the log is first seen to grow and when it is first seen whole, so that the
    CPU of the copy is told from that of the restart before it (``cpu_seconds``)."""

    def __init__(self, data_dir: Path, topic: str, target: int, cpu=None) -> None:
        import threading
        self.data_dir, self.topic, self.target, self._cpu = data_dir, topic, target, cpu
        self.samples: list[tuple[float, int]] = []
        self._cpu_marks: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="kafka-catch-up", daemon=True)

    def _run(self) -> None:
        deadline = time.perf_counter() + CATCH_UP_TIMEOUT_S
        while not self._stop.is_set() and time.perf_counter() < deadline:
            size = _log_bytes(self.data_dir, self.topic)
            self.samples.append((time.perf_counter(), size))
            if self._cpu is not None and size > self.samples[0][1] and (not self._cpu_marks or size >= self.target):
                self._cpu_marks.append(self._cpu())
            if size >= self.target:
                return
            self._stop.wait(CATCH_UP_POLL_S)

    def start(self) -> "LogGrowth":
        self._thread.start()
        return self

    def wait(self, timeout_s: float) -> None:
        self._thread.join(timeout=timeout_s)
        self._stop.set()
        self._thread.join(timeout=10)

    @property
    def cpu_seconds(self) -> float | None:
        """The CPU read between the first growth seen and the whole log seen, or None (it fell
        within one sample, or no ``cpu`` was given)."""
        return self._cpu_marks[-1] - self._cpu_marks[0] if len(self._cpu_marks) == 2 else None

    def timing(self) -> tuple[float, float, bool] | None:
        """(the fraction of the bytes timed, their seconds, whether the copy fell within one sample)
        or None if the log never grew or never became whole. The bytes are those copied after the
        first sample that saw the log grow, timed to the first sample that saw it whole: the bytes
        before it are left out with their time, as a consume's figure after its first delivery
        leaves out the first fetch. A copy that fell between two samples is timed over that
        interval, whole (a lower bound on its rate)."""
        if not self.samples or self.target <= self.samples[0][1]:
            return None
        start_size = self.samples[0][1]
        grown = next((i for i, (_, size) in enumerate(self.samples) if size > start_size), None)
        whole = next((i for i, (_, size) in enumerate(self.samples) if size >= self.target), None)
        if grown is None or whole is None:
            return None
        if whole == grown:
            return 1.0, self.samples[whole][0] - self.samples[grown - 1][0], True
        fraction = (self.target - self.samples[grown][1]) / (self.target - start_size)
        return fraction, self.samples[whole][0] - self.samples[grown][0], False


def _cpu_or_zero(pid: int) -> float:
    from benchmarks._probe import process_cpu_seconds
    try:
        return process_cpu_seconds(pid)
    except (FileNotFoundError, ProcessLookupError):  # a node between its stop and its start
        return 0.0


def run_catch_up(runner, kafka, pids, point: Point, records: int) -> None:
    """A follower on the last node for every partition (leaders on the others, as raykafka's
    catch-up topic has them), stopped with a controlled shutdown while ``records`` are produced
    with acks=1, then started again. The rate counts the records copied from the first sample that
    saw the follower's log grow to the first that saw it hold the leaders' bytes (every
    CATCH_UP_POLL_S; Kafka's fetchers keep no clock we can read, as raykafka's do)."""
    topic = f"bench-kafka-catchup-p{point.partitions}-s{point.record_bytes}"
    follower, leaders = NODES, list(range(1, NODES))
    assignment = [[leaders[p % len(leaders)], follower] for p in range(point.partitions)]
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap_servers})
    # confluent-kafka wants the partition count beside an assignment (it refuses its default there).
    new = NewTopic(topic, point.partitions, replica_assignment=assignment, config={"min.insync.replicas": "1"})
    for future in admin.create_topics([new]).values():
        future.result(timeout=60)
    wait_topic_ready(kafka.bootstrap_servers, topic, point.partitions, 2)
    runner.display.step(f"Kafka {point.label}: backlog")
    kafka.stop_node(follower)
    wire.produce(kafka.bootstrap_servers, topic, point.partitions, records, point.record_bytes, "1", [0])
    target = sum(_log_bytes(kafka.workdir / f"node-{leader}" / "data", topic) for leader in leaders)
    label = f"Kafka {point.label}"
    runner.begin(label, records)
    with runner.probe(pids) as probe:
        growth = LogGrowth(kafka.workdir / f"node-{follower}" / "data", topic, target,
                           cpu=lambda: sum(_cpu_or_zero(pid) for pid in pids())).start()
        restarted = time.perf_counter()
        kafka.restart_node(follower)
        restart_s = time.perf_counter() - restarted
        growth.wait(CATCH_UP_TIMEOUT_S)
    timing = growth.timing()
    if timing is None:
        runner.display.done(f"  {label}: the follower's log never grew to the leaders' "
                            f"{target:,} bytes within {CATCH_UP_TIMEOUT_S} s")
        return
    fraction, seconds, coarse = timing
    figures = peer_figures({"records": round(records * fraction), "seconds": seconds}, point.record_bytes, probe)
    # CPU per GB of the timed copy, as raykafka's catch-up counts its own from the restart's end;
    # a copy within one sample has no such window, and counts the restart's CPU too (cpu_timed_by).
    if growth.cpu_seconds is not None:
        figures["cpu_s_per_gb"] = growth.cpu_seconds / (figures["records"] * point.record_bytes / 1e9)
    else:
        figures["cpu_s_per_gb"] = probe.cpu_seconds / (records * point.record_bytes / 1e9)
    runner.kafka[peer_key(point)] = {"replication_factor": point.replication_factor, "backlog_records": records,
                                     "log_bytes": target, "restart_seconds": round(restart_s, 3),
                                     "timed_by": "follower log size" + (", within one sample" if coarse else ""),
                                     "cpu_timed_by": "copy" if growth.cpu_seconds is not None else "restart and copy",
                                     **figures}
    runner.display.done(f"  {label}: {figures['mb_per_s']:.1f} MB/s")


def perf_test_entry(system: str, test, figures: dict) -> dict:
    return {"system": system, "label": test.label, "partitions": test.partitions, "record_bytes": test.record_bytes,
            "replication_factor": test.replication_factor, "acks": test.acks, **figures}


def pair_perf_tests(entries: list[dict]) -> list[dict]:
    """One row per perf test: raykafka's and Kafka's figures and raykafka ÷ Kafka for each rate."""
    rows = {}
    for entry in entries:
        row = rows.setdefault(entry["label"], {key: entry[key] for key in (
            "label", "partitions", "record_bytes", "replication_factor", "acks")})
        row[entry["system"]] = {key: entry[key] for key in ("producer", "consumer", "error") if key in entry}
    for row in rows.values():
        ours, theirs = row.get("raykafka"), row.get("kafka")
        if ours and theirs and "error" not in ours and "error" not in theirs:
            row["ratios"] = {
                f"{side}_{name}": ours[side][name] / theirs[side][name]
                for side, names in (("producer", ("records_per_s", "mib_per_s")),
                                    ("consumer", ("records_per_s", "fetch_records_per_s", "mib_per_s")))
                for name in names if theirs[side].get(name)}
    return list(rows.values())

