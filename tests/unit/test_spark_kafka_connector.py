"""Spark's Kafka connector pieces that need no Spark: the classpath configs RayDP gets, headers as
the producer takes them, the workload's ``job`` key, and the streaming check's verdicts on totals
that are right, repeated (at-least-once sink), wrong, or missing an acknowledged record."""
from __future__ import annotations

import json

import pytest

from orchestration.spark.kafka_connector import (
    DRIVER_CLASSPATH, EXECUTOR_CLASSPATH, connector_configs, kafka_options, pinned_spark_version,
)
from orchestration.spark.summary import check_stream_totals
from orchestration.spark.topics import header_pairs
from orchestration.spark.workload import WorkloadError, parse_workload


def test_the_jars_go_on_the_driver_and_executor_classpaths_after_what_was_given():
    configs = connector_configs(["/c/a.jar", "/c/b.jar"], {DRIVER_CLASSPATH: "/mine.jar", "spark.x": 1})
    assert configs[DRIVER_CLASSPATH] == "/mine.jar:/c/a.jar:/c/b.jar"
    assert configs[EXECUTOR_CLASSPATH] == "/c/a.jar:/c/b.jar"
    assert configs["spark.x"] == "1"


def test_the_pinned_spark_is_the_installed_pyspark():
    import pyspark
    assert pinned_spark_version() == pyspark.__version__


def test_kafka_options_name_the_listeners():
    assert kafka_options("127.0.0.1:9092") == {"kafka.bootstrap.servers": "127.0.0.1:9092"}
    with pytest.raises(ValueError):
        kafka_options("")


def test_header_pairs_take_sparks_structs_or_pairs():
    class Row(dict):
        def asDict(self):
            return dict(self)
    assert header_pairs([Row(key="a", value=bytearray(b"1")), (b"b", None)]) == [("a", b"1"), ("b", None)]
    assert header_pairs(None) is None


def test_the_job_key_names_a_known_job():
    base = {"name": "s", "recordCount": 10}
    assert parse_workload(base).job == "load-consume"
    assert parse_workload({**base, "job": "streaming-aggregate"}).job == "streaming-aggregate"
    with pytest.raises(WorkloadError, match="'job' must be one of"):
        parse_workload({**base, "job": "stream"})


def _total(count, total):
    return json.dumps({"count": count, "sum": total})


INPUT = [(0, 0, "a", "1"), (0, 1, "a", "2"), (1, 0, "b", "5")]


def test_final_totals_equal_to_the_input_pass_and_repeats_are_counted():
    output = [("a", _total(1, 1)), ("b", _total(1, 5)), ("a", _total(2, 3)), ("a", _total(2, 3))]
    check = check_stream_totals(INPUT, INPUT, output)
    assert check["passed"] and check["repeated_output_records"] == 1 and check["keys"] == 2


def test_a_missing_update_a_total_beyond_the_input_or_a_lost_record_fail():
    assert check_stream_totals(INPUT, INPUT, [("a", _total(1, 1)), ("b", _total(1, 5))])["keys_with_wrong_totals"] == ["a"]
    beyond = check_stream_totals(INPUT, INPUT, [("a", _total(2, 3)), ("b", _total(2, 10))])
    assert not beyond["passed"] and beyond["impossible_output_records"] == [("b", 2, 10)]
    lost = check_stream_totals(INPUT + [(1, 1, "b", "7")], INPUT, [("a", _total(2, 3)), ("b", _total(1, 5))])
    assert not lost["passed"] and lost["lost_offsets"] == [(1, 1)]
