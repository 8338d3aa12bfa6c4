"""A partition replica's log: segments of v2 batches, recovery, truncation and leader epochs.

Theory of operation. ``Log`` owns one partition directory (``<topic>-<partition>/``): segments
``<base_offset:020d>.log`` / ``.index`` / ``.timeindex`` that together hold the contiguous offsets
[log_start_offset, log_end_offset), and the ``leader-epoch-checkpoint`` (through its
``LeaderEpochCache``). It holds no lock and starts no thread; its owner (Partition/ReplicaManager)
calls it from one thread, and every effect is a call on the injected ``Storage``.

Inputs and outputs:
- ``append_as_leader`` / ``append_as_follower``: validate ALL of a record set first (a refused
  append changes nothing), then write it to the active segment, rolling a new segment first
  when the active one would pass ``segment.bytes``; returns ``LogAppendInfo``.
- ``read``: whole batches from one segment, for consumer (``max_offset`` = HW) and follower
  fetches; returns ``FetchDataInfo``.
- ``truncate_to``, ``truncate_fully_and_start_at``, ``maybe_increment_log_start_offset``: move
  the ends of the log; the leader-epoch cache follows. ``delete_old_segments`` is Kafka's
  retention (retention.py): whole segments go, their files renamed at once to ``.deleted`` and
  removed by a work, and the log start offset moves to the first segment left.
  ``replace_segments`` swaps in segments the cleaner rewrote (cleaner.py, segment_swap.py); a
  cleaned log has offset gaps between batches, which reads skip (a read returns the batch at or
  after the offset asked) and a follower's append takes as they come.
- producer state (``producer_state.py``): the leader's append checks the idempotent producer's
  epoch and sequence first and answers a duplicate with the original batch's offsets, writing
  nothing; every written batch (leader, follower, replay) updates it; a roll and ``close`` write
  a snapshot of it beside the segments, ``open`` and truncation rebuild it from the newest
  snapshot plus the batches after it.
- ``flush``: fsync and advance ``recovery_point``, which the owner checkpoints
  (``recovery-point-offset-checkpoint``) together with ``log_start_offset``
  (``log-start-offset-checkpoint``) and passes back to ``Log.open`` after a restart. It comes in
  three parts so that the fsyncs can run on another thread: ``plan_flush`` (pure: which files, up
  to which offset), the fsyncs of the plan's paths (by whoever holds the plan), and
  ``commit_flush``, which advances the recovery point only then, and not at all when the log was
  truncated or closed since the plan (the fsynced bytes may no longer be the log's).
- disk waits: a log opened with a ``work_queue`` leaves every fsync, checkpoint and snapshot
  write and directory removal of a roll, a truncation, a deletion and ``close`` to ``LogWork``s
  on that queue, run later by someone else (log_work.py says in which order, and why a crash in
  between still recovers); without a queue it runs them at once.

- storage errors: an ``OSError`` in an operation takes the broker's log directory offline and
  fails it with KAFKA_STORAGE_ERROR, as does every later operation (log_dir_failure.py); a failed
  append leaves the log as it was before it, whatever part of it reached the file.

Crash safety. Everything ``Log.open`` needs is on disk: segments are found by file name, the
log start offset is the first segment's base offset unless the owner passes a larger one, and
segments at or after the recovery point are rescanned with CRCs and cut at the first torn or
corrupt batch (Kafka's recovery; later segments are deleted). Multi-file changes delete
segments from the highest offset down, so a crash part-way leaves a shorter but valid log,
which replication repairs.
"""
from __future__ import annotations

from actors.core.errors import ErrorCode, KafkaProtocolError
from actors.core.log.append_info import LogAppendInfo, _append_info
from actors.core.log.checkpoints import LEADER_EPOCH_CHECKPOINT
from actors.core.log.leader_epoch_cache import LeaderEpochCache
from actors.core.log.log_dir_failure import LogDirFailureChannel, storage_operation
from actors.core.log.log_config import LogConfig
from actors.core.log.log_validator import check_client_batches
from actors.core.log.log_work import FlushPlan, LogDurability, LogWork
from actors.core.log.producer_state import ProducerStateManager, load_state
from actors.core.log.retention import plan_deletions
from actors.core.log.record_batch import BatchHeader, as_byte_view, parse_batches, stamp_batch
from actors.core.log.segment import INT32_MAX, LOG_FILE_SUFFIX, FetchDataInfo, LogSegment, segment_file_name
from actors.core.log.segment_loading import load_segments
from actors.core.log.segment_swap import CLEANED_FILE_SUFFIX, swap_steps, write_cleaned
from actors.core.log.storage import Storage

__all__ = ["DELETED_DIRECTORY_SUFFIX", "FetchDataInfo", "FlushPlan", "Log", "LogAppendInfo", "LogWork"]

# A partition directory being deleted ends in this (Kafka's Log.DeleteDirSuffix).
DELETED_DIRECTORY_SUFFIX = "-delete"
# How much of the log one step of the producer-state replay reads.
PRODUCER_STATE_REPLAY_READ_BYTES = 1 << 20


class Log(LogDurability):
    """One partition replica's log; build it with ``Log.open``."""

    def __init__(self, storage: Storage, directory: str, config: LogConfig,
                 segments: list[LogSegment], *, log_start_offset: int, recovery_point: int,
                 work_queue: list[LogWork] | None = None,
                 failure_channel: LogDirFailureChannel | None = None) -> None:
        self._storage = storage
        # The broker's log directory (log_dir_failure.py): an I/O error here takes it offline.
        self._failure_channel = failure_channel if failure_channel is not None else LogDirFailureChannel()
        # Where this log's disk waits go (log_work.py); None: run them at once.
        self._work_queue = work_queue
        # Offsets of the producer-state snapshots this log has handed to the queue to write, and
        # of those it has handed to it to delete (such a file may still be on disk: never read it).
        self._snapshots_queued: set[int] = set()
        self._snapshots_doomed: set[int] = set()
        self._directory = directory
        self._config = config
        # Ordered by base offset and contiguous: segments[i].next_offset == segments[i+1].base_offset.
        # Never empty; the last one is the active segment.
        self._segments = segments
        # segments[0].base_offset <= log_start_offset <= log_end_offset.
        self._log_start_offset = log_start_offset
        # Everything below it has been fsynced; recovery_point <= log_end_offset.
        self._recovery_point = recovery_point
        # How many times the log end moved down (or the log restarted); voids older flush plans.
        self._truncations = 0
        self._leader_epoch_cache = LeaderEpochCache(
            storage, f"{directory}/{LEADER_EPOCH_CHECKPOINT}",
            None if work_queue is None else lambda path, data: self._durably(files=((path, data),)))
        self._closed = False
        # Kafka's LogSegment.recover: a batch a recovery kept whose epoch is newer than the cache's
        # latest assigns it, so the cache covers the epochs of all the data at or above the
        # recovery point, whether their checkpoint write was durable or not (log_work.py).
        for segment in segments:
            for epoch, base_offset in segment.recovered_epoch_starts:
                if epoch > self._leader_epoch_cache.latest_epoch:
                    self._leader_epoch_cache.assign(epoch, base_offset)
            segment.recovered_epoch_starts = []
        # Kafka's order on open: drop epochs for data that did not survive, then before the start.
        self._leader_epoch_cache.truncate_from_end(self.log_end_offset)
        self._leader_epoch_cache.truncate_from_start(self._log_start_offset)
        self._check_segment_chain()
        self._check_invariants()
        self._producer_state = self._load_producer_state()

    # -- opening and recovery --------------------------------------------------------------

    @classmethod
    def open(cls, storage: Storage, directory: str, config: LogConfig, *,
             recovery_point: int = 0, log_start_offset: int = 0,
             work_queue: list[LogWork] | None = None,
             failure_channel: LogDirFailureChannel | None = None) -> Log:
        """Opens (creating if needed) the log in ``directory`` and recovers it.

        ``recovery_point`` and ``log_start_offset`` come from the owner's checkpoint files; the
        defaults rescan every segment and take the first segment's base offset as the start.
        """
        assert recovery_point >= 0 and log_start_offset >= 0, (recovery_point, log_start_offset)
        storage.make_dir(directory)
        segments = load_segments(storage, directory, config, recovery_point)
        if segments and segments[-1].next_offset < log_start_offset:
            # Kafka: the files lost data the checkpoint says existed; restart at the log start.
            for segment in reversed(segments):
                segment.delete()
            segments = []
        if not segments:
            segments = [LogSegment.create(storage, directory, log_start_offset,
                                          index_interval_bytes=config.index_interval_bytes)]
        log_end_offset = segments[-1].next_offset
        start = max(log_start_offset, segments[0].base_offset)
        recovery_point = max(segments[0].base_offset, min(recovery_point, log_end_offset))
        return cls(storage, directory, config, segments,
                   log_start_offset=start, recovery_point=recovery_point, work_queue=work_queue,
                   failure_channel=failure_channel)

    def _load_producer_state(self):
        return load_state(self._storage, self._directory, log_start_offset=self._log_start_offset,
                          log_end_offset=self.log_end_offset, headers_from=self._headers_from,
                          delete_above=lambda offset: self._delete_snapshots(above=offset),
                          skip=self._snapshots_doomed)

    def _headers_from(self, offset: int):
        """The headers of the batches from the one holding ``offset`` to the end (replay)."""
        while offset < self.log_end_offset:
            info = self.read(offset, PRODUCER_STATE_REPLAY_READ_BYTES)
            if not info.records:
                return
            yield from (h for h in parse_batches(info.records, check_crc=False) if h.last_offset >= offset)
            offset = info.last_offset + 1

    # -- properties ------------------------------------------------------------------------

    @property
    def directory(self) -> str:
        return self._directory

    @property
    def config(self) -> LogConfig:
        return self._config

    def reconfigure(self, config: LogConfig) -> None:
        """Apply a topic's configuration to a log opened with the broker's defaults (after a restart)."""
        self._config = config

    @property
    def log_start_offset(self) -> int:
        return self._log_start_offset

    @property
    def log_end_offset(self) -> int:
        return self._segments[-1].next_offset

    @property
    def recovery_point(self) -> int:
        return self._recovery_point

    @property
    def truncations(self) -> int:
        """How many times this log was truncated since it was opened (a cleaning planned before a
        truncation is dropped: its offset map may name offsets that are gone, cleaner_manager.py)."""
        return self._truncations

    @property
    def producer_state(self) -> ProducerStateManager:
        return self._producer_state

    @property
    def leader_epoch_cache(self) -> LeaderEpochCache:
        return self._leader_epoch_cache

    @property
    def latest_epoch(self) -> int:
        return self._leader_epoch_cache.latest_epoch

    @property
    def size_in_bytes(self) -> int:
        return sum(segment.size_bytes for segment in self._segments)

    @property
    def number_of_segments(self) -> int:
        return len(self._segments)

    @property
    def segments(self) -> tuple[LogSegment, ...]:
        return tuple(self._segments)

    @property
    def active_segment(self) -> LogSegment:
        return self._segments[-1]

    def __repr__(self) -> str:
        return (f"Log({self._directory!r}, log_start_offset={self._log_start_offset}, "
                f"log_end_offset={self.log_end_offset}, segments={len(self._segments)})")

    # -- appends ---------------------------------------------------------------------------

    def _validate(self, view: memoryview, *, from_client: bool) -> tuple[BatchHeader, ...]:
        """Every check an append makes before it writes anything; raises KafkaProtocolError."""
        headers = parse_batches(view)  # CORRUPT_MESSAGE: empty, torn, malformed, bad CRC
        if len(view) > self._config.segment_bytes:
            raise KafkaProtocolError(ErrorCode.RECORD_LIST_TOO_LARGE,
                                     f"{len(view)} bytes exceed segment.bytes {self._config.segment_bytes}")
        for header in headers:
            if header.size_in_bytes > self._config.max_message_bytes:
                raise KafkaProtocolError(
                    ErrorCode.MESSAGE_TOO_LARGE, f"batch of {header.size_in_bytes} bytes exceeds "
                    f"max.message.bytes {self._config.max_message_bytes}")
            # Kafka's LogValidator checks this for client batches only (compaction may leave
            # replicated batches with fewer records than their offset range).
            if from_client and (header.records_count == 0
                                or header.last_offset_delta != header.records_count - 1):
                raise KafkaProtocolError(
                    ErrorCode.INVALID_RECORD, f"batch at position {header.position} has "
                    f"{header.records_count} records but last_offset_delta {header.last_offset_delta}")
        if from_client:
            check_client_batches(view, headers, compacted=self._config.compact)
        return headers

    @storage_operation
    def append_as_leader(self, records, leader_epoch: int) -> LogAppendInfo:
        """Appends a producer's batches, stamping offsets from the LEO and ``leader_epoch``."""
        self._check_open()
        if leader_epoch < 0:
            raise ValueError(f"leader epoch {leader_epoch} is not a valid epoch")
        view = as_byte_view(records)
        headers = self._validate(view, from_client=True)
        duplicate = self._producer_state.check_append(headers)  # or a refusal: INVALID_PRODUCER_EPOCH, ...
        if duplicate is not None:
            # Kafka answers a retried batch it already has with the original's offsets.
            return LogAppendInfo(first_offset=duplicate.first_offset, last_offset=duplicate.last_offset,
                                 batch_count=0, record_count=0, max_timestamp=duplicate.timestamp, size_in_bytes=0)
        buffer = bytearray(view)
        stamped, next_offset = [], self.log_end_offset
        for header in headers:
            stamped.append(stamp_batch(buffer, header, base_offset=next_offset,
                                       partition_leader_epoch=leader_epoch))
            next_offset = stamped[-1].next_offset
        return self._append(buffer, tuple(stamped))

    @storage_operation
    def append_as_follower(self, records) -> LogAppendInfo:
        """Appends a leader's batches as they are; they must continue this log exactly."""
        self._check_open()
        view = as_byte_view(records)
        headers = self._validate(view, from_client=False)
        expected_offset = self.log_end_offset
        for header in headers:
            if header.base_offset < expected_offset:
                # Kafka's UnexpectedAppendOffsetException (first batch) / OffsetsOutOfOrderException.
                # A batch further on is a gap a cleaning of the leader's log left: taken as it is.
                raise KafkaProtocolError(
                    ErrorCode.UNKNOWN_SERVER_ERROR,
                    f"unexpected append offset: batch at position {header.position} starts at "
                    f"{header.base_offset}, expected at least {expected_offset} (log end offset "
                    f"{self.log_end_offset})")
            expected_offset = header.next_offset
        return self._append(view, headers)

    def _append(self, data, headers: tuple[BatchHeader, ...]) -> LogAppendInfo:
        self._maybe_roll(len(data), headers[-1].last_offset, max(h.max_timestamp for h in headers))
        # As Kafka does, the epoch cache learns of each batch's epoch before the data is written;
        # a crash in between is undone on open (truncate_from_end at the recovered LEO). Only the
        # first batch of each run of one epoch can change it (a later one starts further on), so
        # an append of many small batches asks once per run.
        previous_epoch = None
        for header in headers:
            epoch = header.partition_leader_epoch
            if epoch >= 0 and epoch != previous_epoch:
                self._leader_epoch_cache.assign(epoch, header.base_offset)
            previous_epoch = epoch
        try:
            self._segments[-1].append(data, headers)
        except OSError:  # nothing was appended: the epochs assigned above for it go again
            self._leader_epoch_cache.truncate_from_end(self.log_end_offset)
            raise
        for header in headers:
            self._producer_state.record(header)
        self._check_invariants()
        return _append_info(headers, len(data))

    def _maybe_roll(self, append_size_bytes: int, last_offset: int, max_timestamp_ms: int) -> None:
        """Kafka's ``shouldRoll``: the append would pass segment.bytes, or its offsets would not fit
        the index, or its timestamps are segment.ms past the active segment's first batch."""
        active = self._segments[-1]
        if active.is_empty:
            return
        fits = active.size_bytes + append_size_bytes <= self._config.segment_bytes
        if fits and last_offset - active.base_offset <= INT32_MAX:
            waited_ms = active.time_waited_for_roll(max_timestamp_ms)
            if waited_ms is None or waited_ms <= self._config.segment_ms:
                return
        self._roll()

    def _roll(self) -> None:
        """Starts a new active segment at the LEO. As Kafka's roll does, the old segment's flush
        is scheduled, not awaited (the recovery point reaches the roll offset when it is done),
        and the producer state is snapshotted, so a restart replays at most the active segment;
        the snapshot is written after the fsync, in the same work."""
        plan = self.plan_flush()
        snapshot = self._snapshot_file()
        self._segments.append(LogSegment.create(
            self._storage, self._directory, self.log_end_offset,
            index_interval_bytes=self._config.index_interval_bytes))
        self._check_segment_chain()
        self._durably(fsync_paths=plan.paths if plan else (), files=(snapshot,), flush_plan=plan)

    # -- reads -----------------------------------------------------------------------------

    @storage_operation
    def read(self, start_offset: int, max_bytes: int, *, max_offset: int | None = None,
             min_one_batch: bool = True) -> FetchDataInfo:
        """Whole batches from the one holding ``start_offset``, from a single segment.

        ``max_offset`` is exclusive (the high watermark for consumers): a batch whose last offset
        reaches it is not returned. Raises OFFSET_OUT_OF_RANGE when ``start_offset`` is outside
        [log_start_offset, log_end_offset].
        """
        self._check_open()
        log_end_offset = self.log_end_offset
        if start_offset > log_end_offset or start_offset < self._log_start_offset:
            raise KafkaProtocolError(
                ErrorCode.OFFSET_OUT_OF_RANGE, f"offset {start_offset} is outside "
                f"[{self._log_start_offset}, {log_end_offset}] of {self._directory}")
        empty = FetchDataInfo(fetch_offset=start_offset, records=b"")
        if start_offset == log_end_offset or (max_offset is not None and start_offset >= max_offset):
            return empty
        # Kafka's loop: if the segment holding the offset has nothing at or after it, try the next.
        for segment in self._segments[self._segment_index_for(start_offset):]:
            info = segment.read(start_offset, max_bytes, max_offset=max_offset,
                                min_one_batch=min_one_batch)
            if info is not None:
                return info
        return empty

    def segment_base_offset(self, offset: int) -> int:
        """The base offset of the segment a read at ``offset`` starts in."""
        return self._segments[self._segment_index_for(offset)].base_offset

    @storage_operation
    def read_position(self, offset: int) -> tuple[int, int]:
        """(segment base offset, position) where a read at ``offset`` starts: LogOffsetMetadata."""
        segment = self._segments[self._segment_index_for(offset)]
        return segment.base_offset, segment.read_position(offset)

    def _segment_index_for(self, offset: int) -> int:
        """Index of the last segment whose base offset is <= ``offset`` (binary search)."""
        low, high = 0, len(self._segments) - 1
        while low < high:
            middle = (low + high + 1) // 2
            if self._segments[middle].base_offset <= offset:
                low = middle
            else:
                high = middle - 1
        return low

    def end_offset_for_epoch(self, leader_epoch: int) -> tuple[int, int]:
        """(epoch, end offset) for OffsetsForLeaderEpoch (KIP-279), with this log's LEO."""
        return self._leader_epoch_cache.end_offset_for(leader_epoch, self.log_end_offset)

    # -- moving the ends -------------------------------------------------------------------

    @storage_operation
    def truncate_to(self, offset: int) -> bool:
        """Drops every offset >= ``offset``; returns whether anything was dropped.

        As in Kafka, an offset inside a batch drops that whole batch (the LEO ends below
        ``offset``); an offset below the first segment empties the log and restarts it there.
        """
        self._check_open()
        assert offset >= 0, offset
        if offset >= self.log_end_offset:
            # As Kafka does: an epoch this replica started as leader but never wrote to must go,
            # or a fetch naming it as the last fetched epoch diverges again and again.
            self._leader_epoch_cache.truncate_from_end(self.log_end_offset)
            return False
        if offset < self._segments[0].base_offset:
            self.truncate_fully_and_start_at(offset)
            return True
        while self._segments[-1].base_offset > offset:
            self._segments.pop().delete(sync=False)
        self._segments[-1].truncate_to(offset)
        self._truncations += 1
        # The cut and the deletes are made durable by a work, before the checkpoints that follow.
        self._durably(fsync_paths=(*self._segments[-1].durable_paths(), self._directory), truncation=True)
        log_end_offset = self.log_end_offset
        self._leader_epoch_cache.truncate_from_end(log_end_offset)
        self._recovery_point = min(self._recovery_point, log_end_offset)
        self._log_start_offset = min(self._log_start_offset, log_end_offset)
        self._check_segment_chain()
        self._check_invariants()
        self._producer_state = self._load_producer_state()
        return True

    @storage_operation
    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Deletes everything and restarts the log, empty, at ``offset`` (which survives reopen:
        the new segment's base offset records it)."""
        self._check_open()
        assert offset >= 0, offset
        while self._segments:
            self._segments.pop().delete(sync=False)
        self._truncations += 1
        segment = LogSegment.create(self._storage, self._directory, offset,
                                    index_interval_bytes=self._config.index_interval_bytes)
        self._segments = [segment]
        self._durably(fsync_paths=(*segment.durable_paths(), self._directory), truncation=True)
        self._leader_epoch_cache.clear()
        self._log_start_offset = offset
        self._recovery_point = offset
        self._delete_snapshots()
        self._producer_state = self._load_producer_state()
        self._check_invariants()

    @storage_operation
    def maybe_increment_log_start_offset(self, offset: int) -> bool:
        """Moves the log start up to ``offset`` (DeleteRecords); deletes segments wholly below it.

        Raises OFFSET_OUT_OF_RANGE beyond the LEO; returns whether the start moved.
        """
        self._check_open()
        if offset <= self._log_start_offset:
            return False
        if offset > self.log_end_offset:
            raise KafkaProtocolError(ErrorCode.OFFSET_OUT_OF_RANGE,
                                     f"cannot move the log start to {offset}, past the log end "
                                     f"offset {self.log_end_offset}")
        self._log_start_offset = offset
        self._leader_epoch_cache.truncate_from_start(offset)
        if self._segments[-1].next_offset <= offset and not self._segments[-1].is_empty:
            self._roll()  # keep an (empty) active segment when every batch goes
        self._delete_oldest_segments(sum(1 for following in self._segments[1:] if following.base_offset <= offset))
        self._producer_state.evict_below(offset)
        self._check_invariants()
        return True

    @storage_operation
    def delete_old_segments(self, now_ms: int, high_watermark: int) -> list[str]:
        """Kafka's ``deleteOldSegments``: whole segments below ``high_watermark`` that breach
        retention.ms or retention.bytes (with cleanup.policy delete) or lie wholly below the log
        start offset go, oldest first, never the active one; the log start offset moves up to the
        first segment left. Returns why each deletion happened, for the broker's log."""
        self._check_open()
        reasons = []
        for reason, count in plan_deletions(self, now_ms, high_watermark):
            base_offsets = [segment.base_offset for segment in self._segments[:count]]
            self._delete_oldest_segments(count)
            if self._segments[0].base_offset > self._log_start_offset:
                self._log_start_offset = self._segments[0].base_offset
                self._leader_epoch_cache.truncate_from_start(self._log_start_offset)
                self._producer_state.evict_below(self._log_start_offset)
            reasons.append(f"deleted segments {base_offsets} of {self._directory} ({reason}); "
                           f"log start offset {self._log_start_offset}")
        self._check_invariants()
        return reasons

    def replace_segments(self, cleaned: tuple[tuple[int, bytes], ...]) -> list[int]:
        """Writes cleaned segments (base offset, batches: cleaner.clean_log) beside the segments of
        the same base offsets and swaps them in (``swap_cleaned``); cleaned bytes that do not end
        where their segment does now (made from a segment since truncated or replaced) are not."""
        self._check_open()
        by_base = {segment.base_offset: segment for segment in self._segments[:-1]}
        written = []
        for base, data in cleaned:
            segment = by_base.get(base)
            if segment is None or not data or parse_batches(data, check_crc=False)[-1].next_offset != segment.next_offset:
                continue
            write_cleaned(self._storage, self._directory, base, data)
            written.append((base, segment.next_offset, len(data)))
        return self.swap_cleaned(tuple(written))

    @storage_operation
    def swap_cleaned(self, cleaned: tuple[tuple[int, int, int], ...]) -> list[int]:
        """Swaps in cleaned segments whose ``.cleaned`` files are written (base offset, the next
        offset the segment had when it was cleaned, the file's size) with segment_swap.py's
        protocol, skipping any whose segment is no longer a non-active segment of this log ending
        at that offset (truncated, deleted or rolled since) or whose file is not whole; returns the
        base offsets swapped. Each new segment ends where its original did (the cleaner keeps the
        last batch), which is checked once it is loaded."""
        self._check_open()
        by_base = {segment.base_offset: index for index, segment in enumerate(self._segments[:-1])}
        chosen, stale = [], []
        for base, next_offset, size_bytes in cleaned:
            path = f"{self._segments[by_base[base]].log_path}{CLEANED_FILE_SUFFIX}" if base in by_base else None
            if (path is not None and self._segments[by_base[base]].next_offset == next_offset
                    and self._storage.exists(path) and self._storage.file_size(path) == size_bytes):
                chosen.append(by_base[base])
            else:
                stale.append(base)
        for base in stale:  # a cleaned file nobody will swap in
            self._storage.delete(f"{self._directory}/{segment_file_name(base, LOG_FILE_SUFFIX)}{CLEANED_FILE_SUFFIX}")
        for step in swap_steps(self._storage, [self._segments[index] for index in chosen], self._directory):
            step()
        for index in chosen:
            old = self._segments[index]
            segment, dropped_bytes = LogSegment.recover_from_files(
                self._storage, self._directory, old.base_offset,
                index_interval_bytes=self._config.index_interval_bytes)
            assert not dropped_bytes, (old.base_offset, dropped_bytes)
            segment.recovered_epoch_starts = []
            assert segment.next_offset == old.next_offset, (segment, old.next_offset)
            self._segments[index] = segment
        self._check_segment_chain()
        self._check_invariants()
        return [self._segments[index].base_offset for index in chosen]

    def _delete_oldest_segments(self, count: int) -> None:
        """Drops the first ``count`` segments (never the active one): their files are renamed at
        once and deleted by a work, off the caller's thread (Kafka's asyncDelete)."""
        assert 0 <= count < len(self._segments), (count, self)
        if count == 0:
            return
        renamed: list[str] = []
        for segment in self._segments[:count]:
            renamed.extend(segment.rename_for_deletion())
        del self._segments[:count]
        self._durably(fsync_paths=(self._directory,), delete_paths=tuple(renamed))
        # A snapshot before the first segment describes batches that are gone.
        self._delete_snapshots(below=self._segments[0].base_offset)
        self._check_segment_chain()

    # -- durability and lifecycle ----------------------------------------------------------

    @storage_operation
    def close(self) -> None:
        """Flushes everything and snapshots the producer state (with a work queue: plans that,
        the owner waits for it); the log must not be used afterwards."""
        if not self._closed:
            plan = self.plan_flush()
            self._durably(fsync_paths=plan.paths if plan else (), files=(self._snapshot_file(),),
                          flush_plan=plan)
            self._closed = True

    @storage_operation
    def delete(self) -> None:
        """Deletes the whole partition directory; the log must not be used afterwards. As Kafka
        does, the directory is first renamed to ``<name>.<n>-delete`` (at once, so that the name is
        free for a new replica), then removed (by a work with a queue)."""
        self._closed = True
        trash = next(f"{self._directory}.{n}{DELETED_DIRECTORY_SUFFIX}" for n in range(1 << 30)
                     if not self._storage.exists(f"{self._directory}.{n}{DELETED_DIRECTORY_SUFFIX}"))
        self._storage.rename(self._directory, trash, sync=False)
        self._durably(fsync_paths=("",), delete_paths=(trash,))

    # -- invariants ------------------------------------------------------------------------

    def _check_open(self) -> None:
        assert not self._closed, f"{self._directory} is closed"

    def _check_invariants(self) -> None:
        log_end_offset = self.log_end_offset
        assert self._segments[0].base_offset <= self._log_start_offset <= log_end_offset, self
        assert 0 <= self._recovery_point <= log_end_offset, (self._recovery_point, self)
        # <=, not <: moving the log start to the LEO moves the last epoch's start there too.
        latest = self._leader_epoch_cache.latest_entry
        assert latest is None or latest.start_offset <= log_end_offset, (latest, self)

    def _check_segment_chain(self) -> None:
        assert self._segments, self._directory
        for previous, segment in zip(self._segments, self._segments[1:]):
            assert previous.next_offset == segment.base_offset, (previous.base_offset, segment.base_offset)
