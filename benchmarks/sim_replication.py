"""The acks=all replication round trip, simulated: messages, bytes, hops and milliseconds per
acknowledged batch at 1, 8 and 64 partitions (orchestration/simulation/replication_model.py). No
Ray: the shipped drivers run over the deterministic simulator with a fixed latency per message, so
a design change can be judged here before it is measured on Ray. Prints a table, saves JSON and a
chart; asserts nothing.

    python benchmarks/sim_replication.py [--partitions 1,8,64] [--message-latency-ms 0.3]
        [--local-latency-ms MS] [--replica-fetch-wait-max-ms 500] [--replica-fetch-min-bytes 1]
        [--num-replica-fetchers 1] [--max-in-flight 1] [--batches 5] [--record-bytes 1024]
        [--records-per-batch 1] [--compare] [--out benchmarks/results/sim_replication.json]

Two producers per partition count: ``idle`` (each round sent to an idle cluster, every follower's
fetch parked at its leader) and ``back-to-back`` (the next request leaves as the last is answered).
``--compare`` adds the designs of ``COMPARED`` at every partition count. Columns: messages caused
by the produce requests, by type (requests and answers), other types, those to or from the
controller (ctrl; also counted in their type's column), all messages sent while the
run measured (timers' included), pickled bytes, hops on the critical path (mean, max) and
simulated milliseconds from send to answer (mean, max).
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks._common import default_out, save_results  # noqa: E402
from orchestration.simulation.replication_model import (  # noqa: E402
    ReplicationDesign, run_replication_model, summary,
)

# Rows of the table: (heading, the message types summed into it).
COLUMNS = (("Produce", ("ProduceRequest request", "ProduceResponse response")),
           ("Fetch req", ("FetchRequest request",)), ("Fetch resp", ("FetchResponse response",)),
           ("Append", ("FollowerAppendRequest request", "FollowerAppendResponse response")))
# Designs the model can express by its parameters, beside today's (``--compare``).
# Each: (its short label, what it models, the design's changed fields).
COMPARED = (
    ("Kafka's rule", "raykafka.replica.high.watermark.linger.ms=0: a follower's fetch is answered as soon as the "
     "high watermark rose above the one it was last sent, records or not", {"high_watermark_linger_ms": 0}),
    ("local append free", "the follower's append runs in the fetcher's own process: the fetcher's calls to its "
     "own broker cost nothing", {"local_latency_ms": 0}),
    ("no early answer", "the leader never answers a parked follower fetch before replica.fetch.wait.max.ms "
     "(replica.fetch.min.bytes=1 MiB)", {"replica_fetch_min_bytes": 1 << 20}),
    ("4 fetchers", "num.replica.fetchers=4: a leader's partitions split over four fetchers per follower",
     {"num_replica_fetchers": 4}),
)
PRODUCERS = (("idle", True), ("back-to-back", False))


def _row(label: str, result: dict) -> str:
    by_type = result["by_type_per_batch"]
    cells = [f"{sum(by_type.get(t, 0) for t in types):>11.2f}" for _, types in COLUMNS]
    named = {t for _, types in COLUMNS for t in types}
    other = sum(v for t, v in by_type.items() if t not in named)
    return (f"{label:<32}{result['partitions']:>4}{result['messages_per_batch']:>7.2f}" + "".join(cells)
            + f"{other:>7.2f}{result['controller_messages_per_batch']:>6.2f}{result['all_messages_per_batch']:>7.2f}{result['bytes_per_batch']:>8}"
            + f"{result['hops_to_ack']:>6.1f}{result['hops_to_ack_max']:>5}"
            + f"{result['ms_to_ack_mean']:>9.2f}{result['ms_to_ack_max']:>8.2f}")


def _header() -> str:
    return (f"{'producer, design':<32}{'p':>4}{'msgs':>7}" + "".join(f"{h:>11}" for h, _ in COLUMNS)
            + f"{'other':>7}{'ctrl':>6}{'all':>7}{'bytes':>8}{'hops':>6}{'max':>5}{'ms mean':>9}{'ms max':>8}")


def _commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              cwd=os.path.dirname(os.path.abspath(__file__)), check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def draw(runs: list[dict], path: str) -> None:
    """Messages per acknowledged batch by type, and hops to the answer, per partition count."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    base = [r for r in runs if r["label"] in dict(PRODUCERS)]
    figure, (messages, hops) = plt.subplots(1, 2, figsize=(11, 4))
    labels = [f"p={r['summary']['partitions']}\n{r['label']}" for r in base]
    bottom = [0.0] * len(base)
    for heading, types in COLUMNS:
        heights = [sum(r["summary"]["by_type_per_batch"].get(t, 0) for t in types) for r in base]
        messages.bar(labels, heights, bottom=bottom, label=heading)
        bottom = [b + h for b, h in zip(bottom, heights)]
    messages.set_title("messages per acknowledged batch")
    messages.legend()
    hops.bar(labels, [r["summary"]["hops_to_ack"] for r in base], color="tab:gray")
    hops.set_title("hops from send to acks=all answer (mean)")
    for axis in (messages, hops):
        axis.tick_params(axis="x", labelsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    print(f"saved {path}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", default="1,8,64")
    parser.add_argument("--message-latency-ms", type=float, default=ReplicationDesign.message_latency_ms)
    parser.add_argument("--local-latency-ms", type=float, default=None)
    parser.add_argument("--replica-fetch-wait-max-ms", type=int, default=ReplicationDesign.replica_fetch_wait_max_ms)
    parser.add_argument("--replica-fetch-min-bytes", type=int, default=ReplicationDesign.replica_fetch_min_bytes)
    parser.add_argument("--num-replica-fetchers", type=int, default=ReplicationDesign.num_replica_fetchers)
    parser.add_argument("--max-in-flight", type=int, default=ReplicationDesign.max_in_flight)
    parser.add_argument("--high-watermark-linger-ms", type=int, default=None,
                        help="raykafka.replica.high.watermark.linger.ms (default: the broker's)")
    parser.add_argument("--batches", type=int, default=ReplicationDesign.batches)
    parser.add_argument("--records-per-batch", type=int, default=ReplicationDesign.records_per_batch)
    parser.add_argument("--record-bytes", type=int, default=ReplicationDesign.record_bytes)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--compare", action="store_true", help="also run the designs of COMPARED")
    parser.add_argument("--out", default=default_out("sim_replication"))
    args = parser.parse_args()
    design = ReplicationDesign(
        message_latency_ms=args.message_latency_ms, local_latency_ms=args.local_latency_ms,
        replica_fetch_wait_max_ms=args.replica_fetch_wait_max_ms,
        replica_fetch_min_bytes=args.replica_fetch_min_bytes, num_replica_fetchers=args.num_replica_fetchers,
        high_watermark_linger_ms=args.high_watermark_linger_ms,
        max_in_flight=args.max_in_flight, batches=args.batches, records_per_batch=args.records_per_batch,
        record_bytes=args.record_bytes, seed=args.seed)
    partition_counts = [int(p) for p in args.partitions.split(",")]
    designs = [("today", {})] + ([(name, changes) for name, _, changes in COMPARED] if args.compare else [])
    plan = [(label if name == "today" else f"{label}, {name}",
             dataclasses.replace(design, partitions=p, idle_between_batches=idle, **changes))
            for name, changes in designs for p in partition_counts for label, idle in PRODUCERS]
    print(f"RF=3, min.insync.replicas=2, acks=all, 3 brokers; {design.message_latency_ms} ms per message"
          f" (fetcher<->own broker {design.local_latency_ms if design.local_latency_ms is not None else 'the same'}),"
          f" replica.fetch.wait.max.ms={design.replica_fetch_wait_max_ms}; per acknowledged batch:")
    if args.compare:
        for name, what, _ in COMPARED:
            print(f"  {name}: {what}")
    print()
    print(_header())
    runs = []
    for label, run_design in plan:
        figures = run_replication_model(run_design)
        result = summary(figures)
        print(_row(label, result), flush=True)
        runs.append({"label": label, "summary": result, **{k: v for k, v in figures.items() if k != "acks"}})
    print("\ncritical paths (send to answer), by how many acknowledgements took them:")
    for run in runs:
        for path, count in run["ack_chains"].items():
            short = path.replace("Follower", "").replace("Request", "Req").replace("Response", "Resp")
            print(f"  {run['label']}, p={run['summary']['partitions']}: {count} x {path.count(' > ') + 1} hops: {short}")
    results = {"commit": _commit(), "command": "python " + " ".join(sys.argv), "runs": runs}
    save_results(args.out, results)
    draw(runs, os.path.splitext(args.out)[0] + ".png")
    if os.environ.get("SIM_REPLICATION_JSON"):
        print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
