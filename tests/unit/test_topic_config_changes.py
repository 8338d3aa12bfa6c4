"""IncrementalAlterConfigs end to end through the pure cores: a broker checks and forwards, the
controller merges, stores and notifies every broker with UpdateMetadata, brokers apply the change
to their live partitions, and a change to unclean.leader.election.enable moves the controller."""
from __future__ import annotations

import pytest

from actors.core.effects import Respond, Send
from actors.core.errors import ErrorCode
from actors.core.messages.incremental_alter_configs import (
    OP_APPEND, OP_DELETE, OP_SET, RESOURCE_TOPIC, AlterableConfig, AlterConfigsResource,
    IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse,
)
from actors.core.messages.update_metadata import UpdateMetadataRequest
from actors.core.broker.config_forwarding import ConfigForwarder
from tests.support.controller_driver import ControllerDriver
from tests.support.core_driver import CoreDriver, make_batch, produce_result


def alter(topic: str, *ops: tuple, validate_only: bool = False) -> IncrementalAlterConfigsRequest:
    return IncrementalAlterConfigsRequest(validate_only=validate_only, resources=(AlterConfigsResource(
        resource_type=RESOURCE_TOPIC, resource_name=topic,
        configs=tuple(AlterableConfig(name=n, config_operation=o, value=v) for n, o, v in ops)),))


def codes(response: IncrementalAlterConfigsResponse) -> dict[str, ErrorCode]:
    return {r.resource_name: r.error_code for r in response.responses}


@pytest.fixture
def controller() -> ControllerDriver:
    driver = ControllerDriver()
    driver.register_brokers(1, 2, 3)
    assert driver.create_topic("orders", assignment={0: [1, 2], 1: [2, 3]}).error_code == ErrorCode.NONE
    driver.clear_sends()
    return driver


def test_a_set_is_stored_and_sent_to_every_live_broker_with_update_metadata(controller):
    response = controller.ask("handle_incremental_alter_configs",
                              alter("orders", ("min.insync.replicas", OP_SET, "2"), ("retention.ms", OP_SET, "1000")))
    assert codes(response) == {"orders": ErrorCode.NONE}
    assert controller.stored().topics()["orders"]["config"] == {"min.insync.replicas": "2", "retention.ms": "1000"}
    for broker_id in (1, 2, 3):
        (update,) = controller.requests_to(broker_id, UpdateMetadataRequest)
        (topic_state,) = update.topic_states
        assert topic_state.topic_name == "orders" and len(topic_state.partition_states) == 2
        assert dict(topic_state.topic_config) == {"min.insync.replicas": "2", "retention.ms": "1000"}
    described = controller.core.describe_topic_config("orders")
    assert described["min.insync.replicas"] == {"value": "2", "source": "DYNAMIC_TOPIC_CONFIG"}
    assert described["segment.bytes"]["source"] == "DEFAULT_CONFIG"


def test_a_delete_removes_the_override_and_validate_only_changes_nothing(controller):
    controller.ask("handle_incremental_alter_configs", alter("orders", ("min.insync.replicas", OP_SET, "2")))
    controller.clear_sends()
    response = controller.ask("handle_incremental_alter_configs",
                              alter("orders", ("segment.bytes", OP_SET, "4096"), validate_only=True))
    assert codes(response) == {"orders": ErrorCode.NONE}
    assert controller.stored().topics()["orders"]["config"] == {"min.insync.replicas": "2"}
    assert not controller.sent
    controller.ask("handle_incremental_alter_configs", alter("orders", ("min.insync.replicas", OP_DELETE, None)))
    assert controller.stored().topics()["orders"]["config"] == {}
    (update,) = controller.requests_to(1, UpdateMetadataRequest)
    assert update.topic_states[0].topic_config == ()


@pytest.mark.parametrize(("topic", "ops", "code"), [
    ("orders", [("no.such.key", OP_SET, "1")], ErrorCode.INVALID_CONFIG),
    ("orders", [("min.insync.replicas", OP_SET, "zero")], ErrorCode.INVALID_CONFIG),
    ("orders", [("min.insync.replicas", OP_SET, "0")], ErrorCode.INVALID_CONFIG),
    ("orders", [("unclean.leader.election.enable", OP_SET, "maybe")], ErrorCode.INVALID_CONFIG),
    ("orders", [("cleanup.policy", OP_SET, "shred")], ErrorCode.INVALID_CONFIG),
    ("orders", [("segment.bytes", OP_SET, "3")], ErrorCode.INVALID_CONFIG),
    ("orders", [("retention.ms", OP_SET, "-2")], ErrorCode.INVALID_CONFIG),
    ("orders", [("retention.ms", OP_SET, None)], ErrorCode.INVALID_CONFIG),
    ("orders", [("cleanup.policy", OP_APPEND, "compact")], ErrorCode.INVALID_REQUEST),
    ("orders", [("retention.ms", OP_SET, "1"), ("retention.ms", OP_DELETE, None)], ErrorCode.INVALID_REQUEST),
    ("missing", [("retention.ms", OP_SET, "1")], ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
])
def test_bad_input_gets_kafkas_code_and_changes_nothing(controller, topic, ops, code):
    before = controller.snapshot()
    response = controller.ask("handle_incremental_alter_configs", alter(topic, *ops))
    assert codes(response) == {topic: code}
    assert controller.snapshot() == before and not controller.sent
    forwarder = ConfigForwarder(broker_id=1)
    (answer,) = forwarder.handle_incremental_alter_configs(7, alter(topic, *ops), known_topics={"orders"})
    assert isinstance(answer, Respond) and codes(answer.response) == {topic: code}


def test_turning_unclean_election_on_elects_a_leader_for_an_offline_partition(controller):
    assert controller.alter_partition("orders", 0, [1]).error_code == ErrorCode.NONE
    controller.broker_unreachable(1)
    assert controller.leader("orders", 0) == -1  # broker 2 is out of the ISR: no clean leader
    controller.ask("handle_incremental_alter_configs",
                   alter("orders", ("unclean.leader.election.enable", OP_SET, "true")))
    assert controller.leader("orders", 0) == 2


def test_a_new_controller_sends_the_stored_config_with_its_full_update_metadata(controller):
    controller.ask("handle_incremental_alter_configs", alter("orders", ("min.insync.replicas", OP_SET, "2")))
    successor = controller.new_controller()
    (update,) = successor.requests_to(2, UpdateMetadataRequest)
    assert {t.topic_name: dict(t.topic_config) for t in update.topic_states} == {"orders": {"min.insync.replicas": "2"}}


def test_the_broker_forwards_good_resources_and_merges_the_controller_answer():
    forwarder = ConfigForwarder(broker_id=1)
    request = IncrementalAlterConfigsRequest(resources=(
        AlterConfigsResource(resource_type=RESOURCE_TOPIC, resource_name="gone",
                             configs=(AlterableConfig(name="retention.ms", value="5"),)),
        AlterConfigsResource(resource_type=RESOURCE_TOPIC, resource_name="orders",
                             configs=(AlterableConfig(name="retention.ms", value="5"),))))
    (send,) = forwarder.handle_incremental_alter_configs(3, request, known_topics={"orders"})
    assert isinstance(send, Send) and send.destination == "controller"
    assert [r.resource_name for r in send.message.resources] == ["orders"]
    # The controller could not be reached: the forwarded resource is NOT_CONTROLLER (retriable).
    (answer,) = forwarder.on_controller_response(send.message, ErrorCode.NETWORK_EXCEPTION)
    assert answer.request_id == 3
    assert codes(answer.response) == {"gone": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "orders": ErrorCode.NOT_CONTROLLER}
    assert forwarder.on_controller_response(send.message, ErrorCode.NETWORK_EXCEPTION) == []  # answered once


def test_past_the_forwarding_limit_the_forwarded_resources_time_out_at_once_and_the_brokers_own_answers_stay():
    from actors.core.broker.controller_forwarding import FORWARDED_MAX
    forwarder = ConfigForwarder(broker_id=1)
    good = alter("orders", ("retention.ms", OP_SET, "5"))
    waiting = [forwarder.handle_incremental_alter_configs(i, good, known_topics={"orders"}) for i in range(FORWARDED_MAX)]
    assert all(isinstance(send, Send) for (send,) in waiting)
    both = IncrementalAlterConfigsRequest(resources=alter("gone", ("retention.ms", OP_SET, "5")).resources + good.resources)
    (answer,) = forwarder.handle_incremental_alter_configs(9999, both, known_topics={"orders"})
    assert isinstance(answer, Respond) and answer.request_id == 9999
    assert codes(answer.response) == {"gone": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "orders": ErrorCode.REQUEST_TIMED_OUT}
    # An answer frees its place.
    (send,) = waiting[0]
    (first,) = forwarder.on_controller_response(send.message, IncrementalAlterConfigsResponse(responses=()))
    assert first.request_id == 0 and codes(first.response) == {"orders": ErrorCode.NOT_CONTROLLER}
    (again,) = forwarder.handle_incremental_alter_configs(10000, good, known_topics={"orders"})
    assert isinstance(again, Send)


def test_a_broker_applies_a_changed_min_insync_replicas_to_its_live_partition():
    core = CoreDriver(broker_id=0)
    core.become("orders", 0, leader=0, replicas=(0, 1), isr=(0,))
    assert produce_result(core.answers[core.produce("orders", 0, make_batch([b"a"]), acks=-1)]).error_code == \
        ErrorCode.NONE
    controller = ControllerDriver()
    controller.register_brokers(0, 1)
    controller.create_topic("orders", assignment={0: [0, 1]})
    controller.ask("handle_incremental_alter_configs", alter("orders", ("min.insync.replicas", OP_SET, "2")))
    (update,) = [r for r in controller.requests_to(0, UpdateMetadataRequest) if r.topic_states and r.topic_states[0].topic_config]
    assert core.ask("handle_update_metadata", update).error_code == ErrorCode.NONE
    assert core.manager.partitions[("orders", 0)].min_insync_replicas == 2
    assert produce_result(core.answers[core.produce("orders", 0, make_batch([b"b"]), acks=-1)]).error_code == \
        ErrorCode.NOT_ENOUGH_REPLICAS
