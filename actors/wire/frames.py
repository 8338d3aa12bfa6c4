"""Request frames in, response frames out: Kafka's framing with kio's headers.

A frame is a 4-byte big-endian size and that many bytes. The request header starts with the API
key and version, which say the header's own version (v2, with tagged fields, for a flexible
request version; else v1); kio reads the header and then the body. The response header is v1
for flexible versions and v0 otherwise, except that ApiVersions always answers with v0, so that
a client speaking a version the broker does not know can still read the answer (KIP-511).

What Kafka does with bad input, and what ``decode_request`` reports for it:
- a size over ``socket.request.max.bytes`` (or negative): the connection is closed before the
  body is read (``check_frame_size``);
- an API key raykafka does not serve, or a version outside its range: the connection is closed
  (``InvalidFrame``), except ApiVersions at an unknown version, answered UNSUPPORTED_VERSION
  with ApiVersions v0 (``UnsupportedApiVersions``);
- a header or body kio cannot read, or bytes left over after the body: the connection is closed.
"""
from __future__ import annotations

import io
import struct
from typing import Any, NamedTuple

from kio.index import load_request_schema, load_response_schema
from kio.serial import entity_reader, entity_writer
from kio.serial.errors import SerialError

from actors.wire.versions import API_VERSIONS_KEY, SUPPORTED_VERSIONS

SIZE_PREFIX = struct.Struct(">i")
API_KEY_AND_VERSION = struct.Struct(">hh")
# socket.request.max.bytes: Kafka's default.
REQUEST_BYTES_MAX_DEFAULT = 104857600


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


def decode_request(frame: bytes) -> DecodedRequest:
    """A request frame's payload (after the size) as header fields and a kio body."""
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
    schema = load_request_schema(api_key, api_version)
    try:
        header, position = entity_reader(schema.__header_schema__)(frame, 0)
        body, size = entity_reader(schema)(frame, position)
    except (SerialError, ValueError, TypeError, KeyError, UnicodeDecodeError, OverflowError) as exc:
        # kio raises KeyError for a tagged field its schema does not name.
        raise InvalidFrame(f"API key {api_key} version {api_version}: {type(exc).__name__}: {exc} "
                           f"(frame starts {bytes(frame[:48]).hex()})") from None
    if position + size != len(frame):
        raise InvalidFrame(f"API key {api_key} version {api_version}: "
                           f"{len(frame) - position - size} bytes after the body")
    return DecodedRequest(api_key=api_key, api_version=api_version, correlation_id=int(header.correlation_id),
                          client_id=header.client_id, body=body)


def encode_response(correlation_id: int, body: Any) -> bytes:
    """A whole response frame (size, header, body) for the kio response entity ``body``."""
    header_schema = body.__header_schema__
    buffer = io.BytesIO()
    buffer.write(b"\0\0\0\0")
    entity_writer(header_schema)(buffer, header_schema(correlation_id=correlation_id))
    entity_writer(type(body))(buffer, body)
    frame = buffer.getbuffer()
    SIZE_PREFIX.pack_into(frame, 0, len(frame) - SIZE_PREFIX.size)
    return bytes(frame)


def response_class(api_key: int, api_version: int) -> type:
    return load_response_schema(api_key, api_version)
