"""Kafka's periodic log flush and offset checkpoints: planned here, run off the core's thread.

Theory of operation. Two of Kafka's scheduler tasks live here. Every
``log.flush.offset.checkpoint.interval.ms`` every log is flushed to its end and the recovery points
and log start offsets are checkpointed; every ``replica.high.watermark.checkpoint.interval.ms`` the
high watermarks are checkpointed. An fsync can take long, and the core's caller (an actor's event
loop) must keep answering requests meanwhile, so neither task does I/O here:

1. plan (``tick``): each log's ``plan_flush`` (which files, up to which offset) becomes one
   ``StorageWork`` effect listing the files to fsync; a high-watermark checkpoint becomes one
   listing the checkpoint file's new contents.
2. the work: the driver runs it on another thread (the simulator: as a later event).
3. commit (``on_storage_done``): each log's recovery point advances to what its plan made durable
   (``Log.commit_flush``, void for a log truncated, closed or deleted meanwhile); then the
   recovery-point and log-start checkpoints, which must never name an offset not yet fsynced, go
   out as a second ``StorageWork``.

Until its work is done a log's recovery point stays where it was, so a crash between plan and
commit loses only what no fsync covered, and the next start recovers from the old recovery point.

Limits: a periodic task starts no work while one of its own is in flight (a flush counts until its
checkpoints are written), so at most one flush and one periodic high-watermark checkpoint are in
flight; a StopReplica that deletes partitions adds one high-watermark checkpoint more. The driver
runs the works in the order given, so two writes of one checkpoint file land in the order planned. A failed work
(an I/O error) commits nothing and is logged as a warning; its task runs again at its next interval.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from actors.core.effects import Effect, LogEvent, StorageWork
from actors.core.log.checkpoints import (
    LOG_START_OFFSET_CHECKPOINT, RECOVERY_POINT_OFFSET_CHECKPOINT, REPLICATION_OFFSET_CHECKPOINT,
    offset_checkpoint_bytes,
)
from actors.core.log.log import FlushPlan, Log

FLUSH, FLUSH_CHECKPOINTS, HIGH_WATERMARKS = "flush", "flush checkpoints", "high-watermark checkpoint"


@dataclass(frozen=True)
class _Work:
    kind: str
    plans: tuple[tuple[Log, FlushPlan], ...] = ()  # committed when a FLUSH work is done


class LogFlusher:
    """The two tasks of one broker; ``owner.partitions`` is the replica manager's map, read anew
    each time (the simulator may swap in a map that watches its use)."""

    def __init__(self, broker_id: int, owner: Any, *, flush_interval_ms: int,
                 high_watermark_interval_ms: int, now_ms: int) -> None:
        self._broker_id = broker_id
        self._owner = owner
        self._flush_interval_ms = flush_interval_ms
        self._high_watermark_interval_ms = high_watermark_interval_ms
        self._last_flush_ms = now_ms
        self._last_high_watermark_ms = now_ms
        self._next_work_id = 0
        # Works handed to the driver and not yet done, by id: at most one per task.
        self._in_flight: dict[int, _Work] = {}

    @property
    def _partitions(self) -> dict:
        return self._owner.partitions

    def _busy(self, *kinds: str) -> bool:
        return any(work.kind in kinds for work in self._in_flight.values())

    def _start(self, work: _Work, **effect_fields) -> StorageWork:
        work_id = self._next_work_id
        self._next_work_id += 1
        self._in_flight[work_id] = work
        return StorageWork(work_id=work_id, **effect_fields)

    def tick(self, now_ms: int) -> list[Effect]:
        effects: list[Effect] = []
        if now_ms - self._last_high_watermark_ms >= self._high_watermark_interval_ms \
                and not self._busy(HIGH_WATERMARKS):
            self._last_high_watermark_ms = now_ms
            effects.append(self.plan_high_watermark_checkpoint())
        if now_ms - self._last_flush_ms >= self._flush_interval_ms and not self._busy(FLUSH, FLUSH_CHECKPOINTS):
            self._last_flush_ms = now_ms
            effects.append(self.plan_flush())
        return effects

    def plan_flush(self) -> StorageWork:
        """Flush every log to its end (the fsyncs only; the checkpoints follow the commit)."""
        plans = tuple((partition.log, plan) for partition in self._partitions.values()
                      if (plan := partition.log.plan_flush()) is not None)
        paths = tuple(path for _, plan in plans for path in plan.paths)
        return self._start(_Work(FLUSH, plans), fsync_paths=paths)

    def plan_high_watermark_checkpoint(self) -> StorageWork:
        return self._start(_Work(HIGH_WATERMARKS), files=(self.high_watermark_checkpoint(),))

    def high_watermark_checkpoint(self) -> tuple[str, bytes]:
        return REPLICATION_OFFSET_CHECKPOINT, offset_checkpoint_bytes(
            {tp: partition.high_watermark for tp, partition in self._partitions.items()})

    def recovery_checkpoints(self) -> tuple[tuple[str, bytes], ...]:
        """The recovery points (committed ones only) and log start offsets, as checkpoint files."""
        return ((RECOVERY_POINT_OFFSET_CHECKPOINT, offset_checkpoint_bytes(
                    {tp: partition.log.recovery_point for tp, partition in self._partitions.items()})),
                (LOG_START_OFFSET_CHECKPOINT, offset_checkpoint_bytes(
                    {tp: partition.log.log_start_offset for tp, partition in self._partitions.items()})))

    def on_storage_done(self, work_id: int, error: str | None) -> list[Effect]:
        """A work the driver ran finished: commit what it made durable (see the module docstring)."""
        work = self._in_flight.pop(work_id, None)
        if work is None:
            return []  # not one of ours, or already answered: nothing waits for it
        if error is not None:
            return [LogEvent(level="warning", message=(
                f"broker {self._broker_id}: {work.kind} failed, nothing committed: {error}"))]
        if work.kind != FLUSH:
            return []
        for log, plan in work.plans:
            log.commit_flush(plan)
        return [self._start(_Work(FLUSH_CHECKPOINTS), files=self.recovery_checkpoints())]

    @property
    def works_in_flight(self) -> int:
        return len(self._in_flight)
