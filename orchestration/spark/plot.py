"""The run as a picture, as Jepsen draws rate and latency: records/s produced and consumed per
second, publish latency p50 and p99 per second, and every injected fault as a band on the time
axis (from the fault to its healing step, or a thin band for a one-off). Also draws a chaos run's
picture straight from its history (``windows_from_history``)."""
from __future__ import annotations

import math
from collections import defaultdict
from pathlib import Path

# Fault names that end what an earlier fault on the same target began.
HEALING = {"restart", "resume", "heal", "restore-node"}
ONE_OFF_BAND_S = 0.5


def fault_bands(faults: list[tuple[float, str, str]], end_s: float) -> list[tuple[float, float, str]]:
    """(start, end, label) bands from (time, name, target) faults: a fault lasts until the next
    healing step on its target (or ``heal`` for everything), else it is a thin band."""
    bands, open_faults = [], {}
    for at, name, target in sorted(faults):
        if name in HEALING:
            for key in [k for k in open_faults if name == "heal" or k == target.split()[0]]:
                start, label = open_faults.pop(key)
                bands.append((start, at, label))
        elif name == "kill" and "restart=True" in target:
            bands.append((at, at + ONE_OFF_BAND_S, f"kill {target.split()[0]}"))
        else:
            open_faults[target.split()[0]] = (at, f"{name} {target.split()[0]}")
    for start, label in open_faults.values():
        bands.append((start, max(start + ONE_OFF_BAND_S, end_s), label))
    return bands


def draw(path: str | Path, produce_windows: list[dict], consume_windows: list[dict],
         bands: list[tuple[float, float, str]], title: str) -> str:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    figure, (rate, latency) = plt.subplots(2, 1, figsize=(11, 6.5), sharex=True)
    rate.plot([w["second"] for w in produce_windows], [w["records"] for w in produce_windows],
              label="acknowledged records/s", color="tab:blue", drawstyle="steps-post", marker=".")
    rate.plot([w["second"] for w in consume_windows], [w["records"] for w in consume_windows],
              label="consumed records/s", color="tab:green", drawstyle="steps-post", alpha=0.8, marker=".")
    rate.set_ylim(bottom=0)
    rate.set_ylabel("records/s")
    rate.legend(loc="upper right")
    lat = [w for w in produce_windows if w.get("p50_ms") is not None]
    seconds = [w["second"] for w in lat]
    latency.plot(seconds, [w["p50_ms"] for w in lat], label="publish p50", color="tab:orange", marker=".")
    latency.plot(seconds, [w["p99_ms"] for w in lat], label="publish p99", color="tab:red", marker=".")
    latency.set_ylabel("latency (ms)")
    if lat and max(w["p99_ms"] for w in lat) > 20 * max(1e-9, min(w["p50_ms"] for w in lat)):
        latency.set_yscale("log")
    latency.set_xlabel("seconds since the load started")
    latency.legend(loc="upper right")
    for axis in (rate, latency):
        for index, (start, end, label) in enumerate(bands):
            axis.axvspan(start, end, color="tab:red", alpha=0.15, label=None)
            if axis is rate:
                axis.text(start, axis.get_ylim()[1] * (0.95 - 0.08 * (index % 3)), label, fontsize=8,
                          color="darkred", va="top")
        axis.grid(alpha=0.3)
    figure.suptitle(title)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return str(path)


def windows_from_history(events) -> tuple[list[dict], list[dict], list[tuple[float, str, str]]]:
    """Per-second acknowledged sends (with publish latency p50/p99), per-second records read, and
    the faults, from a history's events (``orchestration.history.read_history``)."""
    invoked, acked, read, faults = {}, defaultdict(list), defaultdict(int), []
    for event in events:
        value, f, type_ = event["value"], event["f"], event["type"]
        if f == "send" and type_ == "invoke":
            invoked[value["value"]] = event["time"]
        elif f == "send" and type_ == "ok" and value["value"] in invoked:
            acked[math.floor(event["time"])].append((event["time"] - invoked[value["value"]]) * 1000)
        elif f == "poll":
            read[math.floor(event["time"])] += len(value["records"])
        elif f == "fault":
            detail = " ".join(f"{k}={v}" for k, v in value.get("detail", {}).items())
            faults.append((event["time"], value["name"], f"{value['target']} {detail}".strip()))
    produce = []
    for second in sorted(acked):
        latencies = sorted(acked[second])
        produce.append({"second": second, "records": len(latencies), "p50_ms": _quantile(latencies, 0.5),
                        "p99_ms": _quantile(latencies, 0.99)})
    consume = [{"second": second, "records": read[second]} for second in sorted(read)]
    return produce, consume, faults


def _quantile(values: list[float], q: float) -> float:
    return values[min(len(values) - 1, int(q * len(values)))]
