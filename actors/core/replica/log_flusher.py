"""Kafka's log flushes and offset checkpoints: planned here, run off the core's thread.

Theory of operation. Two of Kafka's scheduler tasks live here, and the queue of every log's own
disk waits (rolls, truncations, deletions, epoch checkpoints, snapshots: actors/core/log/log_work.py
says what each is and in which order it must be durable). Every
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

The logs' own works: every log of this broker appends its ``LogWork``s to ``work_queue``; the
replica manager calls ``collect`` at the end of each step that may have changed a log (and on
every tick), which merges the queued works into one ``StorageWork`` in order (a truncation among
them adds the recovery-point and log-start checkpoints, as Kafka's ``LogManager.truncateTo``
does). Its done report commits the roll flushes in it. ``hold`` keeps a step's answers back until
its works are done: a follower's truncation and a partition's deletion are answered only once
durable (log_work.py says why). ``plan_shutdown`` is the clean shutdown's one last work.

Limits: a periodic task starts no work while one of its own is in flight (a flush counts until its
checkpoints are written), so at most one flush and one periodic high-watermark checkpoint are in
flight; a StopReplica that deletes partitions adds one high-watermark checkpoint more. The logs'
works are one per step that changed a log, as many as the driver has not yet finished (each step
that queues one also did the I/O it makes durable, which bounds them as the requests are bounded). The driver
runs the works in the order given, so two writes of one checkpoint file land in the order planned. A failed work
(an I/O error) commits nothing and takes the broker's log directory offline, as Kafka's flush does on
an IOException (actors/core/replica/log_dir_failure_handler.py: after a failed fsync nothing since the
last good one can be trusted); it releases what it held (the answer is true of the log, only not
durable). ``stop`` (the directory failed) ends both tasks: nothing is planned or committed again.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from actors.core.effects import Effect, LogEvent, Respond, StorageWork
from actors.core.log.checkpoints import (
    LOG_START_OFFSET_CHECKPOINT, RECOVERY_POINT_OFFSET_CHECKPOINT, REPLICATION_OFFSET_CHECKPOINT,
    offset_checkpoint_bytes,
)
from actors.core.log.log import FlushPlan, Log, LogWork

FLUSH, FLUSH_CHECKPOINTS, HIGH_WATERMARKS = "flush", "flush checkpoints", "high-watermark checkpoint"
LOG_WORK, SHUTDOWN = "log work", "shutdown"


@dataclass
class _Work:
    kind: str
    plans: tuple[tuple[Log, FlushPlan], ...] = ()  # committed when a FLUSH or LOG_WORK work is done
    held: list[Effect] | None = None  # answers released when this work is done


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
        # Every log's LogWorks, in the order planned, until ``collect`` hands them on.
        self.work_queue: list[LogWork] = []
        # The id of the last logs' work started (works run in order: when it is done, all are).
        self._last_log_work_id = -1
        self.stopped = False  # the log directory failed: nothing is planned or committed any more

    def stop(self) -> None:
        self.stopped = True
        self.work_queue.clear()  # in place: every log holds this list
        self._in_flight.clear()

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
        if self.stopped:
            return []
        # The logs' works first: a flush planned now must run after them (an epoch checkpoint
        # planned before the flush that makes its batches trusted; see log_work.py).
        effects: list[Effect] = [*self.collect()]
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

    def recovery_checkpoints(self, *, at_log_end: bool = False) -> tuple[tuple[str, bytes], ...]:
        """The recovery points (committed ones only, or with ``at_log_end`` every log's end, for a
        work whose fsyncs reach it first) and log start offsets, as checkpoint files."""
        return ((RECOVERY_POINT_OFFSET_CHECKPOINT, offset_checkpoint_bytes(
                    {tp: partition.log.log_end_offset if at_log_end else partition.log.recovery_point
                     for tp, partition in self._partitions.items()})),
                (LOG_START_OFFSET_CHECKPOINT, offset_checkpoint_bytes(
                    {tp: partition.log.log_start_offset for tp, partition in self._partitions.items()})))

    def on_storage_done(self, work_id: int, error: str | None) -> list[Effect]:
        """A work the driver ran finished: commit what it made durable (see the module docstring)."""
        work = self._in_flight.pop(work_id, None)
        if work is None:
            return []  # not one of ours, or already answered: nothing waits for it
        released = work.held or []
        if error is not None:
            self._owner.log_dir_failure_channel.mark_offline(f"{work.kind} failed: {error}")
            return [LogEvent(level="warning", message=(
                f"broker {self._broker_id}: {work.kind} failed, nothing committed: {error}")), *released]
        if work.kind not in (FLUSH, LOG_WORK):
            return released
        for log, plan in work.plans:
            log.commit_flush(plan)
        if work.kind == LOG_WORK:
            return released
        return [self._start(_Work(FLUSH_CHECKPOINTS), files=self.recovery_checkpoints())]

    # ------------------------------------------------------------------------ the logs' works
    def collect(self, *, shutdown: bool = False) -> list[StorageWork]:
        """The logs' queued works as one ``StorageWork`` (none if the queue is empty)."""
        if self.stopped or (not self.work_queue and not shutdown):
            self.work_queue.clear()
            return []
        works = list(self.work_queue)
        self.work_queue.clear()  # in place: every log holds this list
        fsync_paths: dict[str, None] = {}  # ordered and without repeats
        files: dict[str, bytes] = {}  # the last contents planned for a path win
        delete_paths: dict[str, None] = {}
        for work in works:
            fsync_paths.update(dict.fromkeys(work.fsync_paths))
            for path, contents in work.files:
                files.pop(path, None)
                files[path] = contents
                delete_paths.pop(path, None)  # deleted, then written anew: the new file stays
            for path in work.delete_paths:
                delete_paths[path] = None
                files.pop(path, None)  # written and deleted in one work: the delete runs last anyway
        if shutdown:
            files.update((path, contents) for path, contents in self._checkpoints_at_shutdown())
        elif any(work.truncation for work in works):
            files.update(self.recovery_checkpoints())
        plans = tuple((work.log, work.flush_plan) for work in works if work.flush_plan is not None)
        self._last_log_work_id = self._next_work_id  # the id _start gives it
        return [self._start(_Work(SHUTDOWN if shutdown else LOG_WORK, plans), fsync_paths=tuple(fsync_paths),
                            files=tuple(files.items()), delete_paths=tuple(delete_paths))]

    def hold(self, effects: list[Effect], request_id: int) -> list[Effect]:
        """``effects`` with this step's queued works; the answer to ``request_id`` waits for them,
        or, if this step queued none, for the logs' works still in flight (a retried truncation
        that finds nothing left to cut is not durable before the first one is)."""
        works = self.collect()
        last = works[-1].work_id if works else self._last_log_work_id
        if last not in self._in_flight:
            return effects
        answer = [e for e in effects if isinstance(e, Respond) and e.request_id == request_id]
        work = self._in_flight[last]
        work.held = (work.held or []) + answer
        return [e for e in effects if not any(e is held for held in answer)] + works

    def plan_shutdown(self) -> list[StorageWork]:
        """The last work (the logs closed first): their fsyncs and snapshots, then every checkpoint."""
        return self.collect(shutdown=True)

    def _checkpoints_at_shutdown(self) -> tuple[tuple[str, bytes], ...]:
        """The checkpoint files as the shutdown work leaves them: each closed log flushed to its end
        by the fsyncs that run before the files in that same work."""
        return (*self.recovery_checkpoints(at_log_end=True), self.high_watermark_checkpoint())
