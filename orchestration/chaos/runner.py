"""Runs one chaos scenario end to end and gives a verdict.

Theory of operation. A ``Scenario`` says what cluster it needs (brokers, broker config, a
multi-node Ray or not), what it does (``script``: a function of a ``Run``) and what must hold at
the end (its ``criterion``, in words, and its expectation of the checker: a clean history, or the
anomaly kinds that must appear). ``run_scenario`` starts the cluster (and Ray, when it owns it),
opens the history, starts the invariant sampler, runs the script, stops everything, runs the
checker over the history, and writes ``history.jsonl``, ``report.json`` and ``verdict.txt`` to the
output directory. The verdict passes when the checker's findings match the expectation and every
``Run.require`` in the script held.

Everything random in a run (fault targets, jitter, the order of things) comes from ``Run.rng``,
seeded from the run's seed, so a run is reproducible up to the timing of a real cluster.
"""
from __future__ import annotations

import json
import random
import shutil
import tempfile
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from loguru import logger

from orchestration.chaos.checker import ANOMALY_KINDS, Report, check
from orchestration.history import HistoryWriter, read_history

# A row's producers run in one of two modes (``Scenario.producer_modes``, ``run_scenario``'s
# ``producer_mode``). RETRIES_0: no retries and one request in flight, since a retried request
# whose first attempt landed writes its records twice (Kafka without idempotence), which the
# checker would rightly call a duplicate; each value is sent once, and an indeterminate outcome
# stays indeterminate. IDEMPOTENT: Kafka 3.x's producer defaults (enable.idempotence=true with
# acks=all, retries and max.in.flight.requests.per.connection at the client's defaults), so a send
# whose attempt ended unknown is retried and the leader answers a retry of a batch it already has
# with the original offset: sends end acknowledged instead of indeterminate, and the checker's
# "no duplicate" is part of the row's pass criterion.
RETRIES_0 = "retries-0"
IDEMPOTENT = "idempotent"
_COMMON_PRODUCER_CONFIG = {"linger.ms": "5", "retry.backoff.ms": "100", "request.timeout.ms": "5000",
                           "delivery.timeout.ms": "30000"}
PRODUCER_MODES: dict[str, dict[str, str]] = {
    RETRIES_0: {**_COMMON_PRODUCER_CONFIG, "retries": "0", "max.in.flight.requests.per.connection": "1"},
    IDEMPOTENT: {**_COMMON_PRODUCER_CONFIG, "enable.idempotence": "true"},
}
# Broker settings that make failover observable within seconds on a small machine.
FAST_FAILOVER_CONFIG = {"broker.session.timeout.ms": "4000", "broker.heartbeat.interval.ms": "500",
                        "replica.lag.time.max.ms": "4000", "replica.fetch.wait.max.ms": "200",
                        "auto.leader.rebalance.enable": "false", "offsets.topic.num.partitions": "3",
                        "group.initial.rebalance.delay.ms": "200"}
WAIT_TIMEOUT_S = 60
READ_ALL_TIMEOUT_S = 90
SAMPLE_INTERVAL_S = 0.5


@dataclass(frozen=True)
class Scenario:
    name: str
    title: str
    criterion: str
    script: Callable[["Run"], None]
    brokers: int = 3
    config: dict[str, str] = field(default_factory=dict)
    # None: the history must be clean. A tuple: those anomaly kinds must be reported (the run
    # demonstrates a loss the configuration allows); kinds not listed must still be absent.
    expected_anomalies: tuple[str, ...] | None = None
    # Anomaly kinds tolerated but not required (e.g. the record an unclean election loses).
    tolerated_anomalies: tuple[str, ...] = ()
    unseen_is_anomaly: bool = True
    slow: bool = False  # run by the 'chaos' marker (`make chaos`, which CI runs too), not by `make test`
    nodes: tuple[int, ...] = ()  # brokers that get a Ray node of their own (node faults)
    # The producer modes the matrix runs this row in (keys of PRODUCER_MODES), the first being the
    # default of ``run_scenario``. Rows whose producers write under faults run IDEMPOTENT; one row
    # also keeps RETRIES_0 to show what retries change; choreographed rows that need each send to
    # be one attempt stay RETRIES_0.
    producer_modes: tuple[str, ...] = (RETRIES_0,)

    def __post_init__(self) -> None:
        assert self.producer_modes and set(self.producer_modes) <= set(PRODUCER_MODES), \
            f"{self.name}: producer modes {self.producer_modes} not all in {sorted(PRODUCER_MODES)}"
        for kind in (self.expected_anomalies or ()) + self.tolerated_anomalies:
            assert kind in ANOMALY_KINDS, f"{self.name}: unknown anomaly kind {kind!r}"


@dataclass
class Check:
    what: str
    ok: bool
    detail: str = ""


@dataclass
class Verdict:
    scenario: str
    seed: int
    passed: bool
    duration_s: float
    report: Report | None
    checks: list[Check]
    error: str | None
    output_dir: str
    notes: list[str]
    producer_mode: str = RETRIES_0

    def table(self) -> str:
        lines = [f"scenario {self.scenario} (seed {self.seed}, {self.producer_mode} producers): "
                 f"{'PASS' if self.passed else 'FAIL'} "
                 f"in {self.duration_s:.1f}s", ""]
        width = max([len(c.what) for c in self.checks] + [10])
        for c in self.checks:
            lines.append(f"  {'ok  ' if c.ok else 'FAIL'}  {c.what.ljust(width)}  {c.detail}")
        if self.report is not None:
            stats = self.report.stats
            lines += ["", f"  sends: {stats['sends_invoked']} invoked, {stats['sends_ok']} acknowledged, "
                          f"{stats['sends_failed']} failed, {stats['sends_indeterminate']} indeterminate; "
                          f"{stats['records_read']} records read in {stats['polls']} polls; "
                          f"{stats['faults']} faults; {stats['samples']} invariant samples"]
            found = ", ".join(f"{k}={v}" for k, v in self.report.counts.items() if v) or "none"
            lines.append(f"  anomalies: {found}")
        if self.notes:
            lines += ["", *[f"  note: {n}" for n in self.notes]]
        if self.error:
            lines += ["", "  error:", *[f"    {line}" for line in self.error.rstrip().splitlines()[-15:]]]
        lines += ["", f"  history, report and verdict in {self.output_dir}"]
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {"scenario": self.scenario, "seed": self.seed, "producer_mode": self.producer_mode,
                "passed": self.passed,
                "duration_s": round(self.duration_s, 2), "error": self.error, "notes": self.notes,
                "checks": [c.__dict__ for c in self.checks],
                "report": None if self.report is None else self.report.summary()}


class Run:
    """What a scenario script works with: the cluster, the faults, the history, a seeded rng,
    and helpers for the usual workload (load producers, a full read at the end)."""

    def __init__(self, scenario: Scenario, cluster, faults, history: HistoryWriter, seed: int,
                 sampler=None, producer_mode: str | None = None,
                 progress: Callable[[str, str], None] | None = None) -> None:
        self.scenario = scenario
        self.producer_mode = producer_mode or scenario.producer_modes[0]
        # Told each step the script takes (a wait, a check, a note), for a live display.
        self.progress = progress or (lambda phase, detail: None)
        self.sampler = sampler
        self.cluster = cluster
        self.faults = faults
        self.history = history
        self.seed = seed
        self.rng = random.Random(seed)
        self.checks: list[Check] = []
        self.notes: list[str] = []
        self.topics: list[str] = []
        self.compacted_topics: set[str] = set()  # cleanup.policy holds compact: checked per key
        # Topics created with a retention.ms and cleanup.policy holding delete: retention.ms each,
        # which the checker is told (values older than that at a read may be gone).
        self.retention_ms: dict[str, int] = {}
        self._loads: list[Load] = []
        self._value_counter = 0
        self._lock = threading.Lock()

    # ------------------------------------------------------------------------------ topics
    def create_topic(self, name: str, partitions: int = 1, replication_factor: int = 3,
                     config: dict | None = None, assignment: list[list[int]] | None = None) -> None:
        self.cluster.create_topic(name, partitions=partitions, replication_factor=replication_factor,
                                  config=config, assignment=assignment)
        self.topics.append(name)
        policy = (config or {}).get("cleanup.policy", "delete")
        if "compact" in policy:
            self.compacted_topics.add(name)
            if self.sampler is not None:
                self.sampler.undigested_topics.add(name)
        if "delete" in policy and int((config or {}).get("retention.ms", -1)) >= 0:
            self.retention_ms[name] = int(config["retention.ms"])

    def partition_state(self, topic: str, partition: int = 0):
        return next(p for p in self.cluster.describe_topic(topic) if p.partition == partition)

    def leader(self, topic: str, partition: int = 0) -> int:
        return self.partition_state(topic, partition).leader

    def broker_view(self, broker_id: int, topic: str, partition: int = 0) -> dict | None:
        """The replica as ``broker_id`` sees it (HW, LEO, leader, epoch), or None."""
        import ray
        for entry in ray.get(self.cluster.broker(broker_id).describe_partitions.remote(), timeout=10):
            if entry["topic"] == topic and entry["partition"] == partition:
                return entry
        return None

    def checkpointed_high_watermark(self, broker_id: int, topic: str, partition: int = 0) -> int | None:
        """The HW in ``broker_id``'s replication-offset-checkpoint file: what it recovers with when
        it restarts (the file is rewritten whole, so a read sees one complete version)."""
        from actors.core.log.checkpoints import REPLICATION_OFFSET_CHECKPOINT, OffsetCheckpointFile
        from actors.file_storage import FileStorage
        storage = FileStorage(self.cluster.broker_log_dir(broker_id))
        return OffsetCheckpointFile(storage, REPLICATION_OFFSET_CHECKPOINT).read().get((topic, partition))

    def sample_now(self) -> None:
        """Take one invariant sample now, so the history holds the cluster as it is at this point
        of the script (the background sampler keeps its own pace, which a busy machine slows)."""
        assert self.sampler is not None, "this run has no sampler"
        self.sampler.sample_once()

    # ---------------------------------------------------------------------------- producing
    def next_value(self, prefix: str) -> str:
        with self._lock:
            self._value_counter += 1
            return f"{prefix}-{self._value_counter}"

    def producer(self, process: str, **config):
        settings = {**PRODUCER_MODES[self.producer_mode], **{k.replace("_", "."): str(v) for k, v in config.items()}}
        return self.cluster.producer(settings, history=self.history, process=process)

    def produce(self, topic: str, values: list[str], *, partition: int | None = 0, acks: str = "all",
                timeout_s: float = 60, keys: list[str] | None = None, **config) -> dict[str, Any]:
        """Send ``values`` (unique strings; with ``keys``, each with its key) and wait for every
        outcome; returns value -> offset (acknowledged) or the error name. The producer records
        the history itself."""
        producer = self.producer(f"producer-{len(self._loads)}-{self.rng.randrange(1 << 30)}", acks=acks, **config)
        keys = keys if keys is not None else [None] * len(values)
        futures = [(v, producer.send(topic, value=v.encode(), key=None if k is None else k.encode(),
                                     partition=partition)) for v, k in zip(values, keys, strict=True)]
        try:
            producer.flush(timeout=timeout_s)
        except Exception as exc:
            self.note(f"flush of {len(values)} sends to {topic} ended with {exc!r}")
        outcomes: dict[str, Any] = {}
        for value, future in futures:
            try:
                outcomes[value] = future.result(timeout=1).offset
            except Exception as exc:
                outcomes[value] = getattr(exc, "name", type(exc).__name__)
        producer.close(timeout=10)
        return outcomes

    def start_load(self, topic: str, *, producers: int = 1, rate_per_s: float = 100, acks: str = "all",
                   partition: int | None = None, **config) -> "Load":
        load = Load(self, topic, producers=producers, rate_per_s=rate_per_s, acks=acks, partition=partition,
                    config=config, name=f"load{len(self._loads)}")
        self._loads.append(load)
        load.start()
        return load

    def stop_loads(self) -> None:
        for load in self._loads:
            load.stop()

    # ----------------------------------------------------------------------------- reading
    def read_all(self, topic: str, *, process: str = "reader", timeout_s: float = READ_ALL_TIMEOUT_S) -> int:
        """Read every partition of ``topic`` from its start to its high watermark as it is now,
        recording every poll; returns how many records were read."""
        partitions = [p.partition for p in self.cluster.describe_topic(topic)]
        consumer = self.cluster.consumer({"auto.offset.reset": "earliest", "enable.auto.commit": "false"},
                                         history=self.history, process=process)
        consumer.assign([(topic, p) for p in partitions])
        for p in partitions:
            consumer.seek_to_beginning([(topic, p)])
        ends = consumer.end_offsets([(topic, p) for p in partitions])
        read, deadline = 0, time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if all(consumer.position((topic, p)) >= ends[(topic, p)] for p in partitions):
                break
            read += len(consumer.poll(timeout_ms=300))
        else:
            self.require(False, f"read all of {topic}", f"stopped short of {ends} within {timeout_s}s")
        consumer.close()
        return read

    # ------------------------------------------------------------------------------ waiting
    def wait(self, condition: Callable[[], Any], what: str, timeout_s: float = WAIT_TIMEOUT_S) -> Any:
        from orchestration.admin.wait import wait_until
        self.progress("scenario", f"waiting for {what}")
        return wait_until(condition, timeout_s, what)

    def wait_isr(self, topic: str, size: int, partition: int = 0, timeout_s: float = WAIT_TIMEOUT_S) -> None:
        self.wait(lambda: len(self.partition_state(topic, partition).isr) == size, f"{topic}-{partition}'s ISR "
                  f"to reach {size}", timeout_s)

    def wait_leader(self, topic: str, predicate: Callable[[int], bool], what: str, partition: int = 0,
                    timeout_s: float = WAIT_TIMEOUT_S) -> int:
        def serving_leader() -> int | None:
            state = self.partition_state(topic, partition)
            serving = state.leader >= 0 and state.high_watermark >= 0 and predicate(state.leader)
            return state.leader if serving else None

        self.wait(lambda: serving_leader() is not None, what, timeout_s)
        return self.leader(topic, partition)

    # ---------------------------------------------------------------------------- verdicts
    def require(self, ok: bool, what: str, detail: str = "") -> bool:
        self.checks.append(Check(what, bool(ok), detail))
        self.progress("scenario", f"{'ok' if ok else 'FAILED'}: {what}")
        if not ok:
            logger.warning("chaos {}: requirement failed: {} {}", self.scenario.name, what, detail)
        return bool(ok)

    def note(self, text: str) -> None:
        self.notes.append(text)
        self.progress("scenario", text)
        logger.info("chaos {}: {}", self.scenario.name, text)


class Load:
    """Producers sending unique values at a steady rate until stopped; outcomes go to the history
    (the producers record them) and to ``acknowledged``, which schedule triggers count."""

    def __init__(self, run: Run, topic: str, *, producers: int, rate_per_s: float, acks: str,
                 partition: int | None, config: dict, name: str = "load") -> None:
        self.run, self.topic, self.partition = run, topic, partition
        self.rate_per_s = rate_per_s
        # One history process per producer, unique in the run: the checker orders sends per process.
        self._producers = [run.producer(f"{name}-{topic}-{i}", acks=acks, **config) for i in range(producers)]
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()
        self.acknowledged = 0
        self.failed = 0
        self.sent = 0

    def start(self) -> None:
        for i, producer in enumerate(self._producers):
            thread = threading.Thread(target=self._send_forever, args=(i, producer), daemon=True,
                                      name=f"raykafka-chaos-load-{i}")
            thread.start()
            self._threads.append(thread)

    def _on_done(self, future) -> None:
        with self._lock:
            if future.exception() is None:
                self.acknowledged += 1
            else:
                self.failed += 1

    def _send_forever(self, index: int, producer) -> None:
        interval_s = len(self._producers) / self.rate_per_s
        next_at = time.monotonic()
        while not self._stop.is_set():
            value = self.run.next_value(f"p{index}")
            try:
                future = producer.send(self.topic, value=value.encode(), partition=self.partition)
                future.add_done_callback(self._on_done)
                with self._lock:
                    self.sent += 1
            except Exception as exc:  # the producer refused it before sending; it is in the history
                logger.debug("load send refused: {!r}", exc)
            next_at += interval_s
            self._stop.wait(max(0.0, next_at - time.monotonic()))

    def wait_acknowledged(self, count: int, timeout_s: float = WAIT_TIMEOUT_S) -> None:
        self.run.wait(lambda: self.acknowledged >= count, f"{count} acknowledged sends", timeout_s)

    def stop(self, timeout_s: float = 60) -> None:
        if self._stop.is_set():
            return
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=10)
        for producer in self._producers:
            try:
                producer.close(timeout=timeout_s)
            except Exception as exc:
                self.run.note(f"a load producer closed with {exc!r}")


def run_scenario(scenario: Scenario, *, seed: int = 0, output_dir: str | Path | None = None,
                 log_dir: str | None = None, producer_mode: str | None = None,
                 progress: Callable[[str, str], None] | None = None) -> Verdict:
    """Run ``scenario`` on a cluster of its own with its producers in ``producer_mode`` (default:
    the row's first). Uses the Ray this process is connected to, or starts a local one (a
    multi-node one when the scenario needs nodes) and shuts it down after.
    ``progress(phase, detail)`` hears each phase (ray, cluster, scenario, heal, check) and step."""
    progress = progress or (lambda phase, detail: None)
    import ray

    from orchestration.admin.cluster import Cluster
    from orchestration.chaos.faults import Faults
    from orchestration.admin.ray_runtime import start_local_ray
    from orchestration.chaos.sampler import Sampler

    output = Path(output_dir or tempfile.mkdtemp(prefix=f"raykafka-chaos-{scenario.name}-"))
    output.mkdir(parents=True, exist_ok=True)
    history_path = output / "history.jsonl"
    history_path.unlink(missing_ok=True)
    producer_mode = producer_mode or scenario.producer_modes[0]
    if producer_mode not in PRODUCER_MODES:
        raise ValueError(f"producer mode {producer_mode!r} is not one of {sorted(PRODUCER_MODES)}")
    started = time.monotonic()
    error: str | None = None
    ray_nodes = None
    owns_ray = not ray.is_initialized()
    run: Run | None = None
    cluster = None
    own_log_dir = log_dir is None
    log_dir = log_dir or tempfile.mkdtemp(prefix=f"raykafka-chaos-logs-{scenario.name}-")
    with HistoryWriter(history_path) as history:
        try:
            broker_resources, controller_resources = None, None
            if scenario.nodes:
                from orchestration.admin.ray_nodes import RayNodes
                if not owns_ray:
                    raise RuntimeError(f"{scenario.name} needs a multi-node Ray of its own: run it without Ray started")
                ray_nodes = RayNodes(list(scenario.nodes))
                broker_resources = ray_nodes.placement(list(range(scenario.brokers)))
                controller_resources = ray_nodes.head_placement()
            elif owns_ray:
                progress("ray", "starting a local Ray")
                start_local_ray(num_cpus=2, namespace=f"raykafka-chaos-{scenario.name}-{seed}")
            config = {**FAST_FAILOVER_CONFIG, **scenario.config}
            progress("cluster", f"starting {scenario.brokers} brokers")
            cluster = Cluster.start(brokers=scenario.brokers, log_dir=log_dir, config=config,
                                    broker_resources=broker_resources, controller_resources=controller_resources)
            faults = Faults(cluster, history, ray_nodes=ray_nodes)
            sampler = Sampler(cluster, history, topics=None, interval_s=SAMPLE_INTERVAL_S)
            run = Run(scenario, cluster, faults, history, seed, sampler, producer_mode, progress)
            sampler.start()
            try:
                progress("scenario", scenario.title)
                scenario.script(run)
            finally:
                progress("heal", "stopping loads, healing faults, sampling every replica")
                run.stop_loads()
                try:
                    faults.heal()
                except Exception as exc:
                    run.note(f"healing the network failed: {exc!r}")
                sampler.stop()
                try:
                    sampler.sample_once(full_digests=True)
                except Exception as exc:
                    run.note(f"the final invariant sample failed: {exc!r}")
        except Exception:
            error = traceback.format_exc()
            logger.error("chaos {} failed: {}", scenario.name, error)
        finally:
            if cluster is not None:
                try:
                    cluster.shutdown()
                except Exception as exc:
                    logger.warning("cluster shutdown: {!r}", exc)
            if ray_nodes is not None:
                ray_nodes.shutdown()
            elif owns_ray and ray.is_initialized():
                ray.shutdown()
            if own_log_dir:
                shutil.rmtree(log_dir, ignore_errors=True)
    progress("check", "checking the history")
    report = check(read_history(history_path), unseen_is_anomaly=scenario.unseen_is_anomaly,
                   compacted_topics=run.compacted_topics if run is not None else (),
                   retention_ms=run.retention_ms if run is not None else None)
    checks = list(run.checks) if run is not None else []
    checks += expectation_checks(scenario, report, producer_mode)
    passed = error is None and all(c.ok for c in checks)
    verdict = Verdict(scenario.name, seed, passed, time.monotonic() - started, report, checks, error, str(output),
                      run.notes if run is not None else [], producer_mode)
    (output / "report.json").write_text(report.to_json(indent=2))
    (output / "verdict.txt").write_text(verdict.table() + "\n\n" + report.table() + "\n")
    (output / "verdict.json").write_text(json.dumps(verdict.to_dict(), indent=2))
    return verdict


def matrix_runs(rows: list[Scenario]) -> list[tuple[Scenario, str, str]]:
    """Each row once per producer mode it names: (row, mode, an id "row/mode")."""
    return [(row, mode, f"{row.name}/{mode}") for row in rows for mode in row.producer_modes]


def expectation_checks(scenario: Scenario, report: Report, producer_mode: str = RETRIES_0) -> list[Check]:
    """The checker's findings against what the scenario expects of them; with idempotent
    producers, retries are on, and "no duplicate" is named as its own part of the criterion."""
    found = report.kinds() - ({"unseen"} if not scenario.unseen_is_anomaly else set())
    checks = []
    if producer_mode == IDEMPOTENT and "duplicate" not in (scenario.expected_anomalies or ()):
        count = report.counts["duplicate"]
        checks.append(Check("no duplicate (idempotent producers, retries on)", count == 0, f"{count} found"))
    expected = set(scenario.expected_anomalies or ())
    for kind in sorted(expected):
        checks.append(Check(f"checker reports {kind}", kind in found,
                            f"{report.counts[kind]} found" if kind in found else "not found"))
    unexpected = found - expected - set(scenario.tolerated_anomalies)
    counts = ", ".join(f"{k}={report.counts[k]}" for k in sorted(unexpected))
    checks.append(Check("no other anomaly" if expected else "checker finds no anomaly", not unexpected,
                        counts or "none"))
    return checks
