"""A cache of one stretch of a segment's ``.log`` file, so that a scan of batch headers costs few
storage reads (``LogSegment``'s reads, index rebuilds and timestamp searches use it)."""
from __future__ import annotations

import struct

from actors.core.errors import ErrorCode, KafkaProtocolError
from actors.core.log.record_batch import HEADER_SIZE_BYTES, LOG_OVERHEAD_BYTES, BatchHeader, read_header
from actors.core.log.storage import Storage

_BATCH_BOUNDS = struct.Struct(">qi")  # a batch's base_offset and batch_length, at its start
_LAST_OFFSET_DELTA = struct.Struct(">i")  # at byte 23 of a batch


class SegmentWindow:
    """A cache of one stretch of a file, so that a read parses headers with few storage reads."""

    def __init__(self, storage: Storage, path: str, end_position: int, read_size_bytes: int):
        self._storage = storage
        self._path = path
        self._end_position = end_position
        self._read_size_bytes = max(read_size_bytes, HEADER_SIZE_BYTES)
        self._start = 0
        self._data = b""
        # When set, bytes from here on are kept when the window moves forward (see pin()).
        self._pinned_position: int | None = None

    def pin(self, position: int) -> None:
        """Keeps the bytes from ``position`` on in memory: the caller will want them back."""
        self._pinned_position = position

    def _ensure(self, position: int, size: int) -> None:
        window_end = self._start + len(self._data)
        if self._start <= position and position + size <= window_end:
            return
        pinned = self._pinned_position
        if pinned is not None and self._start <= pinned <= position <= window_end:
            # Extend the window forward, keeping the pinned bytes: one more read, no re-read.
            read_size = min(max(position + size - window_end, self._read_size_bytes),
                            self._end_position - window_end)
            more = self._storage.read(self._path, window_end, read_size)
            self._data = self._data[pinned - self._start:] + more
            self._start = pinned
        else:
            read_size = min(max(size, self._read_size_bytes), self._end_position - position)
            self._data = self._storage.read(self._path, position, read_size)
            self._start = position
        if self._start + len(self._data) < position + size:
            raise KafkaProtocolError(ErrorCode.KAFKA_STORAGE_ERROR,
                                     f"{self._path} is shorter than expected at {position}")

    def header_at(self, position: int) -> BatchHeader | None:
        """The batch header at ``position``, or None where no whole batch fits before the end."""
        if position + HEADER_SIZE_BYTES > self._end_position:
            return None
        self._ensure(position, HEADER_SIZE_BYTES)
        header = read_header(self._data, position - self._start)._replace(position=position)
        if header.end_position > self._end_position:
            return None
        return header

    def next_batch_at(self, position: int) -> tuple[int, int] | None:
        """(last offset, end position) of the batch at ``position``, or None where no whole batch
        fits before the end. Reads only the length fields: the batches after the first of a read
        were checked when they were appended or recovered, as Kafka's reads trust them too."""
        if position + HEADER_SIZE_BYTES > self._end_position:
            return None
        self._ensure(position, HEADER_SIZE_BYTES)
        base_offset, batch_length = _BATCH_BOUNDS.unpack_from(self._data, position - self._start)
        (last_offset_delta,) = _LAST_OFFSET_DELTA.unpack_from(self._data, position - self._start + 23)
        end_position = position + batch_length + LOG_OVERHEAD_BYTES
        return None if end_position > self._end_position else (base_offset + last_offset_delta, end_position)

    def bytes_at(self, position: int, size: int):
        """The bytes at ``position``: a view of what the window read (immutable bytes), not a copy."""
        self._ensure(position, size)
        start = position - self._start
        if start == 0 and size == len(self._data):
            return self._data
        return memoryview(self._data)[start:start + size]
