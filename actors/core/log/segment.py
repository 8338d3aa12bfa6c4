"""One log segment: a ``.log`` file of whole v2 batches, its sparse ``.index`` and its
``.timeindex`` (time_index.py, filled at the same points), as in Kafka.

Theory of operation. A segment owns the offsets [base_offset, next_offset) of a partition's log,
stored in ``<dir>/<base_offset:020d>.log``. Only the last segment of a log (the active one) is
appended to. The offset index ``<base_offset:020d>.index`` holds 8-byte entries
(relative_offset i32, position i32): after more than ``index_interval_bytes`` have been appended
since the last entry, the next batch gets an entry keyed by its LAST offset with its START
position (Kafka's ``LogSegment``). To find an offset, take the greatest entry <= it and scan
batch headers from that position.

The index is a helper, never the truth: it lives in memory (loaded lazily for old segments),
is mirrored to its file as entries are added, and is rebuilt from the ``.log`` whenever the
segment is recovered or the file fails its sanity check.

Inputs: ``append`` (validated, stamped batches), ``read``, ``truncate_to``, ``recover``,
``flush``, ``delete``. Outputs: ``FetchDataInfo`` and byte counts; all I/O through ``Storage``.
"""
from __future__ import annotations

import bisect
import struct
from array import array
from dataclasses import dataclass

from actors.core.errors import ErrorCode, KafkaProtocolError
from actors.core.log.record_batch import HEADER_SIZE_BYTES, BatchHeader, read_header, scan_valid_prefix
from actors.core.log.segment_window import SegmentWindow
from actors.core.log.storage import Storage
from actors.core.log.time_index import NO_TIMESTAMP, TIME_INDEX_FILE_SUFFIX, TimeIndex

LOG_FILE_SUFFIX = ".log"
INDEX_FILE_SUFFIX = ".index"
# A segment file on its way out (Kafka's Log.DeletedFileSuffix).
DELETED_FILE_SUFFIX = ".deleted"
INT32_MAX = 2**31 - 1
_INDEX_ENTRY = struct.Struct(">ii")
# Recovery reads the segment in chunks of this size (bigger only for a bigger batch).
RECOVERY_CHUNK_BYTES = 8 * 1024 * 1024
# The smallest read when scanning headers for an offset (truncation), whatever the index interval.
FIND_READ_BYTES_MIN = 64 * 1024
# When the index leaves more than LONG_SCAN_BYTES to scan before the batch a read wants (a large
# batch at the index entry), the read scans batch headers in reads of SCAN_READ_BYTES: stepping
# over a batch then costs its header, not its bytes. A shorter stretch is read with the data, in
# one storage read.
LONG_SCAN_BYTES = 64 * 1024
SCAN_READ_BYTES = 4096


def segment_file_name(base_offset: int, suffix: str) -> str:
    return f"{base_offset:020d}{suffix}"


def parse_segment_file_name(name: str) -> tuple[int, str] | None:
    """(base_offset, suffix) for a segment's .log, .index or .timeindex file name, else None."""
    for suffix in (LOG_FILE_SUFFIX, INDEX_FILE_SUFFIX, TIME_INDEX_FILE_SUFFIX):
        stem = name[:-len(suffix)]
        if name.endswith(suffix) and len(stem) == 20 and stem.isdigit():
            return int(stem), suffix
    return None


@dataclass(frozen=True, slots=True)
class FetchDataInfo:
    """What a read returns: whole batches, the first one holding ``fetch_offset``.

    ``records`` may start before ``fetch_offset`` (a mid-batch read); ``first_offset`` and
    ``last_offset`` are the first batch's base offset and the last batch's last offset, both -1
    when ``records`` is empty.
    """

    fetch_offset: int
    records: bytes | memoryview  # a view of immutable bytes, not a copy, for a read of part of a window
    first_offset: int = -1
    last_offset: int = -1
    batch_count: int = 0

    @property
    def size_in_bytes(self) -> int:
        return len(self.records)


class LogSegment:
    """A segment; see the module docstring. ``next_offset`` == ``base_offset`` when empty."""

    def __init__(self, storage: Storage, directory: str, base_offset: int, *,
                 index_interval_bytes: int, size_bytes: int, next_offset: int) -> None:
        assert base_offset >= 0 and next_offset >= base_offset and size_bytes >= 0
        self.storage = storage
        self.base_offset = base_offset
        self.log_path = f"{directory}/{segment_file_name(base_offset, LOG_FILE_SUFFIX)}"
        self.index_path = f"{directory}/{segment_file_name(base_offset, INDEX_FILE_SUFFIX)}"
        self.time_index_path = f"{directory}/{segment_file_name(base_offset, TIME_INDEX_FILE_SUFFIX)}"
        self._index_interval_bytes = index_interval_bytes
        self._size_bytes = size_bytes
        self._next_offset = next_offset
        # Index entries, both strictly increasing; None until loaded (old segments load lazily).
        self._index_relative_offsets: array | None = None
        self._index_positions: array | None = None
        # Bytes appended since the position of the last index entry (the whole size if none).
        self._bytes_since_last_index_entry = 0
        # The time index (time_index.py), loaded with the offset index.
        self._time_index = TimeIndex()
        # Kafka's maxTimestampSoFar and offsetOfMaxTimestamp: the greatest batch max timestamp in
        # the segment and the last offset of the first batch with it. None until known (an old
        # segment's is found on first use, from the time index and a scan of at most an index
        # interval: see _ensure_max_timestamp).
        self._max_timestamp: int | None = None
        self._offset_of_max_timestamp = base_offset
        # Kafka's rollingBasedTimestamp: the first batch's max timestamp, which segment.ms counts
        # from; None until known.
        self._first_batch_timestamp: int | None = None
        # (leader epoch, first offset) of each run of batches of one epoch a recovery kept, for the
        # log's epoch cache (which takes and empties it).
        self.recovered_epoch_starts: list[tuple[int, int]] = []

    # -- construction ----------------------------------------------------------------------

    @classmethod
    def create(cls, storage: Storage, directory: str, base_offset: int, *,
               index_interval_bytes: int) -> LogSegment:
        """A new, empty segment; files left over under the same name are emptied."""
        segment = cls(storage, directory, base_offset, index_interval_bytes=index_interval_bytes,
                      size_bytes=0, next_offset=base_offset)
        for path in (segment.log_path, segment.index_path, segment.time_index_path):
            if storage.exists(path):
                storage.truncate(path, 0)
            else:
                storage.append(path, b"")
        segment._reset_index()
        return segment

    @classmethod
    def load_trusted(cls, storage: Storage, directory: str, base_offset: int, *,
                     index_interval_bytes: int, next_offset: int) -> LogSegment:
        """An existing segment below the recovery point (flushed, so not rescanned)."""
        segment = cls(storage, directory, base_offset, index_interval_bytes=index_interval_bytes,
                      size_bytes=0, next_offset=next_offset)
        segment._size_bytes = storage.file_size(segment.log_path)
        return segment

    @classmethod
    def recover_from_files(cls, storage: Storage, directory: str, base_offset: int, *,
                           index_interval_bytes: int) -> tuple[LogSegment, int]:
        """An existing segment, rescanned with CRCs: (segment, bytes dropped from its tail)."""
        segment = cls(storage, directory, base_offset, index_interval_bytes=index_interval_bytes,
                      size_bytes=0, next_offset=base_offset)
        return segment, segment._recover()

    # -- properties ------------------------------------------------------------------------

    @property
    def size_bytes(self) -> int:
        return self._size_bytes

    @property
    def next_offset(self) -> int:
        """One past the last offset in this segment."""
        return self._next_offset

    @property
    def is_empty(self) -> bool:
        return self._size_bytes == 0

    @property
    def index_entries(self) -> tuple[tuple[int, int], ...]:
        """(absolute last offset, position) pairs; for tests and tools."""
        self._ensure_index()
        return tuple((self.base_offset + relative, position)
                     for relative, position in zip(self._index_relative_offsets, self._index_positions))

    # -- the index -------------------------------------------------------------------------

    def _reset_index(self) -> None:
        self._index_relative_offsets, self._index_positions = array("i"), array("i")
        self._bytes_since_last_index_entry = 0
        self._time_index = TimeIndex()
        self._max_timestamp, self._offset_of_max_timestamp = NO_TIMESTAMP, self.base_offset

    def _index_batch(self, header: BatchHeader, position: int, new_entries: bytearray,
                     new_time_entries: bytearray) -> None:
        """Kafka's rule: index this batch if more than index_interval_bytes came since the last
        entry, in the offset index and (with the max timestamp so far) in the time index."""
        if header.max_timestamp > self._max_timestamp:
            self._max_timestamp, self._offset_of_max_timestamp = header.max_timestamp, header.last_offset
        if self._bytes_since_last_index_entry > self._index_interval_bytes:
            relative_offset = header.last_offset - self.base_offset
            assert 0 <= relative_offset <= INT32_MAX and position <= INT32_MAX
            assert not self._index_positions or position > self._index_positions[-1]
            self._index_relative_offsets.append(relative_offset)
            self._index_positions.append(position)
            new_entries += _INDEX_ENTRY.pack(relative_offset, position)
            new_time_entries += self._time_index.maybe_append(
                self._max_timestamp, self._offset_of_max_timestamp - self.base_offset)
            self._bytes_since_last_index_entry = 0
        self._bytes_since_last_index_entry += header.size_in_bytes

    def _ensure_index(self) -> None:
        if self._index_positions is not None:
            return
        data = self.storage.read_file(self.index_path) if self.storage.exists(self.index_path) else b""
        entries = [_INDEX_ENTRY.unpack_from(data, at) for at in range(0, len(data) - len(data) % 8, 8)]
        sane = len(data) % 8 == 0 and all(
            0 <= relative < self._next_offset - self.base_offset and 0 <= position < self._size_bytes
            for relative, position in entries) and all(
            a[0] < b[0] and a[1] < b[1] for a, b in zip(entries, entries[1:]))
        time_data = (self.storage.read_file(self.time_index_path)
                     if self.storage.exists(self.time_index_path) else None)  # none: an older raykafka's segment
        time_index = None if time_data is None else TimeIndex.from_file_data(
            time_data, relative_offset_end=self._next_offset - self.base_offset)
        if not sane or time_index is None:
            self._rebuild_index()
            return
        self._time_index = time_index
        self._index_relative_offsets = array("i", (relative for relative, _ in entries))
        self._index_positions = array("i", (position for _, position in entries))
        last_position = entries[-1][1] if entries else 0
        self._bytes_since_last_index_entry = self._size_bytes - last_position

    def _rebuild_index(self) -> None:
        """Re-derives both indexes from batch headers (no CRC) and rewrites their files."""
        self._reset_index()
        new_entries, new_time_entries = bytearray(), bytearray()
        window = SegmentWindow(self.storage, self.log_path, self._size_bytes, RECOVERY_CHUNK_BYTES)
        position = 0
        while position < self._size_bytes:
            header = window.header_at(position)
            if header is None:
                raise KafkaProtocolError(ErrorCode.KAFKA_STORAGE_ERROR,
                                         f"{self.log_path} has a torn batch at {position}")
            self._index_batch(header, position, new_entries, new_time_entries)
            position = header.end_position
        self._write_index_files(new_entries, new_time_entries)

    def _write_index_files(self, entries: bytes, time_entries: bytes) -> None:
        for path, data in ((self.index_path, entries), (self.time_index_path, time_entries)):
            if self.storage.exists(path):
                self.storage.truncate(path, 0)
            self.storage.append(path, data)

    def _lookup_position(self, offset: int) -> int:
        """Start position of the scan for ``offset``: the greatest index entry <= it, else 0."""
        return self._lookup_range(offset)[0]

    def _lookup_range(self, offset: int) -> tuple[int, int]:
        """(scan start, bound): the batch holding ``offset`` starts in [scan start, bound].

        The bound is the next index entry's position (its batch's last offset is > ``offset``),
        or the segment's end.
        """
        self._ensure_index()
        slot = bisect.bisect_right(self._index_relative_offsets, offset - self.base_offset)
        start = self._index_positions[slot - 1] if slot > 0 else 0
        bound = self._index_positions[slot] if slot < len(self._index_positions) else self._size_bytes
        return start, bound

    # -- operations ------------------------------------------------------------------------

    def append(self, data, headers: tuple[BatchHeader, ...]) -> None:
        """Appends validated batches; ``headers`` positions are relative to the start of ``data``."""
        assert headers and headers[0].base_offset >= self._next_offset, (headers[0], self._next_offset)
        assert headers[-1].last_offset - self.base_offset <= INT32_MAX
        self._ensure_max_timestamp()
        entries, since, time_entries, max_timestamp = (len(self._index_positions), self._bytes_since_last_index_entry,
                                                       len(self._time_index), (self._max_timestamp, self._offset_of_max_timestamp))
        new_entries, new_time_entries = bytearray(), bytearray()
        for header in headers:
            self._index_batch(header, self._size_bytes + header.position, new_entries, new_time_entries)
        try:
            self.storage.append(self.log_path, data)
            if new_entries:
                self.storage.append(self.index_path, new_entries)
            if new_time_entries:
                self.storage.append(self.time_index_path, new_time_entries)
        except OSError:
            # A write that failed may have landed in part (ENOSPC): the segment keeps believing
            # its old size and indexes, so no read goes past the last batch wholly written. The log
            # directory goes offline (log_dir_failure.py); recovery cuts the torn tail on restart.
            del self._index_relative_offsets[entries:]
            del self._index_positions[entries:]
            self._time_index.truncate_entries_to(time_entries)
            self._bytes_since_last_index_entry = since
            self._max_timestamp, self._offset_of_max_timestamp = max_timestamp
            raise
        if self._size_bytes == 0:
            self._first_batch_timestamp = headers[0].max_timestamp
        self._size_bytes += len(data)
        self._next_offset = headers[-1].next_offset

    def find_batch(self, offset: int) -> BatchHeader | None:
        """The first batch whose last offset is >= ``offset`` (the one holding it), or None."""
        for header in self.headers_from(self._lookup_position(offset), read_bytes_min=FIND_READ_BYTES_MIN):
            if header.last_offset >= offset:
                return header
        return None

    def read_position(self, offset: int) -> int:
        """Where a read at ``offset`` starts in this segment: the position of the batch holding it,
        or the segment's end when no batch here holds it. At the end it costs no storage read."""
        if offset >= self._next_offset:
            return self._size_bytes
        header = self.find_batch(offset)
        return self._size_bytes if header is None else header.position

    def read(self, start_offset: int, max_bytes: int, *, max_offset: int | None,
             min_one_batch: bool) -> FetchDataInfo | None:
        """Whole batches from the one holding ``start_offset``; None if this segment has none.

        Batches follow while the total stays <= ``max_bytes`` (the first one is returned whatever
        its size when ``min_one_batch``); a batch whose last offset is >= ``max_offset`` ends the
        read. The index bounds how far the batch holding ``start_offset`` can be: when that stretch
        is short, the read costs one storage read (two when ``min_one_batch`` returns a batch
        larger than ``max_bytes``); when it is long (``LONG_SCAN_BYTES``: a large batch before
        ``start_offset``, as a consumer of large batches always has), the headers in it are read
        in ``SCAN_READ_BYTES`` reads, and the data in one more read from the first batch on.
        """
        position, bound = self._lookup_range(start_offset)
        data_read_bytes = max(max_bytes, 0) + HEADER_SIZE_BYTES
        long_scan = bound - position > LONG_SCAN_BYTES
        window = SegmentWindow(self.storage, self.log_path, self._size_bytes,
                               SCAN_READ_BYTES if long_scan else bound - position + data_read_bytes)
        first = None
        while position < self._size_bytes:
            header = window.header_at(position)
            if header is None:
                break
            if header.last_offset >= start_offset:
                first = header
                break
            position = header.end_position
        if first is None:
            return None
        empty = FetchDataInfo(fetch_offset=start_offset, records=b"")
        if max_offset is not None and first.last_offset >= max_offset:
            return empty
        if first.size_in_bytes > max_bytes and not min_one_batch:
            return empty
        if long_scan:  # the data from the first batch on, in one read of its own
            window = SegmentWindow(self.storage, self.log_path, self._size_bytes, data_read_bytes)
            window.header_at(first.position)
        window.pin(first.position)
        count = 1
        # Stop without peeking when not even a bare header would fit in max_bytes.
        last_offset, end_position = first.last_offset, first.end_position
        limit_position = first.position + max_bytes
        while end_position < self._size_bytes and end_position + HEADER_SIZE_BYTES <= limit_position:
            bounds = window.next_batch_at(end_position)
            if bounds is None or (max_offset is not None and bounds[0] >= max_offset) or bounds[1] > limit_position:
                break
            (last_offset, end_position), count = bounds, count + 1
        records = window.bytes_at(first.position, end_position - first.position)
        return FetchDataInfo(fetch_offset=start_offset, records=records,
                             first_offset=first.base_offset, last_offset=last_offset,
                             batch_count=count)

    # -- timestamps (actors/core/log/timestamps.py searches with these) ----------------------

    @property
    def first_batch_timestamp(self) -> int:
        """Kafka's ``rollingBasedTimestamp``: the first batch's max timestamp (-1 when empty)."""
        if self._size_bytes == 0:
            return NO_TIMESTAMP
        if self._first_batch_timestamp is None:
            self._first_batch_timestamp = next(self.headers_from(0)).max_timestamp
        return self._first_batch_timestamp

    def time_waited_for_roll(self, max_timestamp_ms: int) -> int | None:
        """Kafka's ``timeWaitedForRoll`` for an append whose greatest timestamp is ``max_timestamp_ms``:
        how much later it is than this segment's first batch. None when either has no timestamp
        (Kafka then counts from the segment's creation on the broker's clock, which a log, being
        clockless, does not have: such a segment rolls by size only)."""
        first = self.first_batch_timestamp
        if first < 0 or max_timestamp_ms < 0:
            return None
        return max_timestamp_ms - first

    @property
    def largest_timestamp(self) -> int:
        """Kafka's ``largestTimestamp``: the greatest batch max timestamp here (-1 when none)."""
        self._ensure_max_timestamp()
        return self._max_timestamp

    def _ensure_max_timestamp(self) -> None:
        """Kafka's ``loadLargestTimestamp``: every batch up to the last offset index entry is
        bounded by the time index's last entry (time_index.py), so only the batches from that
        entry's position on are read."""
        if self._max_timestamp is not None:
            return
        self._ensure_index()
        if self._max_timestamp is not None:
            return  # the index was rebuilt, which found it
        index = self._time_index
        self._max_timestamp = index.last_timestamp
        self._offset_of_max_timestamp = self.base_offset + (index.relative_offsets[-1] if len(index) else 0)
        for header in self.headers_from(self._index_positions[-1] if self._index_positions else 0):
            if header.max_timestamp > self._max_timestamp:
                self._max_timestamp, self._offset_of_max_timestamp = header.max_timestamp, header.last_offset

    def timestamp_scan_start(self, target_timestamp_ms: int, starting_offset: int) -> int:
        """Where a search for the first record at or after ``target_timestamp_ms`` (and at or after
        ``starting_offset``) starts: no batch before this position holds it, and one within about
        an index interval after it does when this segment has one (``largest_timestamp``).

        Kafka starts at the offset index entry for the time index's last entry <= the target. When
        that entry is below the target (or there is none), every batch up to the last offset index
        entry before the next time index entry is below it too (time_index.py), so the scan starts
        there: with timestamps out of order, Kafka's start can be a segment away from the answer.
        """
        self._ensure_index()
        below, above = self._time_index.lookup(target_timestamp_ms)
        start = self._lookup_position(max(starting_offset, self.base_offset + (below[1] if below else 0)))
        if below is None or below[0] < target_timestamp_ms:
            bound_offset = self.base_offset + above[1] - 1 if above else self._next_offset
            slot = bisect.bisect_right(self._index_relative_offsets, bound_offset - self.base_offset)
            start = max(start, self._index_positions[slot - 1] if slot > 0 else 0)
        return start

    def headers_from(self, position: int, *, read_bytes_min: int = SCAN_READ_BYTES):
        """The headers of the batches from ``position`` (a batch's start) to the end, read in
        windows of about two index intervals."""
        window = SegmentWindow(self.storage, self.log_path, self._size_bytes,
                               max(2 * self._index_interval_bytes, read_bytes_min))
        while position < self._size_bytes:
            header = window.header_at(position)
            if header is None:
                return
            yield header
            position = header.end_position

    def read_batch(self, header: BatchHeader) -> bytes:
        """The whole batch ``header`` describes (a header from ``headers_from``)."""
        return self.storage.read(self.log_path, header.position, header.size_in_bytes)

    def truncate_to(self, offset: int) -> int:
        """Drops the batch holding ``offset`` and all after it; returns the bytes dropped.

        The cut is not fsynced here: the log plans that fsync as storage work (log_work.py).
        """
        header = self.find_batch(offset)
        if header is None:
            return 0
        dropped_bytes = self._size_bytes - header.position
        kept = bisect.bisect_left(self._index_positions, header.position)
        del self._index_relative_offsets[kept:]
        del self._index_positions[kept:]
        self.storage.truncate(self.log_path, header.position)
        self.storage.truncate(self.index_path, kept * _INDEX_ENTRY.size)
        self.storage.truncate(self.time_index_path,
                              self._time_index.truncate_to(header.base_offset - self.base_offset))
        self._max_timestamp = None  # found again from what is left, by _ensure_max_timestamp
        self._first_batch_timestamp = None
        self._size_bytes = header.position
        self._next_offset = header.base_offset
        last_position = self._index_positions[-1] if self._index_positions else 0
        self._bytes_since_last_index_entry = self._size_bytes - last_position
        return dropped_bytes

    def flush(self) -> None:
        for path in self.durable_paths():
            self.storage.fsync(path)

    def durable_paths(self) -> tuple[str, ...]:
        """The files a flush of this segment fsyncs: its log, and its indexes once it has them."""
        return (self.log_path, *(path for path in (self.index_path, self.time_index_path)
                                 if self.storage.exists(path)))

    def delete(self, *, sync: bool = True) -> None:
        """Deletes the files; with ``sync=False`` the directory's fsync is left to the caller."""
        self.storage.delete(self.log_path, sync=sync)
        self.storage.delete(self.index_path, sync=sync)
        self.storage.delete(self.time_index_path, sync=sync)

    def rename_for_deletion(self) -> tuple[str, ...]:
        """Kafka's asynchronous segment deletion, first half: each file renamed at once to
        ``<name>.deleted`` (no fsync), so that a segment created later under the same base offset
        is a new file; returns the new paths, for a work to delete (log_work.py). A ``.deleted``
        file a crash left behind is removed when the log is opened (segment_loading.py)."""
        renamed = []
        for path in (self.log_path, self.index_path, self.time_index_path):
            if self.storage.exists(path):
                self.storage.rename(path, path + DELETED_FILE_SUFFIX, sync=False)
                renamed.append(path + DELETED_FILE_SUFFIX)
        return tuple(renamed)

    # -- recovery --------------------------------------------------------------------------

    def _recover(self) -> int:
        """Kafka's ``LogSegment.recover``: keep the longest valid prefix, rebuild the index.

        A batch is valid when its header is well formed, it is whole, its CRC matches and its base
        offset continues the previous batch (the first one's equals the segment's base offset).
        Returns the bytes cut from the tail (0 when the segment was intact).
        """
        file_size = self.storage.file_size(self.log_path)
        self._reset_index()
        new_entries, new_time_entries = bytearray(), bytearray()
        position, expected_offset, want_bytes = 0, self.base_offset, RECOVERY_CHUNK_BYTES
        # Each pass either advances `position` or grows `want_bytes` past the chunk it had.
        while position < file_size:
            chunk_start = position
            chunk = self.storage.read(self.log_path, chunk_start, min(file_size - chunk_start, want_bytes))
            headers, consumed, why_stopped = scan_valid_prefix(
                chunk, expected_base_offset=expected_offset, max_offset=self.base_offset + INT32_MAX)
            for header in headers:
                if header.base_offset == self.base_offset:
                    self._first_batch_timestamp = header.max_timestamp
                self._index_batch(header, chunk_start + header.position, new_entries, new_time_entries)
                epoch = header.partition_leader_epoch
                if epoch >= 0 and (not self.recovered_epoch_starts or self.recovered_epoch_starts[-1][0] != epoch):
                    self.recovered_epoch_starts.append((epoch, header.base_offset))
            if headers:
                expected_offset = headers[-1].next_offset
            position += consumed
            want_bytes = RECOVERY_CHUNK_BYTES
            if why_stopped is None:
                continue
            if chunk_start + len(chunk) >= file_size:
                break  # the bad or torn batch runs to the end of the file
            if consumed > 0:
                continue  # re-read from the batch that did not fit (or is bad)
            needed_bytes = self._batch_size_or_none(chunk)
            if needed_bytes is None or needed_bytes <= len(chunk):
                break  # genuinely malformed, not just cut by the chunk boundary
            want_bytes = needed_bytes
        dropped_bytes = file_size - position
        if dropped_bytes:
            self.storage.truncate(self.log_path, position)
        self._size_bytes = position
        self._next_offset = expected_offset
        self._write_index_files(new_entries, new_time_entries)
        return dropped_bytes

    @staticmethod
    def _batch_size_or_none(chunk: bytes) -> int | None:
        """Bytes needed to judge the batch at the chunk's start; None if its header is bad."""
        if len(chunk) < HEADER_SIZE_BYTES:
            return HEADER_SIZE_BYTES
        try:
            return read_header(chunk, 0).size_in_bytes
        except KafkaProtocolError:
            return None
