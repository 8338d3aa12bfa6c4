"""The admin APIs stock clients call are served on Kafka's wire at their non-flexible versions: each
request kio writes becomes the core's request, the core answers with Kafka's error codes (bad input
changes nothing), and the answer reads back as Kafka's response of that version."""
from __future__ import annotations

import datetime

import pytest
from kio.index import load_request_schema

from actors.core.errors import ErrorCode
from actors.core.broker.config_forwarding import ConfigForwarder
from actors.core.messages.elect_leaders import (
    UNCLEAN_ELECTION, ElectLeadersRequest, ElectLeadersResponse, TopicPartitions,
)
from actors.core.messages.alter_configs import AlterConfigsRequest, AlterConfigsResponse
from actors.core.messages.incremental_alter_configs import (
    AlterableConfig, AlterConfigsResource, AlterConfigsResourceResponse, IncrementalAlterConfigsRequest,
)
from actors.core.group.messages import DeletableGroupResult, DeleteGroupsRequest, DeleteGroupsResponse
from actors.wire.apis import CODECS
from actors.wire.frames import decode_request, encode_response
from actors.wire.versions import SUPPORTED_VERSIONS
from tests.unit.test_group_coordinator import PARTITIONS, Driver
from tests.unit.test_wire_frames import CONTEXT, read_response, request_frame


def _schema_module(api_key: int, version: int, request: bool = True):
    schema = load_request_schema(api_key, version)
    return schema, __import__(schema.__module__, fromlist=["*"])


def _through_the_wire(api_key: int, version: int, body):
    return CODECS[api_key].to_core(decode_request(request_frame(api_key, version, body)).body, version, CONTEXT)


def _answer(api_key: int, version: int, response):
    return read_response(api_key, version, encode_response(1, CODECS[api_key].to_kio(response, version, None)))[1]


# ----------------------------------------------------------------------------- DeleteGroups (42)
@pytest.mark.parametrize("version", [0, 1, 2])
def test_delete_groups_is_served_on_the_wire(version):
    assert SUPPORTED_VERSIONS[42] == (0, 2)  # v2 is flexible
    schema, _ = _schema_module(42, version)
    request = _through_the_wire(42, version, schema(groups_names=("a", "b")))
    assert request == DeleteGroupsRequest(groups_names=("a", "b"))
    answer = _answer(42, version, DeleteGroupsResponse(results=(
        DeletableGroupResult(group_id="a"), DeletableGroupResult(group_id="b", error_code=ErrorCode.NON_EMPTY_GROUP))))
    assert [(r.group_id, r.error_code) for r in answer.results] == [("a", 0), ("b", ErrorCode.NON_EMPTY_GROUP)]
    unreachable = CODECS[42].error_response(request, ErrorCode.COORDINATOR_NOT_AVAILABLE)
    assert {r.group_id: r.error_code for r in unreachable.results} == dict.fromkeys(
        ("a", "b"), ErrorCode.COORDINATOR_NOT_AVAILABLE)


def test_delete_groups_answers_not_coordinator_for_a_group_it_does_not_own_and_keeps_its_offsets():
    owner = Driver()
    owner.commit("g", {("t", 0): 7})
    partition = owner.core.partition_for("g")
    other = Driver(own=[p for p in range(PARTITIONS) if p != partition])
    (result,) = other.ask("handle_delete_groups", DeleteGroupsRequest(groups_names=("g",))).results
    assert result.error_code == ErrorCode.NOT_COORDINATOR
    (result,) = owner.ask("handle_delete_groups", DeleteGroupsRequest(groups_names=("g",))).results
    assert result.error_code == ErrorCode.NONE
    assert owner.fetch("g", [("t", 0)])[1] == {("t", 0): -1}


# ------------------------------------------------------ IncrementalAlterConfigs (44) and AlterConfigs (33)
@pytest.fixture
def controller():
    from tests.support.controller_driver import ControllerDriver
    driver = ControllerDriver()
    driver.register_brokers(1, 2, 3)
    assert driver.create_topic("orders", assignment={0: [1, 2]}).error_code == ErrorCode.NONE
    driver.clear_sends()
    return driver


def _alter_configs_body(version: int, topic: str, configs: dict, validate_only: bool = False, resource_type: int = 2):
    schema, module = _schema_module(33, version)
    return schema(validate_only=validate_only, resources=(module.AlterConfigsResource(
        resource_type=resource_type, resource_name=topic,
        configs=tuple(module.AlterableConfig(name=n, value=v) for n, v in configs.items())),))


def _codes(response) -> dict:
    return {r.resource_name: r.error_code for r in response.responses}


@pytest.mark.parametrize("version", [0, 1, 2])
def test_alter_configs_replaces_the_whole_override_set(controller, version):
    assert SUPPORTED_VERSIONS[33] == (0, 2)  # v2 is flexible
    first = _through_the_wire(33, version, _alter_configs_body(version, "orders", {"retention.ms": "1000",
                                                                                    "min.insync.replicas": "2"}))
    assert isinstance(first, AlterConfigsRequest)
    assert _codes(controller.ask("handle_alter_configs", first)) == {"orders": ErrorCode.NONE}
    second = _through_the_wire(33, version, _alter_configs_body(version, "orders", {"segment.bytes": "4096"}))
    response = controller.ask("handle_alter_configs", second)
    assert isinstance(response, AlterConfigsResponse)
    assert controller.stored().topics()["orders"]["config"] == {"segment.bytes": "4096"}, "unnamed overrides go"
    answer = _answer(33, version, response)
    assert [(r.resource_name, r.error_code) for r in answer.responses] == [("orders", 0)]


@pytest.mark.parametrize("configs, code", [
    ({"no.such.key": "1"}, ErrorCode.INVALID_CONFIG),
    ({"min.insync.replicas": "0"}, ErrorCode.INVALID_CONFIG),
    ({"cleanup.policy": "shred"}, ErrorCode.INVALID_CONFIG),
])
def test_alter_configs_bad_input_gets_kafkas_code_and_changes_nothing(controller, configs, code):
    first = _through_the_wire(33, 1, _alter_configs_body(1, "orders", {"retention.ms": "7"}))
    controller.ask("handle_alter_configs", first)
    forwarder = ConfigForwarder(broker_id=1)
    bad = _through_the_wire(33, 1, _alter_configs_body(1, "orders", configs))
    (answer,) = forwarder.handle_incremental_alter_configs(5, bad, known_topics={"orders"})
    assert isinstance(answer.response, AlterConfigsResponse) and _codes(answer.response) == {"orders": code}
    assert _codes(controller.ask("handle_alter_configs", bad)) == {"orders": code}
    assert controller.stored().topics()["orders"]["config"] == {"retention.ms": "7"}


def test_alter_configs_validate_only_and_a_static_broker_key_change_nothing(controller):
    check = _through_the_wire(33, 1, _alter_configs_body(1, "orders", {"retention.ms": "9"}, validate_only=True))
    assert check.validate_only
    assert _codes(controller.ask("handle_alter_configs", check)) == {"orders": ErrorCode.NONE}
    broker = _through_the_wire(33, 1, _alter_configs_body(1, "1", {"log.dirs": "/x"}, resource_type=4))
    (answer,) = ConfigForwarder(broker_id=1).handle_incremental_alter_configs(5, broker, known_topics={"orders"})
    assert _codes(answer.response) == {"1": ErrorCode.INVALID_CONFIG}  # not a dynamic broker key
    assert controller.stored().broker_configs() == {}
    assert controller.stored().topics()["orders"].get("config", {}) == {}


def test_the_broker_answers_a_forwarded_alter_configs_with_alter_configs_response():
    forwarder = ConfigForwarder(broker_id=1)
    request = _through_the_wire(33, 0, _alter_configs_body(0, "orders", {"retention.ms": "5"}))
    (send,) = forwarder.handle_incremental_alter_configs(3, request, known_topics={"orders"})
    assert isinstance(send.message, AlterConfigsRequest) and send.message.forward_id > 0
    (answer,) = forwarder.on_controller_response(send.message, AlterConfigsResponse(responses=(
        AlterConfigsResourceResponse(resource_type=2, resource_name="orders"),)))
    assert isinstance(answer.response, AlterConfigsResponse) and _codes(answer.response) == {"orders": ErrorCode.NONE}


@pytest.mark.parametrize("version", [0, 1])
def test_incremental_alter_configs_is_served_on_the_wire(controller, version):
    assert SUPPORTED_VERSIONS[44] == (0, 1)  # v1 is flexible
    schema, module = _schema_module(44, version)
    body = schema(validate_only=False, resources=(module.AlterConfigsResource(
        resource_type=2, resource_name="orders", configs=(
            module.AlterableConfig(name="retention.ms", config_operation=0, value="1234"),)),))
    request = _through_the_wire(44, version, body)
    assert request == IncrementalAlterConfigsRequest(resources=(AlterConfigsResource(
        resource_type=2, resource_name="orders", configs=(AlterableConfig(name="retention.ms", value="1234"),)),))
    response = controller.ask("handle_incremental_alter_configs", request)
    assert controller.stored().topics()["orders"]["config"] == {"retention.ms": "1234"}
    assert [(r.resource_name, r.error_code) for r in _answer(44, version, response).responses] == [("orders", 0)]


# ----------------------------------------------------------------------------- ElectLeaders (43)
def _elect_body(version: int, election_type: int, partitions: dict[str, list[int]]):
    schema, module = _schema_module(43, version)
    fields = {"election_type": election_type} if version >= 1 else {}
    return schema(timeout=datetime.timedelta(milliseconds=500), **fields, topic_partitions=tuple(
        module.TopicPartitions(topic=t, partitions=tuple(ps)) for t, ps in partitions.items()))


@pytest.mark.parametrize("version", [0, 1, 2])
def test_elect_leaders_preferred_on_the_wire_answers_kafkas_per_partition_codes(version):
    from tests.unit.test_controller import cluster, create
    assert SUPPORTED_VERSIONS[43] == (0, 2)  # v2 is flexible
    driver = cluster(1, 2, 3)
    create(driver, "t", {0: [2, 1], 1: [1, 2], 2: [3, 1]})
    driver.register(2, new_incarnation=True)  # t-0 moves to 1, away from its preferred replica 2
    assert driver.alter_partition("t", 0, [1, 2]).error_code == ErrorCode.NONE  # 2 caught up again
    driver.broker_unreachable(3)  # t-2's preferred replica is gone
    request = _through_the_wire(43, version, _elect_body(version, 0, {"t": [0, 1, 2], "nope": [0]}))
    assert request == ElectLeadersRequest(timeout_ms=500, topic_partitions=(
        TopicPartitions(topic="t", partitions=(0, 1, 2)), TopicPartitions(topic="nope", partitions=(0,))))
    answer = _answer(43, version, driver.ask("handle_elect_leaders", request))
    assert {(r.topic, p.partition_id): p.error_code for r in answer.replica_election_results
            for p in r.partition_result} == {
        ("t", 0): ErrorCode.NONE, ("t", 1): ErrorCode.ELECTION_NOT_NEEDED,
        ("t", 2): ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE, ("nope", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    assert driver.leader("t") == 2


def test_elect_leaders_unclean_with_no_live_replica_is_eligible_leaders_not_available():
    from tests.unit.test_controller import cluster, create
    driver = cluster(1, 2)
    create(driver, "t", {0: [1]})
    driver.broker_unreachable(1)
    request = _through_the_wire(43, 1, _elect_body(1, UNCLEAN_ELECTION, {"t": [0]}))
    answer = _answer(43, 1, driver.ask("handle_elect_leaders", request))
    assert [p.error_code for r in answer.replica_election_results for p in r.partition_result] == [
        ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE]


def test_a_broker_forwards_elect_leaders_and_answers_not_controller_when_it_cannot_reach_it():
    from tests.unit.test_metadata_cache import registered_broker
    core = registered_broker(broker_epoch=3)
    request = ElectLeadersRequest(topic_partitions=(TopicPartitions(topic="t", partitions=(0,)),))
    (send,) = core.handle_elect_leaders(4, request, 0)
    assert send.destination == "controller" and send.message.forward_id > 0
    (answer,) = core.on_controller_response(send.message, ErrorCode.NETWORK_EXCEPTION, 0)
    assert (answer.request_id, answer.response.error_code) == (4, ErrorCode.NOT_CONTROLLER)
    assert core.on_controller_response(send.message, ErrorCode.NETWORK_EXCEPTION, 0) == []  # answered once
    (send,) = core.handle_elect_leaders(5, request, 0)
    elected = ElectLeadersResponse(replica_election_results=())
    (answer,) = core.on_controller_response(send.message, elected, 0)
    assert (answer.request_id, answer.response) == (5, elected)


# ----------------------------------------------------------------------------- FindCoordinator (10)
@pytest.mark.parametrize("version", [4, 5])
def test_find_coordinator_v4_carries_batched_keys_both_ways(version):
    from actors.core.messages.find_coordinator import Coordinator, FindCoordinatorRequest, FindCoordinatorResponse
    # v4: KIP-699's batched keys; v5 is v4 (it lets a transactional client take TRANSACTION_ABORTABLE).
    assert SUPPORTED_VERSIONS[10] == (0, 5)
    schema, _ = _schema_module(10, version)
    request = _through_the_wire(10, version, schema(key_type=0, coordinator_keys=("g1", "g2")))
    assert request == FindCoordinatorRequest(key="", coordinator_keys=("g1", "g2"), listener_name=CONTEXT.listener_name)
    answer = _answer(10, version, FindCoordinatorResponse(coordinators=(
        Coordinator(key="g1", node_id=2, host="127.0.0.1", port=9092),
        Coordinator(key="g2", error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE))))
    assert [(c.key, c.node_id, c.host, c.port, c.error_code, c.error_message) for c in answer.coordinators] == [
        ("g1", 2, "127.0.0.1", 9092, 0, None), ("g2", -1, "", -1, ErrorCode.COORDINATOR_NOT_AVAILABLE, None)]
    # v3 keeps its single key.
    schema, _ = _schema_module(10, 3)
    assert _through_the_wire(10, 3, schema(key="g1", key_type=0)).coordinator_keys is None


# ----------------------------------------------------------------------------- CreateTopics (19)
@pytest.mark.parametrize("version", [4, 5, 6])
def test_create_topics_v5_answers_each_created_topics_counts_and_configs(version):
    """KIP-525, as Kafka 2.4's AdminManager.createTopics fills it: every topic config with its value
    and source (the topic's own, the broker's configuration, the default); a refused topic -1, -1
    and no configs. v6 is v5 (KIP-599's quota error, which raykafka never answers)."""
    from tests.support.controller_driver import ControllerDriver
    from actors.core.messages.create_topics import CreatableTopic, CreateableTopicConfig, CreateTopicsRequest
    assert SUPPORTED_VERSIONS[19] == (2, 6)
    driver = ControllerDriver(config={"log.retention.bytes": "5000"})
    driver.register_brokers(1, 2)
    response = driver.ask("handle_create_topics", CreateTopicsRequest(topics=(
        CreatableTopic(name="orders", num_partitions=3, replication_factor=2,
                       configs=(CreateableTopicConfig(name="min.insync.replicas", value="2"),)),
        CreatableTopic(name="wide", num_partitions=1, replication_factor=3))))
    orders, wide = _answer(19, version, response).topics
    assert (orders.error_code, wide.error_code) == (0, ErrorCode.INVALID_REPLICATION_FACTOR)
    if version < 5:
        assert not hasattr(orders, "configs")
        return
    assert (orders.num_partitions, orders.replication_factor) == (3, 2)
    configs = {c.name: (c.value, c.config_source, c.read_only, c.is_sensitive) for c in orders.configs}
    assert len(configs) == 26, "every topic config Kafka 2.4 has"
    assert configs["min.insync.replicas"] == ("2", 1, False, False)
    assert configs["retention.bytes"] == ("5000", 4, False, False)
    assert configs["segment.bytes"] == ("1073741824", 5, False, False)
    assert (wide.num_partitions, wide.replication_factor, wide.configs) == (-1, -1, ())
