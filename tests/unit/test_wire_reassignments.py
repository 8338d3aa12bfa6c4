"""AlterPartitionReassignments (45) and ListPartitionReassignments (46) are served on Kafka's wire at the
versions Kafka 4.x's admin client sends (both flexible): each request kio writes becomes the core's
request, the controller answers each partition with Kafka's code (bad input changes nothing), the
list names the replicas being added and removed, a broker forwards both to the controller, and the
answers read back as Kafka's responses of that version."""
from __future__ import annotations

import datetime

import pytest

from actors.core.errors import ErrorCode
from actors.core.messages.partition_reassignments import (
    AlterPartitionReassignmentsRequest, AlterPartitionReassignmentsResponse, ListPartitionReassignmentsRequest,
    ListPartitionReassignmentsTopics, ReassignablePartition, ReassignableTopic,
)
from actors.wire.versions import SUPPORTED_VERSIONS
from tests.support.controller_driver import ControllerDriver
from tests.unit.test_wire_admin_apis import _answer, _schema_module, _through_the_wire


@pytest.fixture
def controller() -> ControllerDriver:
    driver = ControllerDriver()
    driver.register_brokers(1, 2, 3)
    assert driver.create_topic("orders", assignment={0: [1, 2], 1: [2, 3], 2: [3, 1]}).error_code == ErrorCode.NONE
    driver.clear_sends()
    return driver


def _alter_body(version: int, moves: dict[tuple[str, int], list[int] | None], **fields):
    schema, module = _schema_module(45, version)
    by_topic: dict[str, list] = {}
    for (topic, partition), replicas in moves.items():
        by_topic.setdefault(topic, []).append(module.ReassignablePartition(
            partition_index=partition, replicas=None if replicas is None else tuple(replicas)))
    return schema(timeout=datetime.timedelta(milliseconds=30000), **fields, topics=tuple(
        module.ReassignableTopic(name=t, partitions=tuple(ps)) for t, ps in by_topic.items()))


def _codes(answer) -> dict:
    return {(t.name, p.partition_index): p.error_code for t in answer.responses for p in t.partitions}


def test_the_versions_are_the_flexible_ones_kafkas_admin_client_sends():
    assert SUPPORTED_VERSIONS[45] == (0, 1) and SUPPORTED_VERSIONS[46] == (0, 0)
    for key, version in ((45, 0), (45, 1), (46, 0)):
        assert _schema_module(key, version)[0].__flexible__


@pytest.mark.parametrize("version", [0, 1])
def test_alter_partition_reassignments_answers_each_partition_with_kafkas_code(controller, version):
    request = _through_the_wire(45, version, _alter_body(version, {
        ("orders", 0): [2, 3],  # moves replica 1 to 3
        ("orders", 1): None,  # nothing to cancel
        ("orders", 2): [3, 3],  # a broker named twice
        ("orders", 9): [1, 2],  # no such partition
        ("missing", 0): [1, 2],  # no such topic
    }))
    assert isinstance(request, AlterPartitionReassignmentsRequest) and request.timeout_ms == 30000
    assert request.topics[0].partitions[0] == ReassignablePartition(partition_index=0, replicas=(2, 3))
    answer = _answer(45, version, controller.ask("handle_alter_partition_reassignments", request))
    assert answer.error_code == ErrorCode.NONE
    assert _codes(answer) == {
        ("orders", 0): ErrorCode.NONE, ("orders", 1): ErrorCode.NO_REASSIGNMENT_IN_PROGRESS,
        ("orders", 2): ErrorCode.INVALID_REPLICA_ASSIGNMENT, ("orders", 9): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ("missing", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    # Only the good move started: the others changed nothing.
    assert controller.partition("orders", 0)["replicas"] == [2, 3, 1]
    assert controller.partition("orders", 1)["replicas"] == [2, 3]
    assert controller.partition("orders", 2)["replicas"] == [3, 1]


def test_a_broker_that_is_not_registered_is_an_invalid_replica_assignment(controller):
    before = controller.snapshot()
    request = _through_the_wire(45, 1, _alter_body(1, {("orders", 0): [1, 7]}))
    answer = _answer(45, 1, controller.ask("handle_alter_partition_reassignments", request))
    assert _codes(answer) == {("orders", 0): ErrorCode.INVALID_REPLICA_ASSIGNMENT}
    assert controller.snapshot() == before


def test_v1_refuses_a_replication_factor_change_when_the_request_does_not_allow_it(controller):
    request = _through_the_wire(45, 1, _alter_body(1, {("orders", 0): [1, 2, 3], ("orders", 1): [3, 2]},
                                                   allow_replication_factor_change=False))
    assert not request.allow_replication_factor_change
    answer = _answer(45, 1, controller.ask("handle_alter_partition_reassignments", request))
    assert _codes(answer) == {("orders", 0): ErrorCode.INVALID_REPLICATION_FACTOR, ("orders", 1): ErrorCode.NONE}
    assert answer.allow_replication_factor_change is False
    assert controller.partition("orders", 0)["replicas"] == [1, 2]
    allowed = _through_the_wire(45, 1, _alter_body(1, {("orders", 0): [1, 2, 3]}))
    assert allowed.allow_replication_factor_change  # Kafka's default
    assert _codes(_answer(45, 1, controller.ask("handle_alter_partition_reassignments", allowed))) == {
        ("orders", 0): ErrorCode.NONE}


def test_list_partition_reassignments_names_the_replicas_being_added_and_removed(controller):
    controller.ask("handle_alter_partition_reassignments", AlterPartitionReassignmentsRequest(topics=(
        ReassignableTopic(name="orders", partitions=(ReassignablePartition(partition_index=0, replicas=(2, 3)),)),)))
    schema, module = _schema_module(46, 0)
    for topics in (None, (module.ListPartitionReassignmentsTopics(name="orders", partition_indexes=(0, 1)),)):
        request = _through_the_wire(46, 0, schema(timeout=datetime.timedelta(milliseconds=30000), topics=topics))
        assert isinstance(request, ListPartitionReassignmentsRequest)
        answer = _answer(46, 0, controller.ask("handle_list_partition_reassignments", request))
        assert answer.error_code == ErrorCode.NONE
        assert {(t.name, p.partition_index): (list(p.replicas), list(p.adding_replicas), list(p.removing_replicas))
                for t in answer.topics for p in t.partitions} == {("orders", 0): ([2, 3, 1], [3], [1])}
    request = ListPartitionReassignmentsRequest(topics=(ListPartitionReassignmentsTopics(
        name="orders", partition_indexes=(1,)),))
    assert _answer(46, 0, controller.ask("handle_list_partition_reassignments", request)).topics == ()


@pytest.mark.parametrize("handler, request_", [
    ("handle_alter_partition_reassignments", AlterPartitionReassignmentsRequest(topics=(ReassignableTopic(
        name="t", partitions=(ReassignablePartition(partition_index=0, replicas=(1,)),)),))),
    ("handle_list_partition_reassignments", ListPartitionReassignmentsRequest()),
])
def test_a_broker_forwards_both_and_answers_not_controller_when_it_cannot_reach_it(handler, request_):
    from tests.unit.test_metadata_cache import registered_broker
    core = registered_broker(broker_epoch=3)
    (send,) = getattr(core, handler)(4, request_, 0)
    assert send.destination == "controller" and send.message.forward_id > 0
    (answer,) = core.on_controller_response(send.message, ErrorCode.NETWORK_EXCEPTION, 0)
    assert (answer.request_id, answer.response.error_code) == (4, ErrorCode.NOT_CONTROLLER)
    assert core.on_controller_response(send.message, ErrorCode.NETWORK_EXCEPTION, 0) == []  # answered once
    (send,) = getattr(core, handler)(5, request_, 0)
    done = AlterPartitionReassignmentsResponse(responses=())
    (answer,) = core.on_controller_response(send.message, done, 0)
    assert (answer.request_id, answer.response) == (5, done)
