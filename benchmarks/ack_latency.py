"""acks=all produce latency through raykafka's Python producer: one sender, one record at a time.

In one run on a local Ray (2 CPUs) with a 3-broker cluster: a one-partition topic at RF=1 and one
at RF=3 (min.insync.replicas=2); the driver's ``Producer`` (acks=all, linger.ms=0) sends
``--records`` records of ``--size`` bytes, each after the previous one was acknowledged, and the
time from ``send`` to the acknowledgement of each is recorded (the first ``--warmup`` are left out).
Prints p50, p99 and the mean per replication factor and saves JSON; asserts nothing. What the
replication round trip adds to an acknowledged write is the RF=3 figure less the RF=1 one.

    python benchmarks/ack_latency.py [--records 400] [--size 100] [--warmup 50] [--set KEY=VALUE]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks._common import default_out, save_results  # noqa: E402


def percentile(sorted_values: list[float], fraction: float) -> float:
    return sorted_values[min(len(sorted_values) - 1, int(len(sorted_values) * fraction))]


def measure(cluster, topic: str, records: int, size: int, warmup: int) -> dict:
    producer = cluster.producer({"acks": "all", "linger.ms": "0"})
    value = b"x" * size
    latencies_ms = []
    try:
        for _ in range(warmup + records):
            started = time.perf_counter()
            producer.send(topic, value=value, partition=0).result(timeout=30)
            latencies_ms.append((time.perf_counter() - started) * 1000)
    finally:
        producer.close()
    measured = sorted(latencies_ms[warmup:])
    return {"records": len(measured), "p50_ms": round(percentile(measured, 0.5), 2),
            "p99_ms": round(percentile(measured, 0.99), 2), "mean_ms": round(statistics.fmean(measured), 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=400)
    parser.add_argument("--size", type=int, default=100, help="bytes per record value")
    parser.add_argument("--warmup", type=int, default=50, help="records sent first and left out")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="a broker setting for the cluster (e.g. replica.fetch.wait.max.ms=10)")
    parser.add_argument("--out", default=default_out("ack_latency"))
    args = parser.parse_args()
    import ray

    from orchestration import Cluster
    from orchestration.admin.ray_runtime import start_local_ray
    broker_config = {"auto.leader.rebalance.enable": "false", **dict(s.split("=", 1) for s in args.set)}
    start_local_ray(num_cpus=2, namespace=f"raykafka-ack-latency-{uuid.uuid4().hex[:8]}")
    results = {"records": args.records, "size": args.size, "broker_config": broker_config, "points": []}
    try:
        with Cluster.start(brokers=3, config=broker_config) as cluster:
            for rf in (1, 3):
                topic = f"latency-rf{rf}"
                cluster.create_topic(topic, partitions=1, replication_factor=rf,
                                     config={"min.insync.replicas": "2"} if rf > 1 else {})
                deadline = time.monotonic() + 60
                while min(len(p.isr) for p in cluster.describe_topic(topic)) < rf and time.monotonic() < deadline:
                    time.sleep(0.1)
                row = {"rf": rf, **measure(cluster, topic, args.records, args.size, args.warmup)}
                results["points"].append(row)
                print(f"  RF={rf} acks=all  p50 {row['p50_ms']:6.2f} ms  p99 {row['p99_ms']:6.2f} ms  "
                      f"mean {row['mean_ms']:6.2f} ms", flush=True)
    finally:
        ray.shutdown()
    save_results(args.out, results)


if __name__ == "__main__":
    main()
