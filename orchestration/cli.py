"""The ``raykafka`` command line.

``raykafka demo`` starts a local cluster, creates a topic, produces keyed records, reads every one
back at the offset it was acknowledged with, and prints what happened.
"""
from __future__ import annotations

import argparse
import sys
import time


def _demo(args: argparse.Namespace) -> int:
    from orchestration import Cluster

    print(f"starting a local raykafka cluster with {args.brokers} brokers ...", flush=True)
    started = time.monotonic()
    with Cluster.start(brokers=args.brokers, log_dir=args.log_dir, num_cpus=args.num_cpus) as cluster:
        print(f"  up in {time.monotonic() - started:.1f}s, Ray namespace {cluster.namespace}, "
              f"logs in {cluster.log_dir}")
        cluster.create_topic(args.topic, partitions=args.partitions, replication_factor=args.replication_factor)
        print(f"created topic {args.topic!r}: {args.partitions} partitions, replication factor "
              f"{args.replication_factor}")

        producer = cluster.producer({"acks": args.acks, "linger.ms": "5"})
        sent_at = time.monotonic()
        futures = [(f"key-{i % 100}".encode(), f"value-{i}".encode(),
                    producer.send(args.topic, key=f"key-{i % 100}".encode(), value=f"value-{i}".encode()))
                   for i in range(args.records)]
        producer.flush()
        acknowledged = {}
        for key, value, future in futures:
            metadata = future.result(timeout=30)
            acknowledged[(metadata.partition, metadata.offset)] = (key, value)
        produce_s = time.monotonic() - sent_at
        print(f"produced {len(acknowledged)} records with acks={args.acks} in {produce_s:.2f}s "
              f"({len(acknowledged) / produce_s:,.0f} records/s)")

        consumer = cluster.consumer({"auto.offset.reset": "earliest"})
        consumer.assign([(args.topic, p) for p in range(args.partitions)])
        seen = {}
        deadline = time.monotonic() + 60
        while len(seen) < len(acknowledged) and time.monotonic() < deadline:
            for record in consumer.poll(timeout_ms=500):
                seen[(record.partition, record.offset)] = (record.key, record.value)
        missing = [k for k, v in acknowledged.items() if seen.get(k) != v]
        print(f"consumed {len(seen)} records; {len(missing)} acknowledged records missing or different")

        print(f"\n{'partition':>9} {'leader':>6} {'epoch':>5} {'replicas':>10} {'isr':>8} {'HW':>7} {'LEO':>7}")
        for p in cluster.describe_topic(args.topic):
            print(f"{p.partition:>9} {p.leader:>6} {p.leader_epoch:>5} {str(p.replicas):>10} "
                  f"{str(p.isr):>8} {p.high_watermark:>7} {p.log_end_offset:>7}")
        verdict = "OK: every acknowledged record was read back at its offset" if not missing else "FAILED"
        print(f"\n{verdict}")
        return 0 if not missing else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="raykafka", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    demo = commands.add_parser("demo", help="start a local cluster, produce and consume, print what happened")
    demo.add_argument("--brokers", type=int, default=3)
    demo.add_argument("--topic", default="demo")
    demo.add_argument("--partitions", type=int, default=3)
    demo.add_argument("--replication-factor", type=int, default=1)
    demo.add_argument("--records", type=int, default=3000)
    demo.add_argument("--acks", default="1")
    demo.add_argument("--log-dir", default=None, help="keep logs here (default: a temporary directory)")
    demo.add_argument("--num-cpus", type=int, default=None, help="CPUs for the local Ray it starts")
    demo.set_defaults(run=_demo)
    args = parser.parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
