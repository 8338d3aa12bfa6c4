"""Log compaction: Kafka 2.4's ``LogCleaner`` (the offset map and the cleaning) and
``LogCleanerManager`` (which log to clean and how far), as functions over a log's segments.

Theory of operation. A compacted log (``cleanup.policy`` holds ``compact``) has a clean part, from
its start to the *first dirty offset* (kept per partition in the broker's
``cleaner-offset-checkpoint``), and a dirty part after it, written since the last cleaning. The
dirty part is cleanable up to the *first uncleanable offset*: the base offset of the active
segment, of the segment holding the high watermark, or of the first dirty segment whose newest
record is younger than ``min.compaction.lag.ms``, whichever is lowest (all segment-aligned).

1. Choice (``filthiest_log``): every compacted log's ``LogToClean``; those whose cleanable bytes
   are more than ``min.cleanable.dirty.ratio`` of their clean plus cleanable bytes qualify, and
   the dirtiest goes first.
2. The offset map (``build_offset_map``): the latest offset of each key over the cleanable dirty
   part, batch by batch, stopping before a batch that would overfill it; its ``latest_offset`` is
   the last offset mapped, and one past it is the new first dirty offset.
3. Cleaning (``clean_segment``): every segment from the log's start to that end is rewritten. A
   record is kept when it is past the map, or it is the latest of its key and has a value, or it
   is a tombstone of a segment still inside ``delete.retention.ms`` (Kafka's delete horizon: the
   clean part's newest segment's time less delete.retention.ms; a segment's time is its newest
   record's timestamp, as retention.py judges segments). A batch with nothing removed is copied
   as it is; a batch with some records kept is built again with the same base offset, last
   offset delta, leader epoch, attributes (so the same codec), producer id, epoch and base
   sequence (Kafka's ``MemoryRecords.filterTo``), its records' bytes unchanged; a batch with
   nothing kept goes, unless it is its producer's last batch, which stays empty so that the
   producer's sequence survives (Kafka's ``RETAIN_EMPTY``), or its segment's last batch, which stays
   empty so that the segment still ends where it did: log recovery tells data a crash lost from
   data a cleaning removed by that (segment_loading.py). Records without a key are dropped (the leader refuses them on
   compacted topics: log_validator.py). Control batches are kept as they are.

The offsets in a cleaned log have gaps; segments keep their offset ranges. Writing the cleaned
segments and swapping them in is segment_swap.py's (the ``.cleaned`` / ``.swap`` protocol).

A round crosses processes: the broker plans it (``plan_cleaning``: a ``CleaningPlan`` of plain data,
its non-active segments as ``SegmentSnapshot``s), the cleaner actor reads those segments through
its own storage, cleans them (``clean_log``) and writes the ``.cleaned`` files
(``write_cleaned_segments``; the two together are ``carry_out_round``, which the simulator's cleaner
runs too), and the broker swaps them in (cleaner_manager.py, ``Log.swap_cleaned``).
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from actors.core.errors import ErrorCode, KafkaProtocolError
from actors.core.log.compression import CodecError, compress_records, decompress_records
from actors.core.log.log_validator import read_varint
from actors.core.log.record_batch import (
    COMPRESSION_CODEC_MASK, CONTROL_FLAG, HEADER_SIZE_BYTES, LOG_APPEND_TIME_FLAG, BatchHeader, build_batch,
    parse_batches,
)
from actors.core.log.segment_swap import write_cleaned
from actors.core.log.segment_window import SegmentWindow

__all__ = ["CleanedSegments", "CleaningPlan", "LogToClean", "OffsetMap", "SegmentSnapshot", "build_offset_map",
           "clean_log", "clean_segment", "cleanable_offsets", "carry_out_round", "filthiest_log", "plan_cleaning",
           "write_cleaned_segments"]

# Kafka's log.cleaner.dedupe.buffer.size (128 MiB) at its load factor (0.9), 24 bytes an entry.
OFFSET_MAP_ENTRIES_DEFAULT = 128 * 1024 * 1024 * 9 // 10 // 24
# How much of a segment file one read of a cleaner brings in.
SNAPSHOT_READ_BYTES = 1 << 20


def offset_map_entries(dedupe_buffer_size: int) -> int:
    """The offset map's capacity for log.cleaner.dedupe.buffer.size bytes (Kafka's SkimpyOffsetMap:
    24 bytes an entry, a load factor of 0.9)."""
    return max(1, dedupe_buffer_size * 9 // 10 // 24)


@dataclass(frozen=True, slots=True)
class Record:
    """One v2 record as the cleaner reads it; ``raw`` is its bytes, length prefix included."""

    offset_delta: int
    timestamp_delta: int
    key: bytes | None
    has_value: bool
    raw: bytes


def read_records(header: BatchHeader, batch) -> list[Record]:
    """The records of ``batch`` (one whole batch, ``header`` its header at position 0)."""
    body = memoryview(batch)[HEADER_SIZE_BYTES:header.size_in_bytes]
    codec = header.attributes & COMPRESSION_CODEC_MASK
    try:
        data = bytes(body) if codec == 0 else decompress_records(codec, body)
    except CodecError as exc:
        raise KafkaProtocolError(ErrorCode.CORRUPT_MESSAGE,
                                 f"batch at offset {header.base_offset} does not decompress: {exc}") from None
    records, position = [], 0
    for _ in range(header.records_count):
        start = position
        length, position = read_varint(data, position)
        end = position + length
        if length < 1 or end > len(data):
            raise KafkaProtocolError(ErrorCode.CORRUPT_MESSAGE,
                                     f"a record of batch {header.base_offset} runs past its batch")
        position += 1  # attributes
        timestamp_delta, position = read_varint(data, position)
        offset_delta, position = read_varint(data, position)
        key_length, position = read_varint(data, position)
        key = None if key_length < 0 else bytes(data[position:position + key_length])
        position += max(key_length, 0)
        value_length, position = read_varint(data, position)
        records.append(Record(offset_delta, timestamp_delta, key, value_length >= 0, bytes(data[start:end])))
        position = end
    return records


class OffsetMap:
    """Kafka's ``SkimpyOffsetMap``: the latest offset of each key, for at most ``max_entries`` keys
    (keys are kept whole, not hashed: no two keys can collide)."""

    def __init__(self, max_entries: int = OFFSET_MAP_ENTRIES_DEFAULT) -> None:
        assert max_entries > 0
        self.max_entries = max_entries
        self._offsets: dict[bytes, int] = {}
        self.latest_offset = -1

    def __len__(self) -> int:
        return len(self._offsets)

    def put(self, key: bytes, offset: int) -> None:
        self._offsets[key] = offset
        self.latest_offset = max(self.latest_offset, offset)

    def get(self, key: bytes) -> int:
        """The latest offset of ``key``, or -1."""
        return self._offsets.get(key, -1)


def _batches(segment):
    for header in segment.headers_from(0):
        yield header, segment.read_batch(header)


def build_offset_map(segments: Iterable, first_dirty_offset: int, first_uncleanable_offset: int,
                     offset_map: OffsetMap) -> int:
    """Maps the batches of ``segments`` in [first_dirty, first_uncleanable); returns the new first
    dirty offset (one past the last batch mapped). A batch whose keys would overfill the map ends
    the mapping; a first batch that cannot fit at all is an error, as in Kafka."""
    end = first_dirty_offset
    for segment in segments:
        if segment.next_offset <= first_dirty_offset or segment.base_offset >= first_uncleanable_offset:
            continue
        for header, batch in _batches(segment):
            if header.last_offset < first_dirty_offset:
                continue
            if header.base_offset >= first_uncleanable_offset:
                return end
            keyed = [] if header.attributes & CONTROL_FLAG else [
                (r.key, header.base_offset + r.offset_delta) for r in read_records(header, batch) if r.key is not None]
            if len(offset_map) + len(keyed) > offset_map.max_entries:
                if end == first_dirty_offset:
                    raise ValueError(f"the offset map of {offset_map.max_entries} entries cannot hold "
                                     f"the batch at offset {header.base_offset}")
                return end
            for key, offset in keyed:
                offset_map.put(key, offset)
            offset_map.latest_offset = max(offset_map.latest_offset, header.last_offset)
            end = header.next_offset
    return end


@dataclass
class CleanStats:
    """Kafka's ``CleanerStats``: what a cleaning read and wrote, for its summary line."""

    records_read: int = 0
    records_kept: int = 0
    bytes_read: int = 0
    bytes_written: int = 0

    def summary(self) -> str:
        return (f"{self.records_read} records and {self.bytes_read} bytes read, {self.records_kept} records "
                f"and {self.bytes_written} bytes kept")


def clean_segment(segment, offset_map: OffsetMap, *, retain_deletes: bool,
                  producer_last_offsets: frozenset[int] = frozenset(),
                  stats: CleanStats | None = None) -> bytes:
    """The segment's batches as cleaning leaves them (see the module docstring), as bytes."""
    stats = stats if stats is not None else CleanStats()
    pieces = []
    for header, batch in _batches(segment):
        stats.bytes_read += header.size_in_bytes
        header = header._replace(position=0)
        if header.attributes & CONTROL_FLAG:
            pieces.append(batch)
            continue
        records = read_records(header, batch)
        stats.records_read += len(records)
        kept = [r for r in records if _keep(r, header.base_offset + r.offset_delta, offset_map, retain_deletes)]
        stats.records_kept += len(kept)
        if len(kept) == len(records):
            pieces.append(batch)
        elif kept or header.next_offset == segment.next_offset or (
                header.producer_id >= 0 and header.last_offset in producer_last_offsets):
            pieces.append(_rebuilt(header, kept))
    data = b"".join(pieces)
    stats.bytes_written += len(data)
    return data


def _keep(record: Record, offset: int, offset_map: OffsetMap, retain_deletes: bool) -> bool:
    """Kafka's ``shouldRetainRecord``."""
    if offset > offset_map.latest_offset:
        return True
    if record.key is None:
        return False
    return offset >= offset_map.get(record.key) and (record.has_value or retain_deletes)


def _rebuilt(header: BatchHeader, kept: list[Record]) -> bytes:
    codec = header.attributes & COMPRESSION_CODEC_MASK
    if header.attributes & LOG_APPEND_TIME_FLAG or not kept:
        max_timestamp = header.max_timestamp
    else:
        max_timestamp = header.base_timestamp + max(r.timestamp_delta for r in kept)
    if not kept:  # Kafka's empty batch keeps the producer's fields and no codec
        codec, attributes = 0, header.attributes & ~COMPRESSION_CODEC_MASK
    else:
        attributes = header.attributes
    return build_batch(
        base_offset=header.base_offset, partition_leader_epoch=header.partition_leader_epoch,
        attributes=attributes, last_offset_delta=header.last_offset_delta,
        base_timestamp=header.base_timestamp, max_timestamp=max_timestamp, producer_id=header.producer_id,
        producer_epoch=header.producer_epoch, base_sequence=header.base_sequence, records_count=len(kept),
        body=compress_records(codec, b"".join(r.raw for r in kept)))


# -- which log, and how far (LogCleanerManager) ----------------------------------------------


@dataclass(frozen=True, slots=True)
class LogToClean:
    """Kafka's ``LogToClean``: a log's clean and cleanable sizes at its offsets."""

    key: object
    log: object
    first_dirty_offset: int
    first_uncleanable_offset: int
    clean_bytes: int
    cleanable_bytes: int

    @property
    def total_bytes(self) -> int:
        return self.clean_bytes + self.cleanable_bytes

    @property
    def cleanable_ratio(self) -> float:
        return self.cleanable_bytes / self.total_bytes if self.total_bytes else 0.0


def cleanable_offsets(log, checkpoint_offset: int | None, now_ms: int, high_watermark: int) -> tuple[int, int]:
    """Kafka's ``LogCleanerManager.cleanableOffsets``: (first dirty, first uncleanable). A
    checkpoint outside [log start, log end] (or none) starts from the log start."""
    start, end = log.log_start_offset, log.log_end_offset
    first_dirty = checkpoint_offset if checkpoint_offset is not None and start <= checkpoint_offset <= end else start
    segments = log.segments
    bounds = [segments[-1].base_offset]  # the active segment
    bounds += [s.base_offset for s in segments if s.next_offset > high_watermark][:1]
    lag = log.config.min_compaction_lag_ms
    if lag > 0:
        bounds += [s.base_offset for s in segments[:-1] if s.next_offset > first_dirty
                   and s.largest_timestamp > now_ms - lag][:1]
    return first_dirty, max(first_dirty, min(bounds))


def log_to_clean(key, log, checkpoint_offset: int | None, now_ms: int, high_watermark: int) -> LogToClean:
    first_dirty, first_uncleanable = cleanable_offsets(log, checkpoint_offset, now_ms, high_watermark)
    segments = log.segments
    clean = sum(s.size_bytes for s in segments if s.base_offset < first_dirty)
    cleanable = 0 if first_dirty == first_uncleanable else sum(
        s.size_bytes for s in segments if s.next_offset > first_dirty and s.base_offset < first_uncleanable)
    return LogToClean(key, log, first_dirty, first_uncleanable, clean, cleanable)


def filthiest_log(logs: Mapping, checkpoints: Mapping, now_ms: int, high_watermarks: Mapping,
                  *, skip: Iterable = ()) -> LogToClean | None:
    """Kafka's ``grabFilthiestCompactedLog``: of the compacted logs (not in ``skip``) with any
    bytes, those whose cleanable ratio is above their ``min.cleanable.dirty.ratio``, the dirtiest."""
    skip = set(skip)
    candidates = [log_to_clean(key, log, checkpoints.get(key), now_ms, high_watermarks.get(key, log.log_end_offset))
                  for key, log in logs.items() if log.config.compact and key not in skip]
    candidates = [c for c in candidates
                  if c.total_bytes > 0 and c.cleanable_ratio > c.log.config.min_cleanable_dirty_ratio]
    return max(candidates, key=lambda c: c.cleanable_ratio, default=None)


# -- a round, as a plan the broker makes and a cleaner carries out (actors/log_cleaner.py) -------


@dataclass(frozen=True, slots=True)
class SegmentSnapshot:
    """A non-active segment as the broker saw it when it planned a cleaning: what the cleaner
    needs to read it through its own storage (the broker's files, read by another process)."""

    base_offset: int
    next_offset: int
    size_bytes: int
    largest_timestamp: int
    log_path: str



class _SnapshotReader:
    """A ``SegmentSnapshot`` read through a storage, as ``clean_segment`` reads a segment."""

    def __init__(self, snapshot: SegmentSnapshot, storage) -> None:
        self.snapshot, self._storage = snapshot, storage
        self.base_offset, self.next_offset = snapshot.base_offset, snapshot.next_offset
        self.size_bytes, self.largest_timestamp = snapshot.size_bytes, snapshot.largest_timestamp

    def headers_from(self, position: int):
        """The headers of its batches up to ``size_bytes`` (reading stops at a torn or missing
        batch: a file truncated since the plan then yields fewer, and its cleaning is refused)."""
        window = SegmentWindow(self._storage, self.snapshot.log_path, self.size_bytes, SNAPSHOT_READ_BYTES)
        while position < self.size_bytes:
            header = window.header_at(position)
            if header is None:
                return
            yield header
            position = header.end_position

    def read_batch(self, header: BatchHeader) -> bytes:
        return self._storage.read(self.snapshot.log_path, header.position, header.size_in_bytes)


@dataclass(frozen=True, slots=True)
class CleaningPlan:
    """One round for one log, planned where the log lives (``plan_cleaning``) and carried out
    where the files can be read (``clean_log``): plain data, so that it can cross to a cleaner
    actor. ``round_id`` ties the cleaner's answer to this plan (a newer plan supersedes it)."""

    key: object
    directory: str
    round_id: int
    first_dirty_offset: int
    first_uncleanable_offset: int
    cleanable_ratio: float
    segments: tuple[SegmentSnapshot, ...]  # every non-active segment, oldest first
    delete_retention_ms: int
    producer_last_offsets: frozenset[int]


def plan_cleaning(to_clean: LogToClean, round_id: int = 0) -> CleaningPlan:
    log = to_clean.log
    return CleaningPlan(
        key=to_clean.key, directory=log.directory, round_id=round_id, first_dirty_offset=to_clean.first_dirty_offset,
        first_uncleanable_offset=to_clean.first_uncleanable_offset, cleanable_ratio=to_clean.cleanable_ratio,
        segments=tuple(SegmentSnapshot(s.base_offset, s.next_offset, s.size_bytes, s.largest_timestamp, s.log_path)
                       for s in log.segments[:-1]),  # never the active one
        delete_retention_ms=log.config.delete_retention_ms,
        producer_last_offsets=frozenset(e.last_offset for e in log.producer_state.producers.values()))


@dataclass(frozen=True, slots=True)
class CleanedLog:
    """What ``clean_log`` made: each rewritten segment's base offset and bytes, and the new first
    dirty offset for the checkpoint."""

    end_offset: int
    segments: tuple[tuple[int, bytes], ...]
    stats: CleanStats


@dataclass(frozen=True, slots=True)
class CleanedSegments:
    """A round's result once its ``.cleaned`` files are written (``write_cleaned_segments``): per
    segment, its base offset, the next offset it had when planned (the cleaned file ends there
    too) and the cleaned file's size; what the broker swaps in (``Log.swap_cleaned``)."""

    key: object
    round_id: int
    end_offset: int
    segments: tuple[tuple[int, int, int], ...]
    summary: str


def clean_log(plan: CleaningPlan, storage, *, offset_map_entries: int = OFFSET_MAP_ENTRIES_DEFAULT,
              on_segment_read: Callable[[int], None] | None = None) -> CleanedLog:
    """Kafka's ``Cleaner.doClean``: the offset map over the cleanable part, then every segment from
    the log's start up to the map's end cleaned with it, read through ``storage``. Reads only; the
    swap writes. ``on_segment_read(bytes)`` is called after each segment read (a throttle's hook:
    Kafka's log.cleaner.io.max.bytes.per.second)."""
    segments = [_SnapshotReader(s, storage) for s in plan.segments]
    offset_map = OffsetMap(offset_map_entries)
    end_offset = build_offset_map(segments, plan.first_dirty_offset, plan.first_uncleanable_offset, offset_map)
    clean_part = [s for s in segments if s.base_offset < plan.first_dirty_offset]
    delete_horizon_ms = clean_part[-1].largest_timestamp - plan.delete_retention_ms if clean_part else 0
    stats, cleaned = CleanStats(), []
    for segment in segments:
        if segment.base_offset >= end_offset:
            break
        data = clean_segment(segment, offset_map, retain_deletes=segment.largest_timestamp > delete_horizon_ms,
                             producer_last_offsets=plan.producer_last_offsets, stats=stats)
        if on_segment_read is not None:
            on_segment_read(segment.size_bytes)
        cleaned.append((segment.base_offset, data))
    return CleanedLog(end_offset, tuple(cleaned), stats)


def write_cleaned_segments(plan: CleaningPlan, cleaned: CleanedLog, storage) -> CleanedSegments:
    """Step 1 of the swap (segment_swap.py) for each cleaned segment that still ends where its
    segment did when planned (a segment truncated since is left alone)."""
    by_base = {s.base_offset: s for s in plan.segments}
    written = []
    for base_offset, data in cleaned.segments:
        headers = parse_batches(data, check_crc=False) if data else ()
        if not headers or headers[-1].next_offset != by_base[base_offset].next_offset:
            continue
        write_cleaned(storage, plan.directory, base_offset, data)
        written.append((base_offset, by_base[base_offset].next_offset, len(data)))
    summary = (f"cleaned {plan.key} (dirty ratio {plan.cleanable_ratio:.2f}) up to offset {cleaned.end_offset}: "
               f"{cleaned.stats.summary()}")
    return CleanedSegments(plan.key, plan.round_id, cleaned.end_offset, tuple(written), summary)


def carry_out_round(plan: CleaningPlan, storage, *, offset_map_entries: int = OFFSET_MAP_ENTRIES_DEFAULT,
                    on_segment_read: Callable[[int], None] | None = None) -> CleanedSegments:
    """A cleaner's half of a round, as the log cleaner actor (actors/log_cleaner.py) and the
    simulator's cleaner (orchestration/simulation/log_cleaner.py) both run it: the plan's segments
    read and cleaned through ``storage`` (``clean_log``), then their ``.cleaned`` files written
    (``write_cleaned_segments``). What it returns goes back to the broker for the swap."""
    cleaned = clean_log(plan, storage, offset_map_entries=offset_map_entries, on_segment_read=on_segment_read)
    return write_cleaned_segments(plan, cleaned, storage)


def clean_filthiest_log(logs: Mapping, checkpoint_file, now_ms: int, high_watermarks: Mapping, *,
                        offset_map_entries: int = OFFSET_MAP_ENTRIES_DEFAULT) -> str | None:
    """One round of a cleaner in one place: the dirtiest log (``filthiest_log``) is cleaned
    (``clean_log``), its cleaned segments swapped in (``Log.swap_cleaned``) and its new first
    dirty offset written to ``checkpoint_file`` (an ``OffsetCheckpointFile`` named
    ``cleaner-offset-checkpoint``, keyed as ``logs`` is, by (topic, partition)); returns a summary
    line, or None when no log qualifies. Checkpoint entries of logs no longer in ``logs`` are
    dropped. A broker runs the same steps split between itself and its cleaner actor
    (cleaner_manager.py)."""
    checkpoints = checkpoint_file.read() if checkpoint_file.storage.exists(checkpoint_file.path) else {}
    to_clean = filthiest_log(logs, checkpoints, now_ms, high_watermarks)
    if to_clean is None:
        return None
    plan = plan_cleaning(to_clean)
    storage = checkpoint_file.storage
    written = carry_out_round(plan, storage, offset_map_entries=offset_map_entries)
    swapped = to_clean.log.swap_cleaned(written.segments)
    checkpoints = {key: offset for key, offset in checkpoints.items() if key in logs}
    checkpoints[to_clean.key] = written.end_offset
    checkpoint_file.write(checkpoints)
    return f"{written.summary}, segments {swapped}"
