"""The controller on a real 3-broker cluster decides leadership as Kafka's does: it survives its own
kill with a higher epoch, replaces a killed send thread, moves a dead broker's leaderships, runs
topic creation and deletion with Kafka's errors, a zombie controller is fenced by epoch, and
controllers that start together on Ray's key-value store never share an epoch."""
from __future__ import annotations

import time

import pytest
import ray

from actors.core.controller.metadata_store import MetadataStore
from actors.core.errors import ErrorCode
from actors.core.messages.create_topics import CreatableTopic, CreateTopicsRequest
from actors.core.messages.leader_and_isr import (
    LeaderAndIsrPartitionState, LeaderAndIsrRequest, LeaderAndIsrTopicState,
)
from actors.ray_metadata_store import RayKeyValueStore
from orchestration import KafkaError
from orchestration.admin.wait import wait_until
from tests.support.clusters import running_cluster

pytestmark = pytest.mark.integration

SESSION_TIMEOUT_MS = 6000
CONFIG = {"broker.session.timeout.ms": str(SESSION_TIMEOUT_MS), "broker.heartbeat.interval.ms": "500",
          "controlled.shutdown.retry.backoff.ms": "500", "auto.leader.rebalance.enable": "false"}


@pytest.fixture(scope="module")
def cluster(ray_session, tmp_path_factory):
    with running_cluster(tmp_path_factory, CONFIG) as started:
        yield started


def all_led_by_live_brokers(cluster, topic: str, dead=()) -> bool:
    return all(p.leader >= 0 and p.leader not in dead and p.log_end_offset >= 0
               for p in cluster.describe_topic(topic))


def broker_view(cluster, broker_id: int, topic: str) -> dict:
    return {(e["partition"]): (e["leader"], e["leader_epoch"])
            for e in ray.get(cluster.broker(broker_id).describe_partitions.remote(), timeout=30)
            if e["topic"] == topic}


def test_topic_creation_and_deletion_with_kafkas_errors(cluster):
    cluster.create_topic("life", partitions=6, replication_factor=3, config={"min.insync.replicas": "2"})
    described = cluster.describe_topic("life")
    assert [p.partition for p in described] == list(range(6))
    assert all(sorted(p.replicas) == [0, 1, 2] and p.isr == p.replicas for p in described)
    assert sorted(p.leader for p in described) == [0, 0, 1, 1, 2, 2], "leaders spread round-robin"

    errors = {
        "INVALID_REPLICATION_FACTOR": lambda: cluster.create_topic("too-wide", replication_factor=4),
        "TOPIC_ALREADY_EXISTS": lambda: cluster.create_topic("life"),
        "INVALID_TOPIC_EXCEPTION": lambda: cluster.create_topic("no spaces"),
        "INVALID_PARTITIONS": lambda: cluster.create_topic("none", partitions=0),
        "INVALID_CONFIG": lambda: cluster.create_topic("odd", config={"no.such.key": "1"}),
        "UNKNOWN_TOPIC_OR_PARTITION": lambda: cluster.delete_topic("never-was"),
    }
    for name, action in errors.items():
        with pytest.raises(KafkaError) as raised:
            action()
        assert raised.value.name == name
    assert sorted(cluster.topics()) == ["life"], "no refused request created anything"

    producer = cluster.producer({"acks": "1"})
    producer.send("life", value=b"soon gone", partition=0).result(timeout=30)
    cluster.delete_topic("life")
    assert "life" not in cluster.topics()
    for broker_id in cluster.broker_ids:
        assert broker_view(cluster, broker_id, "life") == {}, "every replica was stopped and deleted"
    cluster.create_topic("life", partitions=1, replication_factor=3)
    assert cluster.describe_topic("life")[0].log_end_offset == 0, "a new topic, not the old log"
    cluster.delete_topic("life")


def test_killed_controller_comes_back_with_a_higher_epoch_and_the_same_state(cluster):
    cluster.create_topic("survives", partitions=3, replication_factor=3)
    before = {(p.partition, tuple(p.replicas)) for p in cluster.describe_topic("survives")}
    epoch = cluster.controller_epoch()
    cluster.kill("controller")
    wait_until(lambda: cluster.controller_epoch() > epoch, 60, "a restarted controller")
    assert {(p.partition, tuple(p.replicas)) for p in cluster.describe_topic("survives")} == before
    wait_until(lambda: all_led_by_live_brokers(cluster, "survives"), 60, "every partition led")
    new_epoch = cluster.controller_epoch()
    wait_until(lambda: all(ray.get(cluster.broker(b).describe_broker.remote())["controller_epoch"] == new_epoch
                           for b in cluster.broker_ids), 60, "brokers to hear from the new controller")
    producer = cluster.producer({"acks": "1"})
    assert producer.send("survives", value=b"after", partition=1).result(timeout=30).offset == 0
    cluster.delete_topic("survives")


def test_killed_send_thread_is_replaced_and_its_broker_converges(cluster):
    controller = cluster.controller()
    victim = 1
    # Queue a burst of control requests for the victim's thread, then kill the thread at once.
    refs = [controller.handle.remote(CreateTopicsRequest(topics=(CreatableTopic(
        name=f"burst-{i}", num_partitions=4, replication_factor=3),))) for i in range(8)]
    cluster.kill("request-send-thread", victim)
    assert all(r.topics[0].error_code == ErrorCode.NONE for r in ray.get(refs, timeout=60))

    def converged() -> bool:
        for i in range(8):
            expected = {p.partition: (p.leader, p.leader_epoch) for p in cluster.describe_topic(f"burst-{i}")}
            if broker_view(cluster, victim, f"burst-{i}") != expected:
                return False
        return True
    wait_until(converged, 60, f"broker {victim} to converge on the controller's state")
    for i in range(8):
        cluster.delete_topic(f"burst-{i}")


def test_dead_broker_loses_its_leaderships_within_the_session_timeout(cluster):
    cluster.create_topic("moves", partitions=6, replication_factor=3)
    victim = cluster.describe_topic("moves")[0].leader
    epochs = {p.partition: p.leader_epoch for p in cluster.describe_topic("moves")}
    victim_broker_epoch = cluster.describe_cluster()["brokers"][victim]["broker_epoch"]
    killed_at = time.monotonic()
    cluster.kill("broker", victim, restart=False)
    wait_until(lambda: all_led_by_live_brokers(cluster, "moves", dead=(victim,)),
               SESSION_TIMEOUT_MS / 1000, "new leaders within the session timeout")
    print(f"\nbroker {victim} killed -> every partition led by a live broker in "
          f"{time.monotonic() - killed_at:.2f}s")
    for p in cluster.describe_topic("moves"):
        assert victim not in p.isr and p.leader_epoch > epochs[p.partition]
    assert victim not in cluster.describe_cluster()["brokers"]

    cluster.restart_broker(victim)
    assert cluster.describe_cluster()["brokers"][victim]["broker_epoch"] > victim_broker_epoch, \
        "a restarted broker registers with a new broker epoch"
    cluster.delete_topic("moves")


def test_controlled_shutdown_moves_leaderships_before_the_broker_stops(cluster):
    cluster.create_topic("handover", partitions=6, replication_factor=3)
    leaving = 2
    assert any(p.leader == leaving for p in cluster.describe_topic("handover"))
    assert cluster.controlled_shutdown(leaving) == "NONE"
    for p in cluster.describe_topic("handover"):
        assert p.leader != leaving and leaving not in p.isr
    cluster.restart_broker(leaving)
    assert leaving in cluster.describe_cluster()["brokers"]
    cluster.delete_topic("handover")


def test_zombie_controller_is_fenced_by_every_broker_and_changes_nothing(cluster):
    cluster.create_topic("fenced", partitions=3, replication_factor=3)
    zombie = cluster.controller()
    old_epoch = ray.get(zombie.controller_epoch.remote())
    ray.get(zombie.pause.remote())  # a stop-the-world pause ...
    successor = cluster.start_controller()  # ... long enough for a new controller to take over
    new_epoch = ray.get(successor.controller_epoch.remote())
    assert new_epoch > old_epoch
    wait_until(lambda: all(ray.get(cluster.broker(b).describe_broker.remote())["controller_epoch"] == new_epoch
                           for b in cluster.broker_ids), 60, "every broker to follow the new controller")
    state_before = {b: broker_view(cluster, b, "fenced") for b in cluster.broker_ids}

    # What the zombie would send: every broker refuses it.
    for broker_id in cluster.broker_ids:
        stale = LeaderAndIsrRequest(controller_id=3000, controller_epoch=old_epoch, broker_epoch=-1,
                                    topic_states=(LeaderAndIsrTopicState(topic_name="fenced", partition_states=(
                                        LeaderAndIsrPartitionState(
                                            partition_index=0, controller_epoch=old_epoch, leader=broker_id,
                                            leader_epoch=99, isr=(broker_id,), partition_epoch=99,
                                            replicas=(0, 1, 2)),)),))
        answer = ray.get(cluster.broker(broker_id).handle.remote(stale), timeout=30)
        assert answer.error_code == ErrorCode.STALE_CONTROLLER_EPOCH

    # The zombie wakes up and acts: brokers refuse it, it resigns, nothing changes.
    ray.get(zombie.resume.remote())
    for broker_id in cluster.broker_ids:
        zombie.resync_broker.remote(broker_id)
    wait_until(lambda: not ray.get(zombie.describe_cluster.remote())["active"], 60, "the zombie to resign")
    answer = ray.get(zombie.handle.remote(CreateTopicsRequest(topics=(
        CreatableTopic(name="from-zombie", num_partitions=1, replication_factor=1),))), timeout=30)
    assert answer.topics[0].error_code == ErrorCode.NOT_CONTROLLER
    assert "from-zombie" not in cluster.topics()
    assert {b: broker_view(cluster, b, "fenced") for b in cluster.broker_ids} == state_before
    assert cluster.controller_epoch() == new_epoch
    ray.kill(zombie, no_restart=True)


# ------------------------------------------------------------------ epoch claims on Ray's store
CLAIMS_PER_CLAIMANT = 25
GATE_KEY = "/test/start-claiming"
GATE_TIMEOUT_S = 60


@ray.remote(num_cpus=0)
class EpochClaimant:
    """A process that becomes controller again and again on Ray's key-value store, as restarted
    controllers do, each time with a new store client."""

    def __init__(self, ray_namespace: str, name: str) -> None:
        self.kv = RayKeyValueStore(ray_namespace)
        self.name = name

    def ready(self) -> bool:
        return True

    def claim(self, claims: int) -> list[int]:
        # Every claimant waits at the same gate, so their claims overlap as much as they can.
        deadline = time.monotonic() + GATE_TIMEOUT_S
        while self.kv.get(GATE_KEY) is None:
            assert time.monotonic() < deadline, f"{self.name}: the start gate never opened"
            time.sleep(0.001)
        return [MetadataStore(self.kv, claimant=self.name).claim_controller_epoch() for _ in range(claims)]


def test_rays_key_value_store_creates_a_key_only_if_it_is_absent(ray_session):
    kv = RayKeyValueStore(f"{ray_session}-put-if-absent")
    assert kv.put_if_absent("/k", b"first") is True, "a missing key is created"
    assert kv.put_if_absent("/k", b"second") is False, "an existing key is reported as taken"
    assert kv.get("/k") == b"first", "and is not overwritten"


def test_controllers_racing_on_rays_store_win_each_epoch_exactly_once(ray_session):
    namespace = f"{ray_session}-epoch-race"
    claimants = [EpochClaimant.remote(namespace, f"claimant-{i}") for i in range(2)]
    ray.get([c.ready.remote() for c in claimants], timeout=GATE_TIMEOUT_S)
    refs = [c.claim.remote(CLAIMS_PER_CLAIMANT) for c in claimants]
    RayKeyValueStore(namespace).put(GATE_KEY, b"go")
    won = ray.get(refs, timeout=GATE_TIMEOUT_S + 120)
    every_win = sorted(epoch for epochs in won for epoch in epochs)
    assert every_win == list(range(1, 2 * CLAIMS_PER_CLAIMANT + 1)), \
        f"each epoch must be won by exactly one claimant; they won {won}"
    assert MetadataStore(RayKeyValueStore(namespace)).stored_controller_epoch() == 2 * CLAIMS_PER_CLAIMANT
    for claimant in claimants:
        ray.kill(claimant, no_restart=True)
