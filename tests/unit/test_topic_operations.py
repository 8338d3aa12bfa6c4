"""A broker holds a CreateTopics or DeleteTopics answer as Kafka 2.4's DelayedCreatePartitions and
DelayedDeleteTopics do: forwarded to the controller, the controller's answer is given only once this
broker's metadata cache shows every created partition with a leader (or no longer has a deleted
topic), and after timeout_ms a topic the cache still disagrees on is REQUEST_TIMED_OUT; and the
controller holds its own answer until every live broker applied the UpdateMetadata that carries the
change. Driven step by step on the pure BrokerCore and ControllerCore, no Ray."""
from __future__ import annotations

import pytest

from actors.core.controller.metadata_propagation import PROPAGATION_WAIT_MAX_MS
from actors.core.effects import ArmTimer, Respond, Send
from actors.core.errors import ErrorCode
from actors.core.messages.create_topics import (
    CreatableReplicaAssignment, CreatableTopic, CreatableTopicResult, CreateTopicsRequest, CreateTopicsResponse,
)
from actors.core.messages.delete_topics import DeletableTopicResult, DeleteTopicsRequest, DeleteTopicsResponse
from actors.core.messages.update_metadata import UpdateMetadataRequest, UpdateMetadataResponse
from actors.core.broker.metadata_cache import LEADER_DURING_DELETE
from tests.support.controller_driver import ControllerDriver
from tests.unit.test_metadata_cache import registered_broker, state, update

CLIENT_REQUEST = 100
TIMEOUT_MS = 30_000


def create_request(*names: str, timeout_ms: int = TIMEOUT_MS, validate_only: bool = False) -> CreateTopicsRequest:
    return CreateTopicsRequest(topics=tuple(CreatableTopic(name=n, num_partitions=2, replication_factor=3)
                                            for n in names), timeout_ms=timeout_ms, validate_only=validate_only)


def created(*results: tuple[str, ErrorCode]) -> CreateTopicsResponse:
    return CreateTopicsResponse(topics=tuple(CreatableTopicResult(name=n, error_code=code, num_partitions=2,
                                                                  replication_factor=3) for n, code in results))


def answers(effects) -> dict[int, object]:
    return {e.request_id: e.response for e in effects if isinstance(e, Respond)}


def forwarded(core, request, now_ms: int = 0):
    """The client's request handed to ``core``; returns the request it sent the controller."""
    effects = core.topic_operations.handle_create_topics(CLIENT_REQUEST, request, now_ms) \
        if isinstance(request, CreateTopicsRequest) else core.topic_operations.handle_delete_topics(
            CLIENT_REQUEST, request, now_ms)
    (send,) = [e for e in effects if isinstance(e, Send)]
    assert send.destination == "controller" and send.message.forward_id > 0
    assert send.timeout_ms > request.timeout_ms, "the broker waits for the controller longer than the controller holds"
    assert answers(effects) == {}
    return send.message


# ------------------------------------------------------------------------------ the broker's side
def test_create_topics_is_answered_only_once_this_brokers_metadata_shows_every_partition_led():
    core = registered_broker(broker_epoch=7)
    sent = forwarded(core, create_request("t"))
    effects = core.on_controller_response(sent, created(("t", ErrorCode.NONE)), 10)
    assert answers(effects) == {} and any(isinstance(e, ArmTimer) for e in effects), "held, with a timer"
    assert answers(core.handle_update_metadata(1, update(topics={"t": [state(0)]}), 20)) == {1: UpdateMetadataResponse()}, \
        "one partition of two known: still held"
    assert answers(core.handle_update_metadata(2, update(topics={"t": [state(1, leader=-1)]}), 30)) == \
        {2: UpdateMetadataResponse()}, "the second partition has no leader yet: still held"
    effects = core.handle_update_metadata(3, update(topics={"t": [state(1)]}), 40)
    assert answers(effects)[CLIENT_REQUEST] == created(("t", ErrorCode.NONE))
    assert answers(core.tick(TIMEOUT_MS + 1)) == {}, "answered exactly once"


def test_a_topic_whose_partitions_are_not_led_by_the_deadline_is_request_timed_out_and_the_others_keep_their_answers():
    core = registered_broker(broker_epoch=7)
    sent = forwarded(core, create_request("led", "unled", "exists"), now_ms=0)
    controller_answer = created(("led", ErrorCode.NONE), ("unled", ErrorCode.NONE),
                                ("exists", ErrorCode.TOPIC_ALREADY_EXISTS))
    core.on_controller_response(sent, controller_answer, 5)
    core.handle_update_metadata(1, update(topics={"led": [state(0), state(1)], "unled": [state(0)]}), 10)
    assert answers(core.tick(TIMEOUT_MS - 1)) == {}
    response = answers(core.tick(TIMEOUT_MS))[CLIENT_REQUEST]
    assert [(r.name, r.error_code) for r in response.topics] == [
        ("led", ErrorCode.NONE), ("unled", ErrorCode.REQUEST_TIMED_OUT), ("exists", ErrorCode.TOPIC_ALREADY_EXISTS)]
    # Kafka's handleCreateTopicsRequest: a topic answered with an error has no counts or configs (v5+).
    assert [(r.num_partitions, r.replication_factor) for r in response.topics] == [(2, 3), (-1, -1), (2, 3)]


@pytest.mark.parametrize("timeout_ms", [0, -1])
def test_a_timeout_of_zero_answers_each_created_or_deleted_topic_request_timed_out_at_once(timeout_ms):
    """Kafka's AdminManager.createTopics and deleteTopics: with timeout <= 0 the work is done and
    not waited for; each topic that succeeded is REQUEST_TIMED_OUT, with no message."""
    core = registered_broker(broker_epoch=7)
    sent = forwarded(core, create_request("t", "exists", timeout_ms=timeout_ms))
    response = answers(core.on_controller_response(sent, created(
        ("t", ErrorCode.NONE), ("exists", ErrorCode.TOPIC_ALREADY_EXISTS)), 0))[CLIENT_REQUEST]
    assert [(r.name, r.error_code, r.error_message, r.num_partitions) for r in response.topics] == [
        ("t", ErrorCode.REQUEST_TIMED_OUT, None, -1), ("exists", ErrorCode.TOPIC_ALREADY_EXISTS, None, 2)]
    sent = forwarded(core, DeleteTopicsRequest(topic_names=("t",), timeout_ms=timeout_ms))
    (result,) = answers(core.on_controller_response(sent, DeleteTopicsResponse(
        responses=(DeletableTopicResult(name="t"),)), 0))[CLIENT_REQUEST].responses
    assert (result.error_code, result.error_message) == (ErrorCode.REQUEST_TIMED_OUT, None)
    checked = forwarded(core, create_request("v", timeout_ms=timeout_ms, validate_only=True))
    assert answers(core.on_controller_response(checked, created(("v", ErrorCode.NONE)), 0)) == {
        CLIENT_REQUEST: created(("v", ErrorCode.NONE))}, "validate_only answers the check"


@pytest.mark.parametrize("case, request_, controller_answer", [
    ("validate_only", create_request("t", validate_only=True), created(("t", ErrorCode.NONE))),
    ("nothing created", create_request("t"), created(("t", ErrorCode.TOPIC_ALREADY_EXISTS))),
])
def test_what_kafka_answers_at_once_is_answered_with_the_controllers_answer(case, request_, controller_answer):
    core = registered_broker(broker_epoch=7)
    sent = forwarded(core, request_)
    assert answers(core.on_controller_response(sent, controller_answer, 0)) == {CLIENT_REQUEST: controller_answer}


def test_an_unreachable_controller_is_not_controller_for_every_topic_which_clients_retry():
    core = registered_broker(broker_epoch=7)
    sent = forwarded(core, create_request("a", "b"))
    response = answers(core.on_controller_response(sent, ErrorCode.NETWORK_EXCEPTION, 0))[CLIENT_REQUEST]
    assert [(r.name, r.error_code) for r in response.topics] == [("a", ErrorCode.NOT_CONTROLLER),
                                                                 ("b", ErrorCode.NOT_CONTROLLER)]
    assert core.on_controller_response(sent, created(("a", ErrorCode.NONE)), 1) == [], "a late duplicate is dropped"


def test_delete_topics_is_answered_only_once_this_brokers_metadata_no_longer_has_the_topic():
    core = registered_broker(broker_epoch=7)
    core.handle_update_metadata(1, update(topics={"t": [state(0), state(1)]}), 0)
    sent = forwarded(core, DeleteTopicsRequest(topic_names=("t",), timeout_ms=TIMEOUT_MS))
    deleted = DeleteTopicsResponse(responses=(DeletableTopicResult(name="t"),))
    assert answers(core.on_controller_response(sent, deleted, 10)) == {}
    assert CLIENT_REQUEST not in answers(core.handle_update_metadata(
        2, update(topics={"t": [state(0, leader=LEADER_DURING_DELETE)]}), 20))
    effects = core.handle_update_metadata(3, update(topics={"t": [state(1, leader=LEADER_DURING_DELETE)]}), 30)
    assert answers(effects)[CLIENT_REQUEST] == deleted


def test_a_deletion_this_broker_has_not_seen_by_the_deadline_is_request_timed_out():
    core = registered_broker(broker_epoch=7)
    core.handle_update_metadata(1, update(topics={"t": [state(0)]}), 0)
    sent = forwarded(core, DeleteTopicsRequest(topic_names=("t",), timeout_ms=TIMEOUT_MS))
    core.on_controller_response(sent, DeleteTopicsResponse(responses=(DeletableTopicResult(name="t"),)), 10)
    (result,) = answers(core.tick(TIMEOUT_MS))[CLIENT_REQUEST].responses
    assert result.error_code == ErrorCode.REQUEST_TIMED_OUT


# -------------------------------------------------------------------------- the controller's side
def controller(*brokers: int, config: dict | None = None) -> ControllerDriver:
    driver = ControllerDriver(config=config)
    driver.register_brokers(*brokers)
    driver.acknowledge_update_metadata()  # what registration sent
    return driver


def explicit(name: str, replicas: list[int], timeout_ms: int = TIMEOUT_MS) -> CreateTopicsRequest:
    return CreateTopicsRequest(topics=(CreatableTopic(name=name, assignments=(CreatableReplicaAssignment(
        partition_index=0, broker_ids=tuple(replicas)),)),), timeout_ms=timeout_ms)


def acknowledge(driver: ControllerDriver, broker_ids) -> None:
    """The UpdateMetadata requests sent to ``broker_ids`` so far answered without error."""
    for broker_id, request in [(b, r) for b, r in driver.undelivered_update_metadata if b in broker_ids]:
        driver.undelivered_update_metadata.remove((broker_id, request))
        driver.apply(driver.core.on_control_response(broker_id, request, UpdateMetadataResponse(), driver.now_ms))


def test_the_controller_answers_create_topics_once_every_live_broker_applied_the_new_partitions():
    driver = controller(1, 2, 3)
    request_id = driver.call("handle_create_topics", explicit("t", [1, 2]))
    assert request_id not in driver.responses
    assert {b for b, r in driver.undelivered_update_metadata if any(t.topic_name == "t" for t in r.topic_states)} == \
        {1, 2, 3}, "every live broker is told, also the one with no replica"
    acknowledge(driver, {1, 2})
    assert request_id not in driver.responses, "broker 3 has not applied it yet"
    acknowledge(driver, {3})
    assert driver.responses[request_id].topics[0].error_code == ErrorCode.NONE


def test_an_error_answer_from_a_broker_does_not_count_and_a_fenced_broker_is_no_longer_waited_for():
    session_timeout_ms = PROPAGATION_WAIT_MAX_MS // 3  # fenced well before the hold's own bound
    driver = controller(1, 2, 3, config={"broker.session.timeout.ms": str(session_timeout_ms)})
    request_id = driver.call("handle_create_topics", explicit("t", [1, 2]))
    acknowledge(driver, {1, 2})
    for broker_id, request in [(b, r) for b, r in driver.undelivered_update_metadata if b == 3]:
        driver.apply(driver.core.on_control_response(3, request, UpdateMetadataResponse(
            error_code=ErrorCode.STALE_BROKER_EPOCH), driver.now_ms))
    assert request_id not in driver.responses
    driver.now_ms += session_timeout_ms + 1  # broker 3 misses its heartbeats; 1 and 2 keep theirs
    driver.heartbeat(1)
    driver.heartbeat(2)
    driver.apply(driver.core.tick(driver.now_ms))
    assert 3 not in driver.core.context.brokers, "broker 3 is fenced"
    assert driver.responses[request_id].topics[0].error_code == ErrorCode.NONE


def test_the_controller_holds_its_answer_no_longer_than_its_bound_and_not_at_all_for_timeout_ms_0():
    driver = controller(1, 2)
    held = driver.call("handle_create_topics", explicit("slow", [1, 2]))
    driver.now_ms += PROPAGATION_WAIT_MAX_MS - 1
    driver.apply(driver.core.tick(driver.now_ms))
    assert held not in driver.responses
    driver.now_ms += 1
    driver.apply(driver.core.tick(driver.now_ms))
    assert driver.responses[held].topics[0].error_code == ErrorCode.NONE, "answered as it was: the topic exists"
    at_once = driver.call("handle_create_topics", explicit("quick", [1, 2], timeout_ms=0))
    assert driver.responses[at_once].topics[0].error_code == ErrorCode.NONE


def test_the_controller_answers_delete_topics_once_every_live_broker_dropped_the_topic():
    driver = controller(1, 2, 3)
    driver.ask("handle_create_topics", explicit("t", [1, 2]))
    request_id = driver.call("handle_delete_topics", DeleteTopicsRequest(topic_names=("t", "unknown")))
    assert request_id not in driver.responses
    marked = [r for _, r in driver.undelivered_update_metadata if isinstance(r, UpdateMetadataRequest)
              and any(s.leader == LEADER_DURING_DELETE for t in r.topic_states for s in t.partition_states)]
    assert len(marked) == 3
    acknowledge(driver, {1, 2, 3})
    assert [(r.name, r.error_code) for r in driver.responses[request_id].responses] == [
        ("t", ErrorCode.NONE), ("unknown", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)]
