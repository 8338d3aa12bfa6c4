"""Stock clients asking a one-broker raykafka cluster for what it does not do get Kafka's answer, at
once, not a hang or a dropped connection: a transactional producer (confluent-kafka's
init_transactions(), KafkaJS's transaction()) fails with a fatal, non-retriable error naming the
reason; a SaslHandshake on the PLAINTEXT listener is answered ILLEGAL_SASL_STATE on a connection
that stays open, and librdkafka configured for SASL reports that its handshake failed; and
DescribeConfigs through confluent-kafka's admin client lists every topic config with its source,
writable."""
from __future__ import annotations

import io
import json
import socket
import struct
import time

import pytest

from tests.support.clusters import running_cluster
from tests.support.kafkajs import run_kafkajs

pytestmark = pytest.mark.integration

# Bounds on how long a client may take to give up; each is the client's own timeout, so a client
# that waits it out (the defect) fails the assertions on the error it then reports.
INIT_TRANSACTIONS_TIMEOUT_S = 20
SASL_ERROR_WAIT_S = 30
KAFKAJS_SCRIPT_TIMEOUT_S = 90


@pytest.fixture(scope="module")
def bootstrap(ray_session, tmp_path_factory):
    # min.insync.replicas set on the broker: its topic key's value then comes from the broker.
    with running_cluster(tmp_path_factory, brokers=1, config={"offsets.topic.replication.factor": "1",
                                                              "min.insync.replicas": "1"}) as cluster:
        cluster.create_topic("described", partitions=1, replication_factor=1, config={"retention.ms": "3600000"})
        yield cluster.bootstrap_servers


def test_confluent_kafka_init_transactions_fails_at_once_with_a_fatal_error(bootstrap):
    from confluent_kafka import KafkaException, Producer
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": "orders-tx"})
    with pytest.raises(KafkaException) as raised:
        producer.init_transactions(INIT_TRANSACTIONS_TIMEOUT_S)
    error = raised.value.args[0]
    assert error.fatal() and not error.retriable(), f"a fatal, non-retriable error expected, got {error!r}"
    assert "does not support transactions" in error.str(), error.str()


def test_kafkajs_transaction_fails_at_once_with_a_non_retriable_error(bootstrap):
    """KafkaJS's own message stays "Failed to find group coordinator" (its brokerPool.withBroker
    drops every broker's FindCoordinator error, whatever the code); this guards that it fails at
    once and for good rather than retrying."""
    result = run_kafkajs(f"""
const {{ Kafka, logLevel }} = require('kafkajs');
const kafka = new Kafka({{ brokers: {json.dumps(bootstrap.split(','))}, logLevel: logLevel.NOTHING,
                           retry: {{ retries: 3 }} }});
const producer = kafka.producer({{ transactionalId: 'orders-tx', idempotent: true, maxInFlightRequests: 1 }});
(async () => {{
  await producer.connect();
  let outcome;
  try {{ await producer.transaction(); outcome = {{ failed: false }}; }}
  catch (e) {{ outcome = {{ failed: true, name: e.name, message: e.message, retriable: e.retriable }}; }}
  await producer.disconnect();
  console.log(JSON.stringify(outcome));
}})().catch(e => {{ console.log(JSON.stringify({{ unexpected: String(e) }})); }});
""", timeout_s=KAFKAJS_SCRIPT_TIMEOUT_S)
    assert result.get("failed") is True, result
    assert result["retriable"] is False, result


def request(sock: socket.socket, api_key: int, version: int, body, correlation_id: int):
    """Write one kio-encoded request on ``sock`` and read its answer (None if the broker closed)."""
    from kio.index import load_request_schema, load_response_schema
    from kio.serial import entity_reader, entity_writer
    schema = load_request_schema(api_key, version)
    buffer = io.BytesIO()
    entity_writer(schema.__header_schema__)(buffer, schema.__header_schema__(
        request_api_key=api_key, request_api_version=version, correlation_id=correlation_id, client_id="raw"))
    entity_writer(schema)(buffer, body)
    sock.sendall(struct.pack(">i", len(buffer.getvalue())) + buffer.getvalue())
    size = sock.recv(4, socket.MSG_WAITALL)
    if len(size) < 4:
        return None
    frame = sock.recv(struct.unpack(">i", size)[0], socket.MSG_WAITALL)
    response = load_response_schema(api_key, version)
    header, position = entity_reader(response.__header_schema__)(frame, 0)
    assert header.correlation_id == correlation_id
    return entity_reader(response)(frame, position)[0]


def test_a_raw_sasl_handshake_is_answered_and_the_connection_stays_open(bootstrap):
    from kio.index import load_request_schema
    host, port = bootstrap.split(",")[0].rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        handshake = request(sock, 17, 1, load_request_schema(17, 1)(mechanism="PLAIN"), correlation_id=1)
        assert handshake is not None, "the broker closed the connection instead of answering"
        assert (int(handshake.error_code), handshake.mechanisms) == (34, ())  # ILLEGAL_SASL_STATE
        versions = request(sock, 18, 0, load_request_schema(18, 0)(), correlation_id=2)
        assert versions is not None and int(versions.error_code) == 0, "the same connection serves on"


def test_a_sasl_client_on_the_plaintext_listener_gets_an_authentication_error(bootstrap):
    from confluent_kafka import KafkaError
    from confluent_kafka.admin import AdminClient
    errors: list = []
    admin = AdminClient({"bootstrap.servers": bootstrap, "security.protocol": "SASL_PLAINTEXT",
                         "sasl.mechanism": "PLAIN", "sasl.username": "alice", "sasl.password": "secret",
                         "error_cb": errors.append})
    deadline = time.monotonic() + SASL_ERROR_WAIT_S
    while time.monotonic() < deadline and not any(e.code() == KafkaError._AUTHENTICATION for e in errors):
        admin.poll(0.5)
    authentication = [e for e in errors if e.code() == KafkaError._AUTHENTICATION]
    assert authentication, f"an authentication error within {SASL_ERROR_WAIT_S}s expected; got {errors!r}"
    assert "handshake failed" in authentication[0].str() and "SASL state" in authentication[0].str(), \
        authentication[0].str()


def test_confluent_kafka_describe_configs_lists_every_topic_config_with_its_source(bootstrap):
    from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource
    admin = AdminClient({"bootstrap.servers": bootstrap})
    resource = ConfigResource(ConfigResource.Type.TOPIC, "described")
    configs = admin.describe_configs([resource])[resource].result(30)
    assert len(configs) == 26, sorted(configs)  # every LogConfig key of Kafka 2.4
    assert not any(entry.is_read_only for entry in configs.values())
    assert (configs["retention.ms"].value, configs["retention.ms"].source) == (
        "3600000", ConfigSource.DYNAMIC_TOPIC_CONFIG.value)
    assert configs["min.insync.replicas"].source == ConfigSource.STATIC_BROKER_CONFIG.value
    assert configs["segment.ms"].source == ConfigSource.DEFAULT_CONFIG.value
