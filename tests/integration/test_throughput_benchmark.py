"""The throughput benchmark's smoke profile runs end to end on a real cluster (and Tansu, and Apache
Kafka where Java is installed): every record produced is consumed, the stopped follower copies the
whole backlog, Kafka's perf tools move as many records as asked against both systems, and every
figure its JSON reports is present and positive. Speed is never checked."""
from __future__ import annotations

import json
import os

import pytest

from benchmarks import throughput
from benchmarks._profiles import PROFILES, records_for
from orchestration.apache_kafka import unavailable_reason

pytestmark = pytest.mark.integration

POINT_FIGURES = ("records", "expected_records", "seconds", "mb_per_s", "records_per_s", "call_bytes",
                 "broker_cpu_s", "broker_cpu_s_per_gb", "broker_rss_peak_mb", "broker_processes")
CEILINGS = ("ray_bytes_mb_per_s", "ray_numpy_mb_per_s", "tansu_mb_per_s")
RATIOS = ("to_ray_bytes", "to_ray_numpy", "to_tansu")
TANSU_FIGURES = ("records", "seconds", "mb_per_s", "records_per_s", "cpu_s_per_gb", "rss_peak_mb")
KAFKA_FIGURES = TANSU_FIGURES
PERF_PRODUCER = ("records", "records_per_s", "mib_per_s", "latency_avg_ms", "latency_max_ms")
PERF_CONSUMER = ("records", "records_per_s", "mib_per_s", "fetch_records_per_s")


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

    # A replicated point starts once a first acks=all write to each partition was acknowledged (every
    # follower fetching), and says how long that took.
    replicated = [p for p in points if p["op"] == "produce" and p["replication_factor"] > 1]
    assert replicated and all(p["first_acks_all_writes_s"] > 0 for p in replicated), replicated
    assert all("first_acks_all_writes_s" not in p for p in points if p["replication_factor"] == 1)
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
    assert os.path.getsize(results["png"]) > 0 and os.path.getsize(results["png_rates"]) > 0
    assert any(point["label"] in line for point in points for line in lines)  # the table was printed
    check_kafka(results, lines)


def check_kafka(results: dict, lines: list[str]) -> None:
    """Apache Kafka did every point, its consume read what its RF=1 produces wrote, its follower
    copied the catch-up's backlog,
    and Kafka's perf tools moved the profile's records against both systems; without Java, the run
    says why Kafka is missing and reports no Kafka figure."""
    points = results["points"]
    if unavailable_reason() is not None:
        assert results["kafka_skipped"] and results["kafka"] == [] and results["perf_tests"] == []
        assert all("kafka" not in point for point in points)
        return
    assert results["kafka_skipped"] is None, results["kafka_skipped"]
    for point in points:
        for name in KAFKA_FIGURES:
            assert point["kafka"][name] > 0, f"{point['label']}: Kafka's {name}"
        assert point["ratios"]["to_kafka"] > 0, point["label"]
    records = records_for(PROFILES["smoke"], 1024)
    kafka = results["kafka"]
    assert [k["records"] for k in kafka if k["op"] == "produce"] == [records] * 2  # RF=1 acks=1, RF=3 acks=all
    assert [k.get("first_acks_all_writes_s", 0) > 0 for k in kafka if k["op"] == "produce"] == [False, True]
    assert [k["records"] for k in kafka if k["op"] == "consume"] == [
        sum(k["records"] for k in kafka if k["op"] == "produce" and k["replication_factor"] == 1)]
    # Kafka's follower copied the same backlog as raykafka's (the timed part of it: after its first growth seen).
    catch_up = [k for k in kafka if k["op"] == "catchup"]
    assert [k["backlog_records"] for k in catch_up] == [p["records"] for p in points if p["op"] == "catchup"]
    assert 0 < catch_up[0]["records"] <= catch_up[0]["backlog_records"]
    assert catch_up[0]["timed_by"].startswith("follower log size")
    assert catch_up[0]["log_bytes"] > catch_up[0]["backlog_records"] * 1024  # the records and their batches' headers
    assert [t["label"] for t in results["perf_tests"]] == [t.label for t in PROFILES["smoke"].perf_tests]
    for test in results["perf_tests"]:
        expected = records_for(PROFILES["smoke"], test["record_bytes"])
        for system in ("raykafka", "kafka"):
            producer, consumer = test[system]["producer"], test[system]["consumer"]
            assert producer["records"] == consumer["records"] == expected, (system, test)
            assert all(producer[name] > 0 for name in PERF_PRODUCER), (system, producer)
            assert producer["latency_max_ms"] >= producer["latency_avg_ms"], (system, producer)
            assert all(consumer[name] > 0 for name in PERF_CONSUMER), (system, consumer)
        assert test["ratios"] and all(value > 0 for value in test["ratios"].values()), test
        assert any(test["label"] in line and "ray÷K" in line for line in lines)  # its table was printed
