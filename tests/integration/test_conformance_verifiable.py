"""Kafka's own tools that need more than one broker give the same answers against a 3-node Apache
Kafka and a 3-broker raykafka in the same test. kafka-reassign-partitions (--generate, --execute of a
plan that moves a replica, --verify until done, --list once none is in progress) and kafka-leader-election (preferred, on the moved
partition and on one whose preferred replica leads) leave the data readable; kafka-leader-election
--election-type unclean elects the live out-of-sync replica of a partition whose only in-sync
replica is down (its follower killed until the ISR shrank to the leader, then the leader killed and
the follower restarted); and Kafka's verifiable
producer and consumer (the clients Kafka's system tests use to prove that nothing acknowledged is
lost) run unchanged across a leader kill: the producer sends keyed values with acks=all, idempotent
and retrying as Kafka's system tests run it, while the leader of partition 0 is killed (the table
shows how many batches were in flight to it and retried), the killed node comes back, and the
consumer, in a group from the earliest offset, must read every acknowledged value at the offset it
was acknowledged at, none twice. Automatic leader rebalancing is off in both, so that only the tools
move leaders.
The module prints a table of both systems' answers."""
from __future__ import annotations

import json
import re
import threading

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from orchestration.admin.wait import wait_until
from orchestration.apache_kafka import ApacheKafkaCluster, start_tool
from tests.integration.test_conformance_tools import tool
from tests.support.clusters import running_cluster
from tests.support.conformance import APACHE, RAYKAFKA, record

pytestmark = [pytest.mark.integration, pytest.mark.conformance]

TOPIC, GROUP = "verifiable", "verifiable-group"
PARTITIONS = 3
MESSAGES, THROUGHPUT = 1600, 200  # eight seconds of sends; the kill lands in the second or third
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
CONFORMANCE_TABLE = "Kafka's multi-broker tools and verifiable clients"  # conftest.table's title
# Leaders move only when a tool or a kill moves them (Kafka's periodic preferred-leader rebalance would
# otherwise undo a moved leader before kafka-leader-election runs).
CONFIG = {"auto.leader.rebalance.enable": "false"}
REASSIGNED = "reassigned"
REASSIGN_LINES = [f"value-{n}" for n in range(12)]


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
    with ApacheKafkaCluster(kafka_libs, tmp_path_factory.mktemp("apache-kafka"), nodes=3, config=CONFIG) as started:
        yield started


@pytest.fixture(scope="module")
def cluster(ray_session, tmp_path_factory):
    with running_cluster(tmp_path_factory, config=CONFIG) as started:
        yield started


def partitions_of(admin: AdminClient, topic: str, index: dict[int, int]) -> dict[int, tuple]:
    """partition -> (leader, replicas, sorted ISR) with each broker id as its rank among the system's brokers."""
    found = admin.list_topics(topic, timeout=10).topics[topic].partitions
    return {p: (index.get(found[p].leader, -1), [index[r] for r in found[p].replicas], sorted(index[r] for r in found[p].isrs))
            for p in sorted(found)}


def ranked(text: str, index: dict[int, int]) -> list:
    """A reassignment tool's output with broker ids as ranks: its JSON lines parsed, its other lines stripped."""
    lines = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("{"):
            plan = json.loads(line)
            for partition in plan.get("partitions", []):
                partition["replicas"] = [index[r] for r in partition["replicas"]]
                # A replica's log directory is named by its path, which differs between the systems.
                partition["log_dirs"] = [d if d == "any" else "a log directory" for d in partition["log_dirs"]]
            lines.append(plan)
        elif line:
            lines.append(re.sub(r"brokers? ([\d,]+)", lambda m: "brokers " + ",".join(
                str(index[int(b)]) for b in m.group(1).split(",")), line))
    return lines


def shape(plan: dict) -> list:
    """What a proposed plan must be, whatever the tool's random start: each partition once, its replicas
    as many distinct brokers as before, its log dirs any."""
    return sorted((p["topic"], p["partition"], len(p["replicas"]), len(set(p["replicas"])), p["log_dirs"])
                  for p in plan["partitions"])


def reassignment_story(libs, bootstrap: str, workdir) -> dict:
    """A topic whose partition 0 moves one replica to the third broker (its new first replica), is
    verified until done, has its preferred replica elected leader, and is read back whole."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    ids = sorted(admin.list_topics(timeout=10).brokers)
    assert len(ids) == 3, ids
    index = {broker_id: rank for rank, broker_id in enumerate(ids)}
    first, second, third = ids
    server = ("--bootstrap-server", bootstrap)
    seen = {}
    tool(libs, "kafka-topics", *server, "--create", "--topic", REASSIGNED,
         "--replica-assignment", f"{first}:{second},{second}:{third}")
    wait_until(lambda: all(p[0] >= 0 and len(p[2]) == 2 for p in partitions_of(admin, REASSIGNED, index).values()),
               60, f"both partitions of {REASSIGNED} led with two in-sync replicas at {bootstrap}")
    tool(libs, "kafka-console-producer", *server, "--topic", REASSIGNED,
         stdin="".join(line + "\n" for line in REASSIGN_LINES))

    topics_file = workdir / "topics.json"
    topics_file.write_text(json.dumps({"version": 1, "topics": [{"topic": REASSIGNED}]}), encoding="utf-8")
    generated = ranked(tool(libs, "kafka-reassign-partitions", *server, "--generate", "--topics-to-move-json-file",
                            str(topics_file), "--broker-list", ",".join(map(str, ids))), index)
    seen["generate"] = [line if not isinstance(line, dict) else (line if n == 1 else shape(line))
                        for n, line in enumerate(generated)]

    plan = workdir / "plan.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": REASSIGNED, "partition": 0, "replicas": [third, first], "log_dirs": ["any", "any"]}]}),
        encoding="utf-8")
    seen["execute"] = ranked(tool(libs, "kafka-reassign-partitions", *server, "--execute",
                                  "--reassignment-json-file", str(plan)), index)
    verified = []

    def verify_done() -> bool:
        # Once done, --verify clears the replication throttles on every broker (IncrementalAlterConfigs
        # on broker resources) and on the topic.
        text = tool(libs, "kafka-reassign-partitions", *server, "--verify", "--reassignment-json-file", str(plan))
        verified.append(ranked(text, index))
        # "There is no active reassignment ..., but replica set is X rather than Y" is the tool's
        # reading of a moment when the controller has finished the move and the broker the tool
        # describes the topic at has not yet had the new replica set (UpdateMetadata on its way):
        # not done yet, as "still in progress".
        return "still in progress" not in text and "rather than" not in text
    wait_until(verify_done, 90, f"kafka-reassign-partitions --verify to report {REASSIGNED}-0 done at {bootstrap}")
    seen["verify"] = verified[-1]
    seen["list"] = run_tool_lines(libs, "kafka-reassign-partitions", *server, "--list")
    wait_until(lambda: partitions_of(admin, REASSIGNED, index)[0][2] == [0, 2], 60,
               f"{REASSIGNED}-0's ISR to be its two new replicas at {bootstrap}")
    seen["after reassignment"] = partitions_of(admin, REASSIGNED, index)

    election = workdir / "election.json"
    election.write_text(json.dumps({"partitions": [{"topic": REASSIGNED, "partition": p} for p in (0, 1)]}),
                        encoding="utf-8")
    done = run_tool_lines(libs, "kafka-leader-election", *server, "--election-type", "preferred",
                          "--path-to-json-file", str(election))
    seen["leader-election"] = done
    wait_until(lambda: partitions_of(admin, REASSIGNED, index)[0][0] == 2, 60,
               f"{REASSIGNED}-0 led by its preferred replica at {bootstrap}")
    seen["after election"] = partitions_of(admin, REASSIGNED, index)
    seen["read back"] = sorted(tool(libs, "kafka-console-consumer", *server, "--topic", REASSIGNED,
                                    "--from-beginning", "--max-messages", str(len(REASSIGN_LINES)),
                                    "--timeout-ms", "60000").splitlines())
    printed = tool(libs, "kafka-cluster", "cluster-id", *server).strip()
    seen["cluster-id"] = printed == f"Cluster ID: {admin.list_topics(timeout=10).cluster_id}"
    return seen


def run_tool_lines(libs, name, *args) -> list[str]:
    """A tool's output lines, stripped, sorted, empty ones left out."""
    return sorted(line.strip() for line in tool(libs, name, *args).splitlines() if line.strip())


def test_reassign_partitions_and_preferred_leader_election(kafka_libs, apache_kafka, cluster, table, tmp_path):
    observed = {}
    for name, bootstrap in ((APACHE, apache_kafka.bootstrap_servers), (RAYKAFKA, cluster.bootstrap_servers)):
        workdir = tmp_path / name.replace(" ", "-")
        workdir.mkdir()
        observed[name] = reassignment_story(kafka_libs, bootstrap, workdir)
    apache = observed[APACHE]
    failures = []
    # Apache Kafka's answers are the expectation; these pin that they are what the steps say.
    moved = {0: (0, [2, 0], [0, 2]), 1: (1, [1, 2], [1, 2])}
    pinned = {"moved": apache["after reassignment"] == moved,
              "elected": apache["after election"] == {0: (2, [2, 0], [0, 2]), 1: (1, [1, 2], [1, 2])},
              "election answers": apache["leader-election"] == [
                  f"Successfully completed leader election (PREFERRED) for partitions {REASSIGNED}-0",
                  f"Valid replica already elected for partitions {REASSIGNED}-1"]}
    failures += [f"Apache Kafka's answer is not what the step expects: {what}: {apache}"
                 for what, held in pinned.items() if not held]
    for check, key, expected in (
            ("kafka-reassign-partitions --generate", "generate", apache["generate"]),
            ("kafka-reassign-partitions --execute", "execute", apache["execute"]),
            ("kafka-reassign-partitions --verify (done)", "verify", apache["verify"]),
            ("kafka-reassign-partitions --list (none in progress)", "list", ["No partition reassignments found."]),
            ("replicas, leader and ISR after the move", "after reassignment", moved),
            ("kafka-leader-election --election-type preferred", "leader-election", apache["leader-election"]),
            ("replicas, leader and ISR after the election", "after election", apache["after election"]),
            ("records read back after the move", "read back", sorted(REASSIGN_LINES)),
            ("kafka-cluster cluster-id (DescribeCluster)", "cluster-id", True)):
        try:
            record(table, check, {name: seen[key] for name, seen in observed.items()}, expected)
        except AssertionError as exc:
            failures.append(str(exc))
    assert not failures, "\n".join(failures)


UNCLEAN = "unclean"


def unclean_election_story(libs, bootstrap: str, kill, restart_alone, restart) -> dict:
    """A partition on two brokers whose follower is killed until the ISR is the leader alone; then the
    leader is killed and the follower restarted: the partition has no leader and its one live replica
    is out of sync, which only an unclean election may elect. The leader is restarted at the end."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    ids = sorted(admin.list_topics(timeout=10).brokers)
    index = {broker_id: rank for rank, broker_id in enumerate(ids)}
    leader, follower = ids[0], ids[1]
    server = ("--bootstrap-server", bootstrap)
    seen = {}
    tool(libs, "kafka-topics", *server, "--create", "--topic", UNCLEAN, "--replica-assignment", f"{leader}:{follower}")
    wait_until(lambda: partitions_of(admin, UNCLEAN, index)[0] == (0, [0, 1], [0, 1]), 60,
               f"{UNCLEAN}-0 led by its first replica with both in sync at {bootstrap}")
    kill(follower)
    wait_until(lambda: partitions_of(admin, UNCLEAN, index)[0] == (0, [0, 1], [0]), 60,
               f"{UNCLEAN}-0's ISR to shrink to its leader after its follower was killed at {bootstrap}")
    kill(leader)
    restart_alone(follower)
    wait_until(lambda: partitions_of(admin, UNCLEAN, index)[0][0] == -1, 60,
               f"{UNCLEAN}-0 to have no leader once its only in-sync replica was killed at {bootstrap}")
    leaderless, replicas, isr = partitions_of(admin, UNCLEAN, index)[0]
    seen["before election"] = (leaderless, replicas, 1 in isr)
    seen["ISR while leaderless"] = isr
    seen["leader-election"] = run_tool_lines(libs, "kafka-leader-election", *server, "--election-type", "unclean",
                                             "--topic", UNCLEAN, "--partition", "0")
    wait_until(lambda: partitions_of(admin, UNCLEAN, index)[0][0] == 1, 60,
               f"{UNCLEAN}-0 led by its out-of-sync replica after the unclean election at {bootstrap}")
    seen["after election"] = partitions_of(admin, UNCLEAN, index)[0]
    restart(leader)
    wait_until(lambda: partitions_of(admin, UNCLEAN, index)[0][2] == [0, 1], 90,
               f"{UNCLEAN}-0's old leader to rejoin the ISR after its restart at {bootstrap}")
    return seen


def test_unclean_leader_election_elects_the_out_of_sync_replica(kafka_libs, apache_kafka, cluster, table):
    observed = {
        APACHE: unclean_election_story(
            kafka_libs, apache_kafka.bootstrap_servers, apache_kafka.kill_node,
            # Every node is also a controller voter: with the leader and the follower down the quorum
            # is lost until the follower is back, so its restart waits for two brokers, not three.
            lambda node: apache_kafka.restart_node(node, brokers=2), apache_kafka.restart_node),
        RAYKAFKA: unclean_election_story(
            kafka_libs, cluster.bootstrap_servers, lambda broker_id: cluster.kill("broker", broker_id, restart=False),
            cluster.restart_broker, cluster.restart_broker)}
    # Not a check, a figure: Kafka 4 empties the ISR of a leaderless partition and keeps its last
    # member as an eligible leader replica (KIP-966); Kafka 2.4, and raykafka, keep it in the ISR.
    table["ISR while leaderless (KIP-966 empties it)"] = {
        name: str(seen["ISR while leaderless"]) for name, seen in observed.items()}
    failures = []
    for check, key, expected in (
            ("no leader, the live replica out of the ISR", "before election", (-1, [0, 1], False)),
            ("kafka-leader-election --election-type unclean", "leader-election",
             [f"Successfully completed leader election (UNCLEAN) for partitions {UNCLEAN}-0"]),
            ("leader and ISR after the unclean election", "after election", (1, [0, 1], [1]))):
        try:
            record(table, check, {name: seen[key] for name, seen in observed.items()}, expected)
        except AssertionError as exc:
            failures.append(str(exc))
    assert not failures, "\n".join(failures)


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
