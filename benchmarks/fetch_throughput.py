"""Consumer fetch throughput from one broker, beside Ray's raw transfer of the same payload size.

For 1 KiB records and several ``fetch.max.bytes``, a client actor measures, in one run:
- fetch: Fetch requests to the broker actor, bytes only (what the wire carries);
- poll: the consumer's ``poll``, records decoded (what an application gets);
- raw: the same client actor calling a payload actor that returns a ready ``bytes`` object of
  ``fetch.max.bytes`` (Ray's actor-to-actor transfer, the ceiling for a fetch of that size).
It prints a table with the fetch/raw ratio and saves the figures as JSON. It asserts nothing.

    python benchmarks/fetch_throughput.py [--megabytes 64] [--seconds 3] [--out benchmarks/results/fetch_throughput.json]
"""
from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time

import ray

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from actors.core.messages.fetch import FetchPartition, FetchRequest, FetchTopic  # noqa: E402
from benchmarks._common import default_out, save_results  # noqa: E402
from orchestration import Cluster  # noqa: E402
from orchestration.clients.broker_directory import BrokerDirectory  # noqa: E402
from orchestration.clients.consumer import Consumer  # noqa: E402

RECORD_BYTES = 1024
FETCH_MAX_BYTES = [64 * 1024, 256 * 1024, 1024 * 1024, 4 * 1024 * 1024]


@ray.remote(num_cpus=0)
class PayloadActor:
    def __init__(self) -> None:
        self._payloads: dict[int, bytes] = {}

    def payload(self, size: int) -> bytes:
        if size not in self._payloads:
            self._payloads[size] = os.urandom(size)
        return self._payloads[size]


@ray.remote(num_cpus=0)
class BenchClient:
    def __init__(self, namespace: str, topic: str, end_offset: int) -> None:
        self.directory = BrokerDirectory(namespace=namespace, bootstrap_broker_ids=[0])
        self.topic = topic
        self.end_offset = end_offset

    def fetch(self, max_bytes: int, seconds: float) -> dict:
        broker = self.directory.broker(self.directory.leader_for(self.topic, 0)[0])
        offset, moved, calls = 0, 0, 0
        started = time.perf_counter()
        while time.perf_counter() - started < seconds:
            request = FetchRequest(max_wait_ms=0, min_bytes=1, max_bytes=max_bytes, topics=(FetchTopic(
                topic=self.topic, partitions=(FetchPartition(partition=0, fetch_offset=offset,
                                                             partition_max_bytes=max_bytes),)),))
            data = ray.get(broker.handle_fetch.remote(request)).responses[0].partitions[0]
            moved += len(data.records)
            calls += 1
            offset = _next_offset(data.records, offset)
            if offset >= self.end_offset:
                offset = 0
        elapsed = time.perf_counter() - started
        return {"bytes": moved, "seconds": elapsed, "calls": calls}

    def poll(self, max_bytes: int, seconds: float) -> dict:
        consumer = Consumer(self.directory, {"fetch.max.bytes": str(max_bytes),
                                             "max.partition.fetch.bytes": str(max_bytes),
                                             "max.poll.records": "100000", "fetch.max.wait.ms": "0"})
        consumer.assign([(self.topic, 0)])
        consumer.seek((self.topic, 0), 0)
        records, moved = 0, 0
        started = time.perf_counter()
        while time.perf_counter() - started < seconds:
            batch = consumer.poll(timeout_ms=1000)
            records += len(batch)
            moved += sum(len(r.value) for r in batch)
            if consumer.position((self.topic, 0)) >= self.end_offset:
                consumer.seek((self.topic, 0), 0)
        elapsed = time.perf_counter() - started
        consumer.close()
        return {"records": records, "value_bytes": moved, "seconds": elapsed}

    def raw(self, payload_actor, size: int, seconds: float) -> dict:
        ray.get(payload_actor.payload.remote(size))  # make it once, outside the timing
        moved, calls = 0, 0
        started = time.perf_counter()
        while time.perf_counter() - started < seconds:
            moved += len(ray.get(payload_actor.payload.remote(size)))
            calls += 1
        return {"bytes": moved, "seconds": time.perf_counter() - started, "calls": calls}


def _next_offset(records, offset: int) -> int:
    from orchestration.clients.records import next_offset_after
    return next_offset_after(records, offset) if len(records) else offset


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=int, default=64, help="data to produce first (MiB)")
    parser.add_argument("--seconds", type=float, default=3.0, help="per measurement")
    parser.add_argument("--out", default=default_out("fetch_throughput"))
    args = parser.parse_args()

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, namespace=f"raykafka-bench-{os.getpid()}")
    results = {"machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "ray": ray.__version__},
               "record_bytes": RECORD_BYTES, "rows": []}
    with tempfile.TemporaryDirectory(prefix="raykafka-bench-") as log_dir, \
            Cluster.start(brokers=1, log_dir=log_dir) as cluster:
        cluster.create_topic("bench", partitions=1, replication_factor=1)
        producer = cluster.producer({"acks": "1", "linger.ms": "5", "batch.size": "16384"})
        count = args.megabytes * 1024 * 1024 // RECORD_BYTES
        value = b"v" * RECORD_BYTES
        started = time.perf_counter()
        for i in range(count):
            producer.send("bench", value=value, partition=0)
        producer.flush(timeout=600)
        produce_s = time.perf_counter() - started
        results["produce"] = {"records": count, "seconds": produce_s,
                              "mb_per_s": count * RECORD_BYTES / produce_s / 1e6}
        print(f"produced {count} x {RECORD_BYTES} B records in {produce_s:.1f}s "
              f"({results['produce']['mb_per_s']:.1f} MB/s, acks=1, batch.size=16384)")

        client = BenchClient.remote(cluster.namespace, "bench", count)
        payload = PayloadActor.remote()
        print(f"\n{'fetch.max.bytes':>15} {'fetch MB/s':>11} {'poll MB/s':>10} {'poll rec/s':>11} "
              f"{'raw MB/s':>9} {'fetch/raw':>9}")
        for max_bytes in FETCH_MAX_BYTES:
            fetch = ray.get(client.fetch.remote(max_bytes, args.seconds))
            poll = ray.get(client.poll.remote(max_bytes, args.seconds))
            raw = ray.get(client.raw.remote(payload, max_bytes, args.seconds))
            row = {
                "fetch_max_bytes": max_bytes,
                "fetch_mb_per_s": fetch["bytes"] / fetch["seconds"] / 1e6,
                "fetch_calls_per_s": fetch["calls"] / fetch["seconds"],
                "poll_mb_per_s": poll["value_bytes"] / poll["seconds"] / 1e6,
                "poll_records_per_s": poll["records"] / poll["seconds"],
                "raw_mb_per_s": raw["bytes"] / raw["seconds"] / 1e6,
                "raw_calls_per_s": raw["calls"] / raw["seconds"],
            }
            row["fetch_to_raw_ratio"] = row["fetch_mb_per_s"] / row["raw_mb_per_s"]
            results["rows"].append(row)
            print(f"{max_bytes:>15} {row['fetch_mb_per_s']:>11.1f} {row['poll_mb_per_s']:>10.1f} "
                  f"{row['poll_records_per_s']:>11,.0f} {row['raw_mb_per_s']:>9.1f} {row['fetch_to_raw_ratio']:>9.2f}")
    ray.shutdown()
    save_results(args.out, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
