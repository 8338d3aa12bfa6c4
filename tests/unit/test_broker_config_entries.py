"""DescribeConfigs for a broker lists every broker config Kafka 2.4 defines, with its value, source,
sensitivity and synonyms as Kafka's AdminManager builds them, and a topic lists the dynamic broker
values of its broker synonym; checked on the core's answers and on kio-encoded responses, no Ray."""
from __future__ import annotations

from types import SimpleNamespace

from actors.core.broker_config_entries import describe_broker
from actors.core.kafka_broker_config_defs import BROKER_CONFIG_DEFS, CLUSTER_WIDE, PER_BROKER, READ_ONLY
from actors.core.topic_config_synonyms import (
    SOURCE_DEFAULT, SOURCE_DYNAMIC_BROKER, SOURCE_DYNAMIC_DEFAULT_BROKER, SOURCE_STATIC_BROKER, SOURCE_TOPIC,
    TOPIC_CONFIGS,
)
from actors.wire.describe_configs import describe_configs


def entries(overrides=None, dynamic=None, name="1"):
    return {e.name: e for e in describe_broker(name, broker_overrides=overrides or {}, broker_dynamic=dynamic or {},
                                               facts={"broker.id": "1"})}


def synonyms(entry):
    return [(s.name, s.value, s.source) for s in entry.synonyms]


def test_the_generated_table_is_kafka_24s_broker_configs():
    assert len(BROKER_CONFIG_DEFS) == 192, "KafkaConfig 2.4.0 defines 192 broker keys"
    retention = BROKER_CONFIG_DEFS["log.retention.ms"]
    assert (retention.config_type, retention.default, retention.update_mode) == ("LONG", None, CLUSTER_WIDE)
    assert retention.synonyms == ("log.retention.ms", "log.retention.minutes", "log.retention.hours")
    assert BROKER_CONFIG_DEFS["zookeeper.connect"].update_mode == READ_ONLY
    assert BROKER_CONFIG_DEFS["ssl.keystore.password"].config_type == "PASSWORD"
    assert BROKER_CONFIG_DEFS["ssl.keystore.password"].update_mode == PER_BROKER
    # The topic keys' broker synonyms are in the table with the same default (none where the topic
    # table says the broker key has no default of its own).
    for key in TOPIC_CONFIGS.values():
        if key.broker_synonym is not None:
            broker = BROKER_CONFIG_DEFS[key.broker_synonym]
            assert (broker.default is not None) == key.broker_synonym_has_default, key.name
            if broker.default is not None:
                assert broker.default == key.default, key.name


def test_every_kafka_broker_key_is_listed_with_kafkas_default_or_raykafkas_value():
    described = entries()
    assert set(BROKER_CONFIG_DEFS) <= set(described)
    assert {"raykafka.truncation.policy", "leader.replication.throttled.rate"} <= set(described)
    io_threads = described["num.io.threads"]  # a key raykafka has no use for: Kafka's default
    assert (io_threads.value, io_threads.source, io_threads.read_only) == ("8", SOURCE_DEFAULT, True)
    assert synonyms(io_threads) == [("num.io.threads", "8", SOURCE_DEFAULT)]
    # raykafka's own default for a key it applies, not Kafka's (1000012).
    assert described["message.max.bytes"].value == "1048588"
    assert synonyms(described["broker.id"]) == [("broker.id", "1", SOURCE_STATIC_BROKER), ("broker.id", "-1", SOURCE_DEFAULT)], \
        "the broker's own id, as configured, not Kafka's default -1"
    assert described["broker.id"].value == "1"
    assert described["zookeeper.connect"].value is None and described["zookeeper.connect"].synonyms == ()
    assert described["num.io.threads"].config_type == 3 and described["log.retention.ms"].config_type == 5


def test_a_key_in_the_brokers_configuration_is_static_with_the_default_after_it():
    described = entries(overrides={"num.io.threads": "4"})
    assert (described["num.io.threads"].value, described["num.io.threads"].source) == ("4", SOURCE_STATIC_BROKER)
    assert synonyms(described["num.io.threads"]) == [("num.io.threads", "4", SOURCE_STATIC_BROKER),
                                                     ("num.io.threads", "8", SOURCE_DEFAULT)]


def test_synonyms_before_the_keys_own_name_are_dropped_as_kafka():
    described = entries(overrides={"log.retention.hours": "24"}, dynamic={"1": {"log.retention.ms": "1000"}})
    ms = described["log.retention.ms"]
    assert (ms.value, ms.source) == ("1000", SOURCE_DYNAMIC_BROKER)
    assert synonyms(ms) == [("log.retention.ms", "1000", SOURCE_DYNAMIC_BROKER),
                            ("log.retention.hours", "24", SOURCE_STATIC_BROKER),
                            ("log.retention.hours", "168", SOURCE_DEFAULT)]
    hours = described["log.retention.hours"]
    assert synonyms(hours) == [("log.retention.hours", "24", SOURCE_STATIC_BROKER),
                               ("log.retention.hours", "168", SOURCE_DEFAULT)]
    unset = entries(overrides={"log.retention.hours": "24"})["log.retention.ms"]
    assert (unset.value, unset.source, unset.synonyms) == (None, SOURCE_DEFAULT, ()), \
        "set only in hours, log.retention.ms lists no synonym and no value, as in Kafka"


def test_a_password_key_is_sensitive_and_its_values_are_null():
    described = entries(overrides={"ssl.keystore.password": "secret"})
    password = described["ssl.keystore.password"]
    assert (password.value, password.is_sensitive, password.source) == (None, True, SOURCE_STATIC_BROKER)
    assert synonyms(password) == [("ssl.keystore.password", None, SOURCE_STATIC_BROKER)]
    assert not described["num.io.threads"].is_sensitive


def test_a_topic_lists_its_broker_synonyms_dynamic_values_above_the_configuration():
    body = SimpleNamespace(include_synonyms=True, resources=(SimpleNamespace(
        resource_type=2, resource_name="orders", configuration_keys=("retention.bytes", "segment.bytes")),))
    dynamic = {"1": {"log.retention.bytes": "100"}, "": {"log.retention.bytes": "200", "log.segment.bytes": "300"},
               "2": {"log.segment.bytes": "400"}}
    (result,) = describe_configs(body, broker_id=1, broker_overrides={"log.retention.bytes": "500"},
                                 topic_overrides={"orders": {"segment.bytes": "600"}},
                                 known_topics=frozenset({"orders"}), broker_dynamic=dynamic)["results"]
    configs = {c["name"]: c for c in result["configs"]}
    retention = configs["retention.bytes"]
    assert (retention["value"], retention["config_source"]) == ("100", SOURCE_DYNAMIC_BROKER)
    assert [(s["name"], s["value"], s["source"]) for s in retention["synonyms"]] == [
        ("log.retention.bytes", "100", SOURCE_DYNAMIC_BROKER),
        ("log.retention.bytes", "200", SOURCE_DYNAMIC_DEFAULT_BROKER),
        ("log.retention.bytes", "500", SOURCE_STATIC_BROKER), ("log.retention.bytes", "-1", SOURCE_DEFAULT)]
    segment = configs["segment.bytes"]  # the topic's own value outranks the dynamic ones; another broker's is not listed
    assert (segment["value"], segment["config_source"]) == ("600", SOURCE_TOPIC)
    assert [(s["name"], s["value"], s["source"]) for s in segment["synonyms"]] == [
        ("segment.bytes", "600", SOURCE_TOPIC), ("log.segment.bytes", "300", SOURCE_DYNAMIC_DEFAULT_BROKER),
        ("log.segment.bytes", "1073741824", SOURCE_DEFAULT)]
