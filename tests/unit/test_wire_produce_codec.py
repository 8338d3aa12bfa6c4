"""The Produce codec the listeners use instead of kio (actors/wire/produce_codec.py) reads every
served version's requests as kio and the generic translation do, writes responses byte for byte
as kio writes them, hands the records on as views of the frame, and refuses exactly the frames
the kio path refuses, seeded random mutations included."""
from __future__ import annotations

import datetime
import random

import pytest
from kio.index import load_request_schema

from actors.core.errors import ErrorCode
from actors.core.messages.produce import PartitionProduceResponse, ProduceResponse, TopicProduceResponse
from actors.wire.apis import CODECS, WireContext
from actors.wire.frames import (
    InvalidFrame, decode_header, decode_request, encode_response, encode_response_body,
)
from actors.wire.produce_codec import VERSIONS, read_produce_request, write_produce_response
from actors.wire.versions import SUPPORTED_VERSIONS
from tests.unit.test_wire_frames import request_frame

CONTEXT = WireContext(listener_name="PLAINTEXT", client_id="test")
SERVED = range(SUPPORTED_VERSIONS[0][0], SUPPORTED_VERSIONS[0][1] + 1)
BATCH = bytes(range(256)) * 3


def produce_body(version: int, *, transactional_id=None, acks=1, topics=(("t", ((0, BATCH),)),)):
    schema = load_request_schema(0, version)
    module = __import__(schema.__module__, fromlist=["*"])
    return schema(transactional_id=transactional_id, acks=acks, timeout=datetime.timedelta(milliseconds=2500),
                  topic_data=tuple(module.TopicProduceData(name=name, partition_data=tuple(
                      module.PartitionProduceData(index=index, records=records) for index, records in partitions))
                      for name, partitions in topics))


BODIES = {
    "one partition": {},
    "transactional id and acks=all": {"transactional_id": "tx-1", "acks": -1},
    "acks=0": {"acks": 0},
    "many topics and partitions": {"topics": (("t", ((0, BATCH), (5, BATCH[:100]), (2, BATCH))),
                                              ("other", ((1, BATCH),)), ("näme", ((3, b"x"),)))},
    "null and empty records": {"topics": (("t", ((0, None), (1, b""))),)},
    "no topics": {"topics": ()},
}


def through_kio(frame: bytes):
    decoded = decode_request(frame)
    return CODECS[0].to_core(decoded.body, decoded.api_version, CONTEXT)


def directly(frame: bytes):
    header = decode_header(memoryview(frame).toreadonly())
    return read_produce_request(memoryview(frame).toreadonly(), header.position, header.api_version)


def as_plain(request):
    """A ProduceRequest with every partition's records as bytes, for comparison."""
    return (request.acks, request.timeout_ms, request.transactional_id, tuple(
        (topic.name, tuple((p.index, bytes(p.records)) for p in topic.partition_data))
        for topic in request.topic_data))


def test_the_codec_covers_every_served_produce_version():
    assert set(SERVED) <= set(VERSIONS)


@pytest.mark.parametrize("version", SERVED)
@pytest.mark.parametrize("case", sorted(BODIES))
def test_a_request_reads_as_the_kio_path_reads_it(version, case):
    frame = request_frame(0, version, produce_body(version, **BODIES[case]))
    assert as_plain(directly(frame)) == as_plain(through_kio(frame))


def test_records_are_views_of_the_frame_not_copies():
    frame = memoryview(request_frame(0, 8, produce_body(8))).toreadonly()
    request = read_produce_request(frame, decode_header(frame).position, 8)
    records = request.topic_data[0].partition_data[0].records
    assert isinstance(records, memoryview) and records.obj is frame.obj and bytes(records) == BATCH


RESPONSES = [
    ProduceResponse(responses=(TopicProduceResponse(name="t", partition_responses=(
        PartitionProduceResponse(index=0, base_offset=42, log_start_offset=7),)),)),
    ProduceResponse(throttle_time_ms=25, responses=(
        TopicProduceResponse(name="t", partition_responses=(
            PartitionProduceResponse(index=3, error_code=ErrorCode.NOT_LEADER_OR_FOLLOWER,
                                     error_message="broker 1 does not lead t-3"),
            PartitionProduceResponse(index=1, base_offset=9, log_append_time_ms=1_700_000_000_123,
                                     log_start_offset=0))),
        TopicProduceResponse(name="näme", partition_responses=(
            PartitionProduceResponse(index=0, error_code=ErrorCode.CORRUPT_MESSAGE, error_message=""),)))),
    ProduceResponse(responses=()),
]


@pytest.mark.parametrize("version", SERVED)
@pytest.mark.parametrize("which", range(len(RESPONSES)))
def test_a_response_is_written_byte_for_byte_as_kio_writes_it(version, which):
    response = RESPONSES[which]
    written = b"".join(encode_response_body(11, write_produce_response(response, version), flexible=version >= 9))
    assert written == encode_response(11, CODECS[0].to_kio(response, version, None))


def outcome(read, frame: bytes):
    try:
        return "read", as_plain(read(frame))
    except InvalidFrame:
        return "closed", None
    except (TypeError, ValueError):  # the listener closes the kio path's connection for these too
        return "closed", None


@pytest.mark.parametrize("version", [3, 8, 9, 12])
def test_seeded_mutations_are_read_or_refused_exactly_as_the_kio_path_does(version):
    rng = random.Random(7000 + version)
    seeds = [request_frame(0, version, produce_body(version, **body)) for body in BODIES.values()]
    counts = {"read": 0, "closed": 0}
    for _ in range(3000):
        frame = bytearray(rng.choice(seeds))
        for _ in range(rng.randrange(1, 4)):
            # The header's first 4 bytes (API key and version) stay: another API is not this codec's.
            frame[rng.randrange(4, len(frame))] = rng.choice((0, 0xFF, 0x7F, 0x80, rng.randrange(256)))
        if rng.random() < 0.3:
            frame = frame[:rng.randrange(4, len(frame) + 1)]
        frame = bytes(frame)
        expected = outcome(through_kio, frame)
        assert outcome(directly, frame) == expected, frame.hex()
        counts[expected[0]] += 1
    assert counts["read"] > 100 and counts["closed"] > 100, counts


def kio_header(frame: bytes):
    from kio.serial import entity_reader
    schema = load_request_schema(0, 8)
    try:
        header, position = entity_reader(schema.__header_schema__)(frame, 0)
    except Exception:
        return None
    return int(header.correlation_id), header.client_id, position


def our_header(frame: bytes):
    try:
        header = decode_header(frame)
    except InvalidFrame:
        return None
    return header.correlation_id, header.client_id, header.position


def test_seeded_mutations_of_a_header_read_as_kio_reads_them():
    rng = random.Random(7100)
    seed = request_frame(0, 8, produce_body(8), correlation_id=123456)
    for client_id in ("test", "", None, "ünïcode-client"):
        encoded = b"\xff\xff" if client_id is None else len(client_id.encode()).to_bytes(2, "big") + client_id.encode()
        frame = seed.replace(b"\x00\x04test", encoded)
        assert our_header(frame) == kio_header(frame) != None  # noqa: E711
    for _ in range(3000):
        frame = bytearray(seed[:rng.randrange(5, 24)])
        for _ in range(rng.randrange(0, 3)):
            frame[rng.randrange(4, len(frame))] = rng.choice((0, 0xFF, 0x80, rng.randrange(256)))
        assert our_header(bytes(frame)) == kio_header(bytes(frame)), bytes(frame).hex()
