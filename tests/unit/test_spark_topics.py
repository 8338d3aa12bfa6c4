"""Reading a topic as a DataFrame plans its offset ranges the way Spark's Kafka source does
(earliest, latest, explicit offsets, split large partitions), and a failed Spark job's text gives
back the Kafka error its task raised; pure functions, no Spark or Ray."""
from __future__ import annotations

import pytest

from orchestration.errors import KafkaError
from orchestration.spark.topics import OffsetRange, kafka_settings, plan_ranges, spark_failure_as_kafka_error

BOUNDS = {0: (0, 10), 1: (5, 7), 2: (0, 0)}


def test_earliest_to_latest_is_one_range_per_partition():
    assert plan_ranges("t", BOUNDS, "earliest", "latest") == [
        OffsetRange("t", 0, 0, 10), OffsetRange("t", 1, 5, 7)]


def test_latest_to_latest_reads_nothing():
    assert plan_ranges("t", BOUNDS, "latest", "latest") == []


@pytest.mark.parametrize("starting, ending, expected", [
    ({0: 3}, {0: 6}, [OffsetRange("t", 0, 3, 6), OffsetRange("t", 1, 5, 7)]),
    ({"t": {"0": 3, "1": -1}}, "latest", [OffsetRange("t", 0, 3, 10)]),
    ({"t": {"0": -2}}, {"t": {"0": 4, "1": 6}}, [OffsetRange("t", 0, 0, 4), OffsetRange("t", 1, 5, 6)]),
])
def test_explicit_offsets_per_partition(starting, ending, expected):
    assert plan_ranges("t", BOUNDS, starting, ending) == expected


def test_large_partitions_split_into_ranges():
    assert plan_ranges("t", {0: (0, 10)}, "earliest", "latest", max_records_per_partition=4) == [
        OffsetRange("t", 0, 0, 4), OffsetRange("t", 0, 4, 8), OffsetRange("t", 0, 8, 10)]


@pytest.mark.parametrize("starting, ending", [({0: 0, 1: 2}, "latest"), ("earliest", {0: 11})])
def test_offsets_outside_the_log_are_out_of_range(starting, ending):
    with pytest.raises(KafkaError) as caught:
        plan_ranges("t", BOUNDS, starting, ending)
    assert caught.value.name == "OFFSET_OUT_OF_RANGE"


def test_bad_offset_words_are_refused():
    with pytest.raises(ValueError, match="earliest"):
        plan_ranges("t", BOUNDS, "beginning", "latest")


def test_a_failed_job_gives_back_the_tasks_kafka_error():
    text = ("py4j.protocol.Py4JJavaError: An error occurred ... Traceback (most recent call last): ...\n"
            "orchestration.errors.KafkaError: MESSAGE_TOO_LARGE (10): t-0\n\tat org.apache.spark...")
    error = spark_failure_as_kafka_error(RuntimeError(text))
    assert isinstance(error, KafkaError) and error.name == "MESSAGE_TOO_LARGE"
    other = RuntimeError("no kafka here")
    assert spark_failure_as_kafka_error(other) is other


def test_spark_style_option_names_are_kafka_settings():
    assert kafka_settings({"kafka.acks": "all", "linger.ms": 5}) == {"acks": "all", "linger.ms": "5"}
