"""Kafka's broker keys (log.segment.bytes, message.max.bytes, log.retention.*, ...) set the defaults
of the topic keys with Kafka's precedence, auto.create.topics.enable lets Metadata create a topic
with num.partitions and default.replication.factor, and a key no broker knows is refused naming it;
checked on the pure KafkaConfig, the replica manager and the controller cores, no Ray."""
from __future__ import annotations

import pytest

from actors.core.config import (
    BROKER_CONFIG_KEYS, TOPIC_CONFIG_SYNONYMS, KafkaConfig, effective_topic_config,
)
from actors.core.controller.controller import CONTROLLER_DEFAULTS
from actors.core.effects import Respond, Send
from actors.core.errors import ErrorCode, KafkaProtocolError
from actors.core.group.group_config import GROUP_COORDINATOR_DEFAULTS
from actors.core.messages.create_topics import CreateTopicsRequest
from actors.core.messages.metadata import MetadataRequest
from actors.core.broker.auto_create import CREATION_RETRY_MS
from actors.core.broker.broker_lifecycle import LIFECYCLE_DEFAULTS
from actors.core.topic_configs import check_broker_config
from tests.support.controller_driver import ControllerDriver
from tests.support.core_driver import CoreDriver, make_batch, produce_result

# (broker overrides, topic key, the topic's effective value)
BROKER_KEYS_SET_TOPIC_DEFAULTS = [
    ({}, "segment.bytes", "1073741824"),
    ({}, "max.message.bytes", "1048588"),
    ({}, "retention.ms", "604800000"),  # log.retention.hours=168
    ({}, "retention.bytes", "-1"),
    ({}, "cleanup.policy", "delete"),
    ({}, "index.interval.bytes", "4096"),
    ({"log.segment.bytes": "2048"}, "segment.bytes", "2048"),
    ({"message.max.bytes": "500"}, "max.message.bytes", "500"),
    ({"log.index.interval.bytes": "64"}, "index.interval.bytes", "64"),
    ({"log.retention.hours": "2"}, "retention.ms", "7200000"),
    ({"log.retention.minutes": "3"}, "retention.ms", "180000"),
    ({"log.retention.ms": "1234"}, "retention.ms", "1234"),
    ({"log.retention.hours": "-1"}, "retention.ms", "-1"),
    # Kafka's order: log.retention.ms, then log.retention.minutes, then log.retention.hours.
    ({"log.retention.hours": "2", "log.retention.minutes": "3"}, "retention.ms", "180000"),
    ({"log.retention.minutes": "3", "log.retention.ms": "1234"}, "retention.ms", "1234"),
    ({"log.retention.bytes": "1000000"}, "retention.bytes", "1000000"),
    ({"log.cleanup.policy": "compact"}, "cleanup.policy", "compact"),
    ({"min.insync.replicas": "2"}, "min.insync.replicas", "2"),
    ({"unclean.leader.election.enable": True}, "unclean.leader.election.enable", "true"),
]


@pytest.mark.parametrize("broker,key,expected", BROKER_KEYS_SET_TOPIC_DEFAULTS,
                         ids=[f"{key}<-{broker}" for broker, key, _ in BROKER_KEYS_SET_TOPIC_DEFAULTS])
def test_a_broker_key_sets_the_topic_keys_default(broker, key, expected):
    assert KafkaConfig(broker).for_topic({}).get_str(key) == expected


def test_a_topic_override_beats_the_broker_key_which_beats_kafkas_default():
    broker = {"log.segment.bytes": "2048", "log.retention.minutes": "3"}
    effective = effective_topic_config(broker, {"segment.bytes": "4096"})
    assert effective["segment.bytes"] == ("4096", "topic", None)
    assert effective["retention.ms"] == ("180000", "broker", "log.retention.minutes")
    assert effective["max.message.bytes"] == ("1048588", "default", "message.max.bytes")
    assert KafkaConfig(broker).for_topic({"segment.bytes": "4096"}).get_str("segment.bytes") == "4096"


@pytest.mark.parametrize("key,message", [
    ("log.segmnt.bytes", "Unknown broker config: 'log.segmnt.bytes' (did you mean 'log.segment.bytes'?)"),
    ("message.max.byte", "(did you mean 'message.max.bytes'?)"),
    ("num.partition", "(did you mean 'num.partitions'?)"),
    ("segment.bytes", "'segment.bytes' is a topic config; the broker's default for it is log.segment.bytes"),
    ("retention.ms", "log.retention.ms / log.retention.minutes / log.retention.hours"),
    ("no.such.key", "Unknown broker config: 'no.such.key'"),
])
def test_an_unknown_broker_key_is_refused_naming_it(key, message):
    with pytest.raises(KafkaProtocolError) as raised:
        KafkaConfig({key: "1"})
    assert raised.value.error_code == ErrorCode.INVALID_CONFIG
    assert message in raised.value.message


@pytest.mark.parametrize("broker,message", [
    ({"log.segment.bytes": "13"}, "segment.bytes must be in [14, 2147483647], got 13 (set by the broker's "
                                  "log.segment.bytes=13)"),
    ({"log.cleanup.policy": "shred"}, "log.cleanup.policy=shred"),
    ({"log.retention.minutes": "soon"}, "log.retention.minutes='soon' is not an integer"),
])
def test_a_bad_value_for_a_topic_default_is_refused_before_a_broker_starts(broker, message):
    with pytest.raises(KafkaProtocolError) as raised:
        check_broker_config(broker)
    assert raised.value.error_code == ErrorCode.INVALID_CONFIG
    assert message in raised.value.message


@pytest.mark.parametrize("table", [CONTROLLER_DEFAULTS, LIFECYCLE_DEFAULTS, GROUP_COORDINATOR_DEFAULTS],
                         ids=["controller", "broker-lifecycle", "group-coordinator"])
def test_every_key_a_module_defaults_is_a_known_broker_key(table):
    assert set(table) - BROKER_CONFIG_KEYS == set()


def test_every_topic_keys_broker_synonym_is_a_known_broker_key():
    synonyms = {key for synonym in TOPIC_CONFIG_SYNONYMS.values() for key in synonym.broker_keys}
    assert synonyms - BROKER_CONFIG_KEYS == set()


def test_log_segment_bytes_rolls_the_brokers_segments_and_message_max_bytes_refuses_a_larger_batch():
    batch = make_batch([b"x" * 100])
    driver = CoreDriver(config={"log.segment.bytes": str(len(batch) * 2), "message.max.bytes": str(len(batch) + 10)})
    driver.become("t", 0, leader=0)
    for _ in range(5):
        assert produce_result(driver.answers[driver.produce("t", 0, batch)]).error_code == ErrorCode.NONE
    log = driver.manager.partitions[("t", 0)].log
    assert [segment.base_offset for segment in log.segments] == [0, 2, 4]
    too_large = produce_result(driver.answers[driver.produce("t", 0, make_batch([b"x" * 200]))])
    assert too_large.error_code == ErrorCode.MESSAGE_TOO_LARGE
    assert log.log_end_offset == 5


def test_a_topic_override_beats_log_segment_bytes_on_the_broker():
    batch = make_batch([b"x" * 100])
    driver = CoreDriver(config={"log.segment.bytes": str(len(batch) * 2)})
    driver.become("t", 0, leader=0, config={"segment.bytes": str(len(batch) * 3)})
    for _ in range(5):
        driver.produce("t", 0, batch)
    assert [s.base_offset for s in driver.manager.partitions[("t", 0)].log.segments] == [0, 3]


def test_the_controller_describes_a_broker_key_as_static_broker_config_with_its_synonym():
    driver = ControllerDriver(config={"log.retention.hours": "1", "message.max.bytes": "5000"})
    driver.register_brokers(1)
    assert driver.create_topic("t", num_partitions=1, replication_factor=1,
                               configs={"max.message.bytes": "700"}).error_code == ErrorCode.NONE
    described = driver.core.describe_topic_config("t")
    assert described["retention.ms"] == {"value": "3600000", "source": "STATIC_BROKER_CONFIG",
                                         "synonym": "log.retention.hours"}
    assert described["max.message.bytes"] == {"value": "700", "source": "DYNAMIC_TOPIC_CONFIG"}
    assert described["segment.bytes"] == {"value": "1073741824", "source": "DEFAULT_CONFIG"}


# ------------------------------------------------------------------- auto.create.topics.enable
def metadata(driver: CoreDriver, *topics: str, allow: bool = True) -> tuple[dict, list]:
    """The topics' error codes in the broker's Metadata answer, and the CreateTopics it sends."""
    effects = driver.handle_metadata(0, MetadataRequest(topics=topics, allow_auto_topic_creation=allow),
                                             driver.now_ms)
    (answer,) = [e.response for e in effects if isinstance(e, Respond)]
    sent = [e.message for e in effects if isinstance(e, Send) and isinstance(e.message, CreateTopicsRequest)]
    return {t.name: t.error_code for t in answer.topics}, sent


def three_broker_leader(config: dict | None = None) -> CoreDriver:
    driver = CoreDriver(config={"num.partitions": "4", "default.replication.factor": "3", **(config or {})})
    driver.become("t", 0, leader=0, replicas=(0, 1, 2))
    return driver


def test_metadata_for_an_unknown_topic_creates_it_with_num_partitions_and_default_replication_factor():
    driver = three_broker_leader()
    codes, sent = metadata(driver, "t", "new")
    assert codes == {"t": ErrorCode.NONE, "new": ErrorCode.LEADER_NOT_AVAILABLE}
    (request,) = sent
    assert [(t.name, t.num_partitions, t.replication_factor) for t in request.topics] == [("new", 4, 3)]
    # The client asks again at once: no second request until CREATION_RETRY_MS passed.
    assert metadata(driver, "new") == ({"new": ErrorCode.LEADER_NOT_AVAILABLE}, [])
    driver.advance(CREATION_RETRY_MS)
    assert len(metadata(driver, "new")[1]) == 1


@pytest.mark.parametrize("config,allow", [({"auto.create.topics.enable": "false"}, True), ({}, False)],
                         ids=["broker-disabled", "client-disallows"])
def test_without_auto_create_topics_enable_or_the_clients_flag_an_unknown_topic_stays_unknown(config, allow):
    driver = three_broker_leader(config)
    assert metadata(driver, "new", allow=allow) == ({"new": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}, [])


def test_auto_creation_refuses_a_bad_name_and_a_factor_above_the_live_brokers_at_once():
    assert metadata(three_broker_leader(), "bad name!") == ({"bad name!": ErrorCode.INVALID_TOPIC_EXCEPTION}, [])
    driver = three_broker_leader({"default.replication.factor": "5"})
    assert metadata(driver, "new") == ({"new": ErrorCode.INVALID_REPLICATION_FACTOR}, [])


def test_cluster_start_and_the_cli_refuse_an_unknown_broker_key_before_ray_starts(capsys, monkeypatch):
    from orchestration.admin import cluster as cluster_module
    from orchestration.cli import main
    from orchestration.commands import cluster as cluster_command
    from orchestration.errors import KafkaError

    def refuse(*args, **kwargs):
        raise AssertionError("Ray was started for a configuration that should have been refused")
    monkeypatch.setattr(cluster_module.ray, "init", refuse)
    monkeypatch.setattr(cluster_command, "start_local_head", refuse)
    with pytest.raises(KafkaError) as raised:
        cluster_module.Cluster.start(brokers=1, config={"log.segmnt.bytes": "1048576"})
    assert "Unknown broker config: 'log.segmnt.bytes' (did you mean 'log.segment.bytes'?)" in raised.value.message
    assert main(["cluster", "start", "--local", "--config", "segment.bytes=1048576"]) == 1
    refused = capsys.readouterr().err
    assert "'segment.bytes' is a topic config; the broker's default for it is log.segment.bytes" in refused


def test_each_synonyms_default_is_what_its_broker_keys_default_gives():
    effective = effective_topic_config({}, {})
    assert {key: effective[key].value for key in TOPIC_CONFIG_SYNONYMS} == {
        key: synonym.default for key, synonym in TOPIC_CONFIG_SYNONYMS.items()}
