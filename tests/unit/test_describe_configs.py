"""DescribeConfigs describes a topic as Kafka 2.4's AdminManager does: every topic key Kafka has,
each with its value and source (the topic's override, the broker's configuration under the broker
key, else the default; for the keys raykafka honours, the value its brokers use), read_only false, and the synonyms in
precedence order when asked; checked on kio-encoded answers of every served version, no Ray."""
from __future__ import annotations

import pytest
from kio.index import load_request_schema

from actors.core.config import KafkaConfig
from actors.core.topic_config_synonyms import (
    LONG_MAX, SOURCE_DEFAULT, SOURCE_STATIC_BROKER, SOURCE_TOPIC, BROKER_SYNONYMS, TOPIC_CONFIGS,
)
from actors.wire.apis import CODECS
from actors.wire.describe_configs import RESOURCE_BROKER, RESOURCE_TOPIC, describe_configs
from actors.wire.frames import encode_response
from tests.unit.test_wire_frames import read_response

# Every LogConfig key of Kafka 2.4 (LogConfig.configNames).
KAFKA_TOPIC_KEYS = {
    "cleanup.policy", "compression.type", "delete.retention.ms", "file.delete.delay.ms", "flush.messages",
    "flush.ms", "follower.replication.throttled.replicas", "index.interval.bytes",
    "leader.replication.throttled.replicas", "max.compaction.lag.ms", "max.message.bytes",
    "message.downconversion.enable", "message.format.version", "message.timestamp.difference.max.ms",
    "message.timestamp.type", "min.cleanable.dirty.ratio", "min.compaction.lag.ms", "min.insync.replicas",
    "preallocate", "retention.bytes", "retention.ms", "segment.bytes", "segment.index.bytes", "segment.jitter.ms",
    "segment.ms", "unclean.leader.election.enable"}


def described(version: int, resources, *, include_synonyms: bool = False, broker_overrides=None,
              topic_overrides=None):
    schema = load_request_schema(32, version)
    module = __import__(schema.__module__, fromlist=["*"])
    fields = {"include_synonyms": include_synonyms} if version >= 1 else {}
    body = schema(resources=tuple(module.DescribeConfigsResource(resource_type=t, resource_name=n,
                                                                 configuration_keys=k) for t, n, k in resources),
                  **fields)
    broker_overrides = dict(broker_overrides or {})
    answer = describe_configs(body, broker_id=1, broker_overrides=broker_overrides, topic_overrides=topic_overrides or {},
                              known_topics=frozenset({"orders"}))
    _, response = read_response(32, version, encode_response(5, CODECS[32].to_kio(answer, version, body)))
    return response.results


@pytest.mark.parametrize("version", [1, 2, 3])
def test_a_topic_lists_every_kafka_topic_key_writable_with_its_source(version):
    (result,) = described(version, [(RESOURCE_TOPIC, "orders", None)],
                          broker_overrides={"log.retention.bytes": "5000"},
                          topic_overrides={"orders": {"min.insync.replicas": "2", "cleanup.policy": "compact"}})
    configs = {c.name: c for c in result.configs}
    assert set(configs) == KAFKA_TOPIC_KEYS
    assert not any(c.read_only for c in configs.values()), "topic configs are dynamic"
    assert (configs["min.insync.replicas"].value, configs["min.insync.replicas"].config_source) == ("2", SOURCE_TOPIC)
    assert (configs["cleanup.policy"].value, configs["cleanup.policy"].config_source) == ("compact", SOURCE_TOPIC)
    assert (configs["retention.bytes"].value, configs["retention.bytes"].config_source) \
        == ("5000", SOURCE_STATIC_BROKER), "a broker key sets its topic key's value"
    assert (configs["segment.ms"].value, configs["segment.ms"].config_source) == ("604800000", SOURCE_DEFAULT)
    # raykafka's own broker default (config.BROKER_DEFAULTS) is the topic's default.
    assert configs["max.message.bytes"].value == KafkaConfig().get_str("message.max.bytes")
    if version >= 3:
        assert configs["segment.bytes"].config_type == 3 and configs["cleanup.policy"].config_type == 7


def test_synonyms_are_listed_in_precedence_order_when_asked_and_only_then():
    overrides = {"orders": {"segment.bytes": "1048576"}}
    (result,) = described(2, [(RESOURCE_TOPIC, "orders", ("segment.bytes", "segment.ms"))], include_synonyms=True,
                          broker_overrides={"log.segment.bytes": "2097152"}, topic_overrides=overrides)
    configs = {c.name: c for c in result.configs}
    assert set(configs) == {"segment.bytes", "segment.ms"}, "configuration_keys narrows the answer"
    assert [(s.name, s.value, s.source) for s in configs["segment.bytes"].synonyms] == [
        ("segment.bytes", "1048576", SOURCE_TOPIC), ("log.segment.bytes", "2097152", SOURCE_STATIC_BROKER),
        ("log.segment.bytes", "1073741824", SOURCE_DEFAULT)]
    assert configs["segment.ms"].synonyms == (), "log.roll.ms has no default of its own in Kafka"
    (plain,) = described(2, [(RESOURCE_TOPIC, "orders", ("segment.bytes",))], topic_overrides=overrides)
    assert plain.configs[0].synonyms == ()


def test_a_broker_key_in_another_unit_is_described_in_the_topic_keys_unit():
    (result,) = described(1, [(RESOURCE_TOPIC, "orders", ("retention.ms",))], include_synonyms=True,
                          broker_overrides={"log.retention.hours": "2"})
    (config,) = result.configs
    assert (config.value, config.config_source) == (str(2 * 3_600_000), SOURCE_STATIC_BROKER)
    assert (config.synonyms[0].name, config.synonyms[0].value) == ("log.retention.hours", "2")


def test_an_unknown_topic_and_another_brokers_id_are_refused_and_this_broker_is_described():
    unknown, other, broker = described(1, [(RESOURCE_TOPIC, "nope", None), (RESOURCE_BROKER, "7", None),
                                           (RESOURCE_BROKER, "1", ("num.partitions",))])
    assert int(unknown.error_code) == 3 and int(other.error_code) == 42
    assert [(c.name, c.value, c.read_only) for c in broker.configs] == [("num.partitions", "1", True)]


def test_every_topic_key_with_a_broker_synonym_is_in_the_synonym_table():
    assert set(TOPIC_CONFIGS) == KAFKA_TOPIC_KEYS
    assert BROKER_SYNONYMS["segment.bytes"] == "log.segment.bytes"
    assert BROKER_SYNONYMS["max.message.bytes"] == "message.max.bytes"
    assert "leader.replication.throttled.replicas" not in BROKER_SYNONYMS


def _synonyms(config) -> list[tuple[str, str, int]]:
    return [(s.name, s.value, s.source) for s in config.synonyms]


def test_a_stored_only_key_lists_its_broker_synonyms_with_their_sources_as_kafka():
    # AdminManager.configSynonyms: the topic's override, then the broker keys Kafka's
    # brokerConfigSynonyms names, set (STATIC_BROKER_CONFIG) then defaulted (DEFAULT_CONFIG).
    keys = ("message.timestamp.type", "preallocate", "flush.ms", "segment.jitter.ms", "file.delete.delay.ms")
    (result,) = described(3, [(RESOURCE_TOPIC, "orders", keys)], include_synonyms=True,
                          broker_overrides={"log.message.timestamp.type": "LogAppendTime",
                                            "log.flush.interval.ms": "5000", "log.roll.jitter.hours": "2"},
                          topic_overrides={"orders": {"preallocate": "true"}})
    configs = {c.name: c for c in result.configs}
    timestamp_type = configs["message.timestamp.type"]
    assert (timestamp_type.value, timestamp_type.config_source) == ("LogAppendTime", SOURCE_STATIC_BROKER)
    assert _synonyms(timestamp_type) == [("log.message.timestamp.type", "LogAppendTime", SOURCE_STATIC_BROKER),
                                         ("log.message.timestamp.type", "CreateTime", SOURCE_DEFAULT)]
    assert (configs["preallocate"].value, configs["preallocate"].config_source) == ("true", SOURCE_TOPIC)
    assert _synonyms(configs["preallocate"]) == [("preallocate", "true", SOURCE_TOPIC),
                                                 ("log.preallocate", "false", SOURCE_DEFAULT)]
    # log.flush.interval.ms has no default of its own; Kafka's falls back to the scheduler interval.
    assert (configs["flush.ms"].value, configs["flush.ms"].config_source) == ("5000", SOURCE_STATIC_BROKER)
    assert _synonyms(configs["flush.ms"]) == [("log.flush.interval.ms", "5000", SOURCE_STATIC_BROKER),
                                              ("log.flush.scheduler.interval.ms", LONG_MAX, SOURCE_DEFAULT)]
    # Set in hours only: the value is scaled, and Kafka lists no synonym (none is log.roll.jitter.ms).
    jitter = configs["segment.jitter.ms"]
    assert (jitter.value, jitter.config_source, jitter.synonyms) == (str(2 * 3_600_000), SOURCE_DEFAULT, ())
    assert _synonyms(configs["file.delete.delay.ms"]) == [("log.segment.delete.delay.ms", "60000", SOURCE_DEFAULT)]


def test_a_stored_only_keys_broker_synonym_is_a_broker_key_checked_as_its_topic_key():
    from actors.core.errors import ErrorCode, KafkaProtocolError
    from actors.core.topic_configs import check_broker_config
    check_broker_config({"log.message.timestamp.type": "LogAppendTime", "log.preallocate": "true",
                         "log.flush.scheduler.interval.ms": "1000", "log.roll.jitter.ms": "10"})
    with pytest.raises(KafkaProtocolError) as raised:
        check_broker_config({"log.message.timestamp.type": "Sometime"})
    assert raised.value.error_code == ErrorCode.INVALID_CONFIG
    assert "log.message.timestamp.type=Sometime" in raised.value.message
