"""The listeners read flexible versions (KIP-482) as Kafka does: a tagged field of a tag kio's schema
does not name is skipped wherever it appears (header, body, nested entity), every advertised
version of every API reads a request kio wrote and writes a response kio reads back, and
DescribeCluster answers from the metadata cache as Kafka's broker does; shown at the codec level
with requests written by kio and tagged fields spliced into them."""
from __future__ import annotations

import dataclasses
import datetime
import io
import uuid
from dataclasses import fields

import pytest
from kio.index import load_request_schema, load_response_schema
from kio.serial import entity_reader as kio_entity_reader
from kio.serial import entity_writer
from kio.schema.errors import ErrorCode as KioErrorCode
from kio.serial._introspect import EntityField, EntityTupleField, classify_field

from actors.core.apis import BY_KEY
from actors.core.errors import ErrorCode
from actors.core.messages.describe_cluster import (
    AUTHORIZED_OPERATIONS_OMITTED, CLUSTER_OPERATIONS, DescribeClusterRequest, describe_cluster,
)
from actors.core.messages.metadata import MetadataResponse, MetadataResponseBroker
from actors.wire.apis import CODECS, WireContext
from actors.wire.convert import from_kio
from actors.wire.frames import decode_request, encode_response
from actors.wire.tagged_fields import entity_reader, is_unknown_tag
from actors.wire.versions import SUPPORTED_VERSIONS
from tests.unit.test_wire_frames import read_response, request_frame

CONTEXT = WireContext(listener_name="PLAINTEXT", client_id="test")
SERVED = [(key, version) for key, (low, high) in sorted(SUPPORTED_VERSIONS.items()) for version in range(low, high + 1)]
FLEXIBLE = [(key, version) for key, version in SERVED if load_request_schema(key, version).__flexible__]


def written(entity) -> bytes:
    buffer = io.BytesIO()
    entity_writer(type(entity))(buffer, entity)
    return buffer.getvalue()


_SAMPLES = {"int8": 1, "int16": 2, "int32": 3, "int64": 4, "uint16": 5, "uint32": 6, "uint64": 7, "float64": 0.5,
            "string": "s", "bytes": b"b", "records": b"", "bool": True, "uuid": uuid.UUID(int=0), "error_code": KioErrorCode.none, "uint8": 8,
            "timedelta_i32": datetime.timedelta(milliseconds=9), "timedelta_i64": datetime.timedelta(milliseconds=9),
            "datetime_i64": datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc)}


def sample(entity_type: type):
    """An entity of ``entity_type`` with every field set (one element in each array), from the schema alone."""
    values = {}
    for field in fields(entity_type):
        field_class = classify_field(field)
        if isinstance(field_class, (EntityField, EntityTupleField)):
            value = sample(field_class.type_)
        else:
            value = _SAMPLES[field.metadata["kafka_type"]]
        values[field.name] = (value,) if field_class.is_array else value
    return entity_type(**values)


# ----------------------------------------------------------------------------- unknown tags
def with_unknown_tag(frame: bytes) -> bytes:
    """``frame`` with a tagged field of tag 99 and 3 bytes added to the body's last tagged fields
    (the body ends with them: a count of 0, which becomes 1 and the field)."""
    assert frame[-1] == 0
    return frame[:-1] + bytes([1, 99, 3]) + b"\x01\x02\x03"


def test_kio_alone_refuses_an_unknown_tag_which_the_listeners_skip():
    schema = load_request_schema(3, 9)
    body = sample(schema)
    spliced = with_unknown_tag(written(body))
    with pytest.raises(KeyError) as refused:
        kio_entity_reader(schema)(spliced, 0)
    assert is_unknown_tag(refused.value)
    assert entity_reader(schema)(spliced, 0) == (body, len(spliced))


def test_librdkafkas_all_topics_metadata_v9_is_served_as_kafka_reads_it():
    """librdkafka 2.16's bytes (header, then body): the 4-byte array count placeholder it never
    shrinks. Kafka reads a null topic array (all topics), the flags shifted, a tagged field of tag 0
    (skipped) and ignores the byte left over; so do the listeners (frames.py), so v9 is served."""
    from actors.core.messages.metadata import MetadataRequest
    from actors.wire.apis import CODECS
    from actors.wire.frames import decode_request
    frame = bytes.fromhex("0003000900000003000772646b61666b6100") + bytes.fromhex("0000000001000000")
    body, size = entity_reader(load_request_schema(3, 9))(frame, 18)
    assert body.topics is None and 18 + size == len(frame) - 1, "one byte after the body, as Kafka reads it"
    decoded = decode_request(frame)
    assert (decoded.api_version, decoded.correlation_id, decoded.client_id) == (9, 3, "rdkafka")
    assert CODECS[3].to_core(decoded.body, 9, CONTEXT) == MetadataRequest(
        topics=None, allow_auto_topic_creation=False, listener_name=CONTEXT.listener_name, request_api_version=9)
    assert SUPPORTED_VERSIONS[3][1] == 9


def test_unknown_tags_in_the_header_and_in_nested_entities_are_skipped():
    schema = load_request_schema(0, 9)
    module = __import__(schema.__module__, fromlist=["*"])
    body = schema(transactional_id=None, acks=-1, timeout=datetime.timedelta(milliseconds=1500), topic_data=(
        module.TopicProduceData(name="t", partition_data=(module.PartitionProduceData(index=1, records=b"batch"),)),))
    frame = request_frame(0, 9, body)
    body_bytes = written(body)
    header = frame[:len(frame) - len(body_bytes)]
    # The header's tagged fields are its last byte; the partition's are the byte after "batch".
    header = header[:-1] + bytes([1, 42, 2]) + b"hi"
    at = body_bytes.index(b"batch") + len(b"batch")
    assert body_bytes[at] == 0
    body_bytes = body_bytes[:at] + bytes([2, 7, 1]) + b"x" + bytes([8, 0]) + body_bytes[at + 1:]
    decoded = decode_request(header + body_bytes)
    assert (decoded.correlation_id, decoded.client_id, decoded.body) == (7, "test", body)
    # And the Produce codec the listeners use for v9 on skips them too.
    codec = CODECS[0]
    from actors.wire.frames import decode_header
    view = memoryview(header + body_bytes).toreadonly()
    request = codec.read(view, decode_header(view).position, 9)
    assert [(p.index, bytes(p.records)) for p in request.topic_data[0].partition_data] == [(1, b"batch")]


def test_a_known_tag_is_still_read_when_an_unknown_one_comes_first():
    schema = load_request_schema(1, 12)  # Fetch v12: cluster_id is tagged field 0
    body = dataclasses.replace(sample(schema), cluster_id=None)
    tagged = bytes([2, 77, 1]) + b"z" + bytes([0, 3, 3]) + b"cl"  # unknown tag 77, then cluster_id "cl"
    body_bytes = written(body)[:-1] + tagged
    decoded, size = entity_reader(schema)(body_bytes, 0)  # Fetch v12 is not served: the reader alone
    assert size == len(body_bytes) and decoded == dataclasses.replace(body, cluster_id="cl")


# ----------------------------------------------------------------------------- every served version
@pytest.mark.parametrize(("api_key", "version"), SERVED)
def test_every_served_version_reads_a_request_and_writes_a_response_kio_reads(api_key, version):
    request_type = load_request_schema(api_key, version)
    body = sample(request_type)
    codec = CODECS[api_key]
    frame = request_frame(api_key, version, body, correlation_id=31)
    decoded = decode_request(frame)
    assert (decoded.correlation_id, decoded.body) == (31, body)
    if codec.read is not None:
        from actors.wire.frames import decode_header
        view = memoryview(frame).toreadonly()
        codec.read(view, decode_header(view).position, version)
    else:
        codec.to_core(decoded.body, version, CONTEXT)
    response_type = load_response_schema(api_key, version)
    kio_response = sample(response_type)
    api = BY_KEY[api_key]
    if api.request_type is None:
        return  # answered by the listener alone: its own tests write its responses
    core_response_type = getattr(__import__(api.request_type.__module__, fromlist=["*"]),
                                 api.request_type.__name__.replace("Request", "Response"))
    core_response = from_kio(core_response_type, kio_response)
    if codec.write is not None:
        return  # Produce: test_wire_produce_codec compares its bytes with kio's at every version
    answer = codec.to_kio(core_response, version, decoded.body)
    correlation_id, read_back = read_response(api_key, version, encode_response(5, answer))
    assert correlation_id == 5 and read_back == answer


def test_every_api_a_kafka_4_client_uses_is_served_at_a_flexible_version():
    # The APIs whose caps sit below their first flexible version, each for a reason versions.py gives.
    capped = {47: "OffsetDelete, whose only version (v0) is not flexible"}
    for api_key, (_, high) in SUPPORTED_VERSIONS.items():
        flexible = load_request_schema(api_key, high).__flexible__
        assert flexible or api_key in capped or api_key == 17, (api_key, high)  # SaslHandshake has none


# ----------------------------------------------------------------------------- DescribeCluster
METADATA = MetadataResponse(brokers=(MetadataResponseBroker(node_id=2, host="h2", port=9093, rack="r"),
                                     MetadataResponseBroker(node_id=1, host="h1", port=9092)),
                            topics=(), cluster_id="cluster-a", controller_id=1000)


@pytest.mark.parametrize("version", [0, 1, 2])
def test_describe_cluster_answers_the_brokers_a_controller_stand_in_and_no_operations_unasked(version):
    schema = load_request_schema(60, version)
    body = schema(**{f.name: False for f in fields(schema) if f.metadata["kafka_type"] == "bool"})
    request = CODECS[60].to_core(decode_request(request_frame(60, version, body)).body, version, CONTEXT)
    assert request == DescribeClusterRequest(listener_name="PLAINTEXT", request_api_version=version)
    answer = CODECS[60].to_kio(describe_cluster(METADATA, request), version, body)
    _, read_back = read_response(60, version, encode_response(3, answer))
    assert (read_back.error_code, read_back.cluster_id, read_back.controller_id) == (0, "cluster-a", 1)
    assert [(b.broker_id, b.host, b.port, b.rack) for b in read_back.brokers] == [(2, "h2", 9093, "r"),
                                                                                  (1, "h1", 9092, None)]
    assert read_back.cluster_authorized_operations == AUTHORIZED_OPERATIONS_OMITTED


def test_describe_cluster_answers_kafkas_operations_when_asked_and_refuses_a_controller_endpoint():
    asked = describe_cluster(METADATA, DescribeClusterRequest(include_cluster_authorized_operations=True))
    assert asked.cluster_authorized_operations == CLUSTER_OPERATIONS == 0b1111110100000
    wrong = describe_cluster(METADATA, DescribeClusterRequest(endpoint_type=2, request_api_version=1))
    assert (wrong.error_code, wrong.brokers) == (ErrorCode.MISMATCHED_ENDPOINT_TYPE, ())
    unknown = describe_cluster(METADATA, DescribeClusterRequest(endpoint_type=9, request_api_version=1))
    assert unknown.error_code == ErrorCode.UNSUPPORTED_ENDPOINT_TYPE


def test_describe_cluster_is_flexible_only_and_listed():
    assert SUPPORTED_VERSIONS[60] == (0, 2) and ("describe_cluster", 60) == (BY_KEY[60].name, BY_KEY[60].key)
    assert all(load_request_schema(60, v).__flexible__ for v in range(3))


def test_an_api_versions_request_with_an_unknown_tag_is_answered_not_closed():
    # ApiVersions v3, the first request every flexible client sends, with a field from a newer client.
    schema = load_request_schema(18, 3)
    body = schema(client_software_name="librdkafka", client_software_version="2.6.0")
    decoded = decode_request(with_unknown_tag(request_frame(18, 3, body)))
    assert (decoded.api_key, decoded.api_version, decoded.body) == (18, 3, body)


def test_seeded_mutations_of_a_header_v2_read_as_kios_reader_reads_them():
    # decode_header reads a header v2 with no tagged fields itself; any other goes to kio's reader.
    import random

    from actors.wire.frames import InvalidFrame, decode_header
    from actors.wire.tagged_fields import entity_reader as lenient_first

    def ours(frame):
        try:
            header = decode_header(frame)
        except InvalidFrame:
            return None
        return header.correlation_id, header.client_id, header.position

    def kios(frame):
        try:
            header, position = lenient_first(load_request_schema(0, 12).__header_schema__)(frame, 0)
        except Exception:
            return None
        return int(header.correlation_id), header.client_id, position

    rng = random.Random(7200)
    seed = request_frame(0, 12, sample(load_request_schema(0, 12)), correlation_id=654321)
    assert ours(seed) == kios(seed) != None  # noqa: E711
    tagged = seed[:seed.index(b"test") + 4] + bytes([1, 5, 1]) + b"q" + seed[seed.index(b"test") + 5:]
    assert ours(tagged) == kios(tagged) == (654321, "test", seed.index(b"test") + 8)
    for _ in range(3000):
        frame = bytearray(rng.choice((seed, tagged))[:rng.randrange(5, 24)])
        for _ in range(rng.randrange(0, 3)):
            frame[rng.randrange(4, len(frame))] = rng.choice((0, 0xFF, 0x80, rng.randrange(256)))
        assert ours(bytes(frame)) == kios(bytes(frame)), bytes(frame).hex()


def test_fetch_v12_carries_a_consumers_last_fetched_epoch_in_and_the_diverging_epoch_out():
    from actors.core.messages.fetch import EpochEndOffset, FetchPartitionData, FetchResponse, FetchableTopicResponse
    schema = load_request_schema(1, 12)
    body = sample(schema)
    request = CODECS[1].to_core(decode_request(request_frame(1, 12, body)).body, 12, CONTEXT)
    assert request.replica_id == -1 and request.topics[0].partitions[0].last_fetched_epoch == 3
    response = FetchResponse(responses=(FetchableTopicResponse(topic="s", partitions=(FetchPartitionData(
        partition_index=3, high_watermark=9, diverging_epoch=EpochEndOffset(epoch=1, end_offset=4)),)),))
    _, answer = read_response(1, 12, encode_response(2, CODECS[1].to_kio(response, 12, body)))
    (partition,) = answer.responses[0].partitions
    assert (partition.diverging_epoch.epoch, partition.diverging_epoch.end_offset) == (1, 4)
