"""Where an acks=all write's time goes at RF=3: each hop of the replication round trip, timed.

On a local Ray (2 CPUs), a 3-broker cluster and a one-partition RF=3 topic (min.insync.replicas=2),
the driver's ``Producer`` (acks=all, linger.ms=0) sends ``--records`` records of ``--size`` bytes,
one after the other. The brokers and fetchers run with the hop trace on (actors/hop_trace.py:
``RAYKAFKA_HOP_TRACE`` names a fresh directory, which Ray's workers inherit), so every request's
arrival at a broker, its answer leaving, and every fetcher call sent and answered is a line on
one monotonic clock. For each record the events of its round trip are picked out (the first of
each after the one before), per follower, and the time between each pair printed as the median
and p90 over the records, for the follower whose Fetch moved the high watermark last (the one the
write waited for). Asserts nothing.

    python benchmarks/ack_hops.py [--records 200] [--size 100] [--warmup 30] [--gap-ms 0] [--set KEY=VALUE]
"""
from __future__ import annotations

import argparse
import bisect
import glob
import os
import statistics
import sys
import tempfile
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks._common import default_out, save_results  # noqa: E402

# (label, owner, event): the round trip of one acks=all write, in order. Owner "L" is the leader
# broker, "F" a follower's broker or fetcher ("fetcher-F"), "C" the client.
CHAIN = (
    ("client send", "C", "send"),
    ("produce arrives at leader", "broker-L", "ProduceRequest in"),
    ("parked Fetch answered by leader", "broker-L", "FetchRequest replica-F out"),
    ("fetcher has the FetchResponse", "fetcher-F", "FetchRequest answered"),
    ("fetcher sends FollowerAppend", "fetcher-F", "FollowerAppendRequest sent"),
    ("follower broker gets it", "broker-F", "FollowerAppendRequest in"),
    ("follower broker has the records", "broker-F", "FollowerAppendRequest resolved"),
    ("follower broker answers", "broker-F", "FollowerAppendRequest out"),
    ("fetcher has the append answer", "fetcher-F", "FollowerAppendRequest answered"),
    ("fetcher sends the next Fetch", "fetcher-F", "FetchRequest sent"),
    ("leader gets the next Fetch", "broker-L", "FetchRequest replica-F in"),
    ("produce answered by leader", "broker-L", "ProduceRequest out"),
    ("client has the ack", "C", "ack"),
)


def read_trace(directory: str) -> dict[str, list[float]]:
    """event -> sorted times, from every process's file."""
    events: dict[str, list[float]] = {}
    for path in glob.glob(os.path.join(directory, "hops-*.txt")):
        with open(path) as lines:
            for line in lines:
                stamp, _, event = line.rstrip("\n").partition(" ")
                events.setdefault(event, []).append(float(stamp))
    for times in events.values():
        times.sort()
    return events


def first_after(times: list[float], moment: float) -> float | None:
    at = bisect.bisect_left(times, moment)
    return times[at] if at < len(times) else None


def round_trip(events: dict, leader: int, follower: int, sent: float, acked: float) -> list[float] | None:
    """The times of CHAIN's events for one write and one follower; None if one is missing."""
    times, moment = [], sent
    for _, owner, event in CHAIN:
        if owner == "C":
            moment = sent if event == "send" else acked
        else:
            name = f"{owner.replace('L', str(leader)).replace('F', str(follower))} " \
                   f"{event.replace('replica-F', f'replica-{follower}')}"
            found = first_after(events.get(name, []), moment)
            if found is None or found > acked:
                return None
            moment = found
        times.append(moment)
    return times


def breakdown(events: dict, leader: int, followers: list[int], writes: list[tuple[float, float]]) -> list[list[float]]:
    """Per write, the chain of the follower the write waited for (the later next Fetch)."""
    chains = []
    for sent, acked in writes:
        candidates = [c for c in (round_trip(events, leader, f, sent, acked) for f in followers) if c is not None]
        if candidates:
            chains.append(max(candidates, key=lambda c: c[-3]))
    return chains


def print_table(chains: list[list[float]]) -> list[dict]:
    rows = []
    print(f"  {len(chains)} writes; ms from the step before (median, p90)")
    for i in range(1, len(CHAIN)):
        deltas = sorted((c[i] - c[i - 1]) * 1000 for c in chains)
        row = {"hop": CHAIN[i][0], "p50_ms": round(statistics.median(deltas), 2),
               "p90_ms": round(deltas[int(len(deltas) * 0.9)], 2)}
        rows.append(row)
        print(f"  {row['hop']:<36} {row['p50_ms']:7.2f} {row['p90_ms']:7.2f}")
    total = sorted((c[-1] - c[0]) * 1000 for c in chains)
    print(f"  {'send to ack':<36} {statistics.median(total):7.2f} {total[int(len(total) * 0.9)]:7.2f}")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=200)
    parser.add_argument("--size", type=int, default=100, help="bytes per record value")
    parser.add_argument("--warmup", type=int, default=30, help="records sent first and left out")
    parser.add_argument("--gap-ms", type=float, default=0.0,
                        help="a pause before each send (the replicas' high-watermark round of the write "
                             "before then ends before the next write arrives)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="a broker setting for the cluster (e.g. replica.fetch.wait.max.ms=10)")
    parser.add_argument("--out", default=default_out("ack_hops"))
    args = parser.parse_args()
    trace_dir = tempfile.mkdtemp(prefix="raykafka-hops-")
    os.environ["RAYKAFKA_HOP_TRACE"] = trace_dir  # before Ray starts: its workers inherit it
    import ray

    from orchestration import Cluster
    from orchestration.admin.ray_runtime import start_local_ray
    broker_config = {"auto.leader.rebalance.enable": "false", **dict(s.split("=", 1) for s in args.set)}
    start_local_ray(num_cpus=2, namespace=f"raykafka-ack-hops-{uuid.uuid4().hex[:8]}")
    writes = []
    try:
        with Cluster.start(brokers=3, config=broker_config) as cluster:
            topic = "hops-rf3"
            cluster.create_topic(topic, partitions=1, replication_factor=3, config={"min.insync.replicas": "2"})
            deadline = time.monotonic() + 60
            while len(cluster.describe_topic(topic)[0].isr) < 3 and time.monotonic() < deadline:
                time.sleep(0.1)
            described = cluster.describe_topic(topic)[0]
            leader, followers = described.leader, [b for b in described.isr if b != described.leader]
            producer = cluster.producer({"acks": "all", "linger.ms": "0"})
            value = b"x" * args.size
            try:
                for _ in range(args.warmup + args.records):
                    time.sleep(args.gap_ms / 1000)  # the pacing asked for, not a wait for anything
                    sent = time.monotonic()
                    producer.send(topic, value=value, partition=0).result(timeout=30)
                    writes.append((sent, time.monotonic()))
            finally:
                producer.close()
    finally:
        ray.shutdown()
    chains = breakdown(read_trace(trace_dir), leader, followers, writes[args.warmup:])
    print(f"RF=3 acks=all, leader broker {leader}, followers {followers}, {args.gap_ms} ms before each send")
    rows = print_table(chains)
    save_results(args.out, {"records": args.records, "size": args.size, "gap_ms": args.gap_ms,
                            "broker_config": broker_config, "writes_traced": len(chains), "hops": rows})


if __name__ == "__main__":
    main()
