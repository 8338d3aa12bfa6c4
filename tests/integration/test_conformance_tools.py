"""Kafka's own command-line tools, run from Apache Kafka's jars with their real main classes, give
the same answers against raykafka as against Apache Kafka itself: each check runs the same tool
invocations against a 1-node Apache Kafka (KRaft) and a 3-broker raykafka's PLAINTEXT listeners in
the same run, compares what matters (topics with their partitions and replication factor, the exact
key:value lines the console consumer prints, with headers, a group's offsets and lag), and the module prints a
table of both (check | Apache Kafka | raykafka)."""
from __future__ import annotations

import re

import pytest
from confluent_kafka.admin import AdminClient

from orchestration.admin.wait import wait_until
from orchestration.apache_kafka import run_tool
from tests.support.conformance import APACHE, RAYKAFKA, record

pytestmark = [pytest.mark.integration, pytest.mark.conformance]

TOOL_TIMEOUT_S = 90.0


def tool(libs, name, *args, stdin=None):
    """Runs a tool and returns its stdout; a non-zero exit is the check's failure, with stderr."""
    done = run_tool(libs, name, *args, stdin=stdin, timeout_s=TOOL_TIMEOUT_S)
    assert done.returncode == 0, f"{name} {' '.join(args)} exited {done.returncode}: {done.stderr[-3000:]}"
    return done.stdout


def describe_topic(text: str) -> dict:
    """What matters in kafka-topics --describe: counts, and each partition led by one of its in-sync replicas."""
    head = re.search(r"PartitionCount:\s*(\d+)\s+ReplicationFactor:\s*(\d+)", text)
    partitions = {}
    for match in re.finditer(r"Partition:\s*(\d+)\s+Leader:\s*(-?\d+)\s+Replicas:\s*([\d,]*)\s+Isr:\s*([\d,]*)", text):
        partition, leader, replicas, isr = match.groups()
        replicas, isr = replicas.split(","), isr.split(",")
        partitions[int(partition)] = {"replicas": len(replicas), "leader in isr": leader in isr,
                                      "isr is replicas": sorted(isr) == sorted(replicas)}
    return {"partition count": int(head.group(1)) if head else None,
            "replication factor": int(head.group(2)) if head else None, "partitions": partitions}


def test_kafka_topics_create_describe_list_delete(kafka_libs, systems, table):
    topic = "conformance-topics"
    observed = {name: {} for name in systems}
    for name, bootstrap in systems.items():
        server = ("--bootstrap-server", bootstrap)
        seen = observed[name]
        seen["create"] = tool(kafka_libs, "kafka-topics", *server, "--create", "--topic", topic,
                              "--partitions", "3", "--replication-factor", "1").strip()
        seen["describe"] = describe_topic(tool(kafka_libs, "kafka-topics", *server, "--describe", "--topic", topic))
        seen["listed"] = topic in tool(kafka_libs, "kafka-topics", *server, "--list").split()
        tool(kafka_libs, "kafka-topics", *server, "--delete", "--topic", topic)
        # Deletion finishes asynchronously in both systems; a JVM per poll is dear, so a Python
        # admin client polls the metadata until the topic is gone.
        admin = AdminClient({"bootstrap.servers": bootstrap})
        wait_until(lambda: topic not in admin.list_topics(timeout=10).topics, 60,
                   f"{name} to finish deleting {topic} after kafka-topics --delete")
        seen["deleted"] = True
    record(table, "kafka-topics --create", {n: s["create"] for n, s in observed.items()}, f"Created topic {topic}.")
    row = {"partition count": 3, "replication factor": 1,
           "partitions": {p: {"replicas": 1, "leader in isr": True, "isr is replicas": True} for p in range(3)}}
    record(table, "kafka-topics --describe", {n: s["describe"] for n, s in observed.items()}, row)
    record(table, "kafka-topics --list", {n: s["listed"] for n, s in observed.items()}, True)
    record(table, "kafka-topics --delete", {n: s["deleted"] for n, s in observed.items()}, True)


LINES = ["k1:v1", "k2:v2", "k3:v3", "k1:v4", "k2:v5", "k3:v6"]
MORE = ["k1:v7", "k4:v8"]


def group_offsets(text: str, topic: str) -> dict[int, tuple[int, int, int]]:
    """partition -> (CURRENT-OFFSET, LOG-END-OFFSET, LAG) from kafka-consumer-groups --describe."""
    rows = {}
    for line in text.splitlines():
        fields = line.split()
        if len(fields) >= 6 and fields[1] == topic and fields[2].isdigit():
            rows[int(fields[2])] = tuple(int(f) if f.lstrip("-").isdigit() else f for f in fields[3:6])
    return rows


def test_console_producer_consumer_with_keys_and_consumer_groups(kafka_libs, systems, table):
    topic, group = "conformance-console", "conformance-group"
    # Kafka 4.x spells --property as --reader-property (producer) and --formatter-property (consumer).
    keyed = ("--reader-property", "parse.key=true", "--reader-property", "key.separator=:")
    observed = {name: {} for name in systems}
    for name, bootstrap in systems.items():
        server = ("--bootstrap-server", bootstrap)
        seen = observed[name]
        tool(kafka_libs, "kafka-topics", *server, "--create", "--topic", topic, "--partitions", "3",
             "--replication-factor", "1")
        tool(kafka_libs, "kafka-console-producer", *server, "--topic", topic, *keyed,
             stdin="".join(line + "\n" for line in LINES))
        printed = tool(kafka_libs, "kafka-console-consumer", *server, "--topic", topic, "--group", group,
                       "--from-beginning", "--max-messages", str(len(LINES)), "--timeout-ms", "60000",
                       "--formatter-property", "print.key=true", "--formatter-property", "key.separator=:").splitlines()
        seen["consumed"] = sorted(printed)
        # Each key lands in one partition, so its values come back in the order they were produced.
        seen["per-key order"] = {key: [line for line in printed if line.startswith(key + ":")]
                                 for key in ("k1", "k2", "k3")}
        tool(kafka_libs, "kafka-console-producer", *server, "--topic", topic, *keyed,
             stdin="".join(line + "\n" for line in MORE))
        seen["listed"] = group in tool(kafka_libs, "kafka-consumer-groups", *server, "--list").split()
        seen["describe"] = group_offsets(
            tool(kafka_libs, "kafka-consumer-groups", *server, "--describe", "--group", group), topic)
    record(table, "console producer then consumer (keys)",
           {n: s["consumed"] for n, s in observed.items()}, sorted(LINES))
    record(table, "console consumer: per-key order", {n: s["per-key order"] for n, s in observed.items()},
           {key: [line for line in LINES if line.startswith(key + ":")] for key in ("k1", "k2", "k3")})
    record(table, "kafka-consumer-groups --list", {n: s["listed"] for n, s in observed.items()}, True)
    # The Java producer's partitioner is the same against both systems, so each partition's offsets
    # are too: Apache Kafka's answer is the expectation, and the lag is the two records produced after
    # the group committed.
    apache = observed[APACHE]["describe"]
    assert sum(lag for _, _, lag in apache.values()) == len(MORE), apache
    record(table, "kafka-consumer-groups --describe (LAG)",
           {n: s["describe"] for n, s in observed.items()}, apache)


HEADED = ["app:demo,trace:t1\tk1:v1", "app:demo\tk2:v2", "trace:t3,app:other\tk1:v3"]


def test_console_producer_consumer_with_headers(kafka_libs, systems, table):
    """The console producer parses headers (parse.headers: headers, a tab, then key:value) and the
    console consumer prints them back (print.headers), in order, as Apache Kafka does."""
    topic = "conformance-headers"
    produce = ("--reader-property", "parse.key=true", "--reader-property", "key.separator=:",
               "--reader-property", "parse.headers=true")
    consume = ("--formatter-property", "print.headers=true", "--formatter-property", "print.key=true",
               "--formatter-property", "key.separator=:")
    printed = {}
    for name, bootstrap in systems.items():
        server = ("--bootstrap-server", bootstrap)
        tool(kafka_libs, "kafka-topics", *server, "--create", "--topic", topic, "--partitions", "1",
             "--replication-factor", "1")
        tool(kafka_libs, "kafka-console-producer", *server, "--topic", topic, *produce,
             stdin="".join(line + "\n" for line in HEADED))
        printed[name] = tool(kafka_libs, "kafka-console-consumer", *server, "--topic", topic, "--from-beginning",
                             "--max-messages", str(len(HEADED)), "--timeout-ms", "60000", *consume).splitlines()
    # Apache Kafka's lines are the expectation; they carry every header, in order, and each value.
    apache = printed[APACHE]
    assert len(apache) == len(HEADED) and all(h.split("\t")[0] in line for h, line in zip(HEADED, apache)), apache
    record(table, "console producer then consumer (headers)", printed, apache)


def usable_versions(text: str) -> dict[int, int]:
    """API key -> the version the Java client would use, from kafka-broker-api-versions' lines
    ``Produce(0): 3 to 12 [usable: 12]`` or ``SaslHandshake(17): 1 [usable: 1]`` (Kafka's
    NodeApiVersions.toString; an API the client cannot use has no ``usable``)."""
    return {int(key): int(usable)
            for key, usable in re.findall(r"\w+\((\d+)\): (?:\d+ to )?\d+ \[usable: (\d+)\]", text)}


def test_the_java_client_negotiates_flexible_versions(kafka_libs, systems, table):
    """kafka-broker-api-versions prints what Kafka 4.x's Java client negotiates with each broker:
    against raykafka, each API at the highest version both have (Apache Kafka's usable version,
    capped by raykafka's), which is flexible wherever versions.py does not cap below it, and
    DescribeCluster (flexible only) usable."""
    from kio.index import load_request_schema

    from actors.wire.versions import SUPPORTED_VERSIONS
    usable = {}
    for name, bootstrap in systems.items():
        text = tool(kafka_libs, "kafka-broker-api-versions", "--bootstrap-server", bootstrap)
        # One broker's block is enough: every broker of a system serves the same versions.
        usable[name] = usable_versions(text.split(") -> (")[1] if ") -> (" in text else text)
    expected = {key: min(high, usable[APACHE][key]) for key, (_, high) in SUPPORTED_VERSIONS.items()
                if key in usable[APACHE]}
    assert usable[RAYKAFKA] == expected | {key: v for key, v in usable[RAYKAFKA].items() if key not in expected}
    flexible = {key for key, version in usable[RAYKAFKA].items() if load_request_schema(key, version).__flexible__}
    # Metadata (3) and CreateTopics (19) stop below their first flexible version (versions.py);
    # SaslHandshake (17) and OffsetDelete (47) have none.
    assert set(expected) - flexible <= {3, 17, 19, 47}, sorted(set(expected) - flexible)
    assert usable[RAYKAFKA][60] == 2, "DescribeCluster, flexible only"
    record(table, "kafka-broker-api-versions: usable = min(both)", {RAYKAFKA: usable[RAYKAFKA]}, expected |
           {key: v for key, v in usable[RAYKAFKA].items() if key not in expected})
