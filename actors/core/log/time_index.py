"""A segment's time index (``<base_offset:020d>.timeindex``): Kafka's ``TimeIndex``.

Theory of operation. The file holds 12-byte entries (timestamp i64, relative offset i32), both
ascending, timestamps strictly. The segment adds one whenever it adds an offset index entry (after
more than ``index.interval.bytes``), holding the greatest batch max timestamp appended so far and
the last offset of the first batch that reached it; an entry whose timestamp is not above the
last one is skipped (Kafka's ``maybeAppend``). So an entry (T, o) promises that every batch before
the one ending at o has a max timestamp below T, and, because an entry is considered at every
offset index entry, every batch up to any offset index entry has a max timestamp no greater than
the last time index entry at or before that entry's offset: the lookup uses both promises to bound
the scan for a timestamp to about ``index.interval.bytes``.

Like the offset index it is a helper, never the truth: the segment mirrors it to its file as it
grows, cuts it with the log, and rebuilds it from the ``.log`` on recovery or when the file fails
the sanity check below. All I/O is the segment's, through ``Storage``.
"""
from __future__ import annotations

import bisect
import struct
from array import array

TIME_INDEX_FILE_SUFFIX = ".timeindex"
TIME_INDEX_ENTRY = struct.Struct(">qi")
NO_TIMESTAMP = -1  # Kafka's RecordBatch.NO_TIMESTAMP


class TimeIndex:
    """The entries of one segment's time index, in memory; see the module docstring."""

    def __init__(self) -> None:
        # Parallel arrays: timestamps strictly ascending, relative offsets ascending.
        self.timestamps = array("q")
        self.relative_offsets = array("i")

    @classmethod
    def from_file_data(cls, data: bytes, *, relative_offset_end: int) -> TimeIndex | None:
        """The index a file holds, or None when it fails Kafka's sanity check (a torn entry,
        timestamps not ascending, an offset outside [0, ``relative_offset_end``))."""
        if len(data) % TIME_INDEX_ENTRY.size:
            return None
        index = cls()
        for timestamp, relative_offset in TIME_INDEX_ENTRY.iter_unpack(data):
            if not 0 <= relative_offset < relative_offset_end or not index._follows(timestamp, relative_offset):
                return None
            index.timestamps.append(timestamp)
            index.relative_offsets.append(relative_offset)
        return index

    def __len__(self) -> int:
        return len(self.timestamps)

    @property
    def last_timestamp(self) -> int:
        return self.timestamps[-1] if self.timestamps else NO_TIMESTAMP

    def _follows(self, timestamp: int, relative_offset: int) -> bool:
        return not self.timestamps or (timestamp > self.timestamps[-1]
                                       and relative_offset >= self.relative_offsets[-1])

    def maybe_append(self, timestamp: int, relative_offset: int) -> bytes:
        """Kafka's ``maybeAppend``: adds (timestamp, relative offset) when the timestamp is above the
        last entry's; returns the bytes to append to the file (empty when skipped)."""
        if timestamp <= self.last_timestamp:
            return b""
        assert self._follows(timestamp, relative_offset), (timestamp, relative_offset, self.relative_offsets[-1])
        self.timestamps.append(timestamp)
        self.relative_offsets.append(relative_offset)
        return TIME_INDEX_ENTRY.pack(timestamp, relative_offset)

    def lookup(self, target_timestamp_ms: int) -> tuple[tuple[int, int] | None, tuple[int, int] | None]:
        """(the last entry at or below the target, the first entry above it), each
        (timestamp, relative offset) or None."""
        slot = bisect.bisect_right(self.timestamps, target_timestamp_ms)
        below = (self.timestamps[slot - 1], self.relative_offsets[slot - 1]) if slot > 0 else None
        above = (self.timestamps[slot], self.relative_offsets[slot]) if slot < len(self.timestamps) else None
        return below, above

    def truncate_entries_to(self, count: int) -> None:
        """Keeps the first ``count`` entries: the in-memory undo of a failed append."""
        del self.timestamps[count:]
        del self.relative_offsets[count:]

    def truncate_to(self, relative_offset: int) -> int:
        """Kafka's ``truncateTo``: drops the entries at or after ``relative_offset``; returns the
        file size that remains."""
        kept = bisect.bisect_left(self.relative_offsets, relative_offset)
        del self.timestamps[kept:]
        del self.relative_offsets[kept:]
        return kept * TIME_INDEX_ENTRY.size
