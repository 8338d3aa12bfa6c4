"""Proves ControllerCore acts as Kafka 2.4's controller (who leads, which ISR and epochs, which
control requests reach which broker in which order, what the store holds) by driving it without Ray,
through a fake clock and an in-memory store, over the stories of Kafka's ControllerIntegrationTest
and TopicDeletionManagerTest: registration, topic admin, broker failure, controlled shutdown, ISR
changes, elections, failover and resync."""
from __future__ import annotations

import random

import pytest

from actors.core.controller.state import LEADER_DURING_DELETE
from actors.core.errors import ErrorCode
from actors.core.messages._base import NO_LEADER
from actors.core.messages.alter_partition import (
    AlterPartitionPartitionData, AlterPartitionRequest, AlterPartitionTopicData,
)
from actors.core.messages.create_topics import (
    CreatableReplicaAssignment, CreatableTopic, CreateTopicsRequest,
)
from actors.core.messages.broker_registration import BrokerRegistrationRequest
from actors.core.messages.elect_leaders import UNCLEAN_ELECTION, ElectLeadersRequest, TopicPartitions
from actors.core.messages.leader_and_isr import LeaderAndIsrRequest, LeaderAndIsrResponse
from actors.core.messages.stop_replica import StopReplicaRequest, StopReplicaResponse
from actors.core.messages.update_metadata import UpdateMetadataBroker, UpdateMetadataRequest
from tests.support.controller_driver import (
    CLUSTER_ID, ControllerDriver, broker_host, leader_and_isr_states, stop_replica_partitions, update_metadata_states,
)

UNCLEAN = "unclean.leader.election.enable"


# ------------------------------------------------------------------------------------ helpers
def cluster(*broker_ids: int, config: dict | None = None, **options) -> ControllerDriver:
    """A started controller with ``broker_ids`` registered, in that order, and nothing sent yet."""
    driver = ControllerDriver(config=config, **options)
    driver.register_brokers(*broker_ids)
    driver.clear_sends()
    return driver


def create(driver: ControllerDriver, name: str, assignment: dict[int, list[int]], **options) -> None:
    result = driver.create_topic(name, assignment=assignment, **options)
    assert result.error_code == ErrorCode.NONE, result


def shrink_isr(driver: ControllerDriver, topic: str, partition: int, new_isr: list[int]) -> None:
    """The partition's leader changes its ISR through AlterPartition, accepted."""
    response = driver.alter_partition(topic, partition, new_isr)
    assert response.error_code == ErrorCode.NONE
    assert response.topics[0].partitions[0].error_code == ErrorCode.NONE, response


def last_leader_and_isr(driver: ControllerDriver, broker_id: int, topic: str, partition: int):
    """The newest LeaderAndIsr partition state ``broker_id`` was sent for the partition, or None."""
    found = None
    for request in driver.requests_to(broker_id, LeaderAndIsrRequest):
        found = leader_and_isr_states(request).get((topic, partition), found)
    return found


def last_update_metadata(driver: ControllerDriver, broker_id: int, topic: str, partition: int):
    found = None
    for request in driver.requests_to(broker_id, UpdateMetadataRequest):
        found = update_metadata_states(request).get((topic, partition), found)
    return found


def leader_and_isr_partitions(driver: ControllerDriver, broker_id: int) -> set[tuple[str, int]]:
    return {tp for r in driver.requests_to(broker_id, LeaderAndIsrRequest) for tp in leader_and_isr_states(r)}


def stop_replicas(driver: ControllerDriver, broker_id: int, *, delete: bool) -> set[tuple[str, int]]:
    return {tp for r in driver.requests_to(broker_id, StopReplicaRequest) if r.delete_partitions is delete
            for tp in stop_replica_partitions(r)}


def brief(driver: ControllerDriver, topic: str) -> list[tuple]:
    """(leader, isr, leader_epoch, partition_epoch) per partition: what a Kafka engineer looks at."""
    return [(p["leader"], p["isr"], p["leader_epoch"], p["partition_epoch"]) for p in driver.core.describe_topic(topic)]


def live_brokers(*broker_ids: int) -> tuple[UpdateMetadataBroker, ...]:
    return tuple(UpdateMetadataBroker(id=b, host=broker_host(b)) for b in broker_ids)


class FixedStart(random.Random):
    """A random source whose draws are all 0: Kafka's assignment with a fixed start index and shift."""

    def randrange(self, *args, **kwargs) -> int:
        return 0


# ------------------------------------------------------------------------------- registration
def test_registration_hands_out_increasing_broker_epochs_and_opens_a_channel_per_broker():
    driver = cluster(3, 1, 2)
    epochs = [driver.broker_epochs[b] for b in (3, 1, 2)]
    assert epochs == sorted(epochs) and len(set(epochs)) == 3
    assert driver.channels == {b: driver.broker_epochs[b] for b in (1, 2, 3)}
    assert driver.core.describe_cluster()["brokers"] == {
        b: {"broker_epoch": driver.broker_epochs[b], "host": broker_host(b), "shutting_down": False,
            "listeners": {}}
        for b in (1, 2, 3)}


def test_a_retried_registration_of_the_same_process_returns_the_same_epoch_and_changes_nothing():
    driver = cluster(1, 2)
    create(driver, "t", {0: [1, 2]})
    before, stored = brief(driver, "t"), driver.snapshot()
    driver.clear_sends()
    response = driver.register(1)
    assert (response.error_code, response.broker_epoch) == (ErrorCode.NONE, driver.broker_epochs[1])
    assert brief(driver, "t") == before and driver.snapshot() == stored
    assert driver.sent == [] and driver.channels_removed == []


def test_a_bounced_broker_gets_a_new_epoch_and_is_handled_as_a_failure_then_a_startup():
    driver = cluster(1, 2)
    create(driver, "solo", {0: [1]})
    create(driver, "pair", {0: [1, 2]})
    old_epoch = driver.broker_epochs[1]
    driver.clear_sends()
    driver.channel_events.clear()

    response = driver.register(1, new_incarnation=True)

    assert response.error_code == ErrorCode.NONE and response.broker_epoch > max(old_epoch, driver.broker_epochs[2])
    assert driver.channel_events == [("remove", 1), ("add", 1)]
    assert driver.channels[1] == response.broker_epoch
    # Failure: broker 1's leadership of "pair" moves to 2 and it leaves the ISR. "solo" has no
    # other replica, so it goes offline and comes back with broker 1, under a newer leader epoch.
    assert brief(driver, "pair") == [(2, [2], 1, 1)]
    (solo,) = driver.core.describe_topic("solo")
    assert (solo["leader"], solo["isr"], solo["state"]) == (1, [1], "ONLINE_PARTITION")
    assert solo["leader_epoch"] > 0
    # The new incarnation hears about all its replicas, addressed to its new epoch.
    assert all(r.broker_epoch == response.broker_epoch for r in driver.requests_to(1))
    assert leader_and_isr_partitions(driver, 1) == {("solo", 0), ("pair", 0)}
    solo_state = last_leader_and_isr(driver, 1, "solo", 0)
    assert (solo_state.leader, solo_state.leader_epoch) == (1, solo["leader_epoch"])
    assert last_leader_and_isr(driver, 1, "pair", 0).leader == 2
    # The old incarnation is fenced.
    assert driver.heartbeat(1, broker_epoch=old_epoch).error_code == ErrorCode.STALE_BROKER_EPOCH


def test_a_registering_broker_gets_full_metadata_and_leader_and_isr_for_its_replicas():
    driver = cluster(1, 2, 3)
    create(driver, "a", {0: [1, 2], 1: [2, 3]})
    create(driver, "b", {0: [3, 1]})
    driver.broker_unreachable(3)
    driver.clear_sends()

    driver.register(3)

    # Kafka's onBrokerStartup order: the full metadata first, then the LeaderAndIsr for its replicas.
    assert driver.kinds_to(3)[:2] == ["UpdateMetadata", "LeaderAndIsr"]
    (leader_and_isr, *_) = driver.requests_to(3, LeaderAndIsrRequest)
    states = leader_and_isr_states(leader_and_isr)
    assert set(states) == {("a", 1), ("b", 0)}
    for (topic, partition), state in states.items():
        now = driver.partition(topic, partition)
        assert (state.leader, list(state.isr), state.leader_epoch) == (now["leader"], now["isr"], now["leader_epoch"])
        assert list(state.replicas) == now["replicas"]
    (update_metadata, *_) = driver.requests_to(3, UpdateMetadataRequest)
    assert set(update_metadata_states(update_metadata)) == {("a", 0), ("a", 1), ("b", 0)}
    assert update_metadata.live_brokers == live_brokers(1, 2, 3)
    # The others learn that broker 3 is back.
    for broker_id in (1, 2):
        assert driver.requests_to(broker_id, UpdateMetadataRequest)[-1].live_brokers == live_brokers(1, 2, 3)

    driver.clear_sends()
    driver.register(4)  # a brand-new broker with no replicas: full metadata, no LeaderAndIsr
    assert driver.kinds_to(4) == ["UpdateMetadata"]
    assert set(update_metadata_states(driver.requests_to(4)[0])) == {("a", 0), ("a", 1), ("b", 0)}


# ------------------------------------------------------------------------------- CreateTopics
KAFKA_ADMIN_TEST_ASSIGNMENT = {
    0: [0, 1, 2], 1: [1, 2, 3], 2: [2, 3, 4], 3: [3, 4, 0], 4: [4, 0, 1],
    5: [0, 2, 3], 6: [1, 3, 4], 7: [2, 4, 0], 8: [3, 0, 1], 9: [4, 1, 2],
}


def test_create_topic_assigns_replicas_as_kafka_and_elects_the_first_replica_with_all_in_the_isr():
    driver = cluster(0, 1, 2, 3, 4, random_source=FixedStart())
    result = driver.create_topic("t", num_partitions=10, replication_factor=3)
    assert (result.error_code, result.num_partitions, result.replication_factor) == (ErrorCode.NONE, 10, 3)
    described = driver.core.describe_topic("t")
    assert {p["partition"]: p["replicas"] for p in described} == KAFKA_ADMIN_TEST_ASSIGNMENT
    for p in described:
        replicas = KAFKA_ADMIN_TEST_ASSIGNMENT[p["partition"]]
        assert (p["leader"], p["isr"], p["leader_epoch"], p["partition_epoch"], p["state"]) == \
            (replicas[0], replicas, 0, 0, "ONLINE_PARTITION")


@pytest.mark.parametrize("seed", [0, 1, 7])
def test_create_topic_with_a_seeded_random_start_spreads_leaders_evenly(seed):
    driver = cluster(1, 2, 3, seed=seed)
    create_result = driver.create_topic("t", num_partitions=6, replication_factor=2)
    assert create_result.error_code == ErrorCode.NONE
    described = driver.core.describe_topic("t")
    assert all(len(set(p["replicas"])) == 2 and p["leader"] == p["replicas"][0] for p in described)
    leaders = [p["leader"] for p in described]
    assert sorted(leaders.count(b) for b in (1, 2, 3)) == [2, 2, 2]


def test_create_topic_sends_leader_and_isr_to_replicas_before_update_metadata_to_every_broker():
    driver = cluster(1, 2, 3, 4)
    create(driver, "t", {0: [2, 1, 3], 1: [3, 2, 1]}, configs={"min.insync.replicas": "2"})
    epoch = driver.core.controller_epoch

    for broker_id in (1, 2, 3):
        assert driver.kinds_to(broker_id) == ["LeaderAndIsr", "UpdateMetadata"]
        (request,) = driver.requests_to(broker_id, LeaderAndIsrRequest)
        assert (request.controller_epoch, request.broker_epoch) == (epoch, driver.broker_epochs[broker_id])
        states = leader_and_isr_states(request)
        assert {tp: (s.leader, s.isr, s.replicas, s.leader_epoch, s.partition_epoch, s.is_new)
                for tp, s in states.items()} == {
            ("t", 0): (2, (2, 1, 3), (2, 1, 3), 0, 0, True),
            ("t", 1): (3, (3, 2, 1), (3, 2, 1), 0, 0, True)}
        assert request.topic_states[0].topic_config == (("min.insync.replicas", "2"),)
        assert {leader.broker_id for leader in request.live_leaders} == {2, 3}
    assert driver.kinds_to(4) == ["UpdateMetadata"]
    for broker_id in (1, 2, 3, 4):
        (request,) = driver.requests_to(broker_id, UpdateMetadataRequest)
        assert (request.controller_epoch, request.broker_epoch) == (epoch, driver.broker_epochs[broker_id])
        assert {tp: (s.leader, s.isr) for tp, s in update_metadata_states(request).items()} == {
            ("t", 0): (2, (2, 1, 3)), ("t", 1): (3, (3, 2, 1))}
        assert request.live_brokers == live_brokers(1, 2, 3, 4)

    stored = driver.stored()
    assert stored.topics()["t"] == {"partitions": {"0": [2, 1, 3], "1": [3, 2, 1]},
                                    "config": {"min.insync.replicas": "2"}}
    assert {tp: (s["leader"], s["isr"], s["leader_epoch"]) for tp, s in stored.partition_states().items()} == {
        ("t", 0): (2, [2, 1, 3], 0), ("t", 1): (3, [3, 2, 1], 0)}


def test_minus_one_takes_the_controllers_num_partitions_and_default_replication_factor():
    driver = cluster(1, 2, 3, config={"num.partitions": "4", "default.replication.factor": "2"})
    result = driver.create_topic("t")
    assert (result.error_code, result.num_partitions, result.replication_factor) == (ErrorCode.NONE, 4, 2)
    assert all(len(p["replicas"]) == 2 for p in driver.core.describe_topic("t"))


def test_validate_only_answers_as_a_create_would_and_creates_nothing():
    driver = cluster(1, 2)
    stored = driver.snapshot()
    result = driver.create_topic("t", num_partitions=3, replication_factor=2, validate_only=True)
    assert (result.error_code, result.num_partitions, result.replication_factor) == (ErrorCode.NONE, 3, 2)
    assert driver.core.describe_topic("t") is None and driver.snapshot() == stored and driver.sent == []


CREATE_ERRORS = [
    # story, create_topic arguments, expected error
    ("replication factor above the live brokers", dict(name="t", num_partitions=1, replication_factor=4),
     ErrorCode.INVALID_REPLICATION_FACTOR),
    ("replication factor 0", dict(name="t", num_partitions=1, replication_factor=0),
     ErrorCode.INVALID_REPLICATION_FACTOR),
    ("name taken", dict(name="existing", num_partitions=1, replication_factor=1), ErrorCode.TOPIC_ALREADY_EXISTS),
    ("empty name", dict(name="", num_partitions=1, replication_factor=1), ErrorCode.INVALID_TOPIC_EXCEPTION),
    ("name '.'", dict(name=".", num_partitions=1, replication_factor=1), ErrorCode.INVALID_TOPIC_EXCEPTION),
    ("name '..'", dict(name="..", num_partitions=1, replication_factor=1), ErrorCode.INVALID_TOPIC_EXCEPTION),
    ("name of 250 characters", dict(name="x" * 250, num_partitions=1, replication_factor=1),
     ErrorCode.INVALID_TOPIC_EXCEPTION),
    ("illegal character", dict(name="a/b", num_partitions=1, replication_factor=1),
     ErrorCode.INVALID_TOPIC_EXCEPTION),
    ("zero partitions", dict(name="t", num_partitions=0, replication_factor=1), ErrorCode.INVALID_PARTITIONS),
    ("-2 partitions", dict(name="t", num_partitions=-2, replication_factor=1), ErrorCode.INVALID_PARTITIONS),
    ("unknown config key", dict(name="t", num_partitions=1, replication_factor=1, configs={"no.such.key": "1"}),
     ErrorCode.INVALID_CONFIG),
    ("config value out of range", dict(name="t", num_partitions=1, replication_factor=1,
                                       configs={"min.insync.replicas": "0"}), ErrorCode.INVALID_CONFIG),
    ("assignment names a broker that is not registered", dict(name="t", assignment={0: [1, 9]}),
     ErrorCode.INVALID_REPLICA_ASSIGNMENT),
    ("assignment and a partition count", dict(name="t", assignment={0: [1]}, num_partitions=1),
     ErrorCode.INVALID_REQUEST),
]


@pytest.mark.parametrize("story,arguments,expected", CREATE_ERRORS, ids=[c[0] for c in CREATE_ERRORS])
def test_a_refused_create_answers_kafkas_error_and_changes_nothing(story, arguments, expected):
    driver = cluster(1, 2, 3)
    create(driver, "existing", {0: [1]})
    before, stored = brief(driver, "existing"), driver.snapshot()
    driver.clear_sends()

    result = driver.create_topic(**arguments)

    assert result.error_code == expected, result
    assert driver.snapshot() == stored, "a refused create wrote to the store"
    assert driver.sent == []
    assert driver.core.describe_cluster()["topics"] == ["existing"] and brief(driver, "existing") == before


@pytest.mark.parametrize("how", ["dead", "shutting down"])
def test_replication_factor_counts_only_brokers_that_can_take_replicas(how):
    driver = cluster(1, 2, 3)
    if how == "dead":
        driver.broker_unreachable(3)
    else:
        assert driver.controlled_shutdown(3).error_code == ErrorCode.NONE
    stored = driver.snapshot()
    assert driver.create_topic("t", num_partitions=1, replication_factor=3).error_code == \
        ErrorCode.INVALID_REPLICATION_FACTOR
    assert driver.snapshot() == stored
    create_result = driver.create_topic("u", num_partitions=4, replication_factor=2)
    assert create_result.error_code == ErrorCode.NONE
    assert all(3 not in p["replicas"] for p in driver.core.describe_topic("u"))


def test_one_refused_topic_does_not_stop_the_others_in_the_request():
    driver = cluster(1, 2)
    response = driver.ask("handle_create_topics", CreateTopicsRequest(topics=(
        CreatableTopic(name="good", assignments=(CreatableReplicaAssignment(partition_index=0, broker_ids=(2, 1)),)),
        CreatableTopic(name="bad", num_partitions=1, replication_factor=3))))
    assert [(r.name, r.error_code) for r in response.topics] == [
        ("good", ErrorCode.NONE), ("bad", ErrorCode.INVALID_REPLICATION_FACTOR)]
    assert driver.core.describe_cluster()["topics"] == ["good"]
    assert sorted(driver.stored().topics()) == ["good"]


# ------------------------------------------------------------------------------- DeleteTopics
def test_deleting_an_unknown_topic_is_unknown_topic_or_partition():
    driver = cluster(1)
    create(driver, "t", {0: [1]})
    response = driver.delete_topics("nope", "t")
    assert [(r.name, r.error_code) for r in response.responses] == [
        ("nope", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION), ("t", ErrorCode.NONE)]


def test_delete_stops_and_deletes_every_replica_and_forgets_the_topic_only_when_all_answered():
    driver = cluster(1, 2, 3)
    create(driver, "t", {0: [1, 2], 1: [2, 3]})
    create(driver, "keep", {0: [3]})
    keep_before = brief(driver, "keep")
    driver.clear_sends()

    response = driver.delete_topics("t")

    assert [(r.name, r.error_code) for r in response.responses] == [("t", ErrorCode.NONE)]
    for broker_id, replicas in {1: {("t", 0)}, 2: {("t", 0), ("t", 1)}, 3: {("t", 1)}}.items():
        assert driver.kinds_to(broker_id) == ["UpdateMetadata", "StopReplica"]
        (update_metadata,) = driver.requests_to(broker_id, UpdateMetadataRequest)
        assert {tp: s.leader for tp, s in update_metadata_states(update_metadata).items()} == {
            ("t", 0): LEADER_DURING_DELETE, ("t", 1): LEADER_DURING_DELETE}
        assert stop_replicas(driver, broker_id, delete=True) == replicas
    assert driver.core.describe_cluster()["topics_being_deleted"] == ["t"]

    driver.deliver_stop_replicas([1, 2])
    assert "t" in driver.stored().topics() and "t" in driver.core.describe_cluster()["topics"]
    assert driver.stored().topics_to_delete() == ["t"]

    driver.deliver_stop_replicas([3])
    stored = driver.stored()
    assert sorted(stored.topics()) == ["keep"] and stored.topics_to_delete() == []
    assert sorted(stored.partition_states()) == [("keep", 0)]
    assert driver.core.describe_topic("t") is None
    assert driver.core.describe_cluster()["topics_being_deleted"] == []
    assert brief(driver, "keep") == keep_before


def test_a_failed_stop_replica_keeps_the_topic():
    driver = cluster(1, 2)
    create(driver, "t", {0: [1, 2]})
    driver.delete_topics("t")
    driver.deliver_stop_replicas([1], error_code=ErrorCode.KAFKA_STORAGE_ERROR)
    driver.deliver_stop_replicas([2])
    assert "t" in driver.stored().topics() and driver.stored().topics_to_delete() == ["t"]


def test_a_replica_on_a_dead_broker_blocks_deletion_until_the_broker_registers_again():
    driver = cluster(1, 2, 3)
    create(driver, "t", {0: [1, 2], 1: [2, 3]})
    driver.broker_unreachable(3)
    driver.clear_sends()

    driver.delete_topics("t")
    assert stop_replicas(driver, 1, delete=True) == {("t", 0)}
    assert stop_replicas(driver, 2, delete=True) == {("t", 0), ("t", 1)}
    assert driver.requests_to(3) == []
    driver.deliver_stop_replicas()
    assert "t" in driver.stored().topics(), "deleted while a replica on a dead broker still exists"
    assert driver.create_topic("t", num_partitions=1, replication_factor=1).error_code == \
        ErrorCode.TOPIC_ALREADY_EXISTS

    driver.clear_sends()
    driver.register(3)
    assert stop_replicas(driver, 3, delete=True) == {("t", 1)}
    assert ("t", 1) not in leader_and_isr_partitions(driver, 3), "a replica being deleted was restarted"
    assert last_update_metadata(driver, 3, "t", 1).leader == LEADER_DURING_DELETE
    assert driver.kinds_to(3)[-1] == "StopReplica"
    driver.deliver_stop_replicas()
    assert "t" not in driver.stored().topics() and driver.core.describe_topic("t") is None
    assert driver.create_topic("t", num_partitions=1, replication_factor=3).error_code == ErrorCode.NONE
    (fresh,) = driver.core.describe_topic("t")  # a new topic of the old name starts from scratch
    assert (fresh["leader"], fresh["isr"], fresh["leader_epoch"], fresh["partition_epoch"]) == \
        (fresh["replicas"][0], fresh["replicas"], 0, 0)


def test_a_broker_that_dies_before_answering_stop_replica_is_asked_again_when_it_returns():
    driver = cluster(1, 2)
    create(driver, "t", {0: [1, 2]})
    driver.delete_topics("t")
    driver.broker_unreachable(2)  # its queued StopReplica dies with its send thread
    driver.deliver_stop_replicas()
    assert "t" in driver.stored().topics()
    driver.clear_sends()
    driver.register(2)
    assert stop_replicas(driver, 2, delete=True) == {("t", 0)}
    driver.deliver_stop_replicas()
    assert "t" not in driver.stored().topics()


def test_deleting_a_topic_twice_is_accepted_and_deletes_it_once():
    driver = cluster(1)
    create(driver, "t", {0: [1]})
    driver.delete_topics("t")
    driver.clear_sends()
    assert driver.delete_topics("t").responses[0].error_code == ErrorCode.NONE
    assert stop_replicas(driver, 1, delete=True) == set()  # the first StopReplica is still in flight
    driver.deliver_stop_replicas()
    assert driver.stored().topics() == {}


# ----------------------------------------------------------------------------- broker failure
def test_a_broker_that_misses_heartbeats_for_the_session_timeout_is_fenced():
    driver = cluster(1, 2)  # broker.session.timeout.ms defaults to 9000
    driver.advance_to(5000)
    assert driver.heartbeat(2).error_code == ErrorCode.NONE
    driver.advance_to(9000)
    assert set(driver.core.describe_cluster()["brokers"]) == {1, 2}
    driver.advance_to(9001)
    assert set(driver.core.describe_cluster()["brokers"]) == {2}
    assert driver.channels_removed == [1] and 1 not in driver.channels
    assert driver.heartbeat(1).error_code == ErrorCode.BROKER_ID_NOT_REGISTERED
    assert driver.timers and driver.timers[-1] > driver.now_ms


def test_heartbeats_keep_a_broker_alive():
    driver = cluster(1, 2, config={"broker.session.timeout.ms": "3000"})
    for now_ms in range(1000, 60_000, 1000):
        driver.advance_to(now_ms)
        for broker_id in (1, 2):
            response = driver.heartbeat(broker_id)
            assert (response.error_code, response.is_fenced) == (ErrorCode.NONE, False)
    assert set(driver.core.describe_cluster()["brokers"]) == {1, 2} and driver.channels_removed == []


HEARTBEAT_ANSWERS = [
    # story, broker id, epoch (None: its current one, "old": the epoch before a bounce), error, fenced
    ("current epoch", 1, None, ErrorCode.NONE, False),
    ("epoch of an earlier incarnation", 1, "old", ErrorCode.STALE_BROKER_EPOCH, True),
    ("an epoch the controller never gave", 1, 99, ErrorCode.STALE_BROKER_EPOCH, True),
    ("never registered", 9, -1, ErrorCode.BROKER_ID_NOT_REGISTERED, True),
]


@pytest.mark.parametrize("story,broker_id,epoch,error,fenced", HEARTBEAT_ANSWERS, ids=[c[0] for c in HEARTBEAT_ANSWERS])
def test_heartbeat_answers(story, broker_id, epoch, error, fenced):
    driver = cluster(1, 2)
    old_epoch = driver.broker_epochs[1]
    driver.register(1, new_incarnation=True)
    response = driver.heartbeat(broker_id, broker_epoch=old_epoch if epoch == "old" else epoch)
    assert (response.error_code, response.is_fenced) == (error, fenced)


def fail_broker_1(driver: ControllerDriver, how: str) -> None:
    if how == "actor death":
        driver.broker_unreachable(1)
    else:
        driver.advance_to(5000)
        for broker_id in (2, 3):
            assert driver.heartbeat(broker_id).error_code == ErrorCode.NONE
        driver.advance_to(9001)


@pytest.mark.parametrize("how", ["actor death", "session expiry"])
def test_a_dead_brokers_leaderships_move_to_the_next_live_isr_member_in_assignment_order(how):
    driver = cluster(1, 2, 3)
    create(driver, "t", {0: [1, 2, 3], 1: [1, 3, 2], 2: [2, 1, 3], 3: [1, 2, 3]})
    create(driver, "other", {0: [2, 3]})
    shrink_isr(driver, "t", 3, [1, 3])
    epochs_before = [p["leader_epoch"] for p in driver.core.describe_topic("t")]
    driver.clear_sends()

    fail_broker_1(driver, how)

    assert brief(driver, "t") == [
        (2, [2, 3], 1, 1),  # leader 1 died: the first live ISR member in assignment order leads
        (3, [3, 2], 1, 1),
        (2, [2, 3], 1, 1),  # a follower died: it leaves the ISR, the leader epoch is bumped
        (3, [3], 1, 2),  # broker 2 was out of the ISR, so 3 leads, though 2 comes first
    ]
    assert brief(driver, "other") == [(2, [2, 3], 0, 0)]  # broker 1 holds no replica: untouched
    assert epochs_before == [0, 0, 0, 0]
    assert 1 in driver.channels_removed and 1 not in driver.channels
    assert driver.requests_to(1) == []
    for partition in range(4):
        now = driver.partition("t", partition)
        for broker_id in set(now["replicas"]) - {1}:
            state = last_leader_and_isr(driver, broker_id, "t", partition)
            assert (state.leader, list(state.isr), state.leader_epoch) == \
                (now["leader"], now["isr"], now["leader_epoch"]), (partition, broker_id)
            assert driver.kinds_to(broker_id)[0] == "LeaderAndIsr"
    for broker_id in (2, 3):
        update = last_update_metadata(driver, broker_id, "t", 0)
        assert (update.leader, update.offline_replicas) == (2, (1,))
        assert driver.requests_to(broker_id, UpdateMetadataRequest)[-1].live_brokers == live_brokers(2, 3)
    stored = driver.stored().partition_states()
    assert (stored[("t", 0)]["leader"], stored[("t", 0)]["isr"]) == (2, [2, 3])


def test_a_death_report_for_an_earlier_incarnation_is_ignored():
    driver = cluster(1, 2)
    create(driver, "t", {0: [1, 2]})
    old_epoch = driver.broker_epochs[1]
    driver.register(1, new_incarnation=True)
    before, stored = brief(driver, "t"), driver.snapshot()
    driver.channels_removed.clear()
    assert driver.broker_unreachable(1, broker_epoch=old_epoch) == []
    assert brief(driver, "t") == before and driver.snapshot() == stored and 1 in driver.channels


def test_when_the_last_isr_member_dies_the_partition_goes_offline_and_returns_cleanly_with_it():
    driver = cluster(1, 2)
    create(driver, "t", {0: [1, 2]})
    shrink_isr(driver, "t", 0, [1])
    driver.clear_sends()

    driver.broker_unreachable(1)

    (partition,) = driver.core.describe_topic("t")
    assert (partition["leader"], partition["isr"], partition["leader_epoch"], partition["state"]) == \
        (NO_LEADER, [1], 1, "OFFLINE_PARTITION")
    assert (last_leader_and_isr(driver, 2, "t", 0).leader, last_update_metadata(driver, 2, "t", 0).leader) == \
        (NO_LEADER, NO_LEADER)
    stored = driver.stored().partition_states()[("t", 0)]
    assert (stored["leader"], stored["isr"]) == (NO_LEADER, [1])

    driver.register(2, new_incarnation=True)  # an out-of-sync replica coming back does not help
    assert driver.leader("t") == NO_LEADER

    driver.clear_sends()
    driver.register(1)
    (partition,) = driver.core.describe_topic("t")
    assert (partition["leader"], partition["isr"], partition["state"]) == (1, [1], "ONLINE_PARTITION")
    assert partition["leader_epoch"] > 1
    for broker_id in (1, 2):
        state = last_leader_and_isr(driver, broker_id, "t", 0)
        assert (state.leader, state.leader_epoch) == (1, partition["leader_epoch"])


UNCLEAN_CASES = [
    # story, topic config, controller config, expected (leader, isr)
    ("topic enables it", {UNCLEAN: "true"}, {}, (2, [2])),
    ("controller default enables it", {}, {UNCLEAN: "true"}, (2, [2])),
    ("topic disables what the default enables", {UNCLEAN: "false"}, {UNCLEAN: "true"}, (NO_LEADER, [1])),
    ("off by default", {}, {}, (NO_LEADER, [1])),
]


@pytest.mark.parametrize("story,topic_config,controller_config,expected", UNCLEAN_CASES,
                         ids=[c[0] for c in UNCLEAN_CASES])
def test_unclean_leader_election_lets_an_out_of_sync_live_replica_lead(story, topic_config, controller_config,
                                                                       expected):
    driver = cluster(1, 2, 3, config=controller_config)
    create(driver, "t", {0: [1, 2, 3]}, configs=topic_config)
    shrink_isr(driver, "t", 0, [1])
    driver.clear_sends()
    driver.broker_unreachable(1)
    assert (driver.leader("t"), driver.isr("t")) == expected
    assert driver.leader_epoch("t") == 1
    unclean_logs = [e for e in driver.logs if "unclean" in e.message]
    if expected[0] == 2:
        assert unclean_logs and unclean_logs[-1].level == "warning"
        for broker_id in (2, 3):
            assert last_leader_and_isr(driver, broker_id, "t", 0).leader == 2
    else:
        assert unclean_logs == []


# ------------------------------------------------------------------------ controlled shutdown
def test_controlled_shutdown_moves_leaderships_away_and_takes_the_broker_out_of_every_isr():
    driver = cluster(1, 2, 3)
    create(driver, "t", {0: [1, 2, 3], 1: [2, 1, 3]})
    create(driver, "solo", {0: [1]})
    driver.clear_sends()

    response = driver.controlled_shutdown(1)

    # Kafka only counts replicated partitions: the single-replica solo-0 is left to go offline.
    assert (response.error_code, response.remaining_partitions) == (ErrorCode.NONE, ())
    assert brief(driver, "t") == [(2, [2, 3], 1, 1), (2, [2, 3], 1, 1)]
    assert brief(driver, "solo") == [(1, [1], 0, 0)]
    assert driver.core.describe_cluster()["brokers"][1]["shutting_down"] is True
    # Broker 1 becomes a follower of t-0 and stops (without deleting) its replica of t-1.
    assert driver.kinds_to(1) == ["LeaderAndIsr", "UpdateMetadata", "StopReplica"]
    assert last_leader_and_isr(driver, 1, "t", 0).leader == 2
    assert leader_and_isr_partitions(driver, 1) == {("t", 0)}
    assert stop_replicas(driver, 1, delete=False) == {("t", 1)} and stop_replicas(driver, 1, delete=True) == set()
    for broker_id in (2, 3):
        assert driver.kinds_to(broker_id) == ["LeaderAndIsr", "UpdateMetadata"]
        assert {tp: (s.leader, s.isr) for tp, s in leader_and_isr_states(driver.requests_to(broker_id)[0]).items()} \
            == {("t", 0): (2, (2, 3)), ("t", 1): (2, (2, 3))}
    assert 1 in driver.channels, "a shutting-down broker still gets requests"


def test_controlled_shutdown_reports_the_leaderships_it_could_not_move():
    driver = cluster(1, 2)
    create(driver, "t", {0: [1, 2], 1: [2, 1]})
    shrink_isr(driver, "t", 0, [1])  # nobody else is in sync: the leadership cannot move
    before = brief(driver, "t")[0]
    response = driver.controlled_shutdown(1)
    assert response.error_code == ErrorCode.NONE
    assert [(p.topic_name, p.partition_index) for p in response.remaining_partitions] == [("t", 0)]
    assert brief(driver, "t")[0] == before


def test_controlled_shutdown_does_not_wait_for_partitions_of_topics_being_deleted():
    driver = cluster(1, 2)
    create(driver, "t", {0: [1, 2]})
    driver.delete_topics("t")  # the StopReplica answers are still outstanding
    response = driver.controlled_shutdown(1)
    assert (response.error_code, response.remaining_partitions) == (ErrorCode.NONE, ())


def test_controlled_shutdown_errors_change_nothing():
    driver = cluster(1, 2)
    create(driver, "t", {0: [1, 2]})
    old_epoch = driver.broker_epochs[1]
    driver.register(1, new_incarnation=True)
    driver.broker_unreachable(2)
    before, stored = brief(driver, "t"), driver.snapshot()

    assert driver.controlled_shutdown(1, broker_epoch=old_epoch).error_code == ErrorCode.STALE_BROKER_EPOCH
    assert driver.controlled_shutdown(2).error_code == ErrorCode.BROKER_NOT_AVAILABLE  # dead
    assert driver.controlled_shutdown(9, broker_epoch=-1).error_code == ErrorCode.BROKER_NOT_AVAILABLE
    assert brief(driver, "t") == before and driver.snapshot() == stored
    assert driver.core.describe_cluster()["brokers"][1]["shutting_down"] is False


# ----------------------------------------------------------------------------- AlterPartition
def test_an_accepted_isr_change_bumps_the_partition_epoch_only_and_is_persisted():
    driver = cluster(1, 2, 3)
    create(driver, "t", {0: [1, 2, 3]})
    driver.clear_sends()

    response = driver.alter_partition("t", 0, [1, 2])

    assert response.error_code == ErrorCode.NONE
    (answer,) = response.topics[0].partitions
    assert (answer.error_code, answer.leader_id, answer.leader_epoch, answer.isr, answer.partition_epoch) == \
        (ErrorCode.NONE, 1, 0, (1, 2), 1)
    assert brief(driver, "t") == [(1, [1, 2], 0, 1)]
    stored = driver.stored().partition_states()[("t", 0)]
    assert (stored["isr"], stored["leader_epoch"], stored["partition_epoch"]) == ([1, 2], 0, 1)
    # An ISR change is news for metadata caches, not for the replicas: no LeaderAndIsr.
    for broker_id in (1, 2, 3):
        assert driver.kinds_to(broker_id) == ["UpdateMetadata"]
        assert last_update_metadata(driver, broker_id, "t", 0).isr == (1, 2)

    # The leader's next proposal uses the partition epoch it was given.
    response = driver.alter_partition("t", 0, [1, 2, 3], partition_epoch=answer.partition_epoch)
    assert response.topics[0].partitions[0].error_code == ErrorCode.NONE
    assert brief(driver, "t") == [(1, [1, 2, 3], 0, 2)]


ALTER_PARTITION_ERRORS = [
    # story, alter_partition overrides, top-level error, partition error. Setup: t-0 on [1, 2, 3],
    # broker 3 dead, so leader 1, ISR [1, 2], leader epoch 1, partition epoch 1; broker 4 is live.
    ("stale leader epoch", dict(new_isr=[1], leader_epoch=0), ErrorCode.NONE, ErrorCode.FENCED_LEADER_EPOCH),
    ("stale partition epoch", dict(new_isr=[1], partition_epoch=0), ErrorCode.NONE,
     ErrorCode.INVALID_UPDATE_VERSION),
    ("from a follower", dict(new_isr=[2], broker_id=2), ErrorCode.NONE, ErrorCode.NOT_LEADER_OR_FOLLOWER),
    ("stale broker epoch", dict(new_isr=[1], broker_epoch="old"), ErrorCode.STALE_BROKER_EPOCH, None),
    ("from a fenced broker", dict(new_isr=[1], broker_id=3, broker_epoch="dead"), ErrorCode.STALE_BROKER_EPOCH,
     None),
    ("dead broker in the new ISR", dict(new_isr=[1, 2, 3]), ErrorCode.NONE, ErrorCode.INELIGIBLE_REPLICA),
    ("leader missing from the new ISR", dict(new_isr=[2]), ErrorCode.NONE, ErrorCode.INVALID_REQUEST),
    ("a broker that is not a replica", dict(new_isr=[1, 2, 4]), ErrorCode.NONE, ErrorCode.INVALID_REQUEST),
    ("a replica listed twice", dict(new_isr=[1, 2, 1]), ErrorCode.NONE, ErrorCode.INVALID_REQUEST),
]


@pytest.mark.parametrize("story,overrides,top_error,partition_error", ALTER_PARTITION_ERRORS,
                         ids=[c[0] for c in ALTER_PARTITION_ERRORS])
def test_a_refused_isr_change_answers_kafkas_error_and_changes_nothing(story, overrides, top_error,
                                                                        partition_error):
    driver = cluster(1, 2, 3, 4)
    create(driver, "t", {0: [1, 2, 3]})
    dead_epoch = driver.broker_epochs[3]
    driver.broker_unreachable(3)
    assert brief(driver, "t") == [(1, [1, 2], 1, 1)]
    old_epoch = driver.broker_epochs[1]
    driver.register(1)  # the same incarnation again: same epoch, nothing changes
    assert driver.broker_epochs[1] == old_epoch
    before, stored = brief(driver, "t"), driver.snapshot()
    driver.clear_sends()
    overrides = dict(overrides)
    if overrides.get("broker_epoch") == "old":
        overrides["broker_epoch"] = old_epoch - 1
    elif overrides.get("broker_epoch") == "dead":
        overrides["broker_epoch"] = dead_epoch

    response = driver.alter_partition("t", 0, overrides.pop("new_isr"), **overrides)

    assert response.error_code == top_error
    if partition_error is not None:
        (answer,) = response.topics[0].partitions
        assert answer.error_code == partition_error
        # The answer carries the controller's current state, so the leader can catch up.
        assert (answer.leader_id, answer.leader_epoch, list(answer.isr), answer.partition_epoch) == (1, 1, [1, 2], 1)
    assert brief(driver, "t") == before and driver.snapshot() == stored
    assert not any(isinstance(r, LeaderAndIsrRequest) for _, r in driver.sent)


def test_an_isr_change_for_an_unknown_or_deleted_topic_is_unknown_topic_or_partition():
    driver = cluster(1, 2)
    create(driver, "t", {0: [1, 2]})
    driver.delete_topics("t")
    for topic in ("t", "nope"):
        response = driver.ask("handle_alter_partition", AlterPartitionRequest(
            broker_id=1, broker_epoch=driver.broker_epochs[1], topics=(AlterPartitionTopicData(
                topic_name=topic, partitions=(AlterPartitionPartitionData(
                    partition_index=0, leader_epoch=0, new_isr=(1,), partition_epoch=0),)),)))
        assert response.topics[0].partitions[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


# ---------------------------------------------------------------- preferred and auto rebalance
def test_preferred_leader_election():
    driver = cluster(1, 2, 3)
    create(driver, "t", {0: [1, 2], 1: [2, 3], 2: [3, 1]})
    driver.register(1, new_incarnation=True)  # bounce: broker 1 loses t-0's leadership and its ISR seats
    assert brief(driver, "t") == [(2, [2], 1, 1), (2, [2, 3], 0, 0), (3, [3], 1, 1)]
    before = brief(driver, "t")
    driver.clear_sends()

    assert driver.elect_preferred({"t": [0, 1, 2, 9], "nope": [0]}) == {
        ("t", 0): ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE,  # broker 1 is not in sync yet
        ("t", 1): ErrorCode.ELECTION_NOT_NEEDED,
        ("t", 2): ErrorCode.ELECTION_NOT_NEEDED,
        ("t", 9): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ("nope", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    }
    assert brief(driver, "t") == before
    assert not any(isinstance(r, LeaderAndIsrRequest) for _, r in driver.sent)

    shrink_isr(driver, "t", 0, [2, 1])  # broker 1 caught up
    driver.clear_sends()
    assert driver.elect_preferred({"t": [0]}) == {("t", 0): ErrorCode.NONE}
    assert brief(driver, "t")[0] == (1, [2, 1], 2, 3)  # leader moves, ISR kept, both epochs bumped
    for broker_id in (1, 2):
        assert driver.kinds_to(broker_id) == ["LeaderAndIsr", "UpdateMetadata"]
        state = last_leader_and_isr(driver, broker_id, "t", 0)
        assert (state.leader, state.isr, state.leader_epoch) == (1, (2, 1), 2)
    assert driver.kinds_to(3) == ["UpdateMetadata"]

    assert driver.elect_preferred() == {("t", 0): ErrorCode.ELECTION_NOT_NEEDED,
                                        ("t", 1): ErrorCode.ELECTION_NOT_NEEDED,
                                        ("t", 2): ErrorCode.ELECTION_NOT_NEEDED}


def test_preferred_election_when_the_preferred_replica_is_dead():
    driver = cluster(1, 2)
    create(driver, "t", {0: [2, 1]})
    driver.broker_unreachable(2)
    assert driver.elect_preferred({"t": [0]}) == {("t", 0): ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE}
    assert driver.leader("t") == 1


REBALANCE = {"leader.imbalance.check.interval.seconds": "10", "broker.session.timeout.ms": "600000"}


def test_the_periodic_rebalance_moves_leadership_back_to_the_preferred_replica():
    driver = cluster(1, 2, config=REBALANCE)
    create(driver, "t", {0: [1, 2], 1: [2, 1]})
    driver.register(1, new_incarnation=True)
    shrink_isr(driver, "t", 0, [2, 1])
    assert driver.leader("t", 0) == 2
    driver.clear_sends()

    driver.advance_to(9_999)
    assert driver.leader("t", 0) == 2 and driver.sent == []
    driver.advance_to(10_000)
    assert (driver.leader("t", 0), driver.leader("t", 1)) == (1, 2)
    assert last_leader_and_isr(driver, 1, "t", 0).leader == 1
    assert last_leader_and_isr(driver, 2, "t", 0).leader == 1


REBALANCE_THRESHOLDS = [
    # story, auto.leader.rebalance.enable, leader.imbalance.per.broker.percentage, rebalanced?
    ("25% imbalance is above 24%", "true", "24", True),
    ("25% imbalance is not above 25%", "true", "25", False),
    ("disabled", "false", "0", False),
]


@pytest.mark.parametrize("story,enabled,percentage,rebalanced", REBALANCE_THRESHOLDS,
                         ids=[c[0] for c in REBALANCE_THRESHOLDS])
def test_the_periodic_rebalance_acts_only_above_the_imbalance_threshold(story, enabled, percentage, rebalanced):
    driver = cluster(1, 2, config=dict(REBALANCE, **{"auto.leader.rebalance.enable": enabled,
                                                     "leader.imbalance.per.broker.percentage": percentage}))
    create(driver, "t", {p: [1, 2] for p in range(4)})
    driver.register(1, new_incarnation=True)
    for partition in range(4):
        shrink_isr(driver, "t", partition, [2, 1])
    assert driver.elect_preferred({"t": [0, 1, 2]}) == {("t", p): ErrorCode.NONE for p in range(3)}
    assert [driver.leader("t", p) for p in range(4)] == [1, 1, 1, 2]  # broker 1 leads 3 of its 4

    driver.advance_to(10_000)

    assert driver.leader("t", 3) == (1 if rebalanced else 2)


# ---------------------------------------------------------------------------------- failover
def failover_cluster() -> ControllerDriver:
    driver = cluster(1, 2, 3)
    create(driver, "a", {0: [1, 2], 1: [2, 3]})
    create(driver, "b", {0: [3, 1, 2]}, configs={"min.insync.replicas": "2"})
    shrink_isr(driver, "b", 0, [3, 1])
    return driver


def test_the_first_controller_has_epoch_1_and_stamps_it_on_its_requests_as_kafkas_does():
    driver = cluster(1, 2)
    create(driver, "t", {0: [1, 2]})
    assert driver.core.controller_epoch == 1
    assert driver.core.describe_cluster()["controller_epoch"] == 1
    assert {r.controller_epoch for b in (1, 2) for r in driver.requests_to(b)} == {1}
    assert driver.stored().partition_states()[("t", 0)]["controller_epoch"] == 1
    assert driver.new_controller().core.controller_epoch == 2


def test_a_new_controller_takes_over_with_the_next_epoch_and_the_same_view():
    first = failover_cluster()
    second = first.new_controller()

    assert second.core.controller_epoch == first.core.controller_epoch + 1
    assert second.core.describe_cluster()["brokers"] == first.core.describe_cluster()["brokers"]
    assert second.core.describe_cluster()["topics"] == ["a", "b"]
    for topic in ("a", "b"):
        assert second.core.describe_topic(topic) == first.core.describe_topic(topic)
    assert second.channels == {b: first.broker_epochs[b] for b in (1, 2, 3)}


def test_a_new_controller_sends_every_broker_its_state_under_the_new_epoch():
    first = failover_cluster()
    second = first.new_controller()
    epoch = second.core.controller_epoch
    hosted = {1: {("a", 0), ("b", 0)}, 2: {("a", 0), ("a", 1), ("b", 0)}, 3: {("a", 1), ("b", 0)}}

    for broker_id in (1, 2, 3):
        assert second.kinds_to(broker_id) == ["LeaderAndIsr", "UpdateMetadata"]
        leader_and_isr, update_metadata = second.requests_to(broker_id)
        for request in (leader_and_isr, update_metadata):
            assert (request.controller_epoch, request.broker_epoch) == (epoch, first.broker_epochs[broker_id])
        states = leader_and_isr_states(leader_and_isr)
        assert set(states) == hosted[broker_id]
        for (topic, partition), state in states.items():
            now = first.partition(topic, partition)
            assert (state.leader, list(state.isr), state.leader_epoch, state.partition_epoch) == \
                (now["leader"], now["isr"], now["leader_epoch"], now["partition_epoch"])
            # The partition keeps the epoch of the controller that last wrote it.
            assert state.controller_epoch == first.core.controller_epoch
        assert set(update_metadata_states(update_metadata)) == {("a", 0), ("a", 1), ("b", 0)}
        assert update_metadata.live_brokers == live_brokers(1, 2, 3)


def test_broker_epochs_keep_growing_across_controllers():
    first = failover_cluster()
    second = first.new_controller()
    assert second.register(4).broker_epoch > max(first.broker_epochs.values())
    assert second.register(2).broker_epoch == first.broker_epochs[2]  # same process, same epoch


def test_a_new_controller_fences_a_broker_that_stays_silent_for_a_session_after_it_took_over():
    first = failover_cluster()
    first.now_ms = 50_000
    second = first.new_controller()
    second.advance_to(55_000)
    for broker_id in (2, 3):
        assert second.heartbeat(broker_id).error_code == ErrorCode.NONE
    second.advance_to(59_000)
    assert set(second.core.describe_cluster()["brokers"]) == {1, 2, 3}
    second.advance_to(59_001)
    assert set(second.core.describe_cluster()["brokers"]) == {2, 3}
    assert second.leader("a", 0) == 2


def test_a_new_controller_resumes_a_pending_topic_deletion():
    first = failover_cluster()
    first.delete_topics("a")
    first.deliver_stop_replicas([1])
    second = first.new_controller()
    assert second.core.describe_cluster()["topics_being_deleted"] == ["a"]
    assert stop_replicas(second, 2, delete=True) == {("a", 0), ("a", 1)}
    assert stop_replicas(second, 3, delete=True) == {("a", 1)}
    second.deliver_stop_replicas()
    assert sorted(second.stored().topics()) == ["b"] and second.stored().topics_to_delete() == []


def broker_1_dies(driver: ControllerDriver) -> None:
    driver.broker_unreachable(1)


def every_session_expires(driver: ControllerDriver) -> None:
    driver.advance(60_000)


ZOMBIE_ACTIONS = [
    # story, action on the old controller, the error it answers (None: an event, not a request)
    ("create topic", lambda d: d.create_topic("new", assignment={0: [1]}).error_code, ErrorCode.NOT_CONTROLLER),
    ("delete topic", lambda d: d.delete_topics("a").responses[0].error_code, ErrorCode.NOT_CONTROLLER),
    ("accepted ISR change", lambda d: d.alter_partition("a", 0, [1]).error_code, ErrorCode.NOT_CONTROLLER),
    ("controlled shutdown", lambda d: d.controlled_shutdown(1).error_code, ErrorCode.NOT_CONTROLLER),
    ("new broker registers", lambda d: d.register(4).error_code, ErrorCode.NOT_CONTROLLER),
    ("broker bounces", lambda d: d.register(2, new_incarnation=True).error_code, ErrorCode.NOT_CONTROLLER),
    ("broker actor dies", broker_1_dies, None),
    ("sessions expire", every_session_expires, None),
]


@pytest.mark.parametrize("story,action,answer", ZOMBIE_ACTIONS, ids=[c[0] for c in ZOMBIE_ACTIONS])
def test_the_old_controller_resigns_on_its_next_store_write_and_changes_nothing(story, action, answer):
    first = failover_cluster()
    second = first.new_controller()
    stored = first.snapshot()
    first.clear_sends()
    first.channels_removed.clear()

    assert action(first) == answer

    assert first.core.active is False
    assert first.snapshot() == stored, "the old controller wrote to the store after it was superseded"
    assert first.sent == []
    assert sorted(first.channels_removed) == [1, 2, 3] and first.channels == {}
    assert any(e.level == "warning" and "resign" in e.message for e in first.logs)
    # From now on it answers everything with NOT_CONTROLLER.
    assert first.heartbeat(3).error_code == ErrorCode.NOT_CONTROLLER
    assert first.create_topic("later", assignment={0: [1]}).error_code == ErrorCode.NOT_CONTROLLER
    assert first.ask("handle_elect_leaders", ElectLeadersRequest()).error_code == ErrorCode.NOT_CONTROLLER
    assert first.advance(1000) == [] and first.resync(1) == []
    # The new controller is unaffected.
    assert second.core.active and second.create_topic("later", assignment={0: [2]}).error_code == ErrorCode.NONE


@pytest.mark.parametrize("request_type", [LeaderAndIsrRequest, StopReplicaRequest])
def test_a_stale_controller_epoch_answer_makes_the_old_controller_resign(request_type):
    first = failover_cluster()
    if request_type is StopReplicaRequest:
        first.delete_topics("a")
    first_request = first.requests_to(2, request_type)[-1]
    response_type = LeaderAndIsrResponse if request_type is LeaderAndIsrRequest else StopReplicaResponse
    stale = response_type(error_code=ErrorCode.STALE_CONTROLLER_EPOCH)

    # Without a newer controller in the store, such an answer is logged, not obeyed.
    first.respond(2, first_request, stale)
    assert first.core.active

    second = first.new_controller()
    stored = first.snapshot()
    first.channels_removed.clear()
    first.respond(2, first_request, stale)
    assert first.core.active is False
    assert sorted(first.channels_removed) == [1, 2, 3]
    assert first.snapshot() == stored and second.core.active


# ------------------------------------------------------------------------------------- resync
def test_resync_sends_one_broker_full_metadata_and_leader_and_isr_for_its_replicas():
    driver = cluster(1, 2, 3)
    create(driver, "a", {0: [1, 2], 1: [2, 3]})
    create(driver, "b", {0: [3, 1]})
    shrink_isr(driver, "a", 1, [2])
    driver.clear_sends()

    driver.resync(2)

    for broker_id in (1, 3):  # the others at most get their metadata refreshed
        assert set(driver.kinds_to(broker_id)) <= {"UpdateMetadata"}
    assert driver.kinds_to(2) == ["LeaderAndIsr", "UpdateMetadata"]
    leader_and_isr, update_metadata = driver.requests_to(2)
    assert (leader_and_isr.controller_epoch, leader_and_isr.broker_epoch) == \
        (driver.core.controller_epoch, driver.broker_epochs[2])
    assert {tp: (s.leader, s.isr, s.partition_epoch) for tp, s in leader_and_isr_states(leader_and_isr).items()} == {
        ("a", 0): (1, (1, 2), 0), ("a", 1): (2, (2,), 1)}
    assert set(update_metadata_states(update_metadata)) == {("a", 0), ("a", 1), ("b", 0)}
    assert update_metadata.live_brokers == live_brokers(1, 2, 3)

    driver.clear_sends()
    assert driver.resync(9) == [] and driver.sent == []


def test_resync_during_a_topic_deletion_repeats_the_lost_stop_replica_and_does_not_restart_the_replica():
    driver = cluster(1, 2)
    create(driver, "t", {0: [1, 2]})
    create(driver, "keep", {0: [2]})
    driver.delete_topics("t")
    driver.lose_undelivered(2)  # broker 2's send thread died with the StopReplica queued
    driver.deliver_stop_replicas([1])
    driver.clear_sends()

    driver.resync(2)

    assert leader_and_isr_partitions(driver, 2) == {("keep", 0)}
    assert last_update_metadata(driver, 2, "t", 0).leader == LEADER_DURING_DELETE
    assert stop_replicas(driver, 2, delete=True) == {("t", 0)}
    driver.deliver_stop_replicas()
    assert sorted(driver.stored().topics()) == ["keep"]


# --------------------------------------------------------- bad input (the failover matrix's row)
def test_a_registration_from_another_cluster_is_inconsistent_cluster_id_and_changes_nothing():
    driver = cluster(1, 2)
    create(driver, "t", {0: [1, 2]})
    stored, before = driver.snapshot(), brief(driver, "t")
    driver.clear_sends()
    response = driver.ask("handle_broker_registration", BrokerRegistrationRequest(
        broker_id=1, cluster_id="another-cluster", incarnation_id="another-process", host=broker_host(1)))
    assert (response.error_code, response.broker_epoch) == (ErrorCode.INCONSISTENT_CLUSTER_ID, -1)
    assert driver.snapshot() == stored and brief(driver, "t") == before
    assert driver.sent == [] and driver.channels_removed == []


def test_a_late_registration_from_a_replaced_process_is_refused_and_fences_nobody():
    driver = cluster(1, 2)
    create(driver, "t", {0: [1, 2]})
    replaced = driver.incarnations[1]
    driver.register(1, new_incarnation=True)  # Ray restarted broker 1: a bounce
    stored, before = driver.snapshot(), brief(driver, "t")
    driver.clear_sends()
    driver.channel_events.clear()

    late = driver.ask("handle_broker_registration", BrokerRegistrationRequest(
        broker_id=1, cluster_id=CLUSTER_ID, incarnation_id=replaced, host=broker_host(1)))

    assert late.error_code == ErrorCode.DUPLICATE_BROKER_REGISTRATION
    assert driver.snapshot() == stored and brief(driver, "t") == before
    assert driver.sent == [] and driver.channel_events == []
    # The current process is still the registered one, also after its session ran out.
    assert driver.heartbeat(1).error_code == ErrorCode.NONE
    driver.advance(10 * 9000)
    assert driver.register(1).error_code == ErrorCode.NONE


def test_a_create_naming_a_topic_twice_refuses_both_entries_and_creates_the_others():
    driver = cluster(1, 2)
    response = driver.ask("handle_create_topics", CreateTopicsRequest(topics=(
        CreatableTopic(name="twice", num_partitions=1, replication_factor=1),
        CreatableTopic(name="once", num_partitions=1, replication_factor=1),
        CreatableTopic(name="twice", num_partitions=2, replication_factor=1))))
    assert [(r.name, r.error_code) for r in response.topics] == [
        ("twice", ErrorCode.INVALID_REQUEST), ("once", ErrorCode.NONE), ("twice", ErrorCode.INVALID_REQUEST)]
    assert driver.core.describe_cluster()["topics"] == ["once"]


def elect(driver: ControllerDriver, election_type: int, partitions: dict[str, list[int]]):
    response = driver.ask("handle_elect_leaders", ElectLeadersRequest(election_type=election_type, topic_partitions=tuple(
        TopicPartitions(topic=t, partitions=tuple(ps)) for t, ps in partitions.items())))
    return response.error_code, {(r.topic, p.partition_id): p.error_code
                                 for r in response.replica_election_results for p in r.partition_result}


def test_an_unknown_election_type_is_invalid_request_and_elects_nothing():
    driver = cluster(1, 2)
    create(driver, "t", {0: [2, 1]})
    driver.register(2, new_incarnation=True)  # 1 leads, 2 is preferred
    before = brief(driver, "t")
    driver.clear_sends()
    assert elect(driver, 7, {"t": [0]}) == (ErrorCode.INVALID_REQUEST, {})
    assert brief(driver, "t") == before and driver.sent == []


def test_an_unclean_election_leaves_led_partitions_alone_and_elects_out_of_sync_replicas_for_leaderless_ones():
    driver = cluster(1, 2, 3)
    create(driver, "led", {0: [3, 2]})
    create(driver, "leaderless", {0: [1, 2, 3]})
    shrink_isr(driver, "leaderless", 0, [1])
    driver.register(3, new_incarnation=True)  # "led" moves to 2, away from its preferred replica 3
    driver.broker_unreachable(1)  # "leaderless" has no live ISR member; unclean election is off
    assert driver.leader("leaderless") == NO_LEADER
    led_before = brief(driver, "led")
    driver.clear_sends()

    code, results = elect(driver, UNCLEAN_ELECTION, {"led": [0], "leaderless": [0], "nope": [0]})

    assert code == ErrorCode.NONE
    assert results == {("led", 0): ErrorCode.ELECTION_NOT_NEEDED, ("leaderless", 0): ErrorCode.NONE,
                       ("nope", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    assert brief(driver, "led") == led_before  # a preferred election would have moved it back to 3
    assert (driver.leader("leaderless"), driver.isr("leaderless")) == (2, [2])
    assert last_leader_and_isr(driver, 3, "leaderless", 0).leader == 2


def test_a_broker_startup_sends_the_full_metadata_to_that_broker_only():
    """Kafka 2.4's onBrokerStartup: the brokers already up get an UpdateMetadata with the new live
    broker list and no partition states, the starting broker one with every partition; after that
    only the partitions that have a replica on the starting broker go to everyone (its replicas
    coming online). Not every partition to every broker on every registration."""
    driver = cluster(1, 2, 3, 4)
    create(driver, "a", {p: [1 + p % 3, 1 + (p + 1) % 3] for p in range(6)})  # on brokers 1-3 only
    create(driver, "b", {0: [4, 1]})
    driver.broker_unreachable(4)
    driver.clear_sends()

    driver.register(4)

    everything = {("a", p) for p in range(6)} | {("b", 0)}
    assert set().union(*(update_metadata_states(r) for r in driver.requests_to(4, UpdateMetadataRequest))) == everything
    for broker_id in (1, 2, 3):
        updates = driver.requests_to(broker_id, UpdateMetadataRequest)
        assert updates and updates[-1].live_brokers == live_brokers(1, 2, 3, 4)
        assert set().union(*(update_metadata_states(r) for r in updates)) == {("b", 0)}, broker_id
