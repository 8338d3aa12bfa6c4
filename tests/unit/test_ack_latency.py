"""benchmarks/ack_latency.py's pure parts: the nearest-rank percentiles and the summary that leaves
the warm-up out, the paced producer's schedule, the ``--set`` split between the two systems, and
the points set raykafka beside Kafka with raykafka ÷ Kafka per figure (a Python API point beside
Kafka's confluent-kafka one), as the table prints them. No Ray, no Kafka."""
from __future__ import annotations

import pytest

from benchmarks.ack_latency import (
    LOAD_FIGURES, SERIAL_FIGURES, System, due_at, due_count, pair, parse_args, percentile, points, shortfalls,
    split_settings, summarize, table,
)


def test_percentile_is_nearest_rank_whatever_the_order():
    values = list(range(100, 0, -1))  # 100 .. 1, unsorted
    assert percentile(values, 0.5) == 50
    assert percentile(values, 0.99) == 99
    assert percentile(values, 1.0) == 100
    assert percentile(values, 0.0) == 1
    assert percentile([7.0], 0.99) == 7.0
    assert percentile(list(range(1, 401)), 0.99) == 396  # 396 of 400 at or below it
    with pytest.raises(ValueError):
        percentile([], 0.5)


def test_summary_leaves_the_warmup_out():
    latencies = [1000.0] * 5 + [float(v) for v in range(1, 101)]
    summary = summarize(latencies, warmup=5)
    assert summary == {"records": 100, "p50_ms": 50.0, "p99_ms": 99.0, "mean_ms": 50.5, "max_ms": 100.0}
    assert summarize(latencies)["max_ms"] == 1000.0


def test_pacing_schedule_sends_each_record_at_its_due_time():
    rate, total = 1000.0, 10_000
    assert due_count(-0.001, rate, total) == 0
    assert due_count(0.0, rate, total) == 1  # the first at once
    assert due_count(0.0009, rate, total) == 1
    assert due_count(0.001, rate, total) == 2
    assert due_count(1.5, rate, total) == 1501
    assert due_count(60.0, rate, total) == total  # never more than the run's records
    assert due_at(0, rate) == 0.0 and due_at(1500, rate) == pytest.approx(1.5)
    # Every record is due by its own time and not before: the two agree at every index.
    for index in (0, 1, 999, 1000, 4321):
        assert due_count(due_at(index, rate), rate, total) >= index + 1
        assert due_count(due_at(index, rate) - 1e-6, rate, total) == index
    # Over a whole run the schedule holds the rate: half of a 40,000/s peak for 10 s is 200,000 sends.
    assert due_count(10.0 - 1e-9, 20_000.0, 200_000) == 200_000


def test_set_goes_to_both_systems_and_raykafka_keys_to_raykafka_only():
    ours, kafka = split_settings(["replica.fetch.wait.max.ms=10", "raykafka.replica.high.watermark.linger.ms=0",
                                  "log.retention.ms=a=b"])
    assert ours == {"replica.fetch.wait.max.ms": "10", "raykafka.replica.high.watermark.linger.ms": "0",
                    "log.retention.ms": "a=b"}
    assert kafka == {"replica.fetch.wait.max.ms": "10", "log.retention.ms": "a=b"}


def test_pair_divides_raykafka_by_kafka_per_figure_and_skips_what_one_lacks():
    ours = {"p50_ms": 15.0, "p99_ms": 30.0, "mean_ms": 16.0}
    theirs = {"p50_ms": 1.5, "p99_ms": 0.0, "mean_ms": 2.0}
    point = pair("one at a time", "serial", 3, "confluent", ours, theirs)
    assert point["ratios"] == {"p50_ms": 10.0, "mean_ms": 8.0}  # Kafka's p99 of 0 divides nothing
    assert pair("x", "serial", 3, "confluent", ours, None)["ratios"] == {}
    load = pair("load", "load", 3, "confluent", {"peak_records_per_s": 20_000.0, "records_per_s": 10_000.0,
                                                 "p50_ms": 6.0, "p99_ms": 40.0, "mean_ms": 8.0},
                {"peak_records_per_s": 80_000.0, "records_per_s": 40_000.0, "p50_ms": 3.0, "p99_ms": 10.0,
                 "mean_ms": 4.0})
    assert load["ratios"] == {"peak_records_per_s": 0.25, "records_per_s": 0.25, "p50_ms": 2.0, "p99_ms": 4.0,
                              "mean_ms": 2.0}


def _system(name: str, serial: dict, load: dict) -> System:
    system = System(name, "127.0.0.1:0", args=None, say=lambda _line: None)
    system.serial, system.load = serial, load
    return system


def test_points_set_the_python_api_beside_kafkas_confluent_kafka_and_the_table_shows_every_ratio():
    fig = lambda p50, p99: {"p50_ms": p50, "p99_ms": p99, "mean_ms": p50}  # noqa: E731
    load = lambda peak, p99: {"peak_records_per_s": peak, "records_per_s": peak / 2,  # noqa: E731
                              "acked_records_per_s": peak / 2, "p50_ms": 5.0, "p99_ms": p99, "mean_ms": 6.0,
                              "broker_cpu_cores": 1.5, "client_cpu_cores": 0.5}
    raykafka = _system("raykafka", {("confluent", 1): fig(0.3, 0.7), ("confluent", 3): fig(15.3, 30.6),
                                    ("python", 1): fig(2.8, 6.0), ("python", 3): fig(18.2, 37.6)},
                       {3: load(30_000.0, 60.0)})
    kafka = _system("Kafka", {("confluent", 1): fig(0.5, 1.4), ("confluent", 3): fig(1.7, 3.4)},
                    {3: load(120_000.0, 12.0)})
    rows = points(raykafka, kafka, [3], 1024, 100)
    assert [(r["kind"], r["client"], r["replication_factor"]) for r in rows] == [
        ("serial", "confluent", 1), ("serial", "confluent", 3), ("serial", "python", 1), ("serial", "python", 3),
        ("load", "confluent", 3)]
    python_rf3 = rows[3]
    assert python_rf3["kafka"] == fig(1.7, 3.4)  # Kafka's confluent-kafka figure at the same RF
    assert python_rf3["ratios"]["p99_ms"] == pytest.approx(37.6 / 3.4, abs=1e-3)
    assert rows[4]["ratios"]["peak_records_per_s"] == 0.25 and rows[4]["ratios"]["p99_ms"] == 5.0
    text = table(rows)
    lines = text.splitlines()
    assert len(lines) == 2 + 4 * len(SERIAL_FIGURES) + len(LOAD_FIGURES)
    assert "one at a time, 100 B, RF=3, Python API" in text and "half own peak, 1024 B, RF=3" in text
    p50_line = next(line for line in lines if "RF=3, confluent-kafka" in line and "p50 ms" in line)
    assert p50_line.split()[-3:] == ["15.30", "1.70", "9.00"]
    assert next(line for line in lines if "own peak rec/s" in line).split()[-3:] == ["30,000", "120,000", "0.25"]
    assert next(line for line in lines if "acked rec/s" in line).split()[-3:] == ["15,000", "60,000", "0.25"]


def test_fixed_rates_set_both_systems_at_one_load_side_by_side():
    paced = lambda p50: {"records_per_s": 10_000.0, "acked_records_per_s": 9_990.0, "p50_ms": p50,  # noqa: E731
                         "p99_ms": p50 * 3, "mean_ms": p50, "broker_cpu_cores": 0.4, "client_cpu_cores": 0.2}
    raykafka, kafka = _system("raykafka", {}, {}), _system("Kafka", {}, {})
    raykafka.fixed, kafka.fixed = {10_000: paced(14.0)}, {10_000: paced(3.5)}
    rows = points(raykafka, kafka, [], 1024, 100, (10_000, 40_000))
    assert [(r["point"], r["kind"]) for r in rows] == [("10,000 rec/s, 1024 B, RF=3, confluent-kafka", "fixed"),
                                                       ("40,000 rec/s, 1024 B, RF=3, confluent-kafka", "fixed")]
    assert rows[0]["ratios"]["p50_ms"] == 4.0 and "peak_records_per_s" not in rows[0]["ratios"]
    assert rows[1]["raykafka"] is None and rows[1]["ratios"] == {}
    lines = table(rows).splitlines()
    assert len(lines) == 2 + 2 * (len(LOAD_FIGURES) - 1)  # a fixed rate has no peak of its own
    assert not any("own peak" in line for line in lines)


def test_fixed_rates_are_whole_positive_records_per_second():
    assert parse_args([]).rates == (10_000, 40_000)
    assert parse_args(["--rates", "5000, 1000,5000"]).rates == (1000, 5000)
    assert parse_args(["--rates", ""]).rates == ()
    for bad in (["--rates", "ten"], ["--rates", "0"], ["--rate-duration", "0"]):
        with pytest.raises(SystemExit):
            parse_args(bad)


def test_a_run_without_kafka_still_has_every_raykafka_point_with_dashes_for_kafka():
    raykafka = _system("raykafka", {("confluent", 1): {"p50_ms": 0.3, "p99_ms": 0.7, "mean_ms": 0.4},
                                    ("confluent", 3): {"p50_ms": 9.0, "p99_ms": 20.0, "mean_ms": 10.0}}, {})
    rows = points(raykafka, None, [3], 1024, 100)
    assert [r["kafka"] for r in rows] == [None, None, None] and all(r["ratios"] == {} for r in rows)
    first = table(rows).splitlines()[2].split()
    assert first[-3:] == ["0.30", "-", "-"]


def test_shortfalls_say_when_the_client_fell_behind_its_schedule_or_the_system_behind_the_load():
    kept = {"target_records_per_s": 10_000.0, "records_per_s": 9_990.0, "acked_records_per_s": 9_980.0,
            "drain_s": 0.01}
    assert shortfalls(kept) == []
    client_bound = {**kept, "records_per_s": 6_000.0, "acked_records_per_s": 5_990.0}
    assert shortfalls(client_bound) == ["sent 6,000/s of a 10,000/s target"]
    broker_bound = {**kept, "acked_records_per_s": 7_000.0, "drain_s": 2.5}
    assert shortfalls(broker_bound) == ["acknowledged 7,000/s of 9,990/s sent, the last 2.50 s after the last send"]
