"""Produce MB/s through raykafka's Python producer, optionally with py-spy profiles of every process.

In one run on a local Ray (2 CPUs) with a 3-broker cluster, ``--partitions`` per topic (1 unless
told): the driver's ``Producer`` sends ``--records`` records of ``--size`` bytes, round robin over
the partitions, to a topic at RF=1
acks=1, RF=3 acks=1 and RF=3 acks=all (min.insync.replicas=2), each to its own topic, MB/s from the
first send to the end of ``flush``. With ``--profile DIR`` each point is also sampled by py-spy
(the broker actors, the replica fetcher actors and this process), each profile written as
collapsed stacks (``<point>-<role>.txt``) with its top functions by own time printed and saved.
Prints a table and saves JSON; asserts nothing.

    python benchmarks/produce_throughput.py [--records 65536] [--size 1024] [--partitions 1]
        [--points 'RF=3 acks=all'] [--profile DIR]
"""
from __future__ import annotations

import argparse
import collections
import os
import signal
import subprocess
import sys
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks._common import default_out, save_results  # noqa: E402

MB = 1024 * 1024
POINTS = (("RF=1 acks=1", 1, "1"), ("RF=3 acks=1", 3, "1"), ("RF=3 acks=all", 3, "all"))
PY_SPY = os.path.join(os.path.dirname(sys.executable), "py-spy")
TOP_ENTRIES = 12
# Frames where a process waits rather than works (Ray's worker loop, the event loop's poll, a
# condition wait): profiles rank the other samples.
IDLE_FRAMES = ("Worker.main_loop ", "EpollSelector.select ", "Condition.wait ", "select ")


def produce(cluster, topic: str, records: int, size: int, acks: str, producer_config: dict,
            partitions: int = 1) -> dict:
    producer = cluster.producer({"acks": acks, **producer_config})
    value = b"x" * size
    started = time.perf_counter()
    futures = [producer.send(topic, value=value, partition=i % partitions) for i in range(records)]
    producer.flush(timeout=600)
    seconds = time.perf_counter() - started
    failed = sum(1 for future in futures if future.exception() is not None)
    producer.close()
    return {"records": records - failed, "failed": failed, "seconds": round(seconds, 3),
            "mb_per_s": round((records - failed) * size / MB / seconds, 2),
            "records_per_s": round((records - failed) / seconds)}


def actor_pids(cluster) -> dict[str, int]:
    """role name -> pid for every broker actor and the replica fetcher actors beside them
    (``broker-0``, ``fetcher-0``, ...): the fetchers are the ``ray::ReplicaFetcherActor``
    processes with a broker's parent (this cluster's raylet, not another Ray on the machine)."""
    import ray
    roles = {f"broker-{broker_id}": ray.get(cluster.broker(broker_id).ping.remote(), timeout=60)["pid"]
             for broker_id in cluster.broker_ids}
    parents = {_parent_pid(pid) for pid in roles.values()}
    fetchers = sorted(int(pid) for pid in os.listdir("/proc") if pid.isdigit()
                      and _title(int(pid)).startswith("ray::ReplicaFetcherActor") and _parent_pid(int(pid)) in parents)
    return roles | {f"fetcher-{index}": pid for index, pid in enumerate(fetchers)}


def cpu_seconds(pids) -> float:
    """User plus system CPU seconds the processes have used so far (from /proc; a process gone counts 0)."""
    ticks, total = os.sysconf("SC_CLK_TCK"), 0.0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as handle:
                fields = handle.read().rpartition(")")[2].split()
            total += (int(fields[11]) + int(fields[12])) / ticks
        except OSError:
            pass
    return total


def _parent_pid(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return int(handle.read().rpartition(")")[2].split()[1])
    except OSError:
        return -1


def _title(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return handle.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def start_profiles(directory: str, point: str, pids: dict[str, int]) -> list[tuple[str, subprocess.Popen]]:
    os.makedirs(directory, exist_ok=True)
    slug = point.replace(" ", "_").replace("=", "")
    started = []
    for role, pid in pids.items():
        path = os.path.join(directory, f"{slug}-{role}.txt")
        started.append((path, subprocess.Popen([PY_SPY, "record", "--pid", str(pid), "--format", "raw",
                                                "--rate", "200", "--nonblocking", "-o", path],
                                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)))
    return started


def stop_profiles(started: list[tuple[str, subprocess.Popen]]) -> dict[str, list]:
    tops = {}
    for path, process in started:
        process.send_signal(signal.SIGINT)  # py-spy writes its file on SIGINT
    for path, process in started:
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
        tops[os.path.basename(path)] = top_functions(path)
    return tops


def top_functions(path: str) -> list:
    """(function, share of busy samples as its own time, share including callees) from collapsed
    stacks; samples whose innermost frame waits (``IDLE_FRAMES``) are left out."""
    own: collections.Counter = collections.Counter()
    inclusive: collections.Counter = collections.Counter()
    total = 0
    if not os.path.exists(path):
        return []
    with open(path) as handle:
        for line in handle:
            stack, _, count = line.rstrip("\n").rpartition(" ")
            if not stack or not count.isdigit():
                continue
            frames = stack.split(";")
            if frames and frames[0].startswith(("process ", "thread ")):
                frames = [f for f in frames if not f.startswith(("process ", "thread "))]
            if not frames:
                continue
            if frames[-1].startswith(IDLE_FRAMES):
                continue
            samples = int(count)
            total += samples
            own[frames[-1]] += samples
            for frame in set(frames):
                inclusive[frame] += samples
    return [(frame, round(samples / total, 3), round(inclusive[frame] / total, 3))
            for frame, samples in own.most_common(TOP_ENTRIES)] if total else []


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=65536)
    parser.add_argument("--size", type=int, default=1024, help="bytes per record value")
    parser.add_argument("--partitions", type=int, default=1, help="partitions per topic, written round robin")
    parser.add_argument("--batch-size", default="262144", help="the producer's batch.size")
    parser.add_argument("--linger-ms", default="5", help="the producer's linger.ms")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="another producer setting (e.g. enable.idempotence=false)")
    parser.add_argument("--points", default="all", help="comma-separated point names, or all")
    parser.add_argument("--profile", default=None, help="directory for py-spy profiles (none without it)")
    parser.add_argument("--out", default=default_out("produce_throughput"))
    args = parser.parse_args()
    import ray

    from orchestration import Cluster
    from orchestration.admin.ray_runtime import start_local_ray
    producer_config = {"batch.size": args.batch_size, "linger.ms": args.linger_ms,
                       **dict(setting.split("=", 1) for setting in args.set)}
    start_local_ray(num_cpus=2, namespace=f"raykafka-produce-bench-{uuid.uuid4().hex[:8]}")
    results = {"records": args.records, "size": args.size, "partitions": args.partitions,
               "producer": producer_config, "points": []}
    wanted = None if args.points == "all" else set(args.points.split(","))
    try:
        with Cluster.start(brokers=3, config={"auto.leader.rebalance.enable": "false"}) as cluster:
            for name, rf, acks in POINTS:
                if wanted is not None and name not in wanted:
                    continue
                topic = f"bench-{name.replace(' ', '-').replace('=', '')}"
                cluster.create_topic(topic, partitions=args.partitions, replication_factor=rf,
                                     config={"min.insync.replicas": "2"} if rf > 1 else {})
                deadline = time.monotonic() + 60
                while (min(len(p.isr) for p in cluster.describe_topic(topic)) < rf
                       and time.monotonic() < deadline):
                    time.sleep(0.1)
                # A small warm-up: metadata, connections and the fetchers' first round.
                produce(cluster, topic, 256, args.size, acks, producer_config, args.partitions)
                profiles = []
                if args.profile:
                    pids = actor_pids(cluster) | {"client": os.getpid()}
                    profiles = start_profiles(args.profile, name, pids)
                    time.sleep(1.0)  # py-spy attaches
                pids = actor_pids(cluster)
                cpu_before = cpu_seconds(pids.values())
                row = {"point": name, "partitions": args.partitions,
                       "produce": produce(cluster, topic, args.records, args.size, acks, producer_config,
                                          args.partitions)}
                moved_gb = row["produce"]["records"] * args.size / 1e9
                row["broker_cpu_s_per_gb"] = round((cpu_seconds(pids.values()) - cpu_before) / moved_gb, 1)
                if profiles:
                    row["profiles"] = stop_profiles(profiles)
                results["points"].append(row)
                print(f"  {name:<14} produce {row['produce']['mb_per_s']:>7.2f} MB/s "
                      f"({row['produce']['records_per_s']:,} records/s, {row['produce']['failed']} failed, "
                      f"brokers and fetchers {row['broker_cpu_s_per_gb']} CPU s/GB)",
                      flush=True)
                for profile, top in row.get("profiles", {}).items():
                    print(f"    {profile}")
                    for frame, own, inclusive in top[:8]:
                        print(f"      {own:6.1%} own {inclusive:6.1%} incl  {frame}")
    finally:
        ray.shutdown()
    print(f"\n{'point':<14} {'produce MB/s':>13} {'records/s':>11} {'CPU s/GB':>9}")
    for row in results["points"]:
        print(f"{row['point']:<14} {row['produce']['mb_per_s']:>13.2f} {row['produce']['records_per_s']:>11,} "
              f"{row['broker_cpu_s_per_gb']:>9}")
    save_results(args.out, results)


if __name__ == "__main__":
    main()
