"""Kafka's own admin tools, run from Apache Kafka's jars with their real main classes, give the
same answers against raykafka as against Apache Kafka itself: kafka-topics --alter --partitions,
kafka-configs --alter/--describe for a topic, kafka-consumer-groups --reset-offsets,
--delete-offsets and --delete, kafka-log-dirs --describe, kafka-delete-records, and a topic
auto-created by the console producer, and kafka-configs for a broker (--alter --add-config of a
dynamic key, --describe, --describe --all, --delete-config); each check runs the same invocations against a 1-node Apache
Kafka (KRaft) and a 3-broker raykafka in the same run, compares what matters, and the module prints
a table of both (as test_conformance_tools.py does, whose helpers it shares)."""
from __future__ import annotations

import json
import re

import pytest

from actors.core.kafka_broker_config_defs import BROKER_CONFIG_DEFS
from tests.integration.test_conformance_tools import describe_topic, tool
from tests.support.conformance import APACHE, record as record_one

pytestmark = [pytest.mark.integration, pytest.mark.conformance]

TOPIC, GROUP = "conformance-admin", "conformance-admin-group"
LINES = ["k1:v1", "k2:v2", "k3:v3", "k1:v4", "k2:v5", "k3:v6", "k4:v7"]
KEYED = ("--reader-property", "parse.key=true", "--reader-property", "key.separator=:")


def rows_for(text: str, topic: str, column: int, partition_column: int) -> dict[int, str]:
    """partition -> the given column, from a kafka-consumer-groups table's rows of ``topic``."""
    rows = {}
    for line in text.splitlines():
        fields = line.split()
        if len(fields) > column and topic in fields and fields[partition_column].isdigit():
            rows[int(fields[partition_column])] = fields[column]
    return rows


def log_dirs(text: str) -> dict[str, dict]:
    """partition name -> what kafka-log-dirs says of it: error, offset lag, future, whether it has bytes."""
    answer = json.loads(next(line for line in text.splitlines() if line.startswith("{")))
    return {p["partition"]: {"error": d["error"], "offsetLag": p["offsetLag"], "isFuture": p["isFuture"],
                             "has data": p["size"] > 0}
            for broker in answer["brokers"] for d in broker["logDirs"] for p in d["partitions"]}


def test_admin_tools_on_one_topic(kafka_libs, systems, table, tmp_path):
    """One topic through its life: more partitions, configs, a group's offsets reset, deleted and the
    group gone, its log directories, its records deleted below the high watermark. Every check is
    put in the table before the first difference fails the test."""
    failures = []

    def record(table, check, seen, expected):
        try:
            record_one(table, check, seen, expected)
        except AssertionError as exc:
            failures.append(str(exc))

    observed = {name: {} for name in systems}
    for name, bootstrap in systems.items():
        server = ("--bootstrap-server", bootstrap)
        seen = observed[name]
        tool(kafka_libs, "kafka-topics", *server, "--create", "--topic", TOPIC, "--partitions", "1",
             "--replication-factor", "1")
        tool(kafka_libs, "kafka-topics", *server, "--alter", "--topic", TOPIC, "--partitions", "3")
        seen["alter"] = describe_topic(tool(kafka_libs, "kafka-topics", *server, "--describe", "--topic", TOPIC))

        configs = ("--entity-type", "topics", "--entity-name", TOPIC)
        seen["configs alter"] = tool(kafka_libs, "kafka-configs", *server, *configs, "--alter", "--add-config",
                                     "retention.ms=86400000,preallocate=true,segment.jitter.ms=100").strip()
        tool(kafka_libs, "kafka-configs", *server, *configs, "--alter", "--delete-config", "segment.jitter.ms")
        seen["configs describe"] = sorted(
            line.strip() for line in tool(kafka_libs, "kafka-configs", *server, *configs, "--describe").splitlines()
            if "=" in line)

        tool(kafka_libs, "kafka-console-producer", *server, "--topic", TOPIC, *KEYED,
             stdin="".join(line + "\n" for line in LINES))
        tool(kafka_libs, "kafka-console-consumer", *server, "--topic", TOPIC, "--group", GROUP, "--from-beginning",
             "--max-messages", str(len(LINES)), "--timeout-ms", "60000")
        groups = ("kafka-consumer-groups", *server, "--group", GROUP)
        seen["reset"] = rows_for(tool(kafka_libs, *groups, "--reset-offsets", "--topic", TOPIC, "--to-offset", "1",
                                      "--execute"), TOPIC, 3, 2)
        deleted = tool(kafka_libs, *groups, "--delete-offsets", "--topic", f"{TOPIC}:0")
        seen["delete-offsets"] = (deleted.splitlines()[0].strip(), rows_for(deleted, TOPIC, 2, 1))
        seen["offsets after"] = sorted(rows_for(tool(kafka_libs, *groups, "--describe"), TOPIC, 3, 2).items())
        seen["delete group"] = tool(kafka_libs, *groups, "--delete").strip()

        seen["log-dirs"] = log_dirs(tool(kafka_libs, "kafka-log-dirs", *server, "--describe", "--topic-list", TOPIC))
        offsets = {"version": 1, "partitions": [{"topic": TOPIC, "partition": p, "offset": -1} for p in range(3)]}
        seen["delete-records"] = sorted(
            line.strip() for line in tool(kafka_libs, "kafka-delete-records", *server, "--offset-json-file",
                                          write_json(tmp_path, name, offsets)).splitlines()
            if line.startswith("partition:"))

        tool(kafka_libs, "kafka-console-producer", *server, "--topic", f"{TOPIC}-auto", stdin="a\nb\n")
        seen["auto-created"] = describe_topic(tool(kafka_libs, "kafka-topics", *server, "--describe", "--topic",
                                                   f"{TOPIC}-auto"))

    three = {"partition count": 3, "replication factor": 1,
             "partitions": {p: {"replicas": 1, "leader in isr": True, "isr is replicas": True} for p in range(3)}}
    record(table, "kafka-topics --alter --partitions 3", {n: s["alter"] for n, s in observed.items()}, three)
    record(table, "kafka-configs --alter (topic)", {n: s["configs alter"] for n, s in observed.items()},
           f"Completed updating config for topic {TOPIC}.")
    record(table, "kafka-configs --describe (topic)", {n: s["configs describe"] for n, s in observed.items()},
           observed[APACHE]["configs describe"])
    apache = observed[APACHE]
    # Each system's answers must be Apache Kafka's; these pin that Apache Kafka's are what the steps say.
    pinned = {"preallocate set": any(line.startswith("preallocate=true") for line in apache["configs describe"]),
              "every partition reset": sorted(apache["reset"]) == [0, 1, 2],
              "partition 0's offset deleted": apache["delete-offsets"][1] == {0: "Successful"},
              "log dirs": {p: (d["error"], d["offsetLag"], d["isFuture"]) for p, d in apache["log-dirs"].items()}
              == {f"{TOPIC}-{p}": (None, 0, False) for p in range(3)}}
    failures += [f"Apache Kafka's answer is not what the step expects: {what}: {apache}"
                 for what, held in pinned.items() if not held]
    record(table, "kafka-consumer-groups --reset-offsets", {n: s["reset"] for n, s in observed.items()},
           apache["reset"])
    record(table, "kafka-consumer-groups --delete-offsets", {n: s["delete-offsets"] for n, s in observed.items()},
           apache["delete-offsets"])
    record(table, "kafka-consumer-groups --describe after", {n: s["offsets after"] for n, s in observed.items()},
           apache["offsets after"])
    record(table, "kafka-consumer-groups --delete", {n: s["delete group"] for n, s in observed.items()},
           f"Deletion of requested consumer groups ('{GROUP}') was successful.")
    record(table, "kafka-log-dirs --describe", {n: s["log-dirs"] for n, s in observed.items()}, apache["log-dirs"])
    record(table, "kafka-delete-records (to the high watermark)",
           {n: s["delete-records"] for n, s in observed.items()}, apache["delete-records"])
    record(table, "console producer auto-creates a topic", {n: s["auto-created"] for n, s in observed.items()},
           {"partition count": 1, "replication factor": 1,
            "partitions": {0: {"replicas": 1, "leader in isr": True, "isr is replicas": True}}})
    assert not failures, "\n".join(failures)


# Broker keys neither system's test configuration sets, so both report Kafka's defaults.
# (min.insync.replicas is left out: Kafka 4's KRaft controller writes it as a cluster-wide dynamic
# config at bootstrap, for KIP-966's eligible leader replicas, which raykafka does not have.)
BROKER_KEYS = ("log.cleaner.backoff.ms", "num.partitions", "default.replication.factor", "log.retention.hours",
               "unclean.leader.election.enable", "auto.create.topics.enable", "log.segment.bytes",
               "message.max.bytes")


def test_broker_configs(kafka_libs, systems, table, tmp_path):
    """A dynamic broker key set on the first broker, described alone and among all its keys, then deleted."""
    from confluent_kafka.admin import AdminClient
    observed = {name: {} for name in systems}
    for name, bootstrap in systems.items():
        broker = str(min(AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=10).brokers))
        configs = ("kafka-configs", "--bootstrap-server", bootstrap, "--entity-type", "brokers", "--entity-name", broker)

        def lines(*args) -> list[str]:
            # The broker's id differs between the systems: "broker 1" reads "broker B".
            return [line.strip().replace(f"broker {broker}", "broker B")
                    for line in tool(kafka_libs, *configs, *args).splitlines() if line.strip()]
        seen = observed[name]
        seen["alter"] = lines("--alter", "--add-config", "log.cleaner.backoff.ms=20000")
        seen["describe"] = lines("--describe")
        described_all = lines("--describe", "--all")
        seen["describe --all"] = [line for line in described_all
                                  if line.startswith("All configs") or line.split("=")[0] in BROKER_KEYS]
        seen["keys"] = {line.split("=")[0] for line in described_all if "=" in line and " sensitive=" in line}
        seen["delete-config"] = lines("--alter", "--delete-config", "log.cleaner.backoff.ms")
        seen["describe after"] = lines("--describe")
    apache = observed[APACHE]
    failures = []
    pinned = {"set": apache["describe"] == ["Dynamic configs for broker B are:", "log.cleaner.backoff.ms=20000 "
                                            "sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:log.cleaner.backoff.ms"
                                            "=20000, DEFAULT_CONFIG:log.cleaner.backoff.ms=15000}"],
              "deleted": apache["describe after"] == ["Dynamic configs for broker B are:"],
              "all keys": len(apache["describe --all"]) == 1 + len(BROKER_KEYS)}
    failures += [f"Apache Kafka's answer is not what the step expects: {what}: {apache}"
                 for what, held in pinned.items() if not held]
    # Every key Apache Kafka lists that Kafka 2.4 also defines is listed by raykafka too; keys Kafka
    # added after 2.4 (KRaft's, tiered storage's) and keys it removed are deliberate differences.
    kafka_24 = apache["keys"] & set(BROKER_CONFIG_DEFS)
    table["broker keys listed (Kafka 2.4's among them)"] = {
        name: f"{len(seen['keys'])} ({len(seen['keys'] & set(BROKER_CONFIG_DEFS))})" for name, seen in observed.items()}
    table["Kafka 2.4 broker keys Apache Kafka no longer lists"] = {
        APACHE: str(len(set(BROKER_CONFIG_DEFS) - apache["keys"]))}
    # The key sets, for the record (the test's temp directory, broker-keys.json).
    (tmp_path / "broker-keys.json").write_text(json.dumps({n: sorted(s["keys"]) for n, s in observed.items()}))
    try:
        record_one(table, "kafka-configs --describe --all (broker): every Kafka 2.4 key Kafka lists",
                   {n: sorted(kafka_24 - s["keys"]) for n, s in observed.items()}, [])
    except AssertionError as exc:
        failures.append(str(exc))
    for check, key in (("kafka-configs --alter --add-config (broker)", "alter"),
                       ("kafka-configs --describe (broker)", "describe"),
                       ("kafka-configs --describe --all (broker)", "describe --all"),
                       ("kafka-configs --alter --delete-config (broker)", "delete-config"),
                       ("kafka-configs --describe after the delete (broker)", "describe after")):
        try:
            record_one(table, check, {n: s[key] for n, s in observed.items()}, apache[key])
        except AssertionError as exc:
            failures.append(str(exc))
    assert not failures, "\n".join(failures)


def write_json(directory, system: str, content: dict) -> str:
    path = directory / f"offsets-{re.sub(r'[^a-z]', '-', system.lower())}.json"
    path.write_text(json.dumps(content), encoding="utf-8")
    return str(path)
