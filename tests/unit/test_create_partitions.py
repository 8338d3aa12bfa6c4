"""CreatePartitions adds partitions as Kafka 2.4 does: the controller continues a topic's
rack-unaware assignment (or takes a manual one), leads and replicates the new partitions, answers
Kafka's error codes for bad requests without changing anything, and the request and answer travel
Kafka's wire at v0-1; driven through the controller's core and the wire codec directly."""
from __future__ import annotations

import datetime

import pytest
from kio.index import load_request_schema

from actors.core.controller.partition_creation import new_partitions_assignment
from actors.core.errors import ErrorCode, KafkaProtocolError
from actors.core.messages.create_partitions import (
    CreatePartitionsAssignment, CreatePartitionsRequest, CreatePartitionsResponse, CreatePartitionsTopic,
    CreatePartitionsTopicResult,
)
from actors.core.messages.delete_topics import DeleteTopicsRequest
from actors.core.messages.leader_and_isr import LeaderAndIsrRequest
from actors.core.messages.update_metadata import UpdateMetadataRequest
from actors.wire.versions import SUPPORTED_VERSIONS
from tests.support.controller_driver import ControllerDriver, leader_and_isr_states, update_metadata_states
from tests.unit.test_wire_admin_apis import _answer, _through_the_wire


def _topic(name: str, count: int, assignments=None) -> CreatePartitionsTopic:
    return CreatePartitionsTopic(name=name, count=count, assignments=None if assignments is None else tuple(
        CreatePartitionsAssignment(broker_ids=tuple(r)) for r in assignments))


@pytest.mark.parametrize("existing, brokers, count, expected", [
    # Kafka's AddPartitionsTest.testReplicaPlacementAllServers: partition 0 on [0, 1], brokers 0-4.
    ({0: (0, 1)}, [0, 1, 2, 3, 4], 4, {1: (1, 2), 2: (2, 3), 3: (3, 4)}),
    # The start index is that of the first broker whose id is at least partition 0's leader.
    ({0: (2, 0), 1: (0, 1)}, [0, 1, 2], 5, {2: (1, 2), 3: (2, 1), 4: (0, 2)}),
    ({0: (7,)}, [3, 7, 9], 3, {1: (9,), 2: (3,)}),
])
def test_new_partitions_continue_kafkas_assignment(existing, brokers, count, expected):
    assert new_partitions_assignment(_topic("t", count), existing, brokers) == expected


@pytest.mark.parametrize("count, assignments, code", [
    (1, None, ErrorCode.INVALID_PARTITIONS),  # fewer than now
    (2, None, ErrorCode.INVALID_PARTITIONS),  # as many as now
    (3, [[1, 9]], ErrorCode.INVALID_REPLICA_ASSIGNMENT),  # an unknown broker
    (4, [[1, 2]], ErrorCode.INVALID_REPLICA_ASSIGNMENT),  # two partitions added, one assignment
    (3, [[1, 1]], ErrorCode.INVALID_REPLICA_ASSIGNMENT),  # a broker twice
    (3, [[1]], ErrorCode.INVALID_REPLICA_ASSIGNMENT),  # another replication factor than partition 0's
    (3, [[]], ErrorCode.INVALID_REPLICA_ASSIGNMENT),
])
def test_bad_counts_and_assignments_get_kafkas_codes(count, assignments, code):
    with pytest.raises(KafkaProtocolError) as raised:
        new_partitions_assignment(_topic("t", count, assignments), {0: (1, 2), 1: (2, 3)}, [1, 2, 3])
    assert raised.value.error_code == code


@pytest.fixture
def controller() -> ControllerDriver:
    driver = ControllerDriver()
    driver.register_brokers(1, 2, 3)
    assert driver.create_topic("orders", assignment={0: [1, 2]}).error_code == ErrorCode.NONE
    driver.acknowledge_update_metadata()
    driver.clear_sends()
    return driver


def _stored(controller: ControllerDriver) -> dict[int, list[int]]:
    return {int(p): r for p, r in controller.stored().topics()["orders"]["partitions"].items()}


def _codes(response: CreatePartitionsResponse) -> dict:
    return {r.name: r.error_code for r in response.results}


def test_new_partitions_are_stored_led_and_replicated(controller):
    response = controller.ask("handle_create_partitions", CreatePartitionsRequest(topics=(
        _topic("orders", 3), _topic("nope", 2))))
    assert _codes(response) == {"orders": ErrorCode.NONE, "nope": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    assert _stored(controller) == {0: [1, 2], 1: [2, 3], 2: [3, 1]}
    assert (controller.leader("orders", 1), controller.isr("orders", 1)) == (2, [2, 3])
    assert controller.leader("orders", 2) == 3
    for broker_id, partitions in {2: {("orders", 1)}, 3: {("orders", 1), ("orders", 2)}}.items():
        led = set().union(*(leader_and_isr_states(r) for r in controller.requests_to(broker_id, LeaderAndIsrRequest)))
        assert partitions <= led
    known = set().union(*(update_metadata_states(r) for r in controller.requests_to(1, UpdateMetadataRequest)))
    assert {("orders", 1), ("orders", 2)} <= known


def test_a_manual_assignment_is_taken_and_validate_only_changes_nothing(controller):
    check = CreatePartitionsRequest(topics=(_topic("orders", 2, [[3, 1]]),), validate_only=True)
    assert _codes(controller.ask("handle_create_partitions", check)) == {"orders": ErrorCode.NONE}
    assert _stored(controller) == {0: [1, 2]}
    done = controller.ask("handle_create_partitions", CreatePartitionsRequest(topics=(_topic("orders", 2, [[3, 1]]),)))
    assert _codes(done) == {"orders": ErrorCode.NONE}
    assert _stored(controller) == {0: [1, 2], 1: [3, 1]}
    assert controller.leader("orders", 1) == 3


@pytest.mark.parametrize("topics, code", [
    ((_topic("orders", 1),), ErrorCode.INVALID_PARTITIONS),
    ((_topic("orders", 2, [[1, 7]]),), ErrorCode.INVALID_REPLICA_ASSIGNMENT),
    ((_topic("orders", 2), _topic("orders", 3)), ErrorCode.INVALID_REQUEST),
])
def test_refused_requests_change_nothing(controller, topics, code):
    response = controller.ask("handle_create_partitions", CreatePartitionsRequest(topics=topics))
    assert set(_codes(response).values()) == {code}
    assert _stored(controller) == {0: [1, 2]}
    assert controller.requests_to(1, LeaderAndIsrRequest) == []


def test_a_topic_queued_for_deletion_is_invalid_topic(controller):
    controller.call("handle_delete_topics", DeleteTopicsRequest(topic_names=("orders",), timeout_ms=0))
    response = controller.ask("handle_create_partitions", CreatePartitionsRequest(topics=(_topic("orders", 2),)))
    assert _codes(response) == {"orders": ErrorCode.INVALID_TOPIC_EXCEPTION}


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_create_partitions_is_served_on_the_wire(controller, version):
    assert SUPPORTED_VERSIONS[37] == (0, 3)  # v2 and v3 are flexible (v3 as v2, for KIP-599)
    schema = load_request_schema(37, version)
    module = __import__(schema.__module__, fromlist=["*"])
    body = schema(timeout=datetime.timedelta(milliseconds=3000), validate_only=False, topics=(
        module.CreatePartitionsTopic(name="orders", count=3, assignments=(
            module.CreatePartitionsAssignment(broker_ids=(3, 2)), module.CreatePartitionsAssignment(broker_ids=(2, 1)))),))
    request = _through_the_wire(37, version, body)
    assert request == CreatePartitionsRequest(timeout_ms=3000, topics=(_topic("orders", 3, [[3, 2], [2, 1]]),))
    answer = _answer(37, version, controller.ask("handle_create_partitions", request))
    assert [(r.name, r.error_code) for r in answer.results] == [("orders", 0)]
    assert _stored(controller) == {0: [1, 2], 1: [3, 2], 2: [2, 1]}


def test_a_broker_forwards_create_partitions_and_answers_not_controller_when_it_cannot_reach_it():
    from tests.unit.test_metadata_cache import registered_broker
    core = registered_broker(broker_epoch=3)
    request = CreatePartitionsRequest(topics=(_topic("t", 2),))
    (send,) = core.handle_create_partitions(4, request, 0)
    assert send.destination == "controller" and send.message.forward_id > 0
    (answer,) = core.on_controller_response(send.message, ErrorCode.NETWORK_EXCEPTION, 0)
    assert (answer.request_id, _codes(answer.response)) == (4, {"t": ErrorCode.NOT_CONTROLLER})
    (send,) = core.handle_create_partitions(5, request, 0)
    created = CreatePartitionsResponse(results=(CreatePartitionsTopicResult(name="t"),))
    (answer,) = core.on_controller_response(send.message, created, 0)
    assert (answer.request_id, answer.response) == (5, created), "the controller's answer, as it gave it"


@pytest.mark.parametrize("timeout_ms", [0, -1])
def test_a_timeout_of_zero_adds_the_partitions_and_answers_request_timed_out(controller, timeout_ms):
    # Kafka's AdminManager.createPartitions: with timeout <= 0 the partitions are added and each topic
    # that succeeded is answered REQUEST_TIMED_OUT (no message) at once; refused topics keep their code.
    response = controller.ask("handle_create_partitions", CreatePartitionsRequest(
        topics=(_topic("orders", 2), _topic("nope", 2)), timeout_ms=timeout_ms))
    assert _codes(response) == {"orders": ErrorCode.REQUEST_TIMED_OUT, "nope": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    assert response.results[0].error_message is None
    assert _stored(controller) == {0: [1, 2], 1: [2, 3]}
    assert controller.leader("orders", 1) == 2


def test_a_timeout_of_zero_with_validate_only_answers_the_check(controller):
    response = controller.ask("handle_create_partitions", CreatePartitionsRequest(
        topics=(_topic("orders", 2),), timeout_ms=0, validate_only=True))
    assert _codes(response) == {"orders": ErrorCode.NONE}
    assert _stored(controller) == {0: [1, 2]}
