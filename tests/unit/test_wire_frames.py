"""Kafka's framing and translation with kio, without sockets: requests written by kio's own
serializers decode to raykafka's messages, responses encode to bytes kio reads back, and bad
input (oversize or short frames, unknown API keys or versions, seeded random and mutated frames)
raises only ``InvalidFrame`` (the listener closes that connection) or, for ApiVersions at an
unknown version, ``UnsupportedApiVersions`` (answered with v0); bytes after a body are ignored, as
Kafka ignores them (librdkafka's Metadata v9 needs it: test_wire_flexible_versions)."""
from __future__ import annotations

import datetime
import io
import random
import struct

import pytest
from kio.index import load_request_schema, load_response_schema
from kio.serial import entity_reader, entity_writer

from actors.core.errors import ErrorCode
from actors.core.messages.fetch import FetchableTopicResponse, FetchPartitionData, FetchResponse
from actors.core.messages.join_group import JoinGroupRequest
from actors.core.messages.leave_group import LeaveGroupRequest
from actors.core.messages.metadata import MetadataRequest, MetadataResponse, MetadataResponseBroker
from actors.core.messages.offset_commit import OffsetCommitRequest
from actors.core.messages.produce import ProduceRequest
from actors.wire.apis import CODECS, WireContext, api_versions_error_response
from actors.wire.frames import (
    InvalidFrame, UnsupportedApiVersions, check_frame_size, decode_request, encode_response,
)
from actors.wire.versions import SUPPORTED_VERSIONS

CONTEXT = WireContext(listener_name="PLAINTEXT", client_id="test")


def request_frame(api_key: int, version: int, body, correlation_id: int = 7) -> bytes:
    """A request frame's payload (no size prefix), written by kio."""
    schema = load_request_schema(api_key, version)
    header = schema.__header_schema__
    buffer = io.BytesIO()
    entity_writer(header)(buffer, header(request_api_key=api_key, request_api_version=version,
                                         correlation_id=correlation_id, client_id="test"))
    entity_writer(schema)(buffer, body)
    return buffer.getvalue()


def read_response(api_key: int, version: int, frame: bytes):
    (size,) = struct.unpack_from(">i", frame)
    assert size == len(frame) - 4
    schema = load_response_schema(api_key, version)
    header, position = entity_reader(schema.__header_schema__)(frame, 4)
    body, _ = entity_reader(schema)(frame, 4 + position)
    return header.correlation_id, body


def produce_body(version: int, acks: int = -1):
    schema = load_request_schema(0, version)
    module = __import__(schema.__module__, fromlist=["*"])
    return schema(transactional_id=None, acks=acks, timeout=datetime.timedelta(milliseconds=1500), topic_data=(
        module.TopicProduceData(name="t", partition_data=(module.PartitionProduceData(index=1, records=b"batch"),)),))


@pytest.mark.parametrize("version", [3, 8])
def test_a_produce_request_becomes_raykafkas_produce_request(version):
    decoded = decode_request(request_frame(0, version, produce_body(version)))
    assert (decoded.api_key, decoded.api_version, decoded.correlation_id) == (0, version, 7)
    request = CODECS[0].to_core(decoded.body, version, CONTEXT)
    assert isinstance(request, ProduceRequest)
    assert (request.acks, request.timeout_ms) == (-1, 1500)
    assert request.topic_data[0].name == "t"
    assert (request.topic_data[0].partition_data[0].index, request.topic_data[0].partition_data[0].records) == \
        (1, b"batch")


@pytest.mark.parametrize("version", [4, 11])
def test_a_fetch_response_with_records_encodes_for_the_clients_version(version):
    response = FetchResponse(responses=(FetchableTopicResponse(topic="t", partitions=(FetchPartitionData(
        partition_index=0, high_watermark=5, last_stable_offset=5, log_start_offset=0, records=b"opaque"),)),))
    frame = encode_response(9, CODECS[1].to_kio(response, version, None))
    correlation_id, body = read_response(1, version, frame)
    assert correlation_id == 9
    (partition,) = body.responses[0].partitions
    assert (partition.high_watermark, bytes(partition.records)) == (5, b"opaque")


def test_metadata_asks_on_the_connections_listener_and_v0s_empty_list_means_every_topic():
    schema = load_request_schema(3, 0)
    request = CODECS[3].to_core(decode_request(request_frame(3, 0, schema(topics=()))).body, 0, CONTEXT)
    # Before v4 every Metadata request allowed topic auto-creation; from v4 the client says.
    assert request == MetadataRequest(topics=None, allow_auto_topic_creation=True, listener_name="PLAINTEXT",
                                      request_api_version=0)
    v4 = load_request_schema(3, 4)
    module = __import__(v4.__module__, fromlist=["*"])
    body = v4(topics=(module.MetadataRequestTopic(name="t"),), allow_auto_topic_creation=False)
    request = CODECS[3].to_core(decode_request(request_frame(3, 4, body)).body, 4, CONTEXT)
    assert request == MetadataRequest(topics=("t",), allow_auto_topic_creation=False, listener_name="PLAINTEXT",
                                      request_api_version=4)
    response = MetadataResponse(brokers=(MetadataResponseBroker(node_id=2, host="127.0.0.1", port=4000),), topics=())
    _, body = read_response(3, 8, encode_response(1, CODECS[3].to_kio(response, 8, None)))
    assert [(b.node_id, b.host, b.port) for b in body.brokers] == [(2, "127.0.0.1", 4000)]


def test_old_group_versions_fill_what_they_lack_as_kafka_does():
    join_v0 = load_request_schema(11, 0)
    module = __import__(join_v0.__module__, fromlist=["*"])
    body = join_v0(group_id="g", session_timeout=datetime.timedelta(seconds=6), member_id="", protocol_type="consumer",
                   protocols=(module.JoinGroupRequestProtocol(name="range", metadata=b"m"),))
    join = CODECS[11].to_core(decode_request(request_frame(11, 0, body)).body, 0, CONTEXT)
    assert isinstance(join, JoinGroupRequest)
    assert (join.session_timeout_ms, join.rebalance_timeout_ms) == (6000, 6000)
    leave_v0 = load_request_schema(13, 0)
    leave = CODECS[13].to_core(leave_v0(group_id="g", member_id="m-1"), 0, CONTEXT)
    assert isinstance(leave, LeaveGroupRequest) and [m.member_id for m in leave.members] == ["m-1"]
    commit_v2 = load_request_schema(8, 2)
    module = __import__(commit_v2.__module__, fromlist=["*"])
    body = commit_v2(group_id="g", generation_id_or_member_epoch=4, member_id="m-1", topics=(
        module.OffsetCommitRequestTopic(name="t", partitions=(module.OffsetCommitRequestPartition(
            partition_index=0, committed_offset=10, committed_metadata=""),)),))
    commit = CODECS[8].to_core(decode_request(request_frame(8, 2, body)).body, 2, CONTEXT)
    assert isinstance(commit, OffsetCommitRequest)
    assert (commit.generation_id, commit.member_id, commit.topics[0].partitions[0].committed_offset) == (4, "m-1", 10)


def test_api_versions_advertises_exactly_the_served_ranges():
    _, body = read_response(18, 3, encode_response(1, CODECS[18].to_kio(ErrorCode.NONE, 3, None)))
    assert {k.api_key: (k.min_version, k.max_version) for k in body.api_keys} == SUPPORTED_VERSIONS


def test_api_versions_at_an_unknown_version_is_answered_with_v0_not_closed():
    frame = struct.pack(">hhi", 18, 99, 42) + b"\x00\x00"
    with pytest.raises(UnsupportedApiVersions) as raised:
        decode_request(frame)
    correlation_id, body = read_response(18, 0, encode_response(raised.value.correlation_id,
                                                                api_versions_error_response()))
    assert (correlation_id, int(body.error_code)) == (42, ErrorCode.UNSUPPORTED_VERSION)


@pytest.mark.parametrize("frame, why", [
    (struct.pack(">hhi", 999, 0, 1) + b"\x00\x00", "unknown API key"),
    (struct.pack(">hhi", 3, 99, 1) + b"\x00\x00", "unserved version"),
    (struct.pack(">hhi", 4, 0, 1) + b"\x00\x00", "an inter-broker API (LeaderAndIsr) is not served to clients"),
    (b"\x00\x03", "shorter than a header"),
    (request_frame(0, 8, produce_body(8))[:-3], "truncated body"),
])
def test_unreadable_requests_close_the_connection(frame, why):
    with pytest.raises(InvalidFrame):
        decode_request(frame)


def _metadata_body(version: int):
    return load_request_schema(3, version)(topics=None, allow_auto_topic_creation=True,
                                           include_cluster_authorized_operations=False,
                                           include_topic_authorized_operations=False)


@pytest.mark.parametrize("api_key, version, body", [
    (0, 8, produce_body(8)), (0, 9, produce_body(9)), (3, 8, _metadata_body(8)), (3, 9, _metadata_body(9)),
])
def test_bytes_after_the_body_are_ignored_as_kafka_ignores_them(api_key, version, body):
    """Kafka's RequestContext.parseRequest reads the body and never asks whether bytes are left."""
    from actors.wire.frames import decode_header
    frame = request_frame(api_key, version, body)
    padded = frame + b"\x00\x01\x02"
    assert decode_request(padded) == decode_request(frame)
    if CODECS[api_key].read is not None:  # Produce's own reader, which the listener uses
        read = CODECS[api_key].read
        assert read(padded, decode_header(padded).position, version) == read(frame, decode_header(frame).position,
                                                                              version)


@pytest.mark.parametrize("size", [-1, 0, 7, 104857601])
def test_a_size_outside_the_limit_is_refused_before_the_body_is_read(size):
    with pytest.raises(InvalidFrame):
        check_frame_size(size, 104857600)
    check_frame_size(100, 104857600)


def test_seeded_random_and_mutated_frames_only_ever_decode_or_close():
    rng = random.Random(1301)
    seeds = [request_frame(0, 8, produce_body(8)), request_frame(3, 8, load_request_schema(3, 8)(
        topics=None, allow_auto_topic_creation=False, include_cluster_authorized_operations=False,
        include_topic_authorized_operations=False)), struct.pack(">hhi", 18, 3, 1) + b"\x00\x00\x00\x00"]
    outcomes = {"decoded": 0, "closed": 0, "api_versions": 0}
    for _ in range(5000):
        if rng.random() < 0.3:
            frame = rng.randbytes(rng.randrange(0, 64))
        else:
            frame = bytearray(rng.choice(seeds))
            for _ in range(rng.randrange(1, 4)):
                frame[rng.randrange(len(frame))] = rng.randrange(256)
            frame = bytes(frame[:rng.randrange(len(frame) + 1)]) if rng.random() < 0.3 else bytes(frame)
        try:
            decoded = decode_request(frame)
        except InvalidFrame:
            outcomes["closed"] += 1
            continue
        except UnsupportedApiVersions:
            outcomes["api_versions"] += 1
            continue
        outcomes["decoded"] += 1
        try:
            CODECS[decoded.api_key].to_core(decoded.body, decoded.api_version, CONTEXT)
        except (TypeError, ValueError):
            pass  # the listener closes the connection for these too
    assert outcomes["closed"] > 1000 and outcomes["decoded"] > 0, outcomes
