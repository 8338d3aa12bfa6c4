"""Kafka's own verifiable producer and consumer (the clients Kafka's system tests use to prove that
nothing acknowledged is lost) run unchanged across a leader kill, against a 3-node Apache Kafka and a
3-broker raykafka in the same test: the producer sends keyed values with acks=all, idempotent and
retrying as Kafka's system tests run it, while the leader of partition 0 is killed (the table shows
how many batches were in flight to it and retried), the killed node comes back, and the consumer, in
a group from the earliest offset, must read every acknowledged value at the offset it was
acknowledged at, none twice.
The module prints a table of both systems' answers."""
from __future__ import annotations

import json
import threading

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from orchestration.admin.wait import wait_until
from orchestration.apache_kafka import ApacheKafkaCluster, start_tool
from tests.support.conformance import APACHE, RAYKAFKA, record

pytestmark = [pytest.mark.integration, pytest.mark.conformance]

TOPIC, GROUP = "verifiable", "verifiable-group"
PARTITIONS = 3
MESSAGES, THROUGHPUT = 2400, 200  # twelve seconds of sends; the kill lands in the second or third
KILL_AFTER_ACKS = 400
WAIT_S = 180.0
# Kafka's verifiable producer sets retries=0 itself, which turns idempotence off (the Java client
# disables it rather than fail when retries=0 is set and enable.idempotence is not): any request in
# flight to the killed leader then fails. Kafka's system tests run it idempotent with this
# (tests/kafkatest/services/verifiable_producer.py), and so does this test: the sends are retried
# across the kill, to the new leader, which must accept them once and only once.
IDEMPOTENT_PRODUCER = {"enable.idempotence": "true", "retries": "1000000",
                       "max.in.flight.requests.per.connection": "5"}
# Keys 0..REPEATING_KEYS-1 spread every request over all partitions, so requests are in flight to
# partition 0's leader when it is killed (the sticky partitioner may otherwise be writing elsewhere).
REPEATING_KEYS = 30
# The producer's log (tmp_path/<system>/producer.stderr): its configuration, its sender's and
# network client's view of every request and disconnection.
PRODUCER_LOG_LEVELS = {"org.apache.kafka.clients.producer": "info",
                       "org.apache.kafka.clients.producer.internals": "debug",
                       "org.apache.kafka.clients.NetworkClient": "debug"}
CONFORMANCE_TABLE = "Kafka's verifiable producer and consumer across a leader kill"  # conftest.table's title


class ToolEvents:
    """A running verifiable client: its JSON events, read from its stdout by a thread."""

    def __init__(self, process):
        self.process = process
        self.events: list[dict] = []
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.process.stdout:
            line = line.strip()
            if line.startswith("{"):
                with self._lock:
                    self.events.append(json.loads(line))

    def named(self, name: str) -> list[dict]:
        with self._lock:
            return [event for event in self.events if event.get("name") == name]

    def stop(self, timeout_s: float = 30.0) -> None:
        if self.process.poll() is None:
            self.process.terminate()
        try:
            self.process.wait(timeout=timeout_s)
        except Exception:
            self.process.kill()
            self.process.wait(timeout=30)
        self._reader.join(timeout=10)


@pytest.fixture(scope="module")
def apache_kafka(kafka_libs, tmp_path_factory):
    with ApacheKafkaCluster(kafka_libs, tmp_path_factory.mktemp("apache-kafka"), nodes=3) as started:
        yield started


def leader_of_partition_0(admin: AdminClient) -> int:
    partition = admin.list_topics(TOPIC, timeout=10).topics[TOPIC].partitions[0]
    return partition.leader


def story(libs, bootstrap: str, kill, restart, workdir) -> dict:
    """Produce across a kill of partition 0's leader, bring it back, read everything back."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(TOPIC, PARTITIONS, 3, config={"min.insync.replicas": "2"})])[TOPIC].result(60)
    wait_until(lambda: all(p.leader >= 0 and len(p.isrs) == 3
                           for p in admin.list_topics(TOPIC, timeout=10).topics[TOPIC].partitions.values()),
               60, f"every partition of {TOPIC} led with three in-sync replicas at {bootstrap}")
    config = workdir / "producer.properties"
    config.write_text("".join(f"{key}={value}\n" for key, value in IDEMPOTENT_PRODUCER.items()), encoding="utf-8")
    producer = ToolEvents(start_tool(libs, "kafka-verifiable-producer", "--bootstrap-server", bootstrap,
                                     "--topic", TOPIC, "--max-messages", str(MESSAGES),
                                     "--throughput", str(THROUGHPUT), "--acks", "-1",
                                     "--repeating-keys", str(REPEATING_KEYS), "--command-config", str(config),
                                     stderr_path=workdir / "producer.stderr", log_levels=PRODUCER_LOG_LEVELS))
    try:
        wait_until(lambda: len(producer.named("producer_send_success")) >= KILL_AFTER_ACKS, 90,
                   f"{KILL_AFTER_ACKS} acknowledged sends before the kill")
        victim = leader_of_partition_0(admin)
        kill(victim)
        wait_until(lambda: producer.process.poll() is not None, WAIT_S, "the verifiable producer to finish")
    finally:
        producer.stop()
    restart(victim)
    acked = {(e["partition"], e["offset"]): e["value"] for e in producer.named("producer_send_success")}
    consumer = ToolEvents(start_tool(libs, "kafka-verifiable-consumer", "--bootstrap-server", bootstrap,
                                     "--topic", TOPIC, "--group-id", GROUP, "--verbose",
                                     "--reset-policy", "earliest", stderr_path=workdir / "consumer.stderr"))
    try:
        def read_all_acked() -> bool:
            seen = {(e["partition"], e["offset"]) for e in consumer.named("record_data")}
            return set(acked) <= seen
        try:
            wait_until(read_all_acked, WAIT_S, "the verifiable consumer to read every acknowledged offset")
        except TimeoutError:
            pass  # what it did read is compared below, which names what is missing
    finally:
        consumer.stop()
    read = {}
    for event in consumer.named("record_data"):
        read.setdefault((event["partition"], event["offset"]), set()).add(event["value"])
    values_read = [v for values in read.values() for v in values]
    missing = sorted(key for key in acked if acked[key] not in read.get(key, set()))
    log = (workdir / "producer.stderr").read_text(errors="replace").splitlines()
    return {
        "batches retried (in flight at the kill)": sum("Got error produce response" in line and "retrying" in line
                                                       and "Disconnected from node" in line for line in log),
        "the killed node led partition 0": victim >= 0,
        "acknowledged sends": len(acked),
        "failed sends": len(producer.named("producer_send_error")),
        "acknowledged values read at their offsets": not missing and len(acked) > 0,
        "values read at two offsets": len(values_read) - len(set(values_read)),
        "missing (first ten)": missing[:10],
        "send errors (first three)": sorted({e.get("exception", "") + ": " + e.get("message", "")
                                             for e in producer.named("producer_send_error")})[:3],
    }


def test_verifiable_producer_and_consumer_lose_nothing_acknowledged_across_a_leader_kill(
        kafka_libs, apache_kafka, cluster, table, tmp_path):
    observed = {}
    (tmp_path / "apache").mkdir()
    (tmp_path / "raykafka").mkdir()
    observed[APACHE] = story(kafka_libs, apache_kafka.bootstrap_servers, apache_kafka.kill_node,
                             apache_kafka.restart_node, tmp_path / "apache")

    def kill_broker(broker_id):
        cluster.kill("broker", broker_id, restart=False)

    observed[RAYKAFKA] = story(kafka_libs, cluster.bootstrap_servers, kill_broker, cluster.restart_broker,
                               tmp_path / "raykafka")
    expected = {"the killed node led partition 0": True, "acknowledged sends": MESSAGES, "failed sends": 0,
                "acknowledged values read at their offsets": True, "values read at two offsets": 0,
                "missing (first ten)": [], "send errors (first three)": []}
    # Not a check, a figure: how many partition batches in flight to the killed leader were retried
    # (from the producer's log), which shows the kill landed on sends in progress.
    table["batches retried (in flight at the kill)"] = {name: str(seen["batches retried (in flight at the kill)"])
                                                         for name, seen in observed.items()}
    failures = []
    for check, want in expected.items():
        try:
            record(table, check, {name: seen[check] for name, seen in observed.items()}, want)
        except AssertionError as error:
            failures.append((check, str(error)))
    assert not failures, "\n".join(text for _, text in failures)
