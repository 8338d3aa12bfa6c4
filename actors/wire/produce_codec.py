"""Produce requests read, and Produce responses written, field by field, without kio's entities.

Why: librdkafka sends one partition per Produce request, so a topic of many partitions reaches a
broker as many small Produce requests. Reading each into kio's entities (every field a checked
nominal type), converting those into raykafka's messages, and back again for the answer cost
more per request than appending the records did. The versions the listeners serve (v3 to v12,
see ``versions.py``) share one layout, read and written here with ``struct``; every other API
still goes through kio. v9 on are flexible (KIP-482): strings, byte arrays and arrays carry an
unsigned varint length plus one (0 for null), and each entity (the body, each topic, each
partition) ends with tagged fields, a count and then each a tag, a size and that many bytes; a
request's tagged fields are skipped (Produce requests name none at any version, and Kafka skips
a tag it does not know), a response's are none (v10's optional ``CurrentLeader`` and
``NodeEndpoints`` are left out, as Kafka leaves them out but for NOT_LEADER_OR_FOLLOWER; the
client then refreshes metadata).

The layouts (Kafka's ProduceRequest.json and ProduceResponse.json; strings are an int16 length
and UTF-8, -1 for null; arrays an int32 count; records an int32 length, -1 for null):

    request   transactional_id: nullable string, acks: int16, timeout_ms: int32,
              topic_data: [name: string, partition_data: [index: int32, records: nullable bytes]]
    response  responses: [name: string, partition_responses: [index: int32, error_code: int16,
              base_offset: int64, log_append_time_ms: int64, log_start_offset: int64 (v5+),
              record_errors: [batch_index: int32, message: nullable string] (v8+),
              error_message: nullable string (v8+)]], throttle_time_ms: int32

A partition's records are a view of the request frame (the log copies them once, to stamp the
leader's offsets): no copy here. Anything that does not read as the layout (a count or length
past the end of the frame or negative, a name that is no UTF-8) raises ``InvalidFrame``: Kafka
closes that connection. Bytes left after the body are ignored, as Kafka ignores them (frames.py).
"""
from __future__ import annotations

import struct

from actors.core.messages.produce import PartitionProduceData, ProduceRequest, ProduceResponse, TopicProduceData
from actors.wire.frames import InvalidFrame
from actors.wire.versions import SUPPORTED_VERSIONS

PRODUCE_KEY = 0
# The versions this layout covers; v13 names topics by id.
VERSIONS = range(3, 13)
FLEXIBLE_VERSION = 9
assert VERSIONS[0] <= SUPPORTED_VERSIONS[PRODUCE_KEY][0] <= SUPPORTED_VERSIONS[PRODUCE_KEY][1] <= VERSIONS[-1], \
    "a served Produce version this codec cannot read: extend it before advertising the version"

_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_ACKS_TIMEOUT = struct.Struct(">hi")
_PARTITION_V3 = struct.Struct(">ihqq")  # index, error_code, base_offset, log_append_time_ms
_PARTITION_V5 = struct.Struct(">ihqqq")  # ... and log_start_offset
_NULL_STRING = _INT16.pack(-1)
_NO_RECORD_ERRORS = _INT32.pack(0)
_NO_COMPACT_RECORD_ERRORS = b"\x01"  # a compact array of none
_NO_TAGGED_FIELDS = b"\0"


class _Reader:
    """A cursor over a frame; every read checks that the frame holds what it reads."""

    __slots__ = ("view", "position", "end")

    def __init__(self, view: memoryview, position: int) -> None:
        self.view = view
        self.position = position
        self.end = len(view)

    def unpack(self, layout: struct.Struct) -> tuple:
        position = self.position
        if position + layout.size > self.end:
            raise InvalidFrame(f"Produce: the frame ends inside a field at byte {position}")
        self.position = position + layout.size
        return layout.unpack_from(self.view, position)

    def count(self, what: str) -> int:
        (count,) = self.unpack(_INT32)
        # Each element takes at least 4 bytes, so a count the rest of the frame cannot hold is a
        # lie; refusing it here bounds the loops that follow by the frame's size.
        if count < 0 or 4 * count > self.end - self.position:
            raise InvalidFrame(f"Produce: {what} count {count} does not fit the frame")
        return count

    def string(self, *, nullable: bool) -> str | None:
        (length,) = self.unpack(_INT16)
        if length < 0:
            if length == -1 and nullable:
                return None
            raise InvalidFrame(f"Produce: string length {length} at byte {self.position - 2}")
        return str(self._take(length), "utf-8")

    def records(self) -> memoryview:
        (length,) = self.unpack(_INT32)
        if length == -1:
            return self.view[0:0]  # null records: what the log refuses as an empty record set
        if length < 0:
            raise InvalidFrame(f"Produce: records length {length} at byte {self.position - 4}")
        return self._take(length)

    def uvarint(self) -> int:
        view, position, end = self.view, self.position, self.end
        value = shift = 0
        while True:
            if position >= end or shift > 28:
                raise InvalidFrame(f"Produce: no unsigned varint at byte {self.position}")
            byte = view[position]
            position += 1
            value |= (byte & 0x7F) << shift
            if byte < 0x80:
                self.position = position
                return value
            shift += 7

    def compact_count(self, what: str) -> int:
        count = self.uvarint() - 1
        if count < 0 or 4 * count > self.end - self.position:
            raise InvalidFrame(f"Produce: {what} count {count} does not fit the frame")
        return count

    def compact_string(self, *, nullable: bool) -> str | None:
        length = self.uvarint() - 1
        if length < 0:
            if nullable:
                return None
            raise InvalidFrame(f"Produce: null string at byte {self.position - 1}")
        return str(self._take(length), "utf-8")

    def compact_records(self) -> memoryview:
        length = self.uvarint() - 1
        if length < 0:
            return self.view[0:0]  # null records: what the log refuses as an empty record set
        return self._take(length)

    def skip_tagged_fields(self) -> None:
        for _ in range(self.uvarint()):
            self.uvarint()  # the tag: Produce requests name none that raykafka reads
            self._take(self.uvarint())

    def _take(self, length: int) -> memoryview:
        position = self.position
        if position + length > self.end:
            raise InvalidFrame(f"Produce: {length} bytes at byte {position} run past the frame's end")
        self.position = position + length
        return self.view[position:position + length]


def read_produce_request(frame: memoryview, position: int, version: int) -> ProduceRequest:
    """The Produce request body of ``version`` that starts at ``position`` of ``frame`` (a
    read-only byte view of the whole frame after its size)."""
    assert version in VERSIONS, version
    reader = _Reader(frame, position)
    if version >= FLEXIBLE_VERSION:
        return _read_flexible(reader, version)
    try:
        transactional_id = reader.string(nullable=True)
        acks, timeout_ms = reader.unpack(_ACKS_TIMEOUT)
        topics = []
        for _ in range(reader.count("topic")):
            name = reader.string(nullable=False)
            partitions = tuple(PartitionProduceData(index=reader.unpack(_INT32)[0], records=reader.records())
                               for _ in range(reader.count("partition")))
            topics.append(TopicProduceData(name=name, partition_data=partitions))
    except UnicodeDecodeError as exc:
        raise InvalidFrame(f"Produce v{version}: a string is no UTF-8: {exc}") from None
    return ProduceRequest(acks=acks, timeout_ms=timeout_ms, topic_data=tuple(topics),
                          transactional_id=transactional_id, request_api_version=version)


def _read_flexible(reader: _Reader, version: int) -> ProduceRequest:
    try:
        transactional_id = reader.compact_string(nullable=True)
        acks, timeout_ms = reader.unpack(_ACKS_TIMEOUT)
        topics = []
        for _ in range(reader.compact_count("topic")):
            name = reader.compact_string(nullable=False)
            partitions = []
            for _ in range(reader.compact_count("partition")):
                index = reader.unpack(_INT32)[0]
                partitions.append(PartitionProduceData(index=index, records=reader.compact_records()))
                reader.skip_tagged_fields()
            reader.skip_tagged_fields()
            topics.append(TopicProduceData(name=name, partition_data=tuple(partitions)))
        reader.skip_tagged_fields()
    except UnicodeDecodeError as exc:
        raise InvalidFrame(f"Produce v{version}: a string is no UTF-8: {exc}") from None
    return ProduceRequest(acks=acks, timeout_ms=timeout_ms, topic_data=tuple(topics),
                          transactional_id=transactional_id, request_api_version=version)


def _uvarint(value: int) -> bytes:
    if value < 0x80:
        return bytes((value,))
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _compact_string(value: str | None) -> bytes:
    if value is None:
        return b"\0"
    encoded = value.encode("utf-8")
    return _uvarint(len(encoded) + 1) + encoded


def _string(value: str | None) -> bytes:
    if value is None:
        return _NULL_STRING
    encoded = value.encode("utf-8")
    return _INT16.pack(len(encoded)) + encoded


def write_produce_response(response: ProduceResponse, version: int) -> bytes:
    """The body of ``response`` as Produce response ``version`` lays it out."""
    assert version in VERSIONS, version
    if version >= FLEXIBLE_VERSION:
        return _write_flexible(response)
    pieces = [_INT32.pack(len(response.responses))]
    append = pieces.append
    for topic in response.responses:
        append(_string(topic.name))
        append(_INT32.pack(len(topic.partition_responses)))
        for partition in topic.partition_responses:
            if version >= 5:
                append(_PARTITION_V5.pack(partition.index, partition.error_code, partition.base_offset,
                                          partition.log_append_time_ms, partition.log_start_offset))
            else:
                append(_PARTITION_V3.pack(partition.index, partition.error_code, partition.base_offset,
                                          partition.log_append_time_ms))
            if version >= 8:
                append(_NO_RECORD_ERRORS)
                append(_string(partition.error_message))
    append(_INT32.pack(response.throttle_time_ms))
    return b"".join(pieces)


def _write_flexible(response: ProduceResponse) -> bytes:
    """v9 on: compact lengths, no record errors, and no tagged fields (each entity's count 0)."""
    pieces = [_uvarint(len(response.responses) + 1)]
    append = pieces.append
    for topic in response.responses:
        append(_compact_string(topic.name))
        append(_uvarint(len(topic.partition_responses) + 1))
        for partition in topic.partition_responses:
            append(_PARTITION_V5.pack(partition.index, partition.error_code, partition.base_offset,
                                      partition.log_append_time_ms, partition.log_start_offset))
            append(_NO_COMPACT_RECORD_ERRORS)
            append(_compact_string(partition.error_message))
            append(_NO_TAGGED_FIELDS)
        append(_NO_TAGGED_FIELDS)
    append(_INT32.pack(response.throttle_time_ms))
    append(_NO_TAGGED_FIELDS)
    return b"".join(pieces)
