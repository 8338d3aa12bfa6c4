"""The broker's half of log compaction: Kafka 2.4's ``LogCleanerManager`` for a cleaner that runs
in another actor (actors/log_cleaner.py).

Theory of operation. The broker owns its logs; its cleaner actor reads their files and writes the
cleaned ones, off the broker's event loop. A round is two calls from the cleaner:

1. ``grab_filthiest(logs, high_watermarks, now_ms)``: the dirtiest compacted log above its
   ``min.cleanable.dirty.ratio`` (cleaner.filthiest_log, with the ``cleaner-offset-checkpoint``),
   planned as plain data (cleaner.plan_cleaning) under a new round id, which supersedes any round
   before it (one cleaner per broker: an older round's answer is from a cleaner that died or was
   replaced). None when no log qualifies.
2. ``done_cleaning(cleaned, logs)``: the cleaner read the plan's segments, cleaned them and wrote
   their ``.cleaned`` files (cleaner.write_cleaned_segments). If the round is still the current
   one and the log is still the one planned, the cleaned segments are swapped in
   (``Log.swap_cleaned``, which skips any segment truncated, deleted or replaced meanwhile) and the
   checkpoint moves to the round's end offset. Appends went on all the while: the plan never holds
   the active segment, and only the swap, a few renames and the reload of the cleaned segments,
   runs on the broker.

A cleaner killed in the middle of a round leaves at most ``.cleaned`` files, which the next round
of that log overwrites, a stale answer removes, and ``Log.open`` removes (segment_swap.py); the
live log is untouched until the broker swaps.
"""
from __future__ import annotations

from collections.abc import Mapping

from actors.core.log.checkpoints import CLEANER_OFFSET_CHECKPOINT, OffsetCheckpointFile
from actors.core.log.cleaner import CleanedSegments, CleaningPlan, filthiest_log, plan_cleaning
from actors.core.log.segment import LOG_FILE_SUFFIX, segment_file_name
from actors.core.log.segment_swap import CLEANED_FILE_SUFFIX
from actors.core.log.storage import Storage

__all__ = ["LogCleanerManager"]


class LogCleanerManager:
    """The rounds of one broker's cleaner and its ``cleaner-offset-checkpoint``."""

    def __init__(self, storage: Storage) -> None:
        self._storage = storage
        self._checkpoint = OffsetCheckpointFile(storage, CLEANER_OFFSET_CHECKPOINT)
        self._next_round_id = 1
        # The round being carried out: (round id, key, the Log object planned, its truncations then).
        self._round: tuple[int, object, object, int] | None = None

    def checkpoints(self) -> dict:
        return self._checkpoint.read() if self._storage.exists(self._checkpoint.path) else {}

    def grab_filthiest(self, logs: Mapping, high_watermarks: Mapping, now_ms: int) -> CleaningPlan | None:
        to_clean = filthiest_log(logs, self.checkpoints(), now_ms, high_watermarks)
        if to_clean is None:
            self._round = None
            return None
        round_id, self._next_round_id = self._next_round_id, self._next_round_id + 1
        self._round = (round_id, to_clean.key, to_clean.log, to_clean.log.truncations)
        return plan_cleaning(to_clean, round_id)

    def done_cleaning(self, cleaned: CleanedSegments, logs: Mapping) -> str:
        """Swaps in what the round made, if it is still current; returns a line for the log."""
        current = self._round
        log = logs.get(cleaned.key)
        if current is None or current[:3] != (cleaned.round_id, cleaned.key, log):
            return f"round {cleaned.round_id} for {cleaned.key} is stale (current: {current and current[0]}); dropped"
        self._round = None
        if log.truncations != current[3]:
            # Kafka aborts a cleaning when its log is truncated: the offset map may name offsets that
            # are gone, and cleaning by it would drop the only value left of a key.
            for base, _, _ in cleaned.segments:
                self._storage.delete(f"{log.directory}/{segment_file_name(base, LOG_FILE_SUFFIX)}{CLEANED_FILE_SUFFIX}")
            return f"round {cleaned.round_id} for {cleaned.key} aborted: the log was truncated meanwhile"
        swapped = log.swap_cleaned(cleaned.segments)
        checkpoints = {key: offset for key, offset in self.checkpoints().items() if key in logs}
        checkpoints[cleaned.key] = cleaned.end_offset
        self._checkpoint.write(checkpoints)
        return f"{cleaned.summary}, segments {swapped} swapped in"
