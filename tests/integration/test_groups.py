"""Consumer groups on a real 3-broker cluster: three consumers split six partitions with no overlap
and no gap; a consumer process that dies is expelled within session.timeout.ms and its partitions
reassigned; committed offsets survive killing the coordinator actor and killing the broker that
leads the group's __consumer_offsets partition, and the group is stable again afterwards; a deleted
topic's committed offsets leave the group and stay gone when its restarted coordinator reloads,
which loads its offsets partitions once."""
from __future__ import annotations

import time

import pytest
import ray

from actors.broker import group_coordinator_actor_name
from orchestration.clients.broker_directory import BrokerDirectory
from orchestration.admin.wait import wait_until
from tests.support.clusters import running_cluster
from orchestration.clients.consumer import Consumer
from orchestration.admin.groups import find_coordinator

pytestmark = pytest.mark.integration

SESSION_TIMEOUT_MS = 6000
CONFIG = {"offsets.topic.num.partitions": "3", "offsets.topic.replication.factor": "3",
          "group.initial.rebalance.delay.ms": "200", "broker.session.timeout.ms": "6000",
          "broker.heartbeat.interval.ms": "500", "replica.fetch.wait.max.ms": "100",
          "auto.leader.rebalance.enable": "false"}
GROUP_CONFIG = {"session.timeout.ms": str(SESSION_TIMEOUT_MS), "heartbeat.interval.ms": "500",
                "auto.offset.reset": "earliest", "enable.auto.commit": "false"}


@pytest.fixture(scope="module")
def cluster(ray_session, tmp_path_factory):
    with running_cluster(tmp_path_factory, CONFIG) as started:
        yield started


@ray.remote(num_cpus=0)
class ConsumerProcess:
    """A consumer in its own process, so that a test can kill it as a crash would."""

    def __init__(self, namespace: str, broker_ids: list[int], config: dict, topics: list[str]) -> None:
        self.consumer = Consumer(BrokerDirectory(namespace=namespace, bootstrap_broker_ids=broker_ids), config)
        self.consumer.subscribe(topics)

    def poll(self, timeout_ms: int) -> int:
        return len(self.consumer.poll(timeout_ms=timeout_ms))

    def assignment(self) -> list:
        return sorted(self.consumer.assignment())


def stable_with(cluster, group: str, members: int):
    description = cluster.describe_group(group)
    return description if description.state == "Stable" and len(description.members) == members else None


def stable_and_synced(cluster, group: str, consumers, partitions: int):
    """The coordinator has the group Stable with every consumer in it, and every consumer has had
    its SyncGroup answer (the coordinator is Stable once the leader's SyncGroup arrives, before the
    members learn their assignments, in Kafka as here): the consumers' assignments, else None."""
    if not stable_with(cluster, group, len(consumers)):
        return None
    assignments = ray.get([c.assignment.remote() for c in consumers], timeout=60)
    return assignments if sum(len(a) for a in assignments) >= partitions and all(assignments) else None


def poll_all(consumers, rounds: int = 1) -> None:
    for _ in range(rounds):
        ray.get([c.poll.remote(200) for c in consumers], timeout=60)


def test_three_consumers_split_six_partitions_then_a_dead_one_is_expelled(cluster):
    cluster.create_topic("shared", partitions=6, replication_factor=3)
    config = {**GROUP_CONFIG, "group.id": "splitters", "partition.assignment.strategy": "range"}
    consumers = [ConsumerProcess.remote(cluster.namespace, cluster.broker_ids, config, ["shared"]) for _ in range(3)]

    def settled():
        poll_all(consumers)
        return stable_and_synced(cluster, "splitters", consumers, 6)
    assignments = wait_until(settled, 60, "a stable group of three, each member with its assignment")
    owned = [tp for a in assignments for tp in a]
    assert sorted(owned) == [("shared", p) for p in range(6)], "every partition owned exactly once"
    assert all(len(a) == 2 for a in assignments)

    victim = consumers.pop(0)
    died_at = time.monotonic()
    ray.kill(victim, no_restart=True)  # no LeaveGroup: the coordinator must notice by itself

    def regrouped():
        poll_all(consumers)
        return stable_and_synced(cluster, "splitters", consumers, 6)
    assignments = wait_until(regrouped, (SESSION_TIMEOUT_MS * 3) / 1000,
                             "the dead member expelled and the group stable, each member with its assignment")
    print(f"\nmember death -> stable group of two in {time.monotonic() - died_at:.2f}s")
    owned = sorted(tp for a in assignments for tp in a)
    assert owned == [("shared", p) for p in range(6)], "the dead member's partitions were reassigned"


def committed_offsets(consumer, partitions) -> dict:
    return consumer.committed(partitions)


def test_committed_offsets_survive_coordinator_and_offsets_leader_failures(cluster):
    cluster.create_topic("progress", partitions=2, replication_factor=3)
    producer = cluster.producer({"acks": "all"})
    for i in range(40):
        producer.send("progress", value=f"p{i}".encode(), partition=i % 2)
    producer.flush(timeout=60)
    partitions = [("progress", 0), ("progress", 1)]
    consumer = cluster.consumer({**GROUP_CONFIG, "group.id": "durable-group"})
    consumer.subscribe(["progress"])
    read = 0
    deadline = time.monotonic() + 60
    while read < 20 and time.monotonic() < deadline:
        read += len(consumer.poll(timeout_ms=200))
    consumer.commit()
    acknowledged = committed_offsets(consumer, partitions)
    assert sum(v for v in acknowledged.values() if v) == read

    coordinator_id, _ = find_coordinator(cluster._new_directory(), "durable-group")
    cluster.kill("group-coordinator", coordinator_id)  # Ray restarts it; it reloads its groups

    def offsets_back():
        consumer.poll(timeout_ms=100)
        return committed_offsets(consumer, partitions) == acknowledged and stable_with(cluster, "durable-group", 1)
    wait_until(offsets_back, 60, "the same committed offsets from the restarted coordinator")

    cluster.kill("broker", coordinator_id, restart=False)  # the offsets partition's leader
    wait_until(lambda: find_coordinator(cluster._new_directory(), "durable-group")[0] != coordinator_id, 60,
               "the group's offsets partition to lead elsewhere")
    old_coordinator = ray.get_actor(f"raykafka-group-coordinator-{coordinator_id}", namespace=cluster.namespace)
    wait_until(lambda: ray.get(old_coordinator.ping.remote())["groups"] == 0, 30,
               "the dead broker's coordinator to drop its groups")
    wait_until(offsets_back, 60, "the same committed offsets from the new offsets leader")
    consumer.close()
    cluster.restart_broker(coordinator_id)


def test_a_deleted_topics_offsets_leave_the_group_and_a_reloading_coordinator_does_not_bring_them_back(cluster):
    cluster.create_topic("doomed", partitions=2, replication_factor=3)
    cluster.create_topic("kept", partitions=1, replication_factor=3)
    partitions = [("doomed", 0), ("doomed", 1), ("kept", 0)]
    consumer = cluster.consumer({**GROUP_CONFIG, "group.id": "tidy-group"})
    consumer.assign(partitions)
    consumer.commit({("doomed", 0): 3, ("doomed", 1): 4, ("kept", 0): 5})
    assert consumer.committed(partitions) == {("doomed", 0): 3, ("doomed", 1): 4, ("kept", 0): 5}
    assert set(cluster.describe_group("tidy-group").offsets) == set(partitions)
    consumer.close()

    cluster.delete_topic("doomed")

    def committed_offsets_shown():
        return {tp: lag.committed_offset for tp, lag in cluster.describe_group("tidy-group").offsets.items()}
    wait_until(lambda: committed_offsets_shown() == {("kept", 0): 5}, 60,
               "the deleted topic's offsets to leave the group")
    checker = cluster.consumer({**GROUP_CONFIG, "group.id": "tidy-group"})
    assert checker.committed(partitions) == {("doomed", 0): None, ("doomed", 1): None, ("kept", 0): 5}

    coordinator_id, _ = find_coordinator(cluster._new_directory(), "tidy-group")
    coordinator = ray.get_actor(group_coordinator_actor_name(coordinator_id), namespace=cluster.namespace)
    wait_until(lambda: ray.get(coordinator.ping.remote(), timeout=30)["appends_in_flight"] == 0, 30,
               "the coordinator's tombstones to be acknowledged")
    old_pid = ray.get(coordinator.ping.remote(), timeout=30)["pid"]
    cluster.kill("group-coordinator", coordinator_id)  # Ray restarts it; it reloads its groups from the log
    wait_until(lambda: ray.get(coordinator.ping.remote(), timeout=30)["pid"] != old_pid, 60,
               "the coordinator to restart")
    wait_until(lambda: committed_offsets_shown() == {("kept", 0): 5}, 60,
               "the restarted coordinator to show the kept topic's offset and nothing of the deleted one")
    assert checker.committed(partitions) == {("doomed", 0): None, ("doomed", 1): None, ("kept", 0): 5}
    checker.close()

    # Its broker watch has looked at least twice, so any second adoption of the broker's
    # leaderships would have happened by now: each offsets partition it leads was loaded once.
    wait_until(lambda: ray.get(coordinator.ping.remote(), timeout=30)["watch_rounds"] >= 2, 30,
               "the restarted coordinator's broker watch to look twice")
    state = ray.get(coordinator.ping.remote(), timeout=30)
    assert state["loads"] and set(state["loads"].values()) == {1}, state
