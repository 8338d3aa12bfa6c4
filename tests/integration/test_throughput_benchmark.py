"""The throughput benchmark's smoke profile runs end to end on a real cluster (and Tansu): every
record produced is consumed, the stopped follower copies the whole backlog, and every figure its
JSON reports is present and positive. Speed is never checked."""
from __future__ import annotations

import json
import os

import pytest

from benchmarks import throughput
from benchmarks._profiles import PROFILES

pytestmark = pytest.mark.integration

POINT_FIGURES = ("records", "expected_records", "seconds", "mb_per_s", "records_per_s", "call_bytes",
                 "broker_cpu_s", "broker_cpu_s_per_gb", "broker_rss_peak_mb", "broker_processes")
CEILINGS = ("ray_bytes_mb_per_s", "ray_numpy_mb_per_s", "tansu_mb_per_s")
RATIOS = ("to_ray_bytes", "to_ray_numpy", "to_tansu")
TANSU_FIGURES = ("records", "seconds", "mb_per_s", "records_per_s", "cpu_s_per_gb", "rss_peak_mb")


def test_smoke_profile_counts_every_record_and_reports_every_figure(ray_session, tmp_path):
    lines = []
    throughput.run(PROFILES["smoke"], out_dir=str(tmp_path), progress=False, out=lines.append)
    with open(tmp_path / "throughput-smoke.json") as handle:
        results = json.load(handle)
    points = results["points"]
    assert len(points) == len(PROFILES["smoke"].points), lines

    for point in points:
        assert point["records"] == point["expected_records"] > 0, point["label"]
        for name in POINT_FIGURES:
            assert point[name] > 0, f"{point['label']}: {name} = {point.get(name)}"
        for name in CEILINGS:
            assert point["ceilings"][name] > 0, f"{point['label']}: ceiling {name}"
        for name in RATIOS:
            assert point["ratios"][name] > 0, f"{point['label']}: ratio {name}"
        for name in TANSU_FIGURES:
            assert point["tansu"][name] > 0, f"{point['label']}: Tansu's {name}"

    for client in ("python", "confluent"):  # the consume point read what that client's produces wrote
        produced = sum(p["records"] for p in points if p["client"] == client and p["op"] == "produce"
                       and p["replication_factor"] == 1)
        consumed = [p["records"] for p in points if p["client"] == client and p["op"] == "consume"]
        assert consumed == [produced]
        if client == "python":
            consumed_python = consumed
    # The catch-up copied as many records as the Python consume read, timed by the fetchers' clock.
    catch_ups = [p for p in points if p["op"] == "catchup"]
    assert [(p["records"], p["timed_by"]) for p in catch_ups] == [(consumed_python[0], "fetchers")], catch_ups
    assert all(entry["mb_per_s"] > 0 for entry in results["ray_ceilings"])
    # Each (direction, payload size) the points need is measured once, as bytes and as numpy: the
    # smoke profile's one payload size both ways, and the payload the bare fetch's calls carried.
    needed = {("send" if p["op"] == "produce" else "return", p["call_bytes"]) for p in points}
    assert sorted((e["direction"], e["payload_bytes"], e["kind"]) for e in results["ray_ceilings"]) == sorted(
        (direction, size, kind) for direction, size in needed for kind in ("bytes", "numpy"))
    assert os.path.getsize(results["png"]) > 0
    assert any(point["label"] in line for point in points for line in lines)  # the table was printed
