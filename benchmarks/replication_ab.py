"""A broker setting's values side by side on replicated writes, alternated, with the run-to-run spread.

In one run on a local Ray (2 CPUs): for each of ``--rounds`` rounds, and for each value of the
``--compare KEY=V1,V2[,...]`` broker setting (the order reversed every other round, so that a
machine growing busier or quieter weighs on every value alike), a fresh 3-broker cluster with the
throughput benchmark's settings (``benchmarks/throughput.py``'s ``CLUSTER_CONFIG``, plus ``--set``)
and that value; in it, for each partition count, a topic at RF=3 (``min.insync.replicas`` 2)
written after a first acks=all write to each partition (every follower fetching), then each
client (``confluent``: confluent-kafka over the Kafka listener, the throughput benchmark's
settings; ``python``: raykafka's Python producer) produces ``--megabytes`` of 1 KiB records with
acks=all. Per point it records MB/s and the broker side's CPU seconds per GB (brokers and replica
fetchers, from /proc, as the throughput benchmark does).

It prints, per client, partition count and value, the median MB/s and CPU s/GB over the rounds
with their spread (min-max), and each value's median ÷ the first value's: a difference smaller
than the spread is no difference. It saves JSON; it asserts nothing about speed.

    python benchmarks/replication_ab.py [--compare raykafka.replica.high.watermark.linger.ms=0,50]
        [--rounds 3] [--partitions 1,8,64] [--clients confluent,python] [--megabytes 24] [--set KEY=VALUE]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import uuid

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from benchmarks._common import default_out, save_results  # noqa: E402

RECORD_BYTES = 1024
GB = 1e9
DEFAULT_COMPARE = "raykafka.replica.high.watermark.linger.ms=0,50"


def parse_compare(text: str) -> tuple[str, list[str]]:
    """``KEY=V1,V2`` -> (KEY, [V1, V2]); at least two values, no repeats."""
    key, sep, values = text.partition("=")
    values_list = [v.strip() for v in values.split(",") if v.strip()]
    if not sep or not key.strip() or len(values_list) < 2 or len(set(values_list)) != len(values_list):
        raise ValueError(f"--compare wants KEY=V1,V2[,...] with distinct values, got {text!r}")
    return key.strip(), values_list


def round_order(values: list[str], round_index: int) -> list[str]:
    """The values in the order a round runs them: as given, then reversed, alternately."""
    return list(values) if round_index % 2 == 0 else list(reversed(values))


def summarize(samples: list[float]) -> dict:
    """Median and spread of a point's samples over the rounds."""
    median = statistics.median(samples)
    return {"median": median, "min": min(samples), "max": max(samples),
            "spread": (max(samples) - min(samples)) / median if median else 0.0, "samples": samples}


def comparison(results: list[dict], values: list[str]) -> list[dict]:
    """Per (client, partitions, value): the summaries of MB/s and CPU s/GB, and the median MB/s ÷
    the first value's."""
    rows = []
    keys = sorted({(r["client"], r["partitions"]) for r in results})
    for client, partitions in keys:
        base = None
        for value in values:
            mine = [r for r in results if (r["client"], r["partitions"], r["value"]) == (client, partitions, value)]
            if not mine:
                continue
            rate = summarize([r["mb_per_s"] for r in mine])
            cpu = summarize([r["cpu_s_per_gb"] for r in mine])
            base = rate["median"] if base is None else base
            rows.append({"client": client, "partitions": partitions, "value": value, "mb_per_s": rate,
                         "cpu_s_per_gb": cpu, "ratio_to_first": rate["median"] / base if base else 0.0})
    return rows


def format_table(key: str, rows: list[dict]) -> list[str]:
    lines = [f"{'client':<10} {'p':>3} {key + ' =':>44} {'MB/s':>7} {'spread':>14} {'÷ first':>8} {'CPU s/GB':>9} "
             f"{'spread':>14}"]
    for row in rows:
        rate, cpu = row["mb_per_s"], row["cpu_s_per_gb"]
        lines.append(f"{row['client']:<10} {row['partitions']:>3} {row['value']:>44} {rate['median']:>7.1f} "
                     f"{rate['min']:>6.1f}-{rate['max']:<7.1f} {row['ratio_to_first']:>8.2f} {cpu['median']:>9.1f} "
                     f"{cpu['min']:>6.1f}-{cpu['max']:<7.1f}")
    return lines


def measure_cluster(config: dict, partitions_list: list[int], clients: list[str], records: int) -> list[dict]:
    """One cluster with ``config``: every (partitions, client) point once."""
    from benchmarks import _python_api as api
    from benchmarks import _wire as wire
    from benchmarks._probe import BrokerProbe, raykafka_broker_pids
    from orchestration import Cluster
    measured = []
    with Cluster.start(brokers=3, config=config) as cluster:
        for partitions in partitions_list:
            topic = f"ab-p{partitions}-{uuid.uuid4().hex[:6]}"
            api.create_topic(cluster, topic, partitions, 3)
            wire.first_acknowledged_writes(cluster.bootstrap_servers, topic, partitions)
            for client in clients:
                api.wait_replicated(cluster, topic)
                with BrokerProbe(raykafka_broker_pids) as probe:
                    if client == "confluent":
                        figures = wire.produce(cluster.bootstrap_servers, topic, partitions, records, RECORD_BYTES,
                                               "all", [0])
                    else:
                        figures = api.produce(cluster, topic, partitions, records, RECORD_BYTES, "all", [0])
                if figures.get("failed"):
                    raise RuntimeError(f"{client} p={partitions}: {figures['failed']} records not acknowledged")
                moved = figures["records"] * RECORD_BYTES
                measured.append({"client": client, "partitions": partitions, "records": figures["records"],
                                 "seconds": figures["seconds"], "mb_per_s": moved / 1e6 / figures["seconds"],
                                 "cpu_s_per_gb": probe.cpu_seconds / (moved / GB)})
            cluster.delete_topic(topic)
    return measured


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--compare", default=DEFAULT_COMPARE, metavar="KEY=V1,V2",
                        help=f"the broker setting and its values (default {DEFAULT_COMPARE})")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--partitions", default="1,8,64")
    parser.add_argument("--clients", default="confluent,python")
    parser.add_argument("--megabytes", type=float, default=24, help="MiB each point produces")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="another broker setting")
    parser.add_argument("--out", default=default_out("replication_ab"))
    args = parser.parse_args(argv)
    key, values = parse_compare(args.compare)
    partitions_list = [int(p) for p in args.partitions.split(",")]
    clients = [c.strip() for c in args.clients.split(",")]
    unknown = set(clients) - {"confluent", "python"}
    if unknown:
        parser.error(f"unknown clients {sorted(unknown)}; clients are confluent, python")
    records = int(args.megabytes * 1024 * 1024 / RECORD_BYTES)

    import ray

    from benchmarks.throughput import CLUSTER_CONFIG
    from orchestration.admin.ray_runtime import start_local_ray
    base_config = {**CLUSTER_CONFIG, **dict(s.split("=", 1) for s in args.set)}
    os.environ["PYTHONPATH"] = os.pathsep.join([ROOT] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep)
                                                         if p])
    start_local_ray(num_cpus=2, namespace=f"raykafka-ab-{uuid.uuid4().hex[:8]}")
    started = time.time()
    results: list[dict] = []
    try:
        for round_index in range(args.rounds):
            for value in round_order(values, round_index):
                print(f"round {round_index + 1}/{args.rounds}: {key}={value}", flush=True)
                for row in measure_cluster({**base_config, key: value}, partitions_list, clients, records):
                    results.append({"round": round_index, "value": value, **row})
                    print(f"  {row['client']:<10} p={row['partitions']:<3} {row['mb_per_s']:7.1f} MB/s "
                          f"{row['cpu_s_per_gb']:6.1f} CPU s/GB", flush=True)
    finally:
        ray.shutdown()
    rows = comparison(results, values)
    print()
    for line in format_table(key, rows):
        print(line)
    saved = {"command": " ".join(["benchmarks/replication_ab.py"] + (argv if argv is not None else sys.argv[1:])),
             "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
             "duration_s": round(time.time() - started, 1), "key": key, "values": values, "rounds": args.rounds,
             "megabytes_per_point": args.megabytes, "record_bytes": RECORD_BYTES,
             "cluster_config": base_config, "machine": {"cpus": os.cpu_count(), "ray": ray.__version__},
             "results": results, "comparison": rows}
    save_results(args.out, saved)
    return saved


if __name__ == "__main__":
    main()
