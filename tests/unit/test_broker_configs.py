"""Dynamic broker configs through IncrementalAlterConfigs and AlterConfigs on broker resources: the
broker forwards a good one, the controller stores it per broker or cluster-wide, a bad one gets
Kafka's code and changes nothing, and DescribeConfigs reports each key with Kafka's precedence
(the broker's dynamic value, the cluster-wide one, its configuration, the default) and synonyms."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from actors.core.broker.config_forwarding import ConfigForwarder
from actors.core.effects import Send
from actors.core.errors import ErrorCode
from actors.core.messages.alter_configs import AlterConfigsRequest
from actors.core.messages.incremental_alter_configs import (
    OP_APPEND, OP_DELETE, OP_SET, AlterableConfig, AlterConfigsResource, IncrementalAlterConfigsRequest,
)
from actors.wire.describe_configs import describe_configs
from tests.support.controller_driver import ControllerDriver

THROTTLE = "leader.replication.throttled.rate"


@pytest.fixture
def controller() -> ControllerDriver:
    driver = ControllerDriver()
    driver.register_brokers(1, 2, 3)
    return driver


def alter(name: str, *ops: tuple[str, int, str | None], validate_only: bool = False):
    return IncrementalAlterConfigsRequest(validate_only=validate_only, resources=(AlterConfigsResource(
        resource_type=4, resource_name=name, configs=tuple(
            AlterableConfig(name=key, config_operation=op, value=value) for key, op, value in ops)),))


def code(response) -> ErrorCode:
    (answer,) = response.responses
    return answer.error_code


def test_the_controller_stores_a_brokers_and_the_cluster_wide_dynamic_keys(controller):
    assert code(controller.ask("handle_incremental_alter_configs", alter(
        "1", ("log.cleaner.backoff.ms", OP_SET, "20000"), (THROTTLE, OP_SET, "1000")))) == ErrorCode.NONE
    assert code(controller.ask("handle_incremental_alter_configs", alter(
        "", ("log.cleaner.backoff.ms", OP_SET, "30000")))) == ErrorCode.NONE
    assert controller.stored().broker_configs() == {
        "1": {"log.cleaner.backoff.ms": "20000", THROTTLE: "1000"}, "": {"log.cleaner.backoff.ms": "30000"}}
    # kafka-reassign-partitions --verify deletes the throttles on every broker, set or not.
    for name in ("1", "2", "3"):
        assert code(controller.ask("handle_incremental_alter_configs", alter(name, (THROTTLE, OP_DELETE, None)))) \
            == ErrorCode.NONE
    assert controller.stored().broker_configs()["1"] == {"log.cleaner.backoff.ms": "20000"}
    whole = AlterConfigsRequest(resources=(AlterConfigsResource(resource_type=4, resource_name="1", configs=(
        AlterableConfig(name="log.cleaner.min.compaction.lag.ms", value="5"),)),))
    assert code(controller.ask("handle_alter_configs", whole)) == ErrorCode.NONE
    assert controller.stored().broker_configs()["1"] == {"log.cleaner.min.compaction.lag.ms": "5"}


@pytest.mark.parametrize("name, ops, expected", [
    ("1", [("log.dirs", OP_SET, "/x")], ErrorCode.INVALID_CONFIG),  # not a dynamic key
    ("1", [("no.such.key", OP_SET, "1")], ErrorCode.INVALID_CONFIG),
    ("1", [("log.cleaner.backoff.ms", OP_SET, "soon")], ErrorCode.INVALID_CONFIG),
    ("1", [("log.retention.ms", OP_SET, "a week")], ErrorCode.INVALID_CONFIG),  # a long with no default
    ("1", [("log.cleaner.min.cleanable.ratio", OP_SET, "half")], ErrorCode.INVALID_CONFIG),
    ("1", [("unclean.leader.election.enable", OP_SET, "maybe")], ErrorCode.INVALID_CONFIG),
    ("1", [("log.cleaner.backoff.ms", OP_APPEND, "1")], ErrorCode.INVALID_REQUEST),
    ("1", [(THROTTLE, OP_SET, "1"), (THROTTLE, OP_DELETE, None)], ErrorCode.INVALID_REQUEST),
    ("broker-one", [(THROTTLE, OP_SET, "1")], ErrorCode.INVALID_REQUEST),
])
def test_bad_input_gets_kafkas_code_at_the_broker_and_the_controller_and_stores_nothing(controller, name, ops,
                                                                                          expected):
    request = alter(name, *ops)
    (answer,) = ConfigForwarder(broker_id=1).handle_incremental_alter_configs(5, request, known_topics=set())
    assert code(answer.response) == expected
    assert code(controller.ask("handle_incremental_alter_configs", request)) == expected
    assert controller.stored().broker_configs() == {}


def test_validate_only_stores_nothing_and_a_good_resource_is_forwarded(controller):
    request = alter("2", (THROTTLE, OP_SET, "10"), validate_only=True)
    assert code(controller.ask("handle_incremental_alter_configs", request)) == ErrorCode.NONE
    assert controller.stored().broker_configs() == {}
    (send,) = ConfigForwarder(broker_id=1).handle_incremental_alter_configs(5, alter("2", (THROTTLE, OP_SET, "10")),
                                                                           known_topics=set())
    assert isinstance(send, Send) and send.destination == "controller"


def _described(broker_dynamic, overrides=None, keys=None, name="1"):
    overrides = overrides or {}
    body = SimpleNamespace(include_synonyms=True, resources=(SimpleNamespace(
        resource_type=4, resource_name=name, configuration_keys=keys),))
    (result,) = describe_configs(body, broker_id=1, broker_overrides=overrides, topic_overrides={}, known_topics=frozenset(),
                                 broker_dynamic=broker_dynamic)["results"]
    return {c["name"]: c for c in result["configs"]}


def test_describe_configs_ranks_a_brokers_value_over_the_cluster_wide_one_over_its_configuration():
    described = _described({"1": {"log.cleaner.backoff.ms": "20000", THROTTLE: "1000"},
                            "": {"log.cleaner.backoff.ms": "30000", "message.max.bytes": "2000"},
                            "2": {"min.insync.replicas": "2"}}, overrides={"message.max.bytes": "3000"})
    backoff = described["log.cleaner.backoff.ms"]
    assert (backoff["value"], backoff["config_source"], backoff["read_only"]) == ("20000", 2, False)
    assert [(s["source"], s["value"]) for s in backoff["synonyms"]] == [(2, "20000"), (3, "30000"), (5, "15000")]
    throttle = described[THROTTLE]  # a key only the dynamic configs name, with Kafka's default
    assert [(s["source"], s["value"]) for s in throttle["synonyms"]] == [(2, "1000"), (5, str(2 ** 63 - 1))]
    message = described["message.max.bytes"]
    assert (message["value"], message["config_source"]) == ("2000", 3)
    # As Kafka, the default follows the configured value (raykafka's default, which it applies).
    assert [(s["source"], s["value"]) for s in message["synonyms"]] == [(3, "2000"), (4, "3000"), (5, "1048588")]
    assert described["min.insync.replicas"]["value"] == "1", "another broker's dynamic value is not this one's"
    assert described["num.partitions"]["read_only"] and described["num.partitions"]["config_source"] == 5


def test_the_default_entity_lists_only_the_keys_set_cluster_wide_as_kafka():
    described = _described({"1": {"log.cleaner.backoff.ms": "20000"}, "": {"log.cleaner.backoff.ms": "30000"}},
                           name="")
    assert set(described) == {"log.cleaner.backoff.ms"}
    backoff = described["log.cleaner.backoff.ms"]
    assert (backoff["value"], backoff["config_source"]) == ("30000", 3)
    assert [(s["source"], s["value"]) for s in backoff["synonyms"]] == [(3, "30000")]
