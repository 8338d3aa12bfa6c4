"""A SaslHandshake or SaslAuthenticate on a PLAINTEXT listener is answered as Kafka 2.4's KafkaApis
answers it (ILLEGAL_SASL_STATE, no mechanisms) instead of closing the connection, and ApiVersions
lists both APIs so that a client configured for SASL sends the handshake; driven through the
listener's request handling with kio-written frames, no sockets, no Ray."""
from __future__ import annotations

import asyncio

import pytest
from kio.index import load_request_schema

from actors.core.errors import ErrorCode
from actors.kafka_listener import KafkaListener
from actors.wire.apis import CODECS, WireContext
from actors.wire.frames import encode_response, load_served_schemas
from tests.unit.test_wire_frames import read_response, request_frame


def answer(api_key: int, version: int, body) -> object:
    load_served_schemas()
    listener = KafkaListener(broker=None, broker_id=0, namespace="unused", config={}, log_dir="/nonexistent",
                             coordinator_actor_name="unused")
    frame = memoryview(request_frame(api_key, version, body, correlation_id=9)).toreadonly()
    segments = asyncio.run(listener._answer(listener._decode(frame, WireContext())))
    correlation_id, response = read_response(api_key, version, b"".join(bytes(s) for s in segments))
    assert correlation_id == 9
    return response


@pytest.mark.parametrize("version", [0, 1])
def test_a_sasl_handshake_is_answered_illegal_sasl_state_with_no_mechanisms(version):
    response = answer(17, version, load_request_schema(17, version)(mechanism="PLAIN"))
    assert int(response.error_code) == ErrorCode.ILLEGAL_SASL_STATE
    assert response.mechanisms == ()


@pytest.mark.parametrize("version", [0, 1, 2])
def test_a_sasl_authenticate_is_answered_illegal_sasl_state_with_a_message(version):
    response = answer(36, version, load_request_schema(36, version)(auth_bytes=b"\x00user\x00secret"))
    assert int(response.error_code) == ErrorCode.ILLEGAL_SASL_STATE
    assert "PLAINTEXT" in response.error_message


def test_api_versions_lists_the_sasl_apis_as_kafka_does_on_every_listener():
    _, body = read_response(18, 3, encode_response(1, CODECS[18].to_kio(ErrorCode.NONE, 3, None)))
    listed = {k.api_key: (k.min_version, k.max_version) for k in body.api_keys}
    assert listed[17] == (0, 1) and listed[36] == (0, 2)
