"""Disk use over a long produce, with retention on and off side by side in one run.

One broker, three topics written with the same records at the same paced rate through
confluent-kafka over raykafka's Kafka listener:
- ``kept``: ``retention.ms=-1`` and ``retention.bytes=-1``: nothing is ever deleted (what every
  raykafka log did before retention);
- ``by-size``: ``retention.bytes`` per partition;
- ``by-time``: ``retention.ms``, with ``segment.ms`` so that a slow partition still rolls.
Each second it samples, per topic, the bytes of its partition directories on the broker's disk and
the partitions' log start offsets (the low watermark a consumer sees). It keeps sampling after the
produce ends for longer than ``retention.ms``, so the time rule's last deletions show. It prints a
table, saves JSON and draws the disk use and the low watermarks as a picture; it asserts nothing.

    python benchmarks/retention_disk.py [--seconds 120] [--mb-per-s 8] [--out benchmarks/results/retention_disk.json]
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
import uuid

import ray

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks._common import default_out, save_results  # noqa: E402
from orchestration import Cluster  # noqa: E402

MIB = 1024 * 1024
PARTITIONS = 2
SEGMENT_BYTES = 4 * MIB
RETENTION_BYTES = 16 * MIB
RETENTION_MS = 30_000
SEGMENT_MS = 10_000
CHECK_INTERVAL_MS = 2_000
# The broker defaults a user would keep, but a retention check every two seconds so the figure
# shows the rule, not the default five-minute check interval.
CLUSTER_CONFIG = {"log.retention.check.interval.ms": str(CHECK_INTERVAL_MS)}
TOPICS = {
    "kept": {"retention.ms": "-1", "retention.bytes": "-1", "segment.bytes": str(SEGMENT_BYTES)},
    "by-size": {"retention.bytes": str(RETENTION_BYTES), "segment.bytes": str(SEGMENT_BYTES)},
    "by-time": {"retention.ms": str(RETENTION_MS), "segment.ms": str(SEGMENT_MS), "segment.bytes": str(SEGMENT_BYTES)},
}


def topic_bytes(log_dir: str, topic: str) -> int:
    """Bytes of every file in the topic's partition directories (segments, indexes, snapshots)."""
    total = 0
    for partition in range(PARTITIONS):
        directory = os.path.join(log_dir, f"{topic}-{partition}")
        try:
            names = os.listdir(directory)
        except FileNotFoundError:
            continue
        for name in names:
            try:
                total += os.path.getsize(os.path.join(directory, name))
            except FileNotFoundError:  # deleted by retention between listdir and stat
                pass
    return total


class Sampler(threading.Thread):
    """Once a second: each topic's bytes on disk and its partitions' summed low watermarks."""

    def __init__(self, bootstrap: str, log_dir: str, started: float) -> None:
        super().__init__(daemon=True)
        from confluent_kafka import Consumer
        self._consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"sampler-{uuid.uuid4().hex[:6]}"})
        self._log_dir = log_dir
        self._began = started
        self.samples: list[dict] = []
        self.stopping = threading.Event()

    def run(self) -> None:
        from confluent_kafka import TopicPartition
        while not self.stopping.is_set():
            sample = {"t_s": round(time.monotonic() - self._began, 2), "topics": {}}
            for topic in TOPICS:
                low = 0
                for partition in range(PARTITIONS):
                    low += self._consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=10)[0]
                sample["topics"][topic] = {"bytes": topic_bytes(self._log_dir, topic), "log_start_offsets": low}
            self.samples.append(sample)
            self.stopping.wait(1.0)
        self._consumer.close()


def produce_paced(bootstrap: str, seconds: float, mb_per_s: float, record_bytes: int) -> dict:
    """The same records to every topic, round-robin over the partitions, at ``mb_per_s`` per topic."""
    from confluent_kafka import Producer
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 20})
    value = b"r" * record_bytes
    per_tick = max(1, int(mb_per_s * MIB / record_bytes / 10))  # ten ticks a second
    failed: list = []
    delivered = [0]

    def report(error, _message):
        if error is None:
            delivered[0] += 1
        else:
            failed.append(str(error))
    started = time.monotonic()
    sent = 0
    tick = 0
    while time.monotonic() - started < seconds:
        for _ in range(per_tick):
            for topic in TOPICS:
                while True:
                    try:
                        producer.produce(topic, value=value, partition=sent % PARTITIONS, on_delivery=report)
                        break
                    except BufferError:
                        producer.poll(0.05)
            sent += 1
        tick += 1
        producer.poll(0)
        # poll(timeout) returns as soon as a delivery report is served, so it cannot pace.
        time.sleep(max(0.0, started + tick / 10 - time.monotonic()))
    left = producer.flush(120)
    return {"records_per_topic": sent, "delivered": delivered[0], "undelivered": left, "failed": failed[:5],
            "bytes_per_topic": sent * record_bytes, "seconds": round(time.monotonic() - started, 2)}


def draw(results: dict, path: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    samples = results["samples"]
    times = [s["t_s"] for s in samples]
    figure, (disk, starts) = plt.subplots(2, 1, figsize=(9, 7), sharex=True)
    for topic, settings in TOPICS.items():
        label = f"{topic} ({', '.join(f'{k}={v}' for k, v in settings.items() if k != 'segment.bytes')})"
        disk.plot(times, [s["topics"][topic]["bytes"] / MIB for s in samples], label=label)
        starts.plot(times, [s["topics"][topic]["log_start_offsets"] for s in samples], label=topic)
    for axis in (disk, starts):
        axis.axvline(results["produce"]["seconds"], color="grey", linestyle=":", linewidth=1)
        axis.grid(alpha=0.3)
    disk.set_ylabel("MiB on the broker's disk")
    disk.set_title(f"raykafka: disk use per topic under a paced produce of {results['mb_per_s']} MiB/s "
                   f"({PARTITIONS} partitions, segment.bytes={SEGMENT_BYTES // MIB} MiB)", fontsize=10)
    disk.legend(fontsize=8, loc="upper left")
    starts.set_ylabel("log start offsets (summed)")
    starts.set_xlabel("seconds since the produce began (dotted: produce ended)")
    starts.legend(fontsize=8, loc="upper left")
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
    print(f"saved {path}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=120)
    parser.add_argument("--mb-per-s", type=float, default=8, help="MiB per second written to each topic")
    parser.add_argument("--record-bytes", type=int, default=1024)
    parser.add_argument("--out", default=default_out("retention_disk"))
    args = parser.parse_args()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             namespace=f"raykafka-retention-disk-{os.getpid()}")
    results = {"mb_per_s": args.mb_per_s, "record_bytes": args.record_bytes, "partitions": PARTITIONS,
               "cluster_config": CLUSTER_CONFIG, "topics": TOPICS}
    try:
        with tempfile.TemporaryDirectory(prefix="raykafka-retention-disk-") as log_dir, \
                Cluster.start(brokers=1, log_dir=log_dir, config=CLUSTER_CONFIG) as cluster:
            for topic, config in TOPICS.items():
                cluster.create_topic(topic, partitions=PARTITIONS, replication_factor=1, config=config)
            bootstrap = cluster.bootstrap_servers
            started = time.monotonic()
            sampler = Sampler(bootstrap, cluster.broker_log_dir(cluster.broker_ids[0]), started)
            sampler.start()
            results["produce"] = produce_paced(bootstrap, args.seconds, args.mb_per_s, args.record_bytes)
            # After the produce: longer than retention.ms plus a check interval, so the time rule's
            # last deletions are drawn.
            time.sleep((RETENTION_MS + 3 * CHECK_INTERVAL_MS) / 1000)
            sampler.stopping.set()
            sampler.join(30)
            results["samples"] = sampler.samples
    finally:
        ray.shutdown()
    produced_mib = results["produce"]["bytes_per_topic"] / MIB
    print(f"\nproduced {produced_mib:.0f} MiB to each topic in {results['produce']['seconds']} s "
          f"({results['produce']['undelivered']} undelivered, failures: {results['produce']['failed'] or 'none'})")
    print(f"{'topic':>8} {'peak MiB':>9} {'final MiB':>10} {'final / produced':>17} {'log start offsets':>18}")
    summary = {}
    for topic in TOPICS:
        peak = max(s["topics"][topic]["bytes"] for s in results["samples"]) / MIB
        final = results["samples"][-1]["topics"][topic]
        summary[topic] = {"peak_mib": round(peak, 1), "final_mib": round(final["bytes"] / MIB, 1),
                          "final_over_produced": round(final["bytes"] / MIB / produced_mib, 3),
                          "log_start_offsets": final["log_start_offsets"]}
        print(f"{topic:>8} {peak:9.1f} {final['bytes'] / MIB:10.1f} {summary[topic]['final_over_produced']:17.3f} "
              f"{final['log_start_offsets']:18d}")
    results["summary"] = summary
    save_results(args.out, results)
    draw(results, os.path.splitext(args.out)[0] + ".png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
