"""A Java application on Apache Kafka's kafka-clients and a KafkaJS application, both unchanged,
see the same things from raykafka as from Apache Kafka: each runs one story (the admin client's
topic, config and group calls, an idempotent acks=all producer, a consumer group that commits)
against a 1-node Apache Kafka (KRaft) and a 3-broker raykafka in the same test, prints what it saw
in terms that do not depend on the system, and the two answers must be equal to each other and to
what the story expects; the module prints a table of both (check | Apache Kafka | raykafka)."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.support.conformance import APACHE, RAYKAFKA, record
from tests.support.kafkajs import run_node

pytestmark = [pytest.mark.integration, pytest.mark.conformance]

JAVA_STORY = Path(__file__).resolve().parent.parent / "support" / "java" / "ClientStory.java"
CONFORMANCE_TABLE = "Kafka's Java client and KafkaJS"  # the table's title (conftest.table)
JAVA_TIMEOUT_S = 300.0
KAFKAJS_TIMEOUT_S = 180.0


def run_java_story(libs: Path, bootstrap: str, topic: str, group: str) -> dict:
    """Runs ClientStory.java with Java 17's single-file launcher; its last stdout line as JSON."""
    argv = ["java", "-Xmx256m", "-cp", f"{libs}/*", str(JAVA_STORY), bootstrap, topic, group]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=JAVA_TIMEOUT_S)
    except subprocess.TimeoutExpired as exc:
        raise AssertionError(f"the Java client story did not finish within {JAVA_TIMEOUT_S} s against "
                             f"{bootstrap}: {(exc.stderr or '')[-3000:]}") from None
    lines = done.stdout.strip().splitlines()
    assert done.returncode == 0 and lines, (
        f"the Java client story against {bootstrap} exited {done.returncode}: {done.stderr[-4000:]}")
    return json.loads(lines[-1])


def compare(table, what: str, observed: dict[str, dict], expected: dict) -> None:
    """One table row per check; fails after recording them all when any system differs."""
    failures = []
    for check, want in expected.items():
        try:
            record(table, f"{what}: {check}", {name: seen.get(check) for name, seen in observed.items()}, want)
        except AssertionError as error:
            failures.append(str(error))
    assert not failures, "\n".join(failures)
    assert {name: sorted(seen) for name, seen in observed.items()} == {name: sorted(expected) for name in observed}


def test_a_java_application_on_kafka_clients(kafka_libs, systems, table):
    observed = {name: run_java_story(kafka_libs, bootstrap, "java-story", "java-story-group")
                for name, bootstrap in systems.items()}
    records, partitions = 300, 3
    compare(table, "Java client", observed, {
        "topic listed": True, "partitions": partitions, "replicas are the replication factor": True,
        "retention.ms after an incremental alter": "123456789", "retention.ms source": "DYNAMIC_TOPIC_CONFIG",
        "acknowledged": records, "acknowledged offsets dense per partition": True,
        "distinct values read by the group": records, "partitions read by the group": partitions,
        "group listed": True, "group state after the members left": "Empty",
        "committed offsets, summed": records, "group listed after delete": False,
        "topic listed after delete": False,
    })


def test_a_kafkajs_application(systems, table):
    observed = {name: run_node("client_story.js", bootstrap, "kafkajs-story", "kafkajs-story-group",
                               timeout_s=KAFKAJS_TIMEOUT_S)
                for name, bootstrap in systems.items()}
    records, partitions = 90, 3
    compare(table, "KafkaJS", observed, {
        "topic created": True, "partitions": partitions, "replicas are the replication factor": True,
        "topic listed": True, "acknowledged partitions": partitions,
        "acknowledged base offsets": [[p, "0"] for p in range(partitions)],
        "distinct values read by the group": records, "committed offsets, summed": records,
        "group state after the member left": "Empty", "group listed after delete": False,
        "topic listed after delete": False,
    })
