"""Partition reassignment on the pure controller, step by step as Kafka 2.4's onPartitionReassignment
runs it: RS = TRS + ORS with a new leader epoch, completion once every target replica is in the ISR
(a leader elected from TRS if need be, the old replicas stopped and deleted), resumed by a new
controller from the store, held while a target replica is down, and Kafka's codes for bad input."""
from __future__ import annotations

import pytest

from actors.core.errors import ErrorCode
from actors.core.messages.leader_and_isr import LeaderAndIsrRequest
from actors.core.messages.partition_reassignments import (
    AlterPartitionReassignmentsRequest, ListPartitionReassignmentsRequest, ReassignablePartition, ReassignableTopic,
)
from actors.core.messages.stop_replica import StopReplicaRequest
from tests.support.controller_driver import ControllerDriver, leader_and_isr_states, stop_replica_partitions


def reassign(driver: ControllerDriver, topic: str, partition: int, replicas) -> ErrorCode:
    response = driver.ask("handle_alter_partition_reassignments", AlterPartitionReassignmentsRequest(topics=(
        ReassignableTopic(name=topic, partitions=(ReassignablePartition(
            partition_index=partition, replicas=None if replicas is None else tuple(replicas)),)),)))
    assert response.error_code == ErrorCode.NONE
    return response.responses[0].partitions[0].error_code


def ongoing(driver: ControllerDriver) -> dict:
    response = driver.ask("handle_list_partition_reassignments", ListPartitionReassignmentsRequest())
    return {(t.name, p.partition_index): (list(p.replicas), list(p.adding_replicas), list(p.removing_replicas))
            for t in response.topics for p in t.partitions}


@pytest.fixture
def controller() -> ControllerDriver:
    driver = ControllerDriver()
    driver.register_brokers(1, 2, 3)
    assert driver.create_topic("orders", assignment={0: [1, 2]}).error_code == ErrorCode.NONE
    driver.clear_sends()
    return driver


def start_move_to_2_3(driver: ControllerDriver) -> int:
    epoch = driver.leader_epoch("orders")
    assert reassign(driver, "orders", 0, [2, 3]) == ErrorCode.NONE
    return epoch


def test_phase_a_adds_the_target_replicas_with_a_new_leader_epoch(controller):
    epoch = start_move_to_2_3(controller)
    state = controller.partition("orders", 0)
    assert state["replicas"] == [2, 3, 1] and state["leader"] == 1 and state["leader_epoch"] == epoch + 1
    for broker_id in (1, 2, 3):  # the leader, the follower and the new replica all hear of it
        (request,) = controller.requests_to(broker_id, LeaderAndIsrRequest)
        sent = leader_and_isr_states(request)[("orders", 0)]
        assert sent.replicas == (2, 3, 1) and sent.adding_replicas == (3,) and sent.removing_replicas == (1,)
    assert ongoing(controller) == {("orders", 0): ([2, 3, 1], [3], [1])}
    assert ("orders", 0) in controller.stored().partition_reassignments()
    assert not controller.requests_to(1, StopReplicaRequest)


def test_phase_b_elects_from_the_target_and_removes_the_old_replica_once_all_are_in_sync(controller):
    epoch = start_move_to_2_3(controller)
    controller.clear_sends()
    assert controller.alter_partition("orders", 0, [1, 2, 3]).error_code == ErrorCode.NONE
    state = controller.partition("orders", 0)
    assert state["replicas"] == [2, 3] and state["leader"] == 2 and state["isr"] == [2, 3]
    assert state["leader_epoch"] == epoch + 2
    (stop,) = controller.requests_to(1, StopReplicaRequest)
    assert stop.delete_partitions and stop_replica_partitions(stop) == {("orders", 0)}
    assert ongoing(controller) == {} and controller.stored().partition_reassignments() == {}
    assert controller.stored().topics()["orders"]["partitions"] == {"0": [2, 3]}


def test_a_new_controller_resumes_a_reassignment_from_the_store_and_finishes_it(controller):
    epoch = start_move_to_2_3(controller)
    successor = controller.new_controller()
    state = successor.partition("orders", 0)
    assert state["replicas"] == [2, 3, 1] and state["leader_epoch"] == epoch + 2  # phase A again
    sent = leader_and_isr_states(successor.requests_to(3, LeaderAndIsrRequest)[-1])[("orders", 0)]
    assert sent.adding_replicas == (3,)
    assert successor.alter_partition("orders", 0, [1, 2, 3]).error_code == ErrorCode.NONE
    assert successor.partition("orders", 0)["replicas"] == [2, 3]
    assert ongoing(successor) == {}


def test_a_controller_that_died_after_storing_the_reassignment_only_is_resumed():
    driver = ControllerDriver()
    driver.register_brokers(1, 2, 3)
    driver.create_topic("orders", assignment={0: [1, 2]})
    store = driver.core.store
    store.put_partition_reassignment("orders", 0, {"target": [2, 3], "original": [1, 2], "adding": [3],
                                                   "removing": [1]})
    successor = driver.new_controller()
    assert successor.partition("orders", 0)["replicas"] == [2, 3, 1]
    assert ongoing(successor) == {("orders", 0): ([2, 3, 1], [3], [1])}


def test_a_target_replica_that_is_down_holds_the_reassignment_until_it_returns(controller):
    start_move_to_2_3(controller)
    controller.broker_unreachable(3)
    refused = controller.alter_partition("orders", 0, [1, 2, 3])
    assert refused.topics[0].partitions[0].error_code == ErrorCode.INELIGIBLE_REPLICA
    assert controller.partition("orders", 0)["replicas"] == [2, 3, 1]
    assert ongoing(controller) == {("orders", 0): ([2, 3, 1], [3], [1])}
    controller.register(3)
    assert controller.partition("orders", 0)["replicas"] == [2, 3, 1]  # back, but not in sync yet
    assert controller.alter_partition("orders", 0, [1, 2, 3]).error_code == ErrorCode.NONE
    assert controller.partition("orders", 0)["replicas"] == [2, 3] and ongoing(controller) == {}


def test_cancelling_goes_back_to_the_original_replicas(controller):
    start_move_to_2_3(controller)
    controller.clear_sends()
    assert reassign(controller, "orders", 0, None) == ErrorCode.NONE
    state = controller.partition("orders", 0)
    assert state["replicas"] == [1, 2] and state["leader"] == 1
    assert stop_replica_partitions(controller.requests_to(3, StopReplicaRequest)[0]) == {("orders", 0)}
    assert ongoing(controller) == {}


@pytest.mark.parametrize(("topic", "partition", "replicas", "code"), [
    ("orders", 0, [], ErrorCode.INVALID_REPLICA_ASSIGNMENT),
    ("orders", 0, [2, 2], ErrorCode.INVALID_REPLICA_ASSIGNMENT),
    ("orders", 0, [-1, 2], ErrorCode.INVALID_REPLICA_ASSIGNMENT),
    ("orders", 0, [2, 9], ErrorCode.INVALID_REPLICA_ASSIGNMENT),  # broker 9 is not live
    ("orders", 5, [2, 3], ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
    ("missing", 0, [2, 3], ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
    ("orders", 0, None, ErrorCode.NO_REASSIGNMENT_IN_PROGRESS),
])
def test_bad_input_gets_kafkas_code_and_changes_nothing(controller, topic, partition, replicas, code):
    before = controller.snapshot()
    assert reassign(controller, topic, partition, replicas) == code
    assert controller.snapshot() == before and not controller.sent
