"""Every topic config key Kafka 2.4 defines (LogConfig) is accepted with Kafka's default, refused
with INVALID_CONFIG outside Kafka's ranges, and a topic's stored-only keys are stored by the
controller and reported with their source by DescribeConfigs and the admin client's description;
driven through the pure validation, the controller's core and resolve_topic_config."""
from __future__ import annotations

import pytest

from actors.core.config import STORED_ONLY_TOPIC_CONFIG_KEYS, TOPIC_CONFIG_KEYS
from actors.core.errors import ErrorCode, KafkaProtocolError
from actors.core.messages.incremental_alter_configs import (
    AlterableConfig, AlterConfigsResource, IncrementalAlterConfigsRequest,
)
from actors.core.topic_config_synonyms import SOURCE_TOPIC, TOPIC_CONFIGS, resolve_topic_config
from actors.core.topic_configs import validate_topic_config
from tests.support.controller_driver import ControllerDriver

# The log cleaner's keys come with the log cleaner.
CLEANER_KEYS = {"min.cleanable.dirty.ratio", "min.compaction.lag.ms", "delete.retention.ms"}


@pytest.mark.parametrize("key", sorted(set(TOPIC_CONFIGS) - CLEANER_KEYS))
def test_every_kafka_topic_key_is_accepted_with_kafkas_default(key):
    assert key in TOPIC_CONFIG_KEYS
    validate_topic_config({key: TOPIC_CONFIGS[key].default})


@pytest.mark.parametrize("key, value", [
    ("preallocate", "true"), ("message.downconversion.enable", "FALSE"), ("segment.jitter.ms", "0"),
    ("segment.index.bytes", "0"), ("flush.messages", "1"), ("flush.ms", "9223372036854775807"),
    ("max.compaction.lag.ms", "1"), ("file.delete.delay.ms", "0"), ("message.timestamp.type", "LogAppendTime"),
    ("message.timestamp.difference.max.ms", "0"), ("message.format.version", "0.10.2"),
    ("message.format.version", "2.4-IV1"), ("message.format.version", "2.1.1"), ("message.format.version", "0.8.2.2"),
    ("leader.replication.throttled.replicas", "*"), ("follower.replication.throttled.replicas", "0:1, 1:2"),
    ("compression.type", "zstd"), ("retention.bytes", "-5"),
])
def test_legal_values_are_accepted(key, value):
    validate_topic_config({key: value})


@pytest.mark.parametrize("key, value", [
    ("preallocate", "yes"), ("message.downconversion.enable", "1"), ("segment.jitter.ms", "-1"),
    ("segment.index.bytes", "2147483648"), ("flush.messages", "-1"), ("flush.ms", "9223372036854775808"),
    ("max.compaction.lag.ms", "0"), ("file.delete.delay.ms", "soon"), ("message.timestamp.type", "createtime"),
    ("message.timestamp.difference.max.ms", "-1"), ("message.format.version", "2.5"),
    ("message.format.version", "3"), ("leader.replication.throttled.replicas", "0-1"),
    ("follower.replication.throttled.replicas", "*,0:1"), ("compression.type", "brotli"),
    ("segment.bytes", "13"), ("retention.ms", "-2"), ("min.insync.replicas", "0"), ("no.such.key", "1"),
])
def test_illegal_values_are_invalid_config(key, value):
    with pytest.raises(KafkaProtocolError) as raised:
        validate_topic_config({key: value})
    assert raised.value.error_code == ErrorCode.INVALID_CONFIG


def test_stored_only_keys_are_stored_and_described_with_their_source():
    driver = ControllerDriver()
    driver.register_brokers(1)
    overrides = {"preallocate": "true", "message.timestamp.type": "LogAppendTime", "retention.ms": "1000"}
    assert driver.create_topic("t", assignment={0: [1]}, configs=overrides).error_code == ErrorCode.NONE
    assert driver.stored().topics()["t"]["config"] == overrides
    response = driver.ask("handle_incremental_alter_configs", IncrementalAlterConfigsRequest(resources=(
        AlterConfigsResource(resource_type=2, resource_name="t", configs=(
            AlterableConfig(name="segment.jitter.ms", value="250"),)),)))
    assert [r.error_code for r in response.responses] == [ErrorCode.NONE]
    stored = driver.stored().topics()["t"]["config"]
    assert stored == {**overrides, "segment.jitter.ms": "250"}
    resolved = {c.name: c for c in resolve_topic_config(stored, broker_overrides={})}
    for key in ("preallocate", "message.timestamp.type", "segment.jitter.ms"):
        assert key in STORED_ONLY_TOPIC_CONFIG_KEYS
        assert (resolved[key].value, resolved[key].source) == (stored[key], SOURCE_TOPIC)
    described = driver.core.describe_topic_config("t")
    assert described["preallocate"] == {"value": "true", "source": "DYNAMIC_TOPIC_CONFIG"}
    assert described["retention.ms"] == {"value": "1000", "source": "DYNAMIC_TOPIC_CONFIG"}


LAG_CONFLICT = "conflict topic config setting min.compaction.lag.ms (5000) > max.compaction.lag.ms (1000)"


def test_min_compaction_lag_above_max_is_invalid_config_with_kafkas_message():
    # Kafka's LogConfig.validateValues, after each value parsed; an unset key takes Kafka's default.
    with pytest.raises(KafkaProtocolError) as raised:
        validate_topic_config({"min.compaction.lag.ms": "5000", "max.compaction.lag.ms": " 1000"})
    assert (raised.value.error_code, raised.value.message) == (ErrorCode.INVALID_CONFIG, LAG_CONFLICT)
    validate_topic_config({"min.compaction.lag.ms": "1000", "max.compaction.lag.ms": "1000"})
    validate_topic_config({"min.compaction.lag.ms": "9223372036854775807"})
    with pytest.raises(KafkaProtocolError, match="Value must be at least 1"):
        validate_topic_config({"min.compaction.lag.ms": "5000", "max.compaction.lag.ms": "0"})


def test_min_compaction_lag_above_max_is_refused_by_create_and_both_alters_changing_nothing():
    from actors.core.messages.alter_configs import AlterConfigsRequest
    driver = ControllerDriver()
    driver.register_brokers(1)
    created = driver.create_topic("bad", assignment={0: [1]},
                                  configs={"min.compaction.lag.ms": "5000", "max.compaction.lag.ms": "1000"})
    assert (created.error_code, created.error_message) == (ErrorCode.INVALID_CONFIG, LAG_CONFLICT)
    assert "bad" not in driver.stored().topics()
    assert driver.create_topic("t", assignment={0: [1]}, configs={"max.compaction.lag.ms": "1000"}).error_code == 0
    incremental = driver.ask("handle_incremental_alter_configs", IncrementalAlterConfigsRequest(resources=(
        AlterConfigsResource(resource_type=2, resource_name="t", configs=(
            AlterableConfig(name="min.compaction.lag.ms", value="5000"),)),)))
    whole = driver.ask("handle_alter_configs", AlterConfigsRequest(resources=(
        AlterConfigsResource(resource_type=2, resource_name="t", configs=(
            AlterableConfig(name="min.compaction.lag.ms", value="5000"),
            AlterableConfig(name="max.compaction.lag.ms", value="1000"))),)))
    for response in (incremental, whole):
        assert [(r.error_code, r.error_message) for r in response.responses] == [(ErrorCode.INVALID_CONFIG, LAG_CONFLICT)]
    assert driver.stored().topics()["t"]["config"] == {"max.compaction.lag.ms": "1000"}


def test_a_lag_the_topic_does_not_set_is_the_brokers_as_kafkas_controller_checks_it():
    """Past 2.4: Kafka's controller (ControllerConfigurationValidator) checks a topic's overrides
    over the brokers' log config, and LogManager refuses a broker whose own lags conflict."""
    from actors.core.topic_configs import check_broker_config
    driver = ControllerDriver(config={"log.cleaner.max.compaction.lag.ms": "1000"})
    driver.register_brokers(1)
    created = driver.create_topic("bad", assignment={0: [1]}, configs={"min.compaction.lag.ms": "5000"})
    assert (created.error_code, created.error_message) == (ErrorCode.INVALID_CONFIG, LAG_CONFLICT)
    assert driver.create_topic("t", assignment={0: [1]}, configs={"min.compaction.lag.ms": "500"}).error_code == 0
    response = driver.ask("handle_incremental_alter_configs", IncrementalAlterConfigsRequest(resources=(
        AlterConfigsResource(resource_type=2, resource_name="t", configs=(
            AlterableConfig(name="min.compaction.lag.ms", value="5000"),)),)))
    assert [(r.error_code, r.error_message) for r in response.responses] == [(ErrorCode.INVALID_CONFIG, LAG_CONFLICT)]
    assert driver.stored().topics()["t"]["config"] == {"min.compaction.lag.ms": "500"}
    with pytest.raises(KafkaProtocolError, match=r"min.compaction.lag.ms \(5000\) > max.compaction.lag.ms \(1000\)"):
        check_broker_config({"log.cleaner.min.compaction.lag.ms": "5000", "log.cleaner.max.compaction.lag.ms": "1000"})
