"""Spark-driven produce throughput beside the same load from plain Python producer processes.

In one run on a local 3-broker cluster: the same workload (records, record size, producers,
acks) is produced by the Spark load job (one Spark task per producer, on RayDP) and by plain
Python processes (one per producer, each connected to the same Ray), alternating, each to a fresh
topic. Spark's executors are Ray workers, which Ray starts at niceness 15 (its worker_niceness
setting), and their Python workers inherit it; a plain process starts at 0. On a 2-core machine
shared with the brokers (also Ray workers at 15) that alone separates them, so both sides are
measured at both: plain processes at 0 and at 15, and Spark as it runs and with its producer tasks
raised to niceness 0 for the task's duration (``spark-nice0``, which needs root or CAP_SYS_NICE and
is skipped without it). All run the very same producer loop
(``orchestration.spark.jobs.run_producer``), so the difference at equal niceness is what Spark
adds: scheduling the tasks, starting its Python workers, shipping the per-record results back.
MB/s counts acknowledged value and key bytes from the first send to the last acknowledgement.
Prints a table and saves JSON; asserts nothing.

    python benchmarks/spark_produce_throughput.py [--records 20000] [--producers 2] [--size 1024] [--rounds 2]
    (the figures in docs/spark.md: --records 60000 --rounds 3)
"""
from __future__ import annotations

import argparse
import multiprocessing
import os
import sys
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks._common import default_out, save_results  # noqa: E402

MB = 1024 * 1024
# Ray starts its workers at niceness 15 (its worker_niceness setting), and Spark's executors are
# Ray workers whose Python workers inherit it; plain processes run at 0. On a busy machine that
# alone separates them, so the plain processes are measured at both.
RAY_WORKER_NICENESS = 15
DRIVERS = ("python", "spark", "python-nice15", "spark-nice0")
# Each Spark-driven row beside the plain-Python row at the same niceness.
PAIRS = (("spark", "python-nice15"), ("spark-nice0", "python"), ("spark", "python"))
PROCESS_TIMEOUT_S = 1800


def _throughput(rows: list[tuple]) -> dict:
    acked = [row for row in rows if row[8] == "ok"]
    if not acked:
        return {"records": 0, "mb_per_s": 0.0, "records_per_s": 0.0, "seconds": 0.0}
    seconds = max(row[5] for row in acked) - min(row[4] for row in rows)
    size = sum(row[3] for row in acked)
    # How far apart the producers started, and their MB/s each over its own time: separates what
    # the start of Spark's tasks costs from what a running producer does.
    producers = sorted({row[0] for row in rows})
    firsts = {p: min(row[4] for row in rows if row[0] == p) for p in producers}
    own_mb_per_s = []
    for p in producers:
        mine = [row for row in acked if row[0] == p]
        if mine:
            own_mb_per_s.append(sum(row[3] for row in mine) / MB / max(1e-9, max(row[5] for row in mine) - firsts[p]))
    return {"records": len(acked), "seconds": round(seconds, 3), "mb_per_s": round(size / MB / seconds, 3),
            "records_per_s": round(len(acked) / seconds, 1),
            "start_skew_s": round(max(firsts.values()) - min(firsts.values()), 3),
            "producer_mb_per_s": [round(v, 3) for v in own_mb_per_s]}


def _process_main(target, task, progress_name, queue, niceness) -> None:
    from orchestration.spark.jobs import run_producer, split_results
    os.nice(niceness)
    rows, _ = split_results(run_producer(target, task, progress_name))
    queue.put(rows)


def _set_process_niceness(niceness: int) -> None:
    """Every thread of this process at ``niceness`` (Linux keeps a niceness per thread, and Ray's
    own threads in a Spark worker were started before the task ran)."""
    for tid in os.listdir("/proc/self/task"):
        try:
            os.setpriority(os.PRIO_PROCESS, int(tid), niceness)
        except ProcessLookupError:  # a thread that ended meanwhile
            pass


def producer_at_niceness(niceness: int):
    """``jobs.run_producer`` with the Spark worker's threads at ``niceness`` for the task's
    duration, then back (Spark reuses its Python workers)."""
    from orchestration.spark.jobs import run_producer

    def runner(target, task, progress_name):
        before = os.getpriority(os.PRIO_PROCESS, 0)
        _set_process_niceness(niceness)
        try:
            yield from run_producer(target, task, progress_name)
        finally:
            _set_process_niceness(before)
    return runner


def can_lower_niceness() -> bool:
    return os.geteuid() == 0


def run_python(target, tasks, progress_name, niceness: int = 0) -> list[tuple]:
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    processes = [context.Process(target=_process_main, args=(target, task, progress_name, queue, niceness))
                 for task in tasks]
    for process in processes:
        process.start()
    rows, answered, deadline = [], 0, time.monotonic() + PROCESS_TIMEOUT_S
    while answered < len(processes):
        try:
            rows += queue.get(timeout=1)
            answered += 1
        except Exception:  # queue.Empty: see whether a producer process died instead
            failed = [p.exitcode for p in processes if p.exitcode not in (None, 0)]
            if failed or time.monotonic() > deadline:
                for process in processes:
                    process.kill()
                raise RuntimeError(f"producer processes failed (exit codes {failed}) or timed out")
    for process in processes:
        process.join(timeout=60)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=20000, help="records per run, split among the producers")
    parser.add_argument("--producers", type=int, default=2)
    parser.add_argument("--size", type=int, default=1024, help="bytes per record value")
    parser.add_argument("--partitions", type=int, default=3)
    parser.add_argument("--acks", default="1")
    parser.add_argument("--rounds", type=int, default=2, help="Spark and plain Python runs each, alternating")
    parser.add_argument("--out", default=default_out("spark_produce_throughput"))
    args = parser.parse_args()

    import ray

    from orchestration import Cluster
    from orchestration.chaos.runner import FAST_FAILOVER_CONFIG
    from orchestration.spark import jobs
    from orchestration.spark.session import RayTarget, SparkOnRay

    ray.init(address="local", num_cpus=2, namespace=f"raykafka-bench-{uuid.uuid4().hex[:8]}",
             include_dashboard=False, log_to_driver=False)
    results = {"records": args.records, "producers": args.producers, "size": args.size, "acks": args.acks,
               "partitions": args.partitions, "runs": []}
    with Cluster.start(brokers=3, config=FAST_FAILOVER_CONFIG) as cluster:
        spark = SparkOnRay.start("raykafka-bench")
        results["spark_startup_s"] = round(spark.startup_s, 2)
        print(f"Spark on Ray started in {spark.startup_s:.1f}s")
        target = RayTarget.of(cluster)
        progress_name = jobs.progress_actor_name(uuid.uuid4().hex[:8])
        # Held for the whole run: a named actor without a live handle is collected.
        progress = jobs.JobProgress.options(name=progress_name, namespace=cluster.namespace).remote()
        config = {"acks": args.acks, "linger.ms": "5", "batch.size": "65536"}
        try:
            for round_index in range(args.rounds):
                order = DRIVERS if round_index % 2 == 0 else tuple(reversed(DRIVERS))
                for driver in order:
                    if driver == "spark-nice0" and not can_lower_niceness():
                        continue
                    topic = f"bench-{driver}-{round_index}"
                    cluster.create_topic(topic, partitions=args.partitions, replication_factor=3,
                                         config={"min.insync.replicas": "1"})
                    share = args.records // args.producers
                    tasks = [jobs.ProducerTask(process=f"{topic}-p{i}", topic=topic, records=share, duration_s=None,
                                               rate_per_s=0.0, message_size=args.size, key_distributor="NO_KEY",
                                               partitions=args.partitions, config=config, seed=i)
                             for i in range(args.producers)]
                    started = time.monotonic()
                    if driver.startswith("spark"):
                        runner = producer_at_niceness(0) if driver == "spark-nice0" else jobs.run_producer
                        rows, _ = jobs.split_results(jobs.run_tasks(spark.spark, target, tasks, runner, progress_name))
                    else:
                        rows = run_python(target, tasks, progress_name, RAY_WORKER_NICENESS if
                                          driver == "python-nice15" else 0)
                    figures = {"driver": driver, "round": round_index, **_throughput(rows),
                               "wall_s": round(time.monotonic() - started, 2)}
                    results["runs"].append(figures)
                    print(f"  {driver:>6} round {round_index}: {figures['records']} records in "
                          f"{figures['seconds']:.2f}s"
                          f" = {figures['mb_per_s']:.2f} MB/s ({figures['records_per_s']:,.0f} records/s); "
                          f"job wall time {figures['wall_s']:.1f}s; producers started {figures['start_skew_s']:.2f}s "
                          f"apart; each producer's own MB/s {figures['producer_mb_per_s']}", flush=True)
        finally:
            ray.kill(progress)
            spark.stop()
    means = {}
    for driver in DRIVERS:
        runs = [r["mb_per_s"] for r in results["runs"] if r["driver"] == driver]
        means[driver] = round(sum(runs) / len(runs), 3) if runs else 0.0
    results["mb_per_s_mean"] = means
    print(f"\n{'driver':>14} {'MB/s (mean)':>12}")
    for driver in DRIVERS:
        print(f"{driver:>14} {means[driver]:>12.2f}")
    if not can_lower_niceness():
        print("spark-nice0 skipped: raising a Spark worker to niceness 0 needs root or CAP_SYS_NICE")
    for spark_driver, baseline in PAIRS:
        if not (means[spark_driver] and means[baseline]):
            continue
        ratio = means[spark_driver] / means[baseline]
        results[f"{spark_driver}_over_{baseline}"] = round(ratio, 3)
        print(f"{spark_driver} produce is {ratio * 100:.0f}% of {baseline}'s (target: within 20%)")
    save_results(args.out, results)
    ray.shutdown()


if __name__ == "__main__":
    main()
