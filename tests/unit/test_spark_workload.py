"""Workload files parse into the OpenMessaging Benchmark fields plus raykafka's own, the shipped
ones are valid, and every bad file is refused with the key and its allowed values named; no Spark."""
from __future__ import annotations

from pathlib import Path

import pytest

from orchestration.spark.workload import WorkloadError, load_workload, parse_workload

WORKLOADS = sorted((Path(__file__).resolve().parents[2] / "benchmarks" / "workloads").glob("*.yaml"))
GOOD = {"name": "w", "topics": 2, "partitionsPerTopic": 3, "messageSize": 100, "keyDistributor": "KEY_ROUND_ROBIN",
        "producersPerTopic": 2, "producerRate": 1000, "subscriptionsPerTopic": 1, "consumerPerSubscription": 2,
        "recordCount": 1001, "acks": "all", "min.insync.replicas": 2, "producerConfig": {"linger.ms": 5}}


def test_the_omb_fields_and_raykafkas_own_are_read():
    workload = parse_workload(GOOD)
    assert (workload.topics, workload.partitions_per_topic, workload.message_size) == (2, 3, 100)
    assert workload.producers == 4 and workload.consumers == 4
    assert workload.records_per_producer() == [251, 250, 250, 250]
    assert workload.rate_per_producer() == 250
    assert workload.producer_config == {"linger.ms": "5"}
    assert workload.topic_names() == ["w-0", "w-1"]
    assert workload.client == "raykafka"
    assert parse_workload({**GOOD, "client": "confluent-kafka"}).client == "confluent-kafka"


@pytest.mark.parametrize("path", WORKLOADS, ids=lambda p: p.name)
def test_shipped_workloads_are_valid(path):
    assert load_workload(path).name == path.stem


def test_there_are_shipped_workloads():
    assert len(WORKLOADS) >= 3


@pytest.mark.parametrize("change, message", [
    ({"keyDistributor": "ROUND"}, r"'keyDistributor' must be one of NO_KEY, KEY_ROUND_ROBIN, RANDOM_NANO, not 'ROUND'"),
    ({"acks": "2"}, r"'acks' must be one of 0, 1, all, -1, not '2'"),
    ({"topics": 0}, r"'topics' must be >= 1, not 0"),
    ({"messageSize": "1kb"}, r"'messageSize' must be an integer >= 1, not '1kb'"),
    ({"partitionsPerTopic": 1.5}, r"'partitionsPerTopic' must be an integer"),
    ({"producerRate": -1}, r"'producerRate' must be >= 0"),
    ({"testDurationMinutes": 1}, r"exactly one of 'testDurationMinutes' or 'recordCount'"),
    ({"recordCount": None}, r"'recordCount' must be an integer"),
    ({"colour": "red"}, r"unknown key 'colour'; allowed keys: name, keyDistributor"),
    ({"name": ""}, r"'name' must be a non-empty string"),
    ({"replicationFactor": 4}, r"'replicationFactor' \(4\) must be <= 'brokers' \(3\)"),
    ({"min.insync.replicas": 4}, r"'min.insync.replicas' \(4\) must be <= 'replicationFactor' \(3\)"),
    ({"producerConfig": ["linger.ms"]}, r"'producerConfig' must be a mapping of Kafka config keys"),
    ({"producerConfig": {"acks": "1"}}, r"set 'acks' at the top level"),
    ({"faults": [{"at": 1, "do": "explode"}]}, r"faults step 1: 'do' must be one of kill, restart"),
    ({"faults": [{"at": 1, "do": "kill", "wait_for": "dawn"}]}, r"'wait_for' must be one of new-leader"),
    ({"faults": [{"do": "kill"}]}, r"exactly one of 'at' .* or 'after_acks'"),
    ({"faults": {"do": "kill"}}, r"'faults' must be a list of steps"),
    ({"client": "kcat"}, r"'client' must be one of raykafka, confluent-kafka, not 'kcat'"),
])
def test_bad_workloads_name_the_key_and_allowed_values(change, message):
    spec = {**GOOD, **change}
    if "testDurationMinutes" in change:
        spec["recordCount"] = 10
    with pytest.raises(WorkloadError, match=message):
        parse_workload(spec, where="w.yaml")


def test_a_file_that_is_not_a_mapping_is_refused(tmp_path):
    path = tmp_path / "w.yaml"
    path.write_text("- just\n- a list\n")
    with pytest.raises(WorkloadError, match=r"w.yaml: a workload is a YAML mapping"):
        load_workload(path)
    path.write_text("name: [unclosed\n")
    with pytest.raises(WorkloadError, match=r"w.yaml"):
        load_workload(path)


def test_omb_keys_raykafka_does_not_use_are_accepted():
    assert parse_workload({**GOOD, "payloadFile": "payload/payload-1Kb.data", "consumerBacklogSizeGB": 0}).name == "w"


def test_load_run_refuses_a_bad_workload_before_starting_anything(tmp_path, capsys):
    from orchestration.cli import main
    path = tmp_path / "bad.yaml"
    path.write_text("name: bad\nrecordCount: 10\nkeyDistributor: ROUND\n")
    assert main(["load", "run", str(path)]) == 2
    assert "'keyDistributor' must be one of NO_KEY, KEY_ROUND_ROBIN, RANDOM_NANO" in capsys.readouterr().err


def test_the_consume_job_may_read_through_librdkafka_with_librdkafkas_own_settings():
    assert parse_workload(GOOD).consumer_client == "raykafka"
    workload = parse_workload({**GOOD, "consumerClient": "confluent-kafka", "consumerConfig": {"queued.min.messages": 1000}})
    assert workload.consumer_client == "confluent-kafka" and workload.client == "raykafka"
    with pytest.raises(WorkloadError, match=r"'consumerConfig'"):
        parse_workload({**GOOD, "consumerConfig": {"queued.min.messages": 1000}}, where="w.yaml")
    with pytest.raises(WorkloadError, match=r"'consumerClient' must be one of raykafka, confluent-kafka, not 'kcat'"):
        parse_workload({**GOOD, "consumerClient": "kcat"})
