"""A throughput run's results as a table, a JSON file and a PNG.

Every point's row has its rate (MB/s, MB = 10^6 bytes of record values; records/s), its ceilings
measured in the same run (Tansu through confluent-kafka with the same settings; Ray moving a
payload of the point's per-call size as bytes and as a numpy array), the ratio to each, the broker
side's CPU seconds per GB moved and its peak resident memory (and Tansu's, for its row).
"""
from __future__ import annotations

import json
import os

COLUMNS = (("point", 44), ("records", 8), ("MB/s", 7), ("rec/s", 9), ("Tansu", 7), ("/Tansu", 6),
           ("Ray B", 7), ("/RayB", 6), ("Ray np", 7), ("/Raynp", 6), ("cpu s/GB", 8), ("RSS MB", 7),
           ("T s/GB", 7), ("T RSS", 6))


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
    ceilings, ratios, tansu = row["ceilings"], row["ratios"], row.get("tansu") or {}
    return [row["label"], row["records"], row["mb_per_s"], row["records_per_s"], ceilings.get("tansu_mb_per_s"),
            ratios.get("to_tansu"), ceilings["ray_bytes_mb_per_s"], ratios["to_ray_bytes"],
            ceilings["ray_numpy_mb_per_s"], ratios["to_ray_numpy"], row["broker_cpu_s_per_gb"],
            row["broker_rss_peak_mb"], tansu.get("cpu_s_per_gb"), tansu.get("rss_peak_mb")]


def header() -> str:
    return " ".join(_cell(name, width) if width <= 20 else name.ljust(width) for name, width in COLUMNS)


def line(row: dict) -> str:
    return " ".join(_cell(value, width) for value, (_, width) in zip(row_cells(row), COLUMNS))


def table(rows: list[dict]) -> str:
    return "\n".join([header()] + [line(row) for row in rows])


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
              ("Ray transfer, bytes", lambda r: r["ceilings"]["ray_bytes_mb_per_s"], "tab:gray"),
              ("Ray transfer, numpy", lambda r: r["ceilings"]["ray_numpy_mb_per_s"], "silver"))
    for axis, op in zip(axes[:, 0], ops):
        chosen = [r for r in rows if panel.get(r["op"], r["op"]) == op]
        bar_height = 0.8 / len(series)
        for index, (name, value, colour) in enumerate(series):
            positions = [i + (index - 1.5) * bar_height for i in range(len(chosen))]
            values = [value(r) or 0 for r in chosen]
            axis.barh(positions, values, height=bar_height, color=colour, label=name)
        for i, r in enumerate(chosen):
            axis.text(r["mb_per_s"], i - 1.5 * bar_height, f" {r['mb_per_s']:.1f}", va="center", fontsize=7)
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


def draw_memory(path: str, series: list[tuple[float, int]], phases: list[tuple[float, str]], title: str) -> str:
    """The broker side's summed RSS over a backlog run, with the phase boundaries marked."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    figure, axis = plt.subplots(figsize=(10, 4))
    axis.plot([s for s, _ in series], [rss / 1e6 for _, rss in series], color="tab:blue")
    for at, name in phases:
        axis.axvline(at, color="tab:red", alpha=0.5)
        axis.text(at, axis.get_ylim()[1], f" {name}", va="top", fontsize=8, color="darkred")
    axis.set_ylim(bottom=0)
    axis.set_xlabel("seconds")
    axis.set_ylabel("broker RSS, MB (brokers + fetchers)")
    axis.grid(alpha=0.3)
    figure.suptitle(title, fontsize=10)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path
