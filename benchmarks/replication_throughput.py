"""Replication throughput: follower catch-up beside consumer fetch, and acks=all beside acks=1.

In one run on a 3-broker cluster (1 KiB records):
- catch-up: a follower broker is stopped, a backlog is produced to the leader (acks=1), the
  follower is started again and timed until its log end offset reaches the leader's; beside it, a
  consumer (its own actor, like the fetcher) reads the same backlog from the leader;
- produce: the same number of records to a replication-factor-3 topic with acks=1 and acks=all.
Prints a table and saves JSON; asserts nothing.

    python benchmarks/replication_throughput.py [--megabytes 32] [--out benchmarks/results/replication_throughput.json]
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

import ray

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks._common import default_out, save_results  # noqa: E402
from orchestration import Cluster  # noqa: E402
from orchestration.admin.wait import wait_until  # noqa: E402
from orchestration.clients.broker_directory import BrokerDirectory  # noqa: E402
from orchestration.clients.consumer import Consumer  # noqa: E402

RECORD_BYTES = 1024
CONFIG = {"auto.leader.rebalance.enable": "false", "replica.fetch.wait.max.ms": "100"}


@ray.remote(num_cpus=0)
class ConsumeAll:
    def run(self, namespace: str, topic: str, end_offset: int) -> dict:
        consumer = Consumer(BrokerDirectory(namespace=namespace, bootstrap_broker_ids=[0, 1, 2]),
                            {"fetch.max.bytes": str(4 << 20), "max.partition.fetch.bytes": str(4 << 20),
                             "max.poll.records": "100000", "auto.offset.reset": "earliest"})
        consumer.assign([(topic, 0)])
        started, records = time.perf_counter(), 0
        while consumer.position((topic, 0)) < end_offset:
            records += len(consumer.poll(timeout_ms=1000))
        return {"records": records, "seconds": time.perf_counter() - started}


def produce(cluster: Cluster, topic: str, count: int, acks: str) -> float:
    producer = cluster.producer({"acks": acks, "linger.ms": "5", "batch.size": "65536"})
    value = b"v" * RECORD_BYTES
    started = time.perf_counter()
    futures = [producer.send(topic, value=value, partition=0) for _ in range(count)]
    producer.flush(timeout=600)
    elapsed = time.perf_counter() - started
    assert all(f.exception() is None for f in futures), "a send failed"
    producer.close()
    return elapsed


def leader_and_follower(cluster: Cluster, topic: str) -> tuple[int, int]:
    description = cluster.describe_topic(topic)[0]
    return description.leader, next(r for r in description.replicas if r != description.leader)


def log_end_offset_on(cluster: Cluster, broker_id: int, topic: str) -> int:
    for entry in ray.get(cluster.broker(broker_id).describe_partitions.remote(), timeout=30):
        if entry["topic"] == topic and entry["partition"] == 0:
            return entry["log_end_offset"]
    return -1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=int, default=32)
    parser.add_argument("--out", default=default_out("replication_throughput"))
    args = parser.parse_args()
    count = args.megabytes * 1024 * 1024 // RECORD_BYTES
    megabytes = count * RECORD_BYTES / 1e6
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, namespace=f"raykafka-repl-{os.getpid()}")
    results = {"records": count, "record_bytes": RECORD_BYTES}
    with tempfile.TemporaryDirectory(prefix="raykafka-repl-") as log_dir, \
            Cluster.start(brokers=3, log_dir=log_dir, config=CONFIG) as cluster:
        cluster.create_topic("backlog", partitions=1, replication_factor=2, config={"min.insync.replicas": "1"})
        leader, follower = leader_and_follower(cluster, "backlog")
        cluster.controlled_shutdown(follower)
        produce(cluster, "backlog", count, "1")
        end = log_end_offset_on(cluster, leader, "backlog")
        consumed = ray.get(ConsumeAll.remote().run.remote(cluster.namespace, "backlog", end), timeout=600)
        started = time.perf_counter()
        cluster.restart_broker(follower)
        first_progress = None
        deadline = time.perf_counter() + 600
        while time.perf_counter() < deadline:  # bounded: sample the follower's log end offset
            progress = log_end_offset_on(cluster, follower, "backlog")
            if progress > 0 and first_progress is None:
                first_progress = (time.perf_counter(), progress)
            if progress >= end:
                break
            time.sleep(0.02)
        finished = time.perf_counter()
        copied_mb = (end - first_progress[1]) * RECORD_BYTES / 1e6
        results["catch_up_mb_per_s"] = copied_mb / max(finished - first_progress[0], 1e-6)
        results["catch_up_including_restart_s"] = finished - started
        results["consumer_fetch_mb_per_s"] = megabytes / consumed["seconds"]
        print(f"backlog of {count} x {RECORD_BYTES} B ({megabytes:.1f} MB)")
        print(f"  follower catch-up : {results['catch_up_mb_per_s']:8.1f} MB/s from its first fetched batch "
              f"({finished - started:.2f}s including the broker's restart, registration and fetcher start)")
        print(f"  consumer fetch    : {results['consumer_fetch_mb_per_s']:8.1f} MB/s ({consumed['seconds']:.2f}s)")

        for acks in ("1", "all"):
            topic = f"produce-acks-{acks}"
            cluster.create_topic(topic, partitions=1, replication_factor=3, config={"min.insync.replicas": "2"})
            wait_until(lambda: len(cluster.describe_topic(topic)[0].isr) == 3, 60, "a full ISR")
            seconds = produce(cluster, topic, count, acks)
            results[f"produce_acks_{acks}_mb_per_s"] = megabytes / seconds
            results[f"produce_acks_{acks}_records_per_s"] = count / seconds
            print(f"  produce acks={acks:<3}  : {megabytes / seconds:8.1f} MB/s ({count / seconds:,.0f} records/s)")
    ray.shutdown()
    save_results(args.out, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
