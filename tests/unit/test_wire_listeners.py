"""Kafka listeners for stock clients, without Ray: ``listeners``/``advertised.listeners`` parse as
Kafka reads them, a restarted broker binds the port it had, brokers register their endpoints
and every broker's Metadata and FindCoordinator answers name them for the listener asked on."""
from __future__ import annotations

import pytest

from actors.core.errors import ErrorCode, KafkaProtocolError
from actors.core.messages.broker_registration import BrokerEndpoint
from actors.core.messages.metadata import MetadataRequest
from actors.core.messages.update_metadata import UpdateMetadataBroker, UpdateMetadataRequest
from actors.core.broker.metadata_cache import MetadataCache
from actors.wire.listeners import (
    Listener, advertised_endpoints, decode_remembered_ports, encode_remembered_ports, parse_listeners,
    ports_to_bind,
)


@pytest.mark.parametrize("value, expected", [
    ("PLAINTEXT://127.0.0.1:0", (Listener("PLAINTEXT", "127.0.0.1", 0),)),
    ("plaintext://:9092", (Listener("PLAINTEXT", "", 9092),)),
    (" PLAINTEXT://[::1]:9093 ", (Listener("PLAINTEXT", "::1", 9093),)),
])
def test_listeners_parse_as_kafka_writes_them(value, expected):
    assert parse_listeners(value) == expected


@pytest.mark.parametrize("value", ["", "127.0.0.1:9092", "PLAINTEXT://host", "PLAINTEXT://h:99999",
                                   "SSL://h:9093", "PLAINTEXT://a:1,PLAINTEXT://b:2"])
def test_a_listener_kafka_would_refuse_is_invalid_config(value):
    with pytest.raises(KafkaProtocolError) as raised:
        parse_listeners(value)
    assert raised.value.error_code == ErrorCode.INVALID_CONFIG


def test_a_free_port_is_remembered_and_bound_again_but_a_configured_port_wins():
    listeners = parse_listeners("PLAINTEXT://127.0.0.1:0")
    remembered = decode_remembered_ports(encode_remembered_ports({"PLAINTEXT": 40123}))
    assert ports_to_bind(listeners, remembered) == {"PLAINTEXT": 40123}
    assert ports_to_bind(parse_listeners("PLAINTEXT://127.0.0.1:9092"), remembered) == {"PLAINTEXT": 9092}
    assert ports_to_bind(listeners, decode_remembered_ports("not json")) == {"PLAINTEXT": 0}


def test_advertised_listeners_default_to_the_bound_listeners():
    assert advertised_endpoints({}, {"PLAINTEXT": 40123}) == (
        BrokerEndpoint(name="PLAINTEXT", host="127.0.0.1", port=40123),)
    config = {"listeners": "PLAINTEXT://0.0.0.0:0", "advertised.listeners": "PLAINTEXT://kafka-0.example:0"}
    assert advertised_endpoints(config, {"PLAINTEXT": 40123}) == (
        BrokerEndpoint(name="PLAINTEXT", host="kafka-0.example", port=40123),)


def update_with_endpoints() -> UpdateMetadataRequest:
    return UpdateMetadataRequest(controller_id=0, controller_epoch=1, broker_epoch=1, topic_states=(), live_brokers=(
        UpdateMetadataBroker(id=0, host="raykafka-broker-0",
                             endpoints=(BrokerEndpoint(name="PLAINTEXT", host="127.0.0.1", port=40000),)),
        UpdateMetadataBroker(id=1, host="raykafka-broker-1")))


def test_metadata_names_brokers_by_the_listener_asked_on_and_by_actor_name_otherwise():
    cache = MetadataCache()
    cache.update(update_with_endpoints())
    on_listener = cache.handle_metadata(MetadataRequest(topics=(), listener_name="PLAINTEXT")).brokers
    assert [(b.node_id, b.host, b.port) for b in on_listener] == [(0, "127.0.0.1", 40000)], \
        "a broker without that listener is left out, as Kafka does"
    by_actor = cache.handle_metadata(MetadataRequest(topics=())).brokers
    assert [(b.node_id, b.host, b.port) for b in by_actor] == [(0, "raykafka-broker-0", 0), (1, "raykafka-broker-1", 0)]
