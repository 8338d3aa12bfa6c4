"""The log's disk waits, planned on the caller's thread and run by someone else: what, and in which order.

Theory of operation. A ``Log`` (log.py) does its reads, appends, ``ftruncate``s, unlinks and
renames itself: they are quick, and whatever they wrote is in the kernel. What can take long is
making things durable: fsyncs, checkpoint and snapshot files (each written to a temporary file,
fsynced, renamed), directory fsyncs and the removal of a deleted partition's files. A log given a
``work_queue`` (the broker's, from the replica manager's ``LogFlusher``) does none of that itself:
it appends a ``LogWork`` to the queue, and the flusher hands the works of one step to the driver as
one ``StorageWork`` effect, which the driver runs off its thread, one work at a time, in the order
planned. A log without a queue (unit tests, offline tools) runs each ``LogWork`` at once.

Inside a work the fsyncs run first, then the files are written, then the paths deleted; works
run in the order planned. So "A is durable before B" holds whenever A was planned before B or
sits earlier in the same work; the cases below rely on nothing else. A crash (or a killed
process) may come at any point; what was not yet run is then not durable, and ``Log.open``
rebuilds from what is on disk: segments from the recovery point on are rescanned with CRCs, and
the leader epochs of the batches it kept are assigned to the epoch cache again (Kafka's
``LogSegment.recover``), so the epoch cache covers every batch on disk at or above the recovery
point whatever the checkpoint file says.

Per case, as Kafka does it, and whether the core may go on before the work is durable:

- Segment roll (Kafka's ``Log.roll`` schedules "flush-log"): the old segment's fsync and the
  producer-state snapshot taken at the roll go into one work; appends go on to the new segment at
  once. The recovery point advances to the roll offset only when the work is reported done
  (``commit_flush``), and the snapshot is written after the fsync, so a durable snapshot never
  describes batches that are not. A crash before: the old recovery point rescans the old
  segment, and the snapshot is missing or older, so producer state is replayed from the log.
- Leader-epoch checkpoint (``assign`` on a new epoch, ``truncate_from_end``/``_from_start``,
  ``clear``): written by a work; the core goes on at once. A crash before it is durable loses
  entries only for batches the rescan assigns again: a batch below the durable recovery point was
  made durable by a flush planned after the batch's epoch was assigned, so its checkpoint write
  was planned, and ran, before that flush. An entry for an epoch with no batch yet (a new
  leader's) may be lost with the crash, which is as if the broker had crashed before leading.
- Truncation (Kafka's ``LogManager.truncateTo``, which checkpoints the recovery points right
  after): the cut itself is an ``ftruncate`` on the caller's thread; the fsync of the cut segment
  and of the directory, the epoch checkpoint and the broker's recovery-point checkpoint (now no
  higher than the cut) form one work. The core may NOT go on before it is durable: until the new
  recovery point is on disk, a restart would trust the old one, which lies above the cut, and take
  segments written after the cut as fsynced when they are not (a torn tail read as data). So a
  follower's truncation answers its fetcher only when the work is done (``LogFlusher.hold``), and
  the fetcher appends nothing to the partition before that answer. A crash before: the log is as
  before the truncation (or cut, which is a prefix), and the follower truncates again after the
  restart, as every follower does when it starts following.
- Partition deletion (StopReplica with delete; Kafka renames to ``-delete`` and deletes later): the
  directory is renamed on the caller's thread to ``<topic>-<partition>.<n>-delete`` (no directory
  fsync), so a partition recreated under the old name starts in a new, empty directory; the
  directory fsync and the removal of the renamed tree are a work. The StopReplica is answered only
  when that work is done: works planned before it may still write the old partition's checkpoint
  or snapshot by its path, and the controller's send thread sends this broker nothing more (such
  as the LeaderAndIsr that recreates the partition) until it has the answer; a write whose
  directory is gone is skipped. A crash before: either name may be on disk; a ``-delete``
  directory is removed at the next start, and a restored partition directory is a stray replica
  that no LeaderAndIsr names.
- Not covered by a wait: the high-watermark truncation policy's truncation on becoming a follower
  (a LeaderAndIsr, which also starts the fetcher) goes on at once; that policy exists to show the
  losses KIP-101 fixed. ``make_dir`` of a new partition and the unlink of segments and snapshots
  still touch the disk on the caller's thread (no fsync: their directory's fsync is a work).
- Clean shutdown: every log's last fsyncs and snapshot, then the recovery points (each log's end:
  the fsyncs come first in the same work), log start offsets and high watermarks, as one work the
  driver waits for before the process stops; nothing is answered once the shutdown began.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from actors.core.log.producer_state import snapshot_offsets, snapshot_path, snapshot_selected
from actors.core.log.storage import Storage, parent_of

__all__ = ["FlushPlan", "LogDurability", "LogWork", "run_log_work"]


@dataclass(frozen=True, slots=True)
class FlushPlan:
    """What making [recovery point, ``target_offset``) durable takes: fsync ``paths`` (a path
    deleted meanwhile needs nothing: its offsets left the log with it). ``truncations`` is the
    log's truncation count when planned; a commit after another truncation is void."""

    target_offset: int
    paths: tuple[str, ...]
    truncations: int


@dataclass(frozen=True, slots=True)
class LogWork:
    """One change's disk waits (see the module docstring); ``log`` commits ``flush_plan`` when done."""

    log: Any = None
    fsync_paths: tuple[str, ...] = ()
    files: tuple[tuple[str, bytes], ...] = ()
    delete_paths: tuple[str, ...] = ()
    flush_plan: FlushPlan | None = None
    # A truncation: the recovery-point checkpoint goes with it, and its requester waits for it.
    truncation: bool = False


def run_log_work(storage: Storage, fsync_paths, files, delete_paths) -> None:
    """Run a work's steps in their order: the fsyncs, then the files, then the deletes."""
    for path in fsync_paths:
        try:
            storage.fsync(path)
        except FileNotFoundError:
            continue  # deleted since the plan (truncated away, or the partition deleted)
    for path, contents in files:
        try:
            storage.write_file_atomically(path, contents)
        except FileNotFoundError:
            if storage.exists(parent_of(path)):
                raise
            # The partition was deleted since the plan (its directory renamed away): the file
            # belonged to it. A partition recreated under the name cannot be here yet: the
            # deletion is answered only when its work, planned after this one, is done.
    for path in delete_paths:
        storage.delete(path)


class LogDurability:
    """The part of ``Log`` that makes it durable: flush plans and commits, snapshot files, and
    handing disk waits to the work queue (or running them at once without one). Only ``Log``
    uses it; it reads and writes the log's own fields."""

    def _snapshot_file(self) -> tuple[str, bytes]:
        """The producer state's snapshot as a file to write (a later write replaces a doomed one)."""
        offset = self._producer_state.map_end_offset
        self._snapshots_doomed.discard(offset)
        self._snapshots_queued.add(offset)
        return snapshot_path(self._directory, offset), self._producer_state.to_snapshot()

    def _delete_snapshots(self, *, above: int | None = None, below: int | None = None) -> None:
        """Kafka's snapshot deletion, by a work: those on disk and those queued to be written."""
        offsets = (set(snapshot_offsets(self._storage, self._directory)) | self._snapshots_queued) \
            - self._snapshots_doomed
        doomed = sorted(o for o in offsets if snapshot_selected(o, above=above, below=below))
        if not doomed:
            return
        self._snapshots_queued.difference_update(doomed)
        self._snapshots_doomed.update(doomed)
        self._durably(delete_paths=tuple(snapshot_path(self._directory, o) for o in doomed))

    def _durably(self, *, fsync_paths: tuple[str, ...] = (), files: tuple[tuple[str, bytes], ...] = (),
                 delete_paths: tuple[str, ...] = (), flush_plan: FlushPlan | None = None,
                 truncation: bool = False) -> None:
        """Hand a change's disk waits to the work queue, or run them now without one."""
        work = LogWork(log=self, fsync_paths=fsync_paths, files=files, delete_paths=delete_paths,
                       flush_plan=flush_plan, truncation=truncation)
        if self._work_queue is not None:
            self._work_queue.append(work)
            return
        run_log_work(self._storage, fsync_paths, files, delete_paths)
        if flush_plan is not None:
            self.commit_flush(flush_plan)

    def schedule_flush(self) -> None:
        """Kafka's scheduled "flush-log": the flush to the LEO as a work (at once without a queue)."""
        self._check_open()
        plan = self.plan_flush()
        if plan is not None:
            self._durably(fsync_paths=plan.paths, flush_plan=plan)

    def flush(self, up_to_offset: int | None = None) -> None:
        """Fsyncs the segments holding [recovery_point, up_to_offset) and advances the recovery
        point there (default: the LEO), all at once on the caller's thread."""
        self._check_open()
        plan = self.plan_flush(up_to_offset)
        if plan is None:
            return
        for path in plan.paths:
            self._storage.fsync(path)
        committed = self.commit_flush(plan)
        assert committed, plan  # nothing can truncate or close the log between these lines

    def plan_flush(self, up_to_offset: int | None = None) -> FlushPlan | None:
        """What a flush to ``up_to_offset`` (default: the LEO) must fsync; None if nothing. Pure."""
        self._check_open()
        target = self.log_end_offset if up_to_offset is None else min(up_to_offset, self.log_end_offset)
        if target <= self._recovery_point:
            return None
        paths = tuple(path for segment in self._segments
                      if segment.next_offset > self._recovery_point and segment.base_offset < target
                      for path in segment.durable_paths())
        return FlushPlan(target_offset=target, paths=paths, truncations=self._truncations)

    def commit_flush(self, plan: FlushPlan) -> bool:
        """After every path of ``plan`` was fsynced: advance the recovery point to its target.
        False (nothing changes) when the log was closed or truncated since the plan: the bytes
        fsynced below the target may then not be the ones the log holds there now."""
        if self._closed or plan.truncations != self._truncations:
            return False
        target = min(plan.target_offset, self.log_end_offset)
        self._recovery_point = max(self._recovery_point, target)
        self._check_invariants()
        return True
