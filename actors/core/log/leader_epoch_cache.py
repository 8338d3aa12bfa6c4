"""Which leader epoch wrote which offsets: Kafka 2.4's ``LeaderEpochFileCache`` (KIP-101/279).

Theory of operation. The cache owns a list of ``EpochEntry(epoch, start_offset)``: the first
offset each leader epoch wrote to this replica's log. Epochs and start offsets are both strictly
increasing along the list. It changes in four ways, each persisted to the
``leader-epoch-checkpoint`` file: before the call returns, or, when the owner passes ``write``, by
handing the file's new contents to it (the log plans the write as storage work that runs off the
caller's thread; see actors/core/log/log_work.py for why that is safe):

- ``assign``: the log appended a batch stamped with an epoch (leader or follower append).
- ``truncate_from_end``: the log was truncated (follower truncation, recovery).
- ``truncate_from_start``: the log start offset moved up (retention, DeleteRecords).
- ``clear``: the log was emptied and restarted at a new offset.

``end_offset_for`` answers OffsetsForLeaderEpoch: the largest epoch <= the requested one and the
offset where it ended, which a follower uses to find where its log diverges from the leader's.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from actors.core.log.checkpoints import CheckpointFileError, LeaderEpochCheckpointFile, leader_epoch_checkpoint_bytes
from actors.core.log.storage import Storage

UNDEFINED_EPOCH = -1
UNDEFINED_EPOCH_OFFSET = -1


class EpochEntry(NamedTuple):
    epoch: int
    start_offset: int


class LeaderEpochCache:
    """Kafka's leader-epoch cache for one partition replica, persisted through ``Storage``."""

    def __init__(self, storage: Storage, checkpoint_path: str,
                 write: Callable[[str, bytes], None] | None = None) -> None:
        self._checkpoint = LeaderEpochCheckpointFile(storage, checkpoint_path)
        self._write = write
        # Strictly increasing in both epoch and start_offset (checked by _check_invariants).
        self._entries: list[EpochEntry] = []
        loaded = [EpochEntry(epoch, start_offset) for epoch, start_offset in self._checkpoint.read()]
        for entry in loaded:
            if entry.epoch < 0 or entry.start_offset < 0:
                raise CheckpointFileError(checkpoint_path, f"negative entry {tuple(entry)}")
        # Kafka replays the file through assign(), which repairs a non-monotonic file.
        for entry in loaded:
            self._assign_in_memory(entry)
        if self._entries != loaded:
            self._flush()

    # -- queries ---------------------------------------------------------------------------

    @property
    def checkpoint_path(self) -> str:
        return self._checkpoint.path

    @property
    def entries(self) -> tuple[EpochEntry, ...]:
        return tuple(self._entries)

    @property
    def latest_entry(self) -> EpochEntry | None:
        return self._entries[-1] if self._entries else None

    @property
    def latest_epoch(self) -> int:
        """The latest epoch with an entry, or -1 if there is none."""
        return self._entries[-1].epoch if self._entries else UNDEFINED_EPOCH

    @property
    def earliest_entry(self) -> EpochEntry | None:
        return self._entries[0] if self._entries else None

    def __len__(self) -> int:
        return len(self._entries)

    def end_offset_for(self, requested_epoch: int, log_end_offset: int) -> tuple[int, int]:
        """(epoch, end_offset) for OffsetsForLeaderEpoch, exactly as Kafka 2.4's ``endOffsetFor``.

        - requested -1, or nothing known above it: (-1, -1).
        - requested is the latest epoch: (latest, log_end_offset).
        - otherwise: the largest epoch <= requested, ended by the start offset of the first epoch
          above the requested one; if no epoch <= requested is known (the log start moved past
          it), (requested, start offset of the first epoch above it).
        """
        if requested_epoch == UNDEFINED_EPOCH:
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        if self._entries and self._entries[-1].epoch == requested_epoch:
            return requested_epoch, log_end_offset
        higher = next((entry for entry in self._entries if entry.epoch > requested_epoch), None)
        if higher is None:
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        floor = None
        for entry in self._entries:
            if entry.epoch > requested_epoch:
                break
            floor = entry
        if floor is None:
            return requested_epoch, higher.start_offset
        return floor.epoch, higher.start_offset

    # -- changes ---------------------------------------------------------------------------

    def assign(self, epoch: int, start_offset: int) -> bool:
        """Records that ``epoch`` starts at ``start_offset``; returns whether the cache changed.

        Kafka's rules: nothing to do when the latest entry already has this epoch and starts at or
        before ``start_offset``. Otherwise entries that would break monotonicity (epoch >= epoch
        or start_offset >= start_offset) are dropped from the end, the new entry is appended, and
        the checkpoint is rewritten. The latest append is trusted over older entries.
        """
        if epoch < 0 or start_offset < 0:
            raise ValueError(f"invalid leader epoch entry (epoch={epoch}, start_offset={start_offset})")
        if not self._assign_in_memory(EpochEntry(epoch, start_offset)):
            return False
        self._flush()
        return True

    def truncate_from_end(self, end_offset: int) -> bool:
        """Drops every entry with start_offset >= end_offset (the log now ends there)."""
        if end_offset < 0 or not self._entries or self._entries[-1].start_offset < end_offset:
            return False
        while self._entries and self._entries[-1].start_offset >= end_offset:
            self._entries.pop()
        self._flush()
        return True

    def truncate_from_start(self, start_offset: int) -> bool:
        """Drops entries wholly before ``start_offset`` (the new log start offset).

        The last entry starting at or before ``start_offset`` is kept, moved up to start there:
        its epoch still owns the offsets from the new log start. Exclusive, like Kafka's:
        an entry starting exactly at ``start_offset`` is kept unchanged.
        """
        removed = 0
        while removed < len(self._entries) and self._entries[removed].start_offset <= start_offset:
            removed += 1
        if removed == 0:
            return False
        replacement = EpochEntry(self._entries[removed - 1].epoch, start_offset)
        if removed == 1 and self._entries[0] == replacement:
            return False
        self._entries[:removed] = [replacement]
        self._check_invariants()
        self._flush()
        return True

    def clear(self) -> None:
        """Drops every entry and persists the empty cache."""
        self._entries.clear()
        self._flush()

    # -- internals -------------------------------------------------------------------------

    def _assign_in_memory(self, entry: EpochEntry) -> bool:
        latest = self.latest_entry
        if latest is not None and latest.epoch == entry.epoch and entry.start_offset >= latest.start_offset:
            return False
        while self._entries and (self._entries[-1].epoch >= entry.epoch
                                 or self._entries[-1].start_offset >= entry.start_offset):
            self._entries.pop()
        self._entries.append(entry)
        self._check_invariants()
        return True

    def _check_invariants(self) -> None:
        for previous, entry in zip(self._entries, self._entries[1:]):
            assert previous.epoch < entry.epoch, self._entries
            assert previous.start_offset < entry.start_offset, self._entries

    def _flush(self) -> None:
        if self._write is None:
            self._checkpoint.write(self._entries)
        else:
            self._write(self._checkpoint.path, leader_epoch_checkpoint_bytes(self._entries))
