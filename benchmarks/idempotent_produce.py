"""Produce throughput with the idempotent producer on and off, side by side in one run.

On a 3-broker cluster, topics of replication factor 3 (min.insync.replicas=2), acks=all, 1 KiB
records: rounds alternate between ``enable.idempotence=false`` and ``enable.idempotence=true``
(each round a fresh producer writing into a fresh topic), so both see the same machine at the same
time and a slow spell of a busy machine falls on both. The idempotent producer pipelines up to five
batches per partition (the leader's window of remembered batches), the other up to
``max.in.flight.requests.per.connection`` requests of any size. Prints each round and the median
per mode, and saves JSON; asserts nothing about speed.

    python benchmarks/idempotent_produce.py [--megabytes 16] [--rounds 3] [--partitions 1]
        [--out benchmarks/results/idempotent_produce.json]
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

RECORD_BYTES = 1024
CONFIG = {"auto.leader.rebalance.enable": "false", "replica.fetch.wait.max.ms": "100"}
PRODUCER_CONFIG = {"acks": "all", "linger.ms": "5", "batch.size": "65536"}
MODES = ("false", "true")  # enable.idempotence, in the order each round runs them


def produce_round(cluster: Cluster, topic: str, count: int, partitions: int, idempotence: str) -> float:
    """Seconds to send ``count`` records and have every one acknowledged."""
    producer = cluster.producer({**PRODUCER_CONFIG, "enable.idempotence": idempotence})
    assert (producer._idempotence is not None) == (idempotence == "true"), "the producer's mode is not as asked"
    value = b"v" * RECORD_BYTES
    started = time.perf_counter()
    futures = [producer.send(topic, value=value, partition=i % partitions) for i in range(count)]
    producer.flush(timeout=900)
    elapsed = time.perf_counter() - started
    failed = [f.exception() for f in futures if f.exception() is not None]
    assert not failed, f"{len(failed)} sends failed, the first with {failed[0]!r}"
    producer.close()
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=int, default=16, help="per round")
    parser.add_argument("--rounds", type=int, default=3, help="rounds per mode, alternating")
    parser.add_argument("--partitions", type=int, default=1)
    parser.add_argument("--out", default=default_out("idempotent_produce"))
    args = parser.parse_args()
    count = args.megabytes * 1024 * 1024 // RECORD_BYTES
    megabytes = count * RECORD_BYTES / 1e6
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, namespace=f"raykafka-idem-{os.getpid()}")
    rounds: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="raykafka-idem-") as log_dir, \
            Cluster.start(brokers=3, log_dir=log_dir, config=CONFIG) as cluster:
        print(f"{count} x {RECORD_BYTES} B ({megabytes:.1f} MB) per round, RF=3, acks=all, "
              f"{args.partitions} partition(s), {args.rounds} rounds per mode, alternating")
        for index in range(args.rounds):
            for idempotence in MODES:
                topic = f"idempotence-{idempotence}-{index}"
                cluster.create_topic(topic, partitions=args.partitions, replication_factor=3,
                                     config={"min.insync.replicas": "2"})
                wait_until(lambda: all(len(p.isr) == 3 for p in cluster.describe_topic(topic)), 60,
                           f"{topic}'s ISR to be full")
                seconds = produce_round(cluster, topic, count, args.partitions, idempotence)
                rounds.append({"round": index, "enable.idempotence": idempotence == "true", "seconds": seconds,
                               "mb_per_s": megabytes / seconds, "records_per_s": count / seconds})
                print(f"  round {index}  enable.idempotence={idempotence:<5}  {megabytes / seconds:8.2f} MB/s "
                      f"({count / seconds:,.0f} records/s, {seconds:.2f}s)")
    ray.shutdown()
    medians = {mode: statistics.median(r["mb_per_s"] for r in rounds if r["enable.idempotence"] == (mode == "true"))
               for mode in MODES}
    print(f"\nmedian MB/s: idempotence off {medians['false']:.2f}, on {medians['true']:.2f} "
          f"(on/off {medians['true'] / medians['false']:.2f})")
    save_results(args.out, {"records_per_round": count, "record_bytes": RECORD_BYTES, "partitions": args.partitions,
                            "producer_config": PRODUCER_CONFIG, "rounds": rounds,
                            "median_mb_per_s_idempotence_off": medians["false"],
                            "median_mb_per_s_idempotence_on": medians["true"],
                            "on_over_off": medians["true"] / medians["false"]})
    return 0


if __name__ == "__main__":
    sys.exit(main())
