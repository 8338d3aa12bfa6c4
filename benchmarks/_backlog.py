"""``throughput.py --backlog``: the broker side's memory while a large backlog is produced and read.

One topic (RF=1) on a 3-broker cluster gets GIB GiB of records through one client (acks=1), and
the same client then reads all of it back from the beginning. The brokers' and fetchers' summed
resident memory is sampled throughout; the run reports it before the produce, at its peak during
each phase and at the end, and draws it over time (``throughput-backlog.png``). Kafka's broker
keeps a backlog on disk, not in its heap, so the curve should stay flat.
"""
from __future__ import annotations

import os
import time

from benchmarks import _python_api as api
from benchmarks import _report as report
from benchmarks import _wire as wire
from benchmarks._probe import RSS_KINDS, BrokerProbe, raykafka_broker_pids
from benchmarks._profiles import parse_size

MB = 1e6
GIB = 1024 ** 3


def _first(text: str | None, convert, default):
    return convert(text.split(",")[0]) if text else default


def run_backlog(args, *, out_dir: str, start_ray, command: str) -> dict:
    import ray

    from orchestration import Cluster
    from orchestration.progress import StepProgress
    progress = not args.no_progress
    partitions = _first(args.partitions, int, 1)
    size = _first(args.sizes, parse_size, 1024)
    client = _first(args.clients, str, "python")
    records = int(args.backlog * GIB) // size
    owns_ray = start_ray()
    phases, figures = [], {}
    try:
        with Cluster.start(brokers=3, config={"auto.leader.rebalance.enable": "false"}) as cluster:
            topic = "bench-backlog"
            api.create_topic(cluster, topic, partitions, 1)
            count = [0]

            def tick() -> None:
                rss = probe.rss_series[-1][1] if probe.rss_series else 0
                display.detail(f"{count[0]:,}/{records:,} records, broker RSS {rss / MB:,.0f} MB")
            display = StepProgress(2, enabled=progress)
            probe = BrokerProbe(raykafka_broker_pids, on_sample=tick)
            with display, probe:
                before = probe.rss_series[-1][1]
                phases.append((probe.rss_series[-1][0], "produce"))
                display.step("produce")
                if client == "python":
                    produced = api.produce(cluster, topic, partitions, records, size, "1", count)
                else:
                    produced = wire.produce(cluster.bootstrap_servers, topic, partitions, records, size, "1", count)
                produce_peak = max(rss for _, rss in probe.rss_series)
                display.done(f"produced {produced['records']:,} records, broker RSS peak {produce_peak / MB:,.0f} MB")
                phases.append((probe.rss_series[-1][0], "consume"))
                count[0] = 0
                display.step("consume")
                if client == "python":
                    consumed = api.consume(cluster, topic, partitions, produced["records"], count)
                else:
                    consumed = wire.consume(cluster.bootstrap_servers, topic, partitions, produced["records"], count)
                series, kinds_series = probe.rss_series, probe.rss_kinds_series
                display.done(f"consumed {consumed['records']:,} records")
            consume_peak = max(rss for at, rss in series if at >= phases[1][0])
            figures = {"client": client, "partitions": partitions, "record_bytes": size, "records": records,
                       "produced": produced["records"], "consumed": consumed["records"],
                       "produce_mb_per_s": produced["records"] * size / MB / produced["seconds"],
                       "consume_mb_per_s": consumed["records"] * size / MB / consumed["seconds"],
                       "broker_rss_before_mb": before / MB, "broker_rss_peak_produce_mb": produce_peak / MB,
                       "broker_rss_peak_consume_mb": consume_peak / MB, "broker_rss_end_mb": series[-1][1] / MB,
                       "broker_rss_growth_mb": (max(produce_peak, consume_peak) - before) / MB,
                       "broker_cpu_s_per_gb": probe.cpu_seconds / (2 * records * size / 1e9),
                       "rss_series": [(round(at, 2), rss) for at, rss in series],
                       "rss_kinds_series": [(round(at, 2), kinds) for at, kinds in kinds_series],
                       "phases": [(round(at, 2), name) for at, name in phases]}  # to redraw the chart
            for kind in RSS_KINDS:
                # The broker side's own heap (anon) apart from the object store pages it touched
                # (shmem): only the first is the broker's memory in Kafka's sense.
                values = [(at, kinds.get(kind, 0)) for at, kinds in kinds_series]
                figures[f"broker_{kind}_before_mb"] = values[0][1] / MB
                figures[f"broker_{kind}_peak_produce_mb"] = max(v for at, v in values if at < phases[1][0]) / MB
                figures[f"broker_{kind}_peak_consume_mb"] = max(v for at, v in values if at >= phases[1][0]) / MB
                figures[f"broker_{kind}_end_mb"] = values[-1][1] / MB
    finally:
        if owns_ray:
            ray.shutdown()
    os.makedirs(out_dir, exist_ok=True)
    base = os.path.join(out_dir, "throughput-backlog")
    figures.update(command=command, started=time.strftime("%Y-%m-%dT%H:%M:%SZ"))
    figures["png"] = report.shown(report.draw_memory(
        base + ".png", series, phases, f"broker memory, {args.backlog:g} GiB backlog, {client}, p={partitions}",
        kinds_series))
    figures["json"] = report.shown(base + ".json")
    report.save_json(base + ".json", figures)
    for key in ("produced", "consumed", "produce_mb_per_s", "consume_mb_per_s", "broker_rss_before_mb",
                "broker_rss_peak_produce_mb", "broker_rss_peak_consume_mb", "broker_rss_end_mb",
                "broker_rss_growth_mb", "broker_cpu_s_per_gb",
                *(f"broker_{kind}_{when}_mb" for kind in RSS_KINDS for when in ("before", "peak_produce", "peak_consume", "end"))):
        value = figures[key]
        print(f"  {key:<28} {value:>12,.1f}" if isinstance(value, float) else f"  {key:<28} {value:>12,}")
    print(f"saved {figures['json']} and {figures['png']}")
    return figures
