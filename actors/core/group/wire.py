"""Kafka's protocol primitives (big-endian ints, int16-prefixed strings, int32-prefixed bytes and
arrays), for the consumer protocol and the ``__consumer_offsets`` record schemas.

``Writer`` appends fields; ``Reader`` consumes them and raises ``SchemaError`` on truncated or
malformed input, so a decoder never returns half a value. Lengths are checked against limits so a
corrupt length cannot make a reader allocate gigabytes.
"""
from __future__ import annotations

import struct

# A single string, byte array or array longer than these is corrupt input, not data.
STRING_BYTES_MAX = 32767  # an int16 length
BYTES_MAX = 64 * 1024 * 1024
ARRAY_LENGTH_MAX = 1_000_000

_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_INT64 = struct.Struct(">q")


class SchemaError(ValueError):
    """Bytes that do not decode under the schema they claim."""


class Writer:
    __slots__ = ("_parts",)

    def __init__(self) -> None:
        self._parts: list[bytes] = []

    def int16(self, value: int) -> Writer:
        self._parts.append(_INT16.pack(value))
        return self

    def int32(self, value: int) -> Writer:
        self._parts.append(_INT32.pack(value))
        return self

    def int64(self, value: int) -> Writer:
        self._parts.append(_INT64.pack(value))
        return self

    def string(self, value: str) -> Writer:
        encoded = value.encode("utf-8")
        assert len(encoded) <= STRING_BYTES_MAX, f"string of {len(encoded)} bytes is too long"
        self._parts.append(_INT16.pack(len(encoded)) + encoded)
        return self

    def nullable_string(self, value: str | None) -> Writer:
        if value is None:
            self._parts.append(_INT16.pack(-1))
            return self
        return self.string(value)

    def bytes(self, value: bytes | None) -> Writer:
        """Nullable bytes: length -1 for None, as Kafka's ``NULLABLE_BYTES``."""
        if value is None:
            self._parts.append(_INT32.pack(-1))
        else:
            self._parts.append(_INT32.pack(len(value)) + bytes(value))
        return self

    def array_length(self, length: int) -> Writer:
        return self.int32(length)

    def build(self) -> bytes:
        return b"".join(self._parts)


class Reader:
    __slots__ = ("_data", "_position")

    def __init__(self, data: bytes) -> None:
        self._data = bytes(data)
        self._position = 0

    def _take(self, count: int) -> bytes:
        end = self._position + count
        if count < 0 or end > len(self._data):
            raise SchemaError(f"need {count} bytes at {self._position}, have {len(self._data) - self._position}")
        chunk = self._data[self._position:end]
        self._position = end
        return chunk

    def int16(self) -> int:
        return _INT16.unpack(self._take(2))[0]

    def int32(self) -> int:
        return _INT32.unpack(self._take(4))[0]

    def int64(self) -> int:
        return _INT64.unpack(self._take(8))[0]

    def nullable_string(self) -> str | None:
        length = self.int16()
        if length == -1:
            return None
        if length < 0:
            raise SchemaError(f"string length {length}")
        try:
            return self._take(length).decode("utf-8")
        except UnicodeDecodeError as error:
            raise SchemaError(f"string is not UTF-8: {error}") from None

    def string(self) -> str:
        value = self.nullable_string()
        if value is None:
            raise SchemaError("null where a string is required")
        return value

    def bytes(self) -> bytes | None:
        length = self.int32()
        if length == -1:
            return None
        if length < 0 or length > BYTES_MAX:
            raise SchemaError(f"bytes length {length}")
        return self._take(length)

    def array_length(self) -> int:
        """An array's element count; -1 (a null array) reads as 0."""
        length = self.int32()
        if length == -1:
            return 0
        if length < 0 or length > ARRAY_LENGTH_MAX:
            raise SchemaError(f"array length {length}")
        return length

    @property
    def remaining(self) -> int:
        return len(self._data) - self._position
