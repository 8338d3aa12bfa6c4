"""Time from killing a broker (or the controller) to every partition having a live, serving leader.

Runs a 3-broker cluster and, for each trial, creates a 6-partition topic with replication factor 3,
kills the broker that leads partition 0 and measures until the controller reports a live leader for every partition and
that leader serves it. Three ways to lose a broker are measured side by side in one run:
- kill, no restart: Ray reports the actor dead; the controller fences it;
- kill, Ray restarts it: the broker comes back as a new incarnation (Kafka's "bounced broker");
- controlled shutdown: leaderships move before the broker stops (the planned path);
and the controller's own kill (Ray restarts it with a higher epoch). Prints a table and saves JSON;
asserts nothing.

    python benchmarks/failover_time.py [--trials 3] [--out benchmarks/results/failover_time.json]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

import ray

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks._common import default_out, save_results  # noqa: E402
from orchestration import Cluster  # noqa: E402
from orchestration.admin.wait import wait_until  # noqa: E402

TOPIC = "failover"
# Each trial uses a new topic, so every replica starts in the ISR whatever earlier trials did to it.
CONFIG = {"auto.leader.rebalance.enable": "false"}


def all_led(cluster: Cluster, dead: set[int]) -> bool:
    return all(p.leader >= 0 and p.leader not in dead and p.log_end_offset >= 0
               for p in cluster.describe_topic(TOPIC))


def trial(cluster: Cluster, mode: str) -> float:
    cluster.create_topic(TOPIC, partitions=6, replication_factor=3)
    victim = cluster.describe_topic(TOPIC)[0].leader
    started = time.monotonic()
    if mode == "kill, no restart":
        cluster.kill("broker", victim, restart=False)
        wait_until(lambda: all_led(cluster, {victim}), 120, "new leaders")
    elif mode == "kill, Ray restarts it":
        epochs = {p.partition: p.leader_epoch for p in cluster.describe_topic(TOPIC)}
        cluster.kill("broker", victim, restart=True)
        wait_until(lambda: all_led(cluster, set()) and cluster.describe_topic(TOPIC)[0].leader_epoch > epochs[0],
                   120, "new leaders after the bounce")
    elif mode == "controlled shutdown":
        cluster.controlled_shutdown(victim)
        wait_until(lambda: all_led(cluster, {victim}), 120, "new leaders")
    elif mode == "controller kill":
        epoch = cluster.controller_epoch()
        cluster.kill("controller")
        wait_until(lambda: cluster.controller_epoch() > epoch and all_led(cluster, set()), 120, "a new controller")
    elapsed = time.monotonic() - started
    if mode in ("kill, no restart", "controlled shutdown"):
        cluster.restart_broker(victim)
    cluster.delete_topic(TOPIC)
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--out", default=default_out("failover_time"))
    args = parser.parse_args()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, namespace=f"raykafka-failover-{os.getpid()}")
    results = {"trials": args.trials, "config": CONFIG, "rows": []}
    with tempfile.TemporaryDirectory(prefix="raykafka-failover-") as log_dir, \
            Cluster.start(brokers=3, log_dir=log_dir, config=CONFIG) as cluster:
        print(f"{'how the broker went':>24} {'median s':>9} {'min s':>7} {'max s':>7}")
        for mode in ("kill, no restart", "kill, Ray restarts it", "controlled shutdown", "controller kill"):
            times = [trial(cluster, mode) for _ in range(args.trials)]
            row = {"mode": mode, "seconds": times, "median_s": statistics.median(times)}
            results["rows"].append(row)
            print(f"{mode:>24} {row['median_s']:>9.2f} {min(times):>7.2f} {max(times):>7.2f}")
    ray.shutdown()
    save_results(args.out, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
