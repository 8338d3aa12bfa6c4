"""``raykafka load run``: a workload file run end to end through Spark on the raykafka cluster.

Theory of operation. ``run_workload`` connects to Ray (a local one, or the cluster at
``address``), starts a raykafka cluster and Spark on it (printing Spark's start-up time), creates
the topics, then runs the load job while the driver runs the workload's fault schedule and a live
progress line, and the consume job reads every acknowledged record back (alongside the load when
there are Spark task slots for both, else after it). Both jobs' per-record
results become DataFrames (saved as Parquet) and their clients' histories go, with the faults and
the invariant sampler's samples, into ``history.jsonl``, which ``orchestration.chaos.checker`` judges.
The summary is computed with Spark, printed as Kafka's perf-test tools print theirs, saved as
``summary.json`` and drawn as ``throughput.png``; ``verdict.txt`` holds the checker's report.

On a Ray cluster of several hosts (``address`` given, or more than one node) the brokers listen on
their own node's IP (``listeners=PLAINTEXT://{node_ip}:0`` unless the workload sets listeners), so
librdkafka clients in Spark tasks on other hosts reach them at what they advertise, and Spark's
executors spread over the nodes (``SparkSizing.for_ray``). The summary says where the load ran: the
executors' hosts as Spark reports them and each client's Ray node.
"""
from __future__ import annotations

import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


from orchestration.spark.fault_schedule import LOAD_PRODUCER_DEFAULTS, FaultSchedule
from orchestration.spark.workload import Workload

DISPLAY_INTERVAL_S = 1.0
# A consumer task also stops by itself this long after its deadline should have come (a driver
# that died cannot tell it to).
CONSUMER_SAFETY_NET_S = 600


@dataclass
class PipelineResult:
    workload: str
    output_dir: str
    spark_startup_s: float
    summary: dict
    report: Any  # orchestration.chaos.checker.Report
    acknowledged: int
    consumed: int
    lost: int
    recovery_s: float | None
    png: str
    notes: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return self.report.valid and self.lost == 0


class _Display:
    """The live progress display (rich), a bar per phase: the load's counts acknowledged and failed
    records toward its record count (no total for a timed load), the consume job's counts records
    read toward those acknowledged; beside it the counts and the current rate (the phase's mean
    rate once it ends)."""

    def __init__(self, progress, enabled: bool, console=None) -> None:
        self.progress, self.enabled, self.console = progress, enabled, console
        self._bar = None
        self._task = None
        self._phase = ""
        self._started = self._last = (time.monotonic(), 0)

    def _counted(self, counts: dict) -> int:
        return counts["acknowledged"] + counts["failed"] if self._phase == "load" else counts["read"]

    def start(self, phase: str, total: int | None, since: tuple[float, int] | None = None) -> None:
        """``since`` is (monotonic time, count) the phase's mean rate counts from, when its job began
        before the phase is shown (a consume job that read alongside the load)."""
        from orchestration.spark.jobs import snapshot
        self._phase = phase
        self._last = (time.monotonic(), self._counted(snapshot(self.progress)["counts"]))
        self._started = since or self._last
        if self.enabled:
            from orchestration.progress import rich_progress
            self._bar = rich_progress(self.console)
            self._bar.start()
            self._task = self._bar.add_task(phase, total=total, detail="")

    def update(self, final: bool = False) -> dict:
        from orchestration.spark.jobs import snapshot
        counts = snapshot(self.progress)["counts"]
        now, counted = time.monotonic(), self._counted(counts)
        then, counted_before = self._started if final else self._last
        rate = (counted - counted_before) / max(1e-9, now - then)
        self._last = (now, counted)
        if self._task is not None:
            detail = (f"sent {counts['sent']:,} acked {counts['acknowledged']:,} failed {counts['failed']:,}"
                      if self._phase == "load" else f"read {counts['read']:,}")
            self._bar.update(self._task, completed=counted,
                             detail=f"{detail}  {rate:,.0f}/s{' mean' if final else ''}")
        return counts

    def done(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = self._task = None


def broker_config(workload: Workload, *, several_hosts: bool) -> dict[str, str]:
    """The brokers' configuration for ``workload``: fast failover, the node's IP as the listener
    host when the cluster may span hosts and the workload names no listener, then the workload's."""
    from actors.wire.listeners import with_listeners_for_hosts
    from orchestration.chaos.runner import FAST_FAILOVER_CONFIG
    return with_listeners_for_hosts({**FAST_FAILOVER_CONFIG, **workload.broker_config}, several_hosts=several_hosts)


def _producer_tasks(workload: Workload, topics: list[str], config: dict):
    from orchestration.spark.jobs import ProducerTask
    shares = workload.records_per_producer()
    tasks = []
    for t, topic in enumerate(topics):
        for p in range(workload.producers_per_topic):
            index = t * workload.producers_per_topic + p
            tasks.append(ProducerTask(
                process=f"producer-{topic}-{p}", topic=topic, records=shares[index] if shares else None,
                duration_s=workload.duration_s, rate_per_s=workload.rate_per_producer(),
                message_size=workload.message_size, key_distributor=workload.key_distributor,
                partitions=workload.partitions_per_topic, config=config, seed=index, client=workload.client))
    return tasks


def _consumer_tasks(workload: Workload, topics: list[str]):
    from orchestration.spark.jobs import ConsumerTask
    safety_net_s = (workload.duration_s or 0) + workload.consume_timeout_seconds + CONSUMER_SAFETY_NET_S
    return [ConsumerTask(process=f"consumer-{topic}-sub{s}-{c}", subscription=f"{topic}-sub{s}", topic=topic,
                         config=dict(workload.consumer_config), timeout_s=safety_net_s,
                         client=workload.consumer_client)
            for topic in topics for s in range(workload.subscriptions_per_topic)
            for c in range(workload.consumer_per_subscription)]


def _run_in_thread(function, *args) -> tuple[threading.Thread, dict]:
    outcome: dict = {}

    def target() -> None:
        try:
            outcome["value"] = function(*args)
        except BaseException as exc:  # handed to the driver's thread below
            outcome["error"] = exc

    thread = threading.Thread(target=target, name="raykafka-spark-job", daemon=True)
    thread.start()
    return thread, outcome


def _result(thread: threading.Thread, outcome: dict):
    thread.join()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def _recovery_s(load_rows: list[tuple], topic: str, kills: list[tuple[float, int]]) -> float | None:
    """Seconds from the first leader kill until partition 0 of ``topic`` acknowledged a write again."""
    if not kills:
        return None
    killed_at = kills[0][0]
    # Sends invoked after the kill: an acknowledgement of an earlier one may be the dead leader's
    # answer, read late.
    later = [row[5] for row in load_rows if row[8] == "ok" and row[1] == topic and row[6] == 0 and row[4] > killed_at]
    return round(min(later) - killed_at, 3) if later else None


def run_workload(workload: Workload, *, address: str | None = None, output_dir: str | Path = "load-results",
                 num_cpus: int | None = None, show_progress: bool = True, log_dir: str | None = None,
                 spark_sizing=None, out=print, namespace: str | None = None,
                 bootstrap_servers: str | None = None) -> PipelineResult:
    """Run ``workload`` end to end; see the module docstring. Shuts down what it started. With
    ``namespace``, on the raykafka cluster already running in that Ray namespace (on the Ray at
    ``address``), which is left running (``run_on_existing``); with ``bootstrap_servers``, against
    that Kafka listener (``listener_load``)."""
    import ray

    from orchestration.spark.session import check_java
    check_java()  # before anything starts: the fix is named at once
    if workload.job == "streaming-aggregate":
        from orchestration.spark.kafka_connector import connector_jars
        connector_jars()  # the same for Spark's Kafka connector (ConnectorUnavailable names what is missing)
    output = Path(output_dir)
    output.mkdir(parents=True, exist_ok=True)
    if namespace is not None:
        return run_on_existing(workload, namespace, address, output, show_progress, spark_sizing, out)
    owns_ray = not ray.is_initialized()
    if owns_ray:
        namespace = f"raykafka-load-{uuid.uuid4().hex[:8]}"
        if address:
            from orchestration.admin.detached import join_with_rays_auth
            join_with_rays_auth()
            ray.init(address=address, namespace=namespace, log_to_driver=False)
        else:
            from orchestration.admin.ray_runtime import start_local_ray
            start_local_ray(num_cpus=num_cpus, namespace=namespace)
    try:
        if bootstrap_servers is not None:
            from orchestration.spark.listener_load import run_on_listener
            return run_on_listener(workload, bootstrap_servers, output, show_progress, spark_sizing, out, run_on)
        several_hosts = bool(address) or sum(1 for node in ray.nodes() if node.get("Alive")) > 1
        return _run_on_ray(workload, output, show_progress, log_dir, spark_sizing, out, several_hosts)
    finally:
        if owns_ray:
            ray.shutdown()


def _run_on_ray(workload, output, show_progress, log_dir, spark_sizing, out, several_hosts) -> PipelineResult:
    from orchestration.admin.cluster import Cluster
    from orchestration.spark.session import SparkOnRay
    started = time.monotonic()
    cluster = Cluster.start(brokers=workload.brokers, log_dir=log_dir,
                            config=broker_config(workload, several_hosts=several_hosts))
    spark = None
    try:
        out(f"raykafka cluster: {workload.brokers} brokers up in {time.monotonic() - started:.1f}s "
            f"(Ray namespace {cluster.namespace}; bootstrap servers {cluster.bootstrap_servers})")
        streaming = workload.job == "streaming-aggregate"
        spark = SparkOnRay.start("raykafka-load", spark_sizing, kafka_connector=True if streaming else None)
        placed = f", placed {spark.sizing.placement_strategy}" if spark.sizing.placement_strategy else ""
        out(f"Spark on Ray started in {spark.startup_s:.1f}s ({spark.sizing.num_executors} executor(s), "
            f"{spark.sizing.task_slots} task slots each{placed})")
        if streaming:
            from orchestration.spark.streaming import run_streaming
            return run_streaming(cluster, spark, workload, output, out=out)
        return run_on(cluster, spark, workload, output, show_progress=show_progress, out=out)
    finally:
        if spark is not None:
            spark.stop()
        cluster.shutdown()


def run_on_existing(workload: Workload, namespace: str, address: str | None, output: Path, show_progress: bool,
                    spark_sizing, out) -> PipelineResult:
    """``workload`` on the raykafka cluster running in Ray namespace ``namespace``: Spark starts on
    its Ray, the topics get a suffix of this run (a cluster that outlives the run keeps earlier
    runs' topics), the workload's broker settings are not applied (the brokers keep their own), and
    the cluster is left running."""
    from orchestration.admin.cluster import Cluster
    from orchestration.spark.session import run_on_a_running_cluster
    cluster = Cluster.connect(namespace=namespace, address=address)
    return run_on_a_running_cluster(
        cluster, f"raykafka cluster: {len(cluster.broker_ids)} brokers already running (Ray namespace {namespace}; "
                 f"bootstrap servers {cluster.bootstrap_servers}); the workload's broker settings are not applied",
        workload, output, show_progress, spark_sizing, out, run_on)

def run_on(cluster, spark, workload: Workload, output_dir: str | Path, *, show_progress: bool = False,
           out=print, topics: list[str] | None = None) -> PipelineResult:
    """Run ``workload``'s topics (``topics``, default the workload's names), load, faults, consume
    job, checker and summary on a running cluster and Spark session (``SparkOnRay``); writes the
    results under ``output_dir``."""
    output = Path(output_dir)
    output.mkdir(parents=True, exist_ok=True)
    topics = topics or workload.topic_names()
    for topic in topics:
        cluster.create_topic(topic, partitions=workload.partitions_per_topic,
                             replication_factor=workload.replication_factor,
                             config={"min.insync.replicas": str(workload.min_insync_replicas),
                                     **workload.topic_config})
    out(f"topics {', '.join(topics)}: {workload.partitions_per_topic} partitions, replication factor "
        f"{workload.replication_factor}, min.insync.replicas={workload.min_insync_replicas}")
    return _run_jobs(workload, cluster, spark, topics, output, show_progress, out)


def _describe_load(workload: Workload) -> str:
    size = f"{workload.record_count} records" if workload.record_count else f"{workload.duration_s:.0f}s"
    rate = f" at {workload.producer_rate:.0f} records/s" if workload.producer_rate else " as fast as they go"
    return (f"load job: {workload.producers} {workload.client} producer task(s), acks={workload.acks}, "
            f"{size}{rate}")


def _follow(thread: threading.Thread, display: _Display, phase: str, total: int | None, on_tick=None,
            since: tuple[float, int] | None = None) -> None:
    """Show progress until a job's thread ends; ``on_tick(counts)`` runs every display interval."""
    display.start(phase, total, since)
    try:
        while thread.is_alive():
            counts = display.update()
            if on_tick is not None:
                on_tick(counts)
            thread.join(DISPLAY_INTERVAL_S)
        display.update(final=True)
    finally:
        display.done()


def _run_jobs(workload, cluster, spark, topics, output, show_progress, out) -> PipelineResult:
    import ray

    from orchestration.chaos.runner import Run, Scenario
    from orchestration.chaos.checker import check
    from orchestration.chaos.faults import Faults
    from orchestration.history import HistoryWriter, read_history
    from orchestration.chaos.sampler import Sampler
    from orchestration.spark import jobs
    from orchestration.spark.session import RayTarget
    target = RayTarget.of(cluster)
    run_id = uuid.uuid4().hex[:8]
    progress_name = jobs.progress_actor_name(run_id)
    progress = jobs.JobProgress.options(name=progress_name, namespace=cluster.namespace).remote()
    history_path = output / "history.jsonl"
    history_path.unlink(missing_ok=True)
    producer_config = {**LOAD_PRODUCER_DEFAULTS, **workload.producer_config, "acks": workload.acks}
    display = _Display(progress, show_progress)
    with HistoryWriter(history_path) as history:
        wall_zero = time.time() - history.now()
        faults = Faults(cluster, history)
        run = Run(Scenario(name=workload.name, title=workload.name, criterion="", script=lambda r: None),
                  cluster, faults, history, seed=0)
        schedule = FaultSchedule(workload, run, topics[0])
        # A Kafka listener's cluster (listener_load) has no replica actors to sample.
        sampler = Sampler(cluster, history, topics=topics, interval_s=1.0) \
            if getattr(cluster, "samples_replicas", True) else None
        if sampler is not None:
            sampler.start()
        try:
            out(_describe_load(workload))
            consumer_tasks = _consumer_tasks(workload, topics)
            # Consumers read while the load runs when there are task slots for both; else after it.
            together = len(consumer_tasks) + workload.producers <= jobs.task_slots(spark.spark)
            load_thread, load_outcome = _run_in_thread(
                jobs.run_tasks, spark.spark, target, _producer_tasks(workload, topics, producer_config),
                jobs.run_producer, progress_name)
            consume = None

            def start_consumers():
                out(f"consume job: {len(consumer_tasks)} consumer task(s) in "
                    f"{workload.subscriptions_per_topic * len(topics)} group(s)"
                    + (", reading while the load runs" if together else ""))
                return _run_in_thread(jobs.run_tasks, spark.spark, target, consumer_tasks, jobs.run_consumer,
                                      progress_name)

            consume_started = None
            if together:
                consume_started = (time.monotonic(), 0)
                consume = start_consumers()

            def run_schedule(counts: dict) -> None:
                load_started = jobs.snapshot(progress)["load_started_at"]
                schedule.maybe_run(counts, None if load_started is None else time.time() - load_started)

            _follow(load_thread, display, "load", workload.record_count, run_schedule)
            load_rows, load_events = jobs.split_results(_result(load_thread, load_outcome))
            if schedule.steps:
                run.note(f"{len(schedule.steps)} fault step(s) never fired: the load ended first")
            try:
                faults.heal()
            except Exception as exc:
                run.note(f"healing the network failed: {exc!r}")
            jobs.write_events(history, load_events, wall_zero)
            ray.get(progress.set_targets.remote(jobs.acknowledged_ends(load_rows),
                                                time.time() + workload.consume_timeout_seconds), timeout=30)
            thread, outcome = consume or start_consumers()
            acknowledged = sum(1 for row in load_rows if row[8] == "ok")
            _follow(thread, display, "consume", acknowledged * workload.subscriptions_per_topic,
                    since=consume_started)
            consume_rows, consume_events = jobs.split_results(_result(thread, outcome))
            jobs.write_events(history, consume_events, wall_zero)
            where = {"bootstrap_servers": target.bootstrap_servers, "executors": spark.executor_hosts(),
                     "clients": jobs.snapshot(progress)["hosts"]}
        finally:
            if sampler is not None:
                sampler.stop()
            ray.kill(progress)
    report = check(read_history(history_path), unseen_is_anomaly=True)
    return _summarize(workload, spark, output, load_rows, consume_rows, report, schedule, run, wall_zero,
                      history_path, topics, out, where)


def _summarize(workload, spark, output, load_rows, consume_rows, report, schedule, run, wall_zero,
               history_path, topics, out, where) -> PipelineResult:
    from orchestration.spark import plot
    from orchestration.spark.summary import (
        consume_schema, consumer_lines, load_schema, producer_line, save_summary, summarize,
    )
    session = spark.spark
    load = session.createDataFrame(load_rows, load_schema())
    consume = session.createDataFrame(consume_rows, consume_schema())
    load.write.mode("overwrite").parquet(str(output / "load.parquet"))
    consume.write.mode("overwrite").parquet(str(output / "consume.parquet"))
    zero = min((row[4] for row in load_rows), default=wall_zero)
    summary = summarize(load, consume, zero)
    acknowledged = summary["produce"]["acknowledged"]
    lost = report.counts.get("lost-write", 0) + report.counts.get("unseen", 0)
    recovery_s = _recovery_s(load_rows, topics[0], schedule.kills)
    summary.update({"workload": workload.name, "spark_startup_s": round(spark.startup_s, 2),
                    "recovery_s": recovery_s, "checker": report.summary(), "notes": run.notes, **where})
    save_summary(summary, output / "summary.json")
    (output / "verdict.txt").write_text(report.table() + "\n")
    faults = [(f["time"] - (zero - wall_zero), f["name"],
               f"{f['target']} " + " ".join(f"{k}={v}" for k, v in f.get("detail", {}).items()))
              for f in report.faults]
    end_s = max([w["second"] + 1 for w in summary["produce"]["windows"] + summary["consume"]["windows"]] or [1])
    png = plot.draw(output / "throughput.png", summary["produce"]["windows"], summary["consume"]["windows"],
                    plot.fault_bands(faults, end_s), f"{workload.name}: Spark-driven load on raykafka")
    out("")
    out(_where_line(where))
    out(producer_line(summary))
    for line in consumer_lines(summary):
        out(line)
    errors = summary["produce"]["errors"]
    out("errors: " + (", ".join(f"{k}={v}" for k, v in sorted(errors.items())) if errors else "none"))
    if recovery_s is not None:
        out(f"partition 0 of {topics[0]} accepted writes again {recovery_s:.2f}s after its leader was killed")
    consumed = summary["consume"]["acknowledged_read"]
    out(f"acknowledged {acknowledged}, in the summary {acknowledged}, consumed {consumed} of them; "
        f"lost acknowledged records: {lost}")
    found = ", ".join(f"{k}={v}" for k, v in report.counts.items() if v) or "none"
    out(f"checker: {'VALID' if report.valid else 'INVALID'} (anomalies: {found})")
    for note in run.notes:
        out(f"note: {note}")
    out(f"history, summary.json, verdict.txt and the picture in {output}; PNG: {png}")
    return PipelineResult(workload.name, str(output), spark.startup_s, summary, report, acknowledged, consumed,
                          lost, recovery_s, png, list(run.notes))


def _where_line(where: dict) -> str:
    """Where the load ran: executors per host (Spark's view), clients per Ray node."""
    def per_host(hosts: dict[str, str]) -> str:
        return ", ".join(f"{host} ({count})" for host, count in sorted(Counter(hosts.values()).items())) or "none"
    return f"Spark executors on {per_host(where['executors'])}; clients on {per_host(where['clients'])}"
