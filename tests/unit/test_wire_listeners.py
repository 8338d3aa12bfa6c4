"""Kafka listeners for stock clients, without Ray: ``listeners``/``advertised.listeners`` and
``listener.security.protocol.map`` parse and are checked as Kafka's KafkaConfig checks them (named
listeners, a nonroutable advertised host refused with Kafka's message), per-node placeholders
resolve for the node a broker runs on, a restarted broker binds the port it had, brokers register
their endpoints and every broker's Metadata and FindCoordinator answers name them for the listener
asked on."""
from __future__ import annotations

import pytest

from actors.core.errors import ErrorCode, KafkaProtocolError
from actors.core.messages.broker_registration import BrokerEndpoint
from actors.core.messages.metadata import MetadataRequest
from actors.core.messages.update_metadata import UpdateMetadataBroker, UpdateMetadataRequest
from actors.core.broker.metadata_cache import MetadataCache
from actors.wire.listeners import (
    Listener, advertised_endpoints, check_listener_config, decode_remembered_ports, encode_remembered_ports,
    parse_listeners, parse_security_protocol_map, ports_to_bind, resolve_placeholders,
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


def refusal(config: dict[str, str]) -> str:
    with pytest.raises(KafkaProtocolError) as raised:
        check_listener_config(config)
    assert raised.value.error_code == ErrorCode.INVALID_CONFIG
    return str(raised.value)


@pytest.mark.parametrize("host", ["0.0.0.0", "[::]"])
def test_a_nonroutable_advertised_host_is_refused_with_kafkas_message(host):
    """Kafka's KafkaConfig refuses it: a client told to connect there connects to itself."""
    message = refusal({"listeners": f"PLAINTEXT://{host}:9092"})
    assert "advertised.listeners cannot use the nonroutable meta-address" in message
    assert "Use a routable IP address." in message
    message = refusal({"listeners": "PLAINTEXT://:9092", "advertised.listeners": f"PLAINTEXT://{host}:9092"})
    assert "nonroutable meta-address" in message


def test_binding_every_interface_and_advertising_a_routable_address_is_accepted():
    config = {"listeners": "PLAINTEXT://0.0.0.0:0", "advertised.listeners": "PLAINTEXT://{node_ip}:0"}
    check_listener_config(config)
    resolved = {key: resolve_placeholders(value, node_ip="198.18.0.2", node_id="n1", broker_id=2)
                for key, value in config.items()}
    assert advertised_endpoints(resolved, {"PLAINTEXT": 40123}) == (
        BrokerEndpoint(name="PLAINTEXT", host="198.18.0.2", port=40123),)


def test_an_empty_host_binds_every_interface_and_advertises_the_brokers_node():
    assert advertised_endpoints({"listeners": "PLAINTEXT://:9092"}, {"PLAINTEXT": 9092}, "198.18.0.3") == (
        BrokerEndpoint(name="PLAINTEXT", host="198.18.0.3", port=9092),)


def test_placeholders_name_the_node_and_the_broker_where_it_runs():
    value = "INTERNAL://{node_ip}:{broker_id}9,EXTERNAL://kafka-{broker_id}.{node_id}.example:9092"
    assert resolve_placeholders(value, node_ip="198.18.0.4", node_id="abc", broker_id=3) == (
        "INTERNAL://198.18.0.4:39,EXTERNAL://kafka-3.abc.example:9092")
    with pytest.raises(KafkaProtocolError):  # unresolved, a placeholder is no host
        parse_listeners("PLAINTEXT://{node_ip}:9092")


def test_named_listeners_take_their_security_protocol_from_the_map():
    config = {"listeners": "INTERNAL://127.0.0.1:0,EXTERNAL://0.0.0.0:0",
              "advertised.listeners": "INTERNAL://127.0.0.1:0,EXTERNAL://kafka-0.example:0",
              "listener.security.protocol.map": "INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT"}
    check_listener_config(config)
    assert advertised_endpoints(config, {"INTERNAL": 40001, "EXTERNAL": 40002}) == (
        BrokerEndpoint(name="INTERNAL", host="127.0.0.1", port=40001, security_protocol="PLAINTEXT"),
        BrokerEndpoint(name="EXTERNAL", host="kafka-0.example", port=40002, security_protocol="PLAINTEXT"))
    assert "No security protocol defined for listener EXTERNAL" in refusal(
        {"listeners": "INTERNAL://127.0.0.1:0,EXTERNAL://127.0.0.1:0",
         "listener.security.protocol.map": "INTERNAL:PLAINTEXT"})
    assert "raykafka serves PLAINTEXT only" in refusal(
        {"listeners": "EXTERNAL://127.0.0.1:0", "listener.security.protocol.map": "EXTERNAL:SSL"})
    assert "Invalid security protocol `TLS`" in refusal({"listener.security.protocol.map": "PLAINTEXT:TLS"})
    assert parse_security_protocol_map(None)["SASL_SSL"] == "SASL_SSL", "Kafka's default map"


def test_advertised_names_must_be_listeners_and_ports_distinct():
    assert "must be equal to or a subset of the ones defined in listeners" in refusal(
        {"listeners": "PLAINTEXT://127.0.0.1:0", "advertised.listeners": "EXTERNAL://kafka.example:9092",
         "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,EXTERNAL:PLAINTEXT"})
    assert "Each listener must have a different port" in refusal(
        {"listeners": "INTERNAL://127.0.0.1:9092,EXTERNAL://127.0.0.1:9092",
         "listener.security.protocol.map": "INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT"})


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


def test_a_cluster_that_may_span_hosts_listens_on_each_nodes_ip_unless_the_operator_chose():
    from actors.wire.listeners import LISTENERS_DEFAULT, NODE_LISTENERS, with_listeners_for_hosts
    assert with_listeners_for_hosts({"num.partitions": "3"}, several_hosts=True) == {
        "num.partitions": "3", "listeners": NODE_LISTENERS}
    assert NODE_LISTENERS == "PLAINTEXT://{node_ip}:0" and LISTENERS_DEFAULT == "PLAINTEXT://127.0.0.1:0"
    assert with_listeners_for_hosts({}, several_hosts=False) == {}  # one host: the loopback default
    for chosen in ({"listeners": "PLAINTEXT://:9092"}, {"advertised.listeners": "PLAINTEXT://kafka.example:9092"}):
        assert with_listeners_for_hosts(chosen, several_hosts=True) == chosen
