"""A throughput run's results as a table, a JSON file and a PNG.

Every point's row has its rate (MB/s, MB = 10^6 bytes of record values; records/s), its ceilings
measured in the same run (Tansu through confluent-kafka with the same settings; Ray moving a
payload of the point's per-call size as bytes and as a numpy array), its peer Apache Kafka measured
in the same run with the same client settings, the ratio to each, the broker side's CPU seconds per
GB moved and its peak resident memory (and Tansu's and Kafka's, for its row). Kafka's perf tools
(``kafka-producer-perf-test``, ``kafka-consumer-perf-test``) against raykafka and Kafka get a table
of their own. The picture (``draw_ratios``) draws raykafka ÷ Kafka and raykafka ÷ Tansu per point
on a linear axis, one panel per kind of measurement; ``draw`` draws the rates themselves.
"""
from __future__ import annotations

import json
import os

COLUMNS = (("point", 44), ("records", 8), ("MB/s", 7), ("rec/s", 9), ("Tansu", 7), ("/Tansu", 6),
           ("Ray B", 7), ("/RayB", 6), ("Ray np", 7), ("/Raynp", 6), ("cpu s/GB", 8), ("RSS MB", 7),
           ("T s/GB", 7), ("T RSS", 6), ("Kafka", 7), ("/Kafka", 6), ("K s/GB", 7), ("K RSS", 6))


def _cell(value, width: int) -> str:
    if value is None:
        return "-".rjust(width)
    if isinstance(value, str):
        return value.ljust(width) if width > 20 else value.rjust(width)
    if isinstance(value, int):
        return f"{value:,}".rjust(width)
    text = f"{value:.2f}" if abs(value) < 10 else f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.1f}"
    return text.rjust(width)


def row_cells(row: dict) -> list:
    ceilings, ratios, tansu, kafka = row["ceilings"], row["ratios"], row.get("tansu") or {}, row.get("kafka") or {}
    return [row["label"], row["records"], row["mb_per_s"], row["records_per_s"], ceilings.get("tansu_mb_per_s"),
            ratios.get("to_tansu"), ceilings["ray_bytes_mb_per_s"], ratios["to_ray_bytes"],
            ceilings["ray_numpy_mb_per_s"], ratios["to_ray_numpy"], row["broker_cpu_s_per_gb"],
            row["broker_rss_peak_mb"], tansu.get("cpu_s_per_gb"), tansu.get("rss_peak_mb"),
            kafka.get("mb_per_s"), ratios.get("to_kafka"), kafka.get("cpu_s_per_gb"), kafka.get("rss_peak_mb")]


def header() -> str:
    return " ".join(_cell(name, width) if width <= 20 else name.ljust(width) for name, width in COLUMNS)


def line(row: dict) -> str:
    return " ".join(_cell(value, width) for value, (_, width) in zip(row_cells(row), COLUMNS))


def table(rows: list[dict]) -> str:
    return "\n".join([header()] + [line(row) for row in rows])


PERF_COLUMNS = (("perf test (the tools' MB = 2^20 bytes)", 40), ("system", 8), ("records", 8), ("rec/s", 9),
                ("MB/s", 7), ("avg ms", 7), ("max ms", 7), ("p99 ms", 6), ("c rec/s", 9), ("c MB/s", 7),
                ("fetch rec/s", 11), ("c MB/s", 7))


def perf_line(figures: dict) -> str:
    """One perf-test pair's headline figures, as the tools print them."""
    producer, consumer = figures["producer"], figures["consumer"]
    return (f"producer {producer['records_per_s']:,.0f} records/s ({producer['mib_per_s']:.2f} MB/s), "
            f"{producer['latency_avg_ms']:.1f} ms avg, {producer['latency_max_ms']:.0f} ms max latency; consumer "
            f"{consumer['records_per_s']:,.0f} records/s ({consumer['mib_per_s']:.2f} MB/s), fetch only "
            f"{consumer['fetch_records_per_s']:,.0f} records/s")


def perf_table(rows: list[dict]) -> str:
    """Kafka's perf tools against raykafka and Kafka, and raykafka ÷ Kafka: producer records/s and
    latency, consumer records/s with and without its group join (``fetch``), MB/s as the tools print."""
    lines = [" ".join(name.ljust(width) if width > 20 else name.rjust(width) for name, width in PERF_COLUMNS)]
    for row in rows:
        for system in ("raykafka", "kafka", "ratios"):
            if system == "ratios":
                ratios = row.get("ratios") or {}
                cells = [row["label"], "ray÷K", None, ratios.get("producer_records_per_s"),
                         ratios.get("producer_mib_per_s"), None, None, None, ratios.get("consumer_records_per_s"),
                         ratios.get("consumer_mib_per_s"), ratios.get("consumer_fetch_records_per_s"), None]
            elif system in row and "producer" in row[system]:
                producer, consumer = row[system]["producer"], row[system]["consumer"]
                cells = [row["label"], system, producer["records"], producer["records_per_s"], producer["mib_per_s"],
                         producer["latency_avg_ms"], producer["latency_max_ms"], producer.get("latency_p99_ms"),
                         consumer["records_per_s"], consumer["mib_per_s"], consumer["fetch_records_per_s"],
                         consumer.get("fetch_mib_per_s")]
            else:
                continue
            lines.append(" ".join(_cell(value, width) for value, (_, width) in zip(cells, PERF_COLUMNS)))
    return "\n".join(lines)


def save_json(path: str, results: dict) -> str:
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as handle:
        json.dump(results, handle, indent=2)
    return path


def shown(path: str) -> str:
    """``path`` relative to the working directory when it lies below it (results name their files
    portably), else as given."""
    relative = os.path.relpath(path)
    return path if relative.startswith("..") else relative


def draw(path: str, rows: list[dict], title: str) -> str:
    """One panel per operation: raykafka's MB/s per point beside its ceilings (log scale)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    # The batch-level consume points share the consume panel, beside poll's.
    panel = {"consume-batches": "consume", "consume-arrow": "consume"}
    ops = [op for op in ("produce", "consume", "fetch", "catchup") if any(panel.get(r["op"], r["op"]) == op for r in rows)]
    if not ops:
        return "not drawn (no points)"
    heights = [max(2.5, 0.32 * sum(panel.get(r["op"], r["op"]) == op for r in rows) + 1.2) for op in ops]
    figure, axes = plt.subplots(len(ops), 1, figsize=(12, sum(heights)), gridspec_kw={"height_ratios": heights},
                                squeeze=False)
    series = (("raykafka", lambda r: r["mb_per_s"], "tab:blue"),
              ("Tansu (confluent-kafka)", lambda r: r["ceilings"].get("tansu_mb_per_s"), "tab:orange"),
              ("Apache Kafka (confluent-kafka)", lambda r: (r.get("kafka") or {}).get("mb_per_s"), "tab:green"),
              ("Ray transfer, bytes", lambda r: r["ceilings"]["ray_bytes_mb_per_s"], "tab:gray"),
              ("Ray transfer, numpy", lambda r: r["ceilings"]["ray_numpy_mb_per_s"], "silver"))
    for axis, op in zip(axes[:, 0], ops):
        chosen = [r for r in rows if panel.get(r["op"], r["op"]) == op]
        bar_height = 0.8 / len(series)
        for index, (name, value, colour) in enumerate(series):
            positions = [i + (index - (len(series) - 1) / 2) * bar_height for i in range(len(chosen))]
            values = [value(r) or 0 for r in chosen]
            axis.barh(positions, values, height=bar_height, color=colour, label=name)
        for i, r in enumerate(chosen):
            axis.text(r["mb_per_s"], i - (len(series) - 1) / 2 * bar_height, f" {r['mb_per_s']:.1f}", va="center",
                      fontsize=7)
        axis.set_yticks(range(len(chosen)))
        axis.set_yticklabels([r["label"] for r in chosen], fontsize=7)
        axis.invert_yaxis()
        axis.set_xscale("log")
        axis.set_xlabel("MB/s (log scale)")
        axis.set_title(op, fontsize=10)
        axis.grid(axis="x", alpha=0.3)
    axes[0, 0].legend(loc="lower right", fontsize=7)
    figure.suptitle(title, fontsize=10)
    figure.tight_layout(rect=(0, 0, 1, 0.985))
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path


RATIO_SERIES = (("raykafka ÷ Apache Kafka", "tab:green"), ("raykafka ÷ Tansu", "tab:orange"))
# The picture's panels, by what was measured; the batch-level reads share the consume panel.
RATIO_PANELS = {"produce": "produce", "consume": "consume", "consume-batches": "consume",
                "consume-arrow": "consume", "fetch": "bare fetch", "catchup": "follower catch-up"}


def ratio_panels(rows: list[dict], perf_tests: list[dict]) -> list[tuple[str, list[tuple[str, float | None,
                                                                                          float | None]]]]:
    """(panel title, [(label, raykafka ÷ Kafka, raykafka ÷ Tansu)]) per kind of measurement; a
    ratio is None where that peer did not do the point. Kafka's perf tools give two panels."""
    panels: dict[str, list] = {}
    for row in rows:
        panels.setdefault(RATIO_PANELS[row["op"]], []).append(
            (row["label"], row["ratios"].get("to_kafka"), row["ratios"].get("to_tansu")))
    for side, name, title in (("producer", "records_per_s", "kafka-producer-perf-test, records/s"),
                              ("consumer", "records_per_s", "kafka-consumer-perf-test, records/s"),
                              ("consumer", "fetch_records_per_s", "kafka-consumer-perf-test, fetch records/s")):
        entries = [(test["label"], (test.get("ratios") or {}).get(f"{side}_{name}"), None) for test in perf_tests]
        if entries:
            panels[title] = entries
    return [(title, entries) for title, entries in panels.items() if entries]


def draw_ratios(path: str, rows: list[dict], perf_tests: list[dict], title: str) -> str:
    """raykafka ÷ Apache Kafka and raykafka ÷ Tansu per point, on a linear axis with 1 marked: a bar
    right of the line is a point where raykafka leads. A peer that did not do a point has no bar."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    panels = ratio_panels(rows, perf_tests)
    if not panels:
        return "not drawn (no points)"
    heights = [max(1.6, 0.3 * len(entries) + 1.0) for _, entries in panels]
    figure, axes = plt.subplots(len(panels), 1, figsize=(11, sum(heights)), gridspec_kw={"height_ratios": heights},
                                squeeze=False)
    highest = max([1.0] + [value for _, entries in panels for entry in entries for value in entry[1:] if value])
    bar_height = 0.8 / len(RATIO_SERIES)
    for axis, (panel, entries) in zip(axes[:, 0], panels):
        for index, (name, colour) in enumerate(RATIO_SERIES):
            offset = (index - (len(RATIO_SERIES) - 1) / 2) * bar_height
            drawn = [(i + offset, entry[1 + index]) for i, entry in enumerate(entries) if entry[1 + index] is not None]
            axis.barh([y for y, _ in drawn], [v for _, v in drawn], height=bar_height, color=colour, label=name)
            for y, value in drawn:
                axis.text(value, y, f" {value:.2f}", va="center", fontsize=7)
        axis.axvline(1.0, color="black", linewidth=0.8)
        axis.set_yticks(range(len(entries)))
        axis.set_yticklabels([entry[0] for entry in entries], fontsize=7)
        axis.set_ylim(len(entries) - 0.5, -0.5)
        axis.set_xlim(0, highest * 1.15)
        axis.set_title(panel, fontsize=9)
        axis.grid(axis="x", alpha=0.3)
    axes[-1, 0].set_xlabel("raykafka ÷ peer (linear; right of 1: raykafka ahead)")
    handles = [plt.Rectangle((0, 0), 1, 1, color=colour) for _, colour in RATIO_SERIES]
    axes[0, 0].legend(handles, [name for name, _ in RATIO_SERIES], loc="lower right", fontsize=7)
    figure.suptitle(title, fontsize=10)
    figure.tight_layout(rect=(0, 0, 1, 0.985))
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path


# The memory chart's parts of RSS (benchmarks/_probe.py's RSS_KINDS), labelled for a reader.
MEMORY_PARTS = (("anon", "heap (RssAnon: the processes' own memory)"),
                ("shmem", "shared memory (RssShmem: Ray's object store pages touched)"),
                ("file", "mapped files (RssFile: code, libraries)"))


def memory_lines(series: list[tuple[float, int]], kinds_series: list[tuple[float, dict[str, int]]] | None
                 ) -> list[tuple[str, list[float], list[float]]]:
    """What the memory chart draws, in MB (10^6 bytes): with ``kinds_series`` the heap, the shared
    memory and the mapped files apart, then their sum; without it the summed RSS alone."""
    lines = [("RSS, all parts", [s for s, _ in series], [rss / 1e6 for _, rss in series])]
    if not kinds_series:
        return lines
    return [(label, [s for s, _ in kinds_series], [kinds.get(kind, 0) / 1e6 for _, kinds in kinds_series])
            for kind, label in MEMORY_PARTS] + lines


def draw_memory(path: str, series: list[tuple[float, int]], phases: list[tuple[float, str]], title: str,
                kinds_series: list[tuple[float, dict[str, int]]] | None = None) -> str:
    """The broker side's RSS over a backlog run, split into heap, shared memory and mapped files
    when ``kinds_series`` says them, with the phase boundaries marked."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    figure, axis = plt.subplots(figsize=(10, 4))
    colors = {MEMORY_PARTS[0][1]: "tab:green", MEMORY_PARTS[1][1]: "tab:orange", MEMORY_PARTS[2][1]: "tab:gray"}
    for label, xs, ys in memory_lines(series, kinds_series):
        axis.plot(xs, ys, color=colors.get(label, "tab:blue"), label=label,
                  linestyle="--" if label in colors else "-")
    if kinds_series:
        axis.legend(fontsize=8, loc="upper left")
    for at, name in phases:
        axis.axvline(at, color="tab:red", alpha=0.5)
        axis.text(at, axis.get_ylim()[1], f" {name}", va="top", fontsize=8, color="darkred")
    axis.set_ylim(bottom=0)
    axis.set_xlabel("seconds")
    axis.set_ylabel("broker RSS, MB of 10^6 bytes (brokers + fetchers)")
    axis.grid(alpha=0.3)
    figure.suptitle(title, fontsize=10)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path
