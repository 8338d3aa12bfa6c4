"""The load pipeline's summary prints kafka-producer-perf-test's total line and
kafka-consumer-perf-test's columns, in MB of 1024*1024 bytes as those tools count it, and says so:
a summary made by hand is printed and read back with the parser of the real tools' output
(benchmarks/_perf_test.py), no Spark."""
from __future__ import annotations

import re

import pytest

from benchmarks._perf_test import parse_consumer, parse_producer
from orchestration.spark.summary import MB, consumer_lines, producer_line

START = 1_700_000_000.25  # wall-clock seconds


def _summary() -> dict:
    return {
        "produce": {"sent": 2048, "acknowledged": 2048, "bytes": 2 * MB, "seconds": 2.0, "records_per_s": 1024.0,
                    "mb_per_s": 1.0, "errors": {}, "windows": [],
                    "publish_latency": {"count": 2048, "avg_ms": 3.5, "max_ms": 40.0, "p50": 3.0, "p95": 9.0,
                                        "p99": 20.0, "p99.9": 39.0}},
        "consume": {"acknowledged_read": 2048, "end_to_end_latency": {"count": 0}, "windows": [],
                    "subscriptions": {"orders-sub0": {
                        "records": 2048, "bytes": 2 * MB, "seconds": 4.0, "records_per_s": 512.0, "mb_per_s": 0.5,
                        "start_time": START, "end_time": START + 4.0, "first_read_time": START + 1.5}}},
    }


def test_the_producer_line_is_kafka_producer_perf_tests_total():
    parsed = parse_producer(producer_line(_summary()))
    assert parsed == {"records": 2048, "records_per_s": 1024.0, "mib_per_s": 1.0, "latency_avg_ms": 3.5,
                      "latency_max_ms": 40.0, "latency_p50_ms": 3.0, "latency_p95_ms": 9.0, "latency_p99_ms": 20.0,
                      "latency_p999_ms": 39.0}


def test_the_consumer_lines_are_kafka_consumer_perf_tests_columns_in_mib():
    lines = consumer_lines(_summary())
    assert lines[0].startswith("start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, "
                               "rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec")
    parsed = parse_consumer("\n".join(lines[:2]))
    assert parsed == {"mib": 2.0, "mib_per_s": 0.5, "records": 2048, "records_per_s": 512.0, "rebalance_ms": 1500,
                      "fetch_ms": 2500, "fetch_mib_per_s": pytest.approx(0.8), "fetch_records_per_s": pytest.approx(819.2)}
    start, end = lines[1].split(", ")[:2]
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d:250", start) and end.endswith(":250")
    assert lines[1].endswith(", orders-sub0")
    assert any("MB = 1024*1024 bytes" in line for line in lines)
