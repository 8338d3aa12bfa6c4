"""Request frames in, response frames out: Kafka's framing with kio's headers.

A frame is a 4-byte big-endian size and that many bytes. The request header starts with the API
key and version, which say the header's own version (v2, with tagged fields, for a flexible
request version; else v1). ``decode_header`` reads a v1 header itself (four fields: building
kio's entity for them cost as much as a small request's body), and a v2 one with no tagged fields
(the same four and a count of 0); a v2 header with tagged fields is left to kio;
``decode_body`` has kio read the body. The response header is v1
for flexible versions and v0 otherwise, except that ApiVersions always answers with v0, so that
a client speaking a version the broker does not know can still read the answer (KIP-511).

What Kafka does with bad input, and what ``decode_request`` reports for it:
- a size over ``socket.request.max.bytes`` (or negative): the connection is closed before the
  body is read (``check_frame_size``);
- an API key raykafka does not serve, or a version outside its range: the connection is closed
  (``InvalidFrame``), as Kafka's ``SocketServer`` closes it for a version it has not enabled,
  except ApiVersions at an unknown version, answered UNSUPPORTED_VERSION with ApiVersions v0 and
  the served ranges (``UnsupportedApiVersions``);
- a tagged field of a tag kio's schema does not name is skipped, as Kafka skips it
  (``tagged_fields``);
- a header or body kio cannot read: the connection is closed;
- bytes left over after the body are ignored, as Kafka ignores them (``RequestContext.parseRequest``
  reads the body from the frame's buffer and never asks whether any is left: 2.4's Struct parse and
  today's generated readers alike). librdkafka 2.x relies on it: its all-topics Metadata v9
  request has a 4-byte placeholder where the compact null topic array (1 byte) belongs, so Kafka
  reads a null array, three shifted flags, a tagged field of tag 0 (skipped) and leaves one byte.
"""
from __future__ import annotations

import functools
import struct
from typing import Any, NamedTuple

from kio.index import load_request_schema, load_response_schema
from kio.serial import entity_writer
from kio.serial.errors import SerialError

from actors.wire.tagged_fields import entity_reader
from actors.wire.versions import API_VERSIONS_KEY, SUPPORTED_VERSIONS

SIZE_PREFIX = struct.Struct(">i")
RESPONSE_PREFIX = struct.Struct(">ii")  # size, then response header v0: the correlation id
API_KEY_AND_VERSION = struct.Struct(">hh")
# socket.request.max.bytes: Kafka's default.
REQUEST_BYTES_MAX_DEFAULT = 104857600
# A value kio writes that is at least this long goes to the socket as its own piece, uncopied;
# shorter ones are gathered (a piece costs a scatter-write slot and a little bookkeeping).
SEGMENT_BYTES_MIN = 4096


class InvalidFrame(Exception):
    """A request the broker cannot read: Kafka closes the connection."""


class UnsupportedApiVersions(Exception):
    """ApiVersions at a version the broker does not know: answered, not closed."""

    def __init__(self, correlation_id: int) -> None:
        super().__init__(f"ApiVersions version not supported (correlation id {correlation_id})")
        self.correlation_id = correlation_id


class DecodedRequest(NamedTuple):
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    body: Any  # the kio request entity


def check_frame_size(size: int, request_bytes_max: int) -> None:
    """Kafka reads the size first and refuses a request over the limit before reading its body."""
    if size < API_KEY_AND_VERSION.size + 4 or size > request_bytes_max:
        raise InvalidFrame(f"request size {size} outside [8, {request_bytes_max}] (socket.request.max.bytes)")


class RequestHeader(NamedTuple):
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    position: int  # where the body starts


_HEADER_V1 = struct.Struct(">hhih")  # api key, api version, correlation id, client id's length


@functools.cache
def request_schema(api_key: int, api_version: int) -> type:
    """kio's request class (kio resolves it by importing its module path on every call)."""
    return load_request_schema(api_key, api_version)


@functools.cache
def response_class(api_key: int, api_version: int) -> type:
    """kio's response class, resolved once per version (see ``request_schema``)."""
    return load_response_schema(api_key, api_version)


def decode_header(frame) -> RequestHeader:
    """A request frame's header (after the size), checked against the served versions."""
    if len(frame) < API_KEY_AND_VERSION.size + 4:
        raise InvalidFrame(f"a request of {len(frame)} bytes has no complete header")
    api_key, api_version = API_KEY_AND_VERSION.unpack_from(frame, 0)
    supported = SUPPORTED_VERSIONS.get(api_key)
    if supported is None:
        raise InvalidFrame(f"unknown or unserved API key {api_key}")
    if not supported[0] <= api_version <= supported[1]:
        if api_key == API_VERSIONS_KEY:
            (correlation_id,) = struct.unpack_from(">i", frame, API_KEY_AND_VERSION.size)
            raise UnsupportedApiVersions(correlation_id)
        raise InvalidFrame(f"API key {api_key} version {api_version} is not served")
    schema = request_schema(api_key, api_version)
    flexible = schema.__flexible__
    if len(frame) >= _HEADER_V1.size and not (flexible and _has_header_tags(frame)):
        # Header v1 (every non-flexible version), or v2 with no tagged fields (v1's fields, then a
        # count of 0): read here, as kio would, without an entity.
        _, _, correlation_id, length = _HEADER_V1.unpack_from(frame, 0)
        position = _HEADER_V1.size + max(length, 0) + flexible
        if length < -1 or position > len(frame):
            raise InvalidFrame(f"API key {api_key} version {api_version}: client id length {length} "
                               f"in a frame of {len(frame)} bytes")
        try:
            client_id = None if length == -1 else bytes(frame[_HEADER_V1.size:position - flexible]).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidFrame(f"API key {api_key} version {api_version}: client id is no UTF-8: {exc}") from None
        return RequestHeader(api_key, api_version, correlation_id, client_id, position)
    try:
        header, position = entity_reader(schema.__header_schema__)(frame, 0)
    except _KIO_READ_ERRORS as exc:
        raise _unreadable(api_key, api_version, exc, frame) from None
    return RequestHeader(api_key, api_version, int(header.correlation_id), header.client_id, position)


def _has_header_tags(frame) -> bool:
    """Whether a header v2 has tagged fields (or is cut short before their count): kio reads those."""
    length = _HEADER_V1.unpack_from(frame, 0)[3]
    tags_at = _HEADER_V1.size + max(length, 0)
    return tags_at >= len(frame) or frame[tags_at] != 0


# What kio raises on bytes it cannot read (a tagged field of a tag its schema does not name no
# longer among them: ``tagged_fields`` skips it).
_KIO_READ_ERRORS = (SerialError, ValueError, TypeError, KeyError, UnicodeDecodeError, OverflowError)


def _unreadable(api_key: int, api_version: int, exc: Exception, frame) -> InvalidFrame:
    return InvalidFrame(f"API key {api_key} version {api_version}: {type(exc).__name__}: {exc} "
                        f"(frame starts {bytes(frame[:48]).hex()})")


def decode_request(frame: bytes) -> DecodedRequest:
    """A request frame's payload (after the size) as header fields and a kio body."""
    header = decode_header(frame)
    return DecodedRequest(api_key=header.api_key, api_version=header.api_version,
                          correlation_id=header.correlation_id, client_id=header.client_id,
                          body=decode_body(frame, header))


def decode_body(frame, header: RequestHeader) -> Any:
    """The kio body of the request whose ``header`` was read from ``frame``."""
    try:
        body, _ = entity_reader(request_schema(header.api_key, header.api_version))(frame, header.position)
    except _KIO_READ_ERRORS as exc:
        raise _unreadable(header.api_key, header.api_version, exc, frame) from None
    return body  # bytes after it, if any, are ignored, as Kafka ignores them


class _Segments:
    """Where kio writes a response: small writes (sizes, offsets, names) gather in a bytearray;
    a large bytes-like value (a partition's records, a view of a log segment) becomes a segment
    of its own, so it goes to the socket as the log stored it, with no copy in between."""

    def __init__(self) -> None:
        self.segments: list = []
        self._small = bytearray()

    def write(self, data) -> None:
        if len(data) >= SEGMENT_BYTES_MIN and isinstance(data, (bytes, memoryview)):
            if self._small:
                self.segments.append(self._small)
                self._small = bytearray()
            self.segments.append(data)
        else:
            self._small += data

    def finish(self) -> list:
        if self._small:
            self.segments.append(self._small)
        return self.segments


def encode_response_segments(correlation_id: int, body: Any) -> list:
    """A whole response frame (size, header, body) for the kio response entity ``body``, as the
    pieces whose concatenation is the frame (for a scatter write: ``sockets.send_segments``)."""
    header_schema = body.__header_schema__
    buffer = _Segments()
    buffer.write(b"\0\0\0\0")
    entity_writer(header_schema)(buffer, header_schema(correlation_id=correlation_id))
    entity_writer(type(body))(buffer, body)
    segments = buffer.finish()
    # The first piece is the small bytearray that starts with the size: no header or record set
    # is written before the 4 bytes it holds, and those stay below SEGMENT_BYTES_MIN.
    SIZE_PREFIX.pack_into(segments[0], 0, sum(len(segment) for segment in segments) - SIZE_PREFIX.size)
    return segments


def encode_response_body(correlation_id: int, body: bytes, *, flexible: bool = False) -> list:
    """A whole response frame for a body already written (``produce_codec``), as one piece: header
    v0, or v1 (the correlation id and no tagged fields) for a flexible version."""
    header_end = b"\0" if flexible else b""
    size = RESPONSE_PREFIX.size - SIZE_PREFIX.size + len(header_end) + len(body)
    return [RESPONSE_PREFIX.pack(size, correlation_id) + header_end + body]


def encode_response(correlation_id: int, body: Any) -> bytes:
    """A whole response frame (size, header, body) for the kio response entity ``body``."""
    return b"".join(encode_response_segments(correlation_id, body))


def load_served_schemas() -> None:
    """Load kio's codecs for the highest served version of every API (what librdkafka, which
    takes the highest version both sides have, asks with), so that the first Produce or Fetch on
    a new broker does not pay for importing and building them inside the client's first request;
    lower versions, which older clients ask for, still load on first use."""
    for api_key, (_, highest) in SUPPORTED_VERSIONS.items():
        request_schema(api_key, highest)
        response_class(api_key, highest)


