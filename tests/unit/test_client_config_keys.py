"""raykafka's Python producer and consumer refuse an unknown or misspelled config key with an error
naming it (as librdkafka does), take librdkafka's aliases under Kafka's names, and accept Kafka's
client keys they do not honour with a Python warning naming each; so do workload files. No Ray: the
checks run before a client touches a broker."""
from __future__ import annotations

import pytest

from actors.core.errors import ErrorCode
from orchestration.clients.client_config import ConfigNotHonouredWarning
from orchestration.clients.consumer import Consumer
from orchestration.clients.consumer_config import CONSUMER_KEYS
from orchestration.clients.producer import Producer
from orchestration.clients.producer_config import PRODUCER_KEYS
from orchestration.errors import KafkaError
from orchestration.spark.workload import WorkloadError, parse_workload


@pytest.mark.parametrize("client,config,message", [
    (Producer, {"ack": "all"}, "No such configuration property: 'ack' (did you mean 'acks'?)"),
    (Producer, {"linger.msec": "5"}, "No such configuration property: 'linger.msec' (did you mean 'linger.ms'?)"),
    (Producer, {"retires": 3}, "(did you mean 'retries'?)"),
    (Producer, {"transactional.id": "t"}, "'transactional.id' is not supported by raykafka's producer: it has no "
                                          "transactions"),
    (Producer, {"acks": "all", "request.required.acks": "1"}, "'acks' is set twice"),
    (Consumer, {"group.idd": "g"}, "No such configuration property: 'group.idd' (did you mean 'group.id'?)"),
    (Consumer, {"auto.offset.rest": "earliest"}, "(did you mean 'auto.offset.reset'?)"),
    (Consumer, {"acks": "all"}, "No such configuration property: 'acks'"),
], ids=lambda value: value.__name__ if isinstance(value, type) else None)
def test_an_unknown_client_key_is_an_error_naming_it(client, config, message):
    # The key is checked before the client uses its broker directory or starts a thread.
    with pytest.raises(KafkaError) as raised:
        client(None, config)
    assert raised.value.error_code == ErrorCode.INVALID_CONFIG
    assert message in raised.value.message


@pytest.mark.parametrize("keys,config,expected", [
    (PRODUCER_KEYS, {"request.required.acks": "all"}, {"acks": "all"}),
    (PRODUCER_KEYS, {"queue.buffering.max.ms": 7, "message.send.max.retries": 2}, {"linger.ms": "7", "retries": "2"}),
    (PRODUCER_KEYS, {"message.timeout.ms": "1000", "max.in.flight": "1"},
     {"delivery.timeout.ms": "1000", "max.in.flight.requests.per.connection": "1"}),
    (PRODUCER_KEYS, {"enable.idempotence": False}, {"enable.idempotence": "false"}),
    (CONSUMER_KEYS, {"fetch.message.max.bytes": "2048", "fetch.wait.max.ms": "50"},
     {"max.partition.fetch.bytes": "2048", "fetch.max.wait.ms": "50"}),
], ids=["acks", "linger-retries", "timeout-in-flight", "bool", "consumer"])
def test_librdkafka_aliases_set_kafkas_key(keys, config, expected):
    settings = keys.settings(config)
    assert {key: settings[key] for key in expected} == expected
    assert not set(config) - set(expected) & set(settings), "an alias is kept under its own name"


def test_a_kafka_client_key_not_honoured_is_accepted_and_named_in_a_warning():
    with pytest.warns(ConfigNotHonouredWarning) as warned:
        settings = CONSUMER_KEYS.settings({"bootstrap.servers": "127.0.0.1:9092", "ssl.ca.location": "/ca.pem",
                                           "group.id": "g"})
    assert settings["group.id"] == "g"
    assert sorted(str(w.message) for w in warned) == [
        f"raykafka's Python consumer does not honour the Kafka client config {key!r}; it has no effect"
        for key in ("bootstrap.servers", "ssl.ca.location")]


@pytest.mark.parametrize("change,message", [
    ({"producerConfig": {"linger.ms": 5, "ack": "all"}}, "'producerConfig': No such configuration property: 'ack'"),
    ({"consumerConfig": {"max.poll.record": 10}}, "did you mean 'max.poll.records'?"),
    ({"brokerConfig": {"segment.bytes": 1048576}}, "'brokerConfig': Unknown broker config: 'segment.bytes' is a "
                                                   "topic config; the broker's default for it is log.segment.bytes"),
    ({"brokerConfig": {"replica.lag.time.max": 4000}}, "did you mean 'replica.lag.time.max.ms'?"),
    ({"topicConfig": {"log.segment.bytes": 1048576}}, "'topicConfig': Unknown topic config name: log.segment.bytes"),
])
def test_a_workload_with_an_unknown_kafka_key_is_refused_naming_it(change, message):
    good = {"name": "w", "recordCount": 10, "producerConfig": {"linger.ms": 5}}
    with pytest.raises(WorkloadError) as raised:
        parse_workload({**good, **change})
    assert message in str(raised.value)


def test_a_confluent_kafka_workloads_producer_config_is_librdkafkas_to_check():
    workload = parse_workload({"name": "w", "recordCount": 10, "client": "confluent-kafka",
                               "producerConfig": {"queue.buffering.max.kbytes": 1024}})
    assert workload.producer_config == {"queue.buffering.max.kbytes": "1024"}
