"""The simulator's invariants, checked after every step of a ``Simulation``.

Theory of operation. ``Invariants`` is a part of ``orchestration.simulation.simulation.Simulation``
that reads the live brokers' replicas and the controller's leadership after each step (what the
step reached, and everything at intervals: see ``Invariants``): at most one
leader per (partition, leader epoch) across brokers, now and over the whole run; HW <= LEO on every
replica; a leader's HW never moves back within its epoch; a replica the controller adds to the ISR
within one leader epoch holds the leader's HW. It also keeps the histories of elections and ISR
joins. A broken invariant raises ``SimulationInvariantError`` naming the seed, the step and the
recent events, so the run can be replayed from its seed.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from orchestration.simulation.nodes import TopicPartition

# How often, in simulated time, every replica and leadership is checked whatever the steps reached.
FULL_CHECK_INTERVAL_MS = 1_000


class SimulationInvariantError(AssertionError):
    """An invariant broke; the message names the seed and step to replay."""


@dataclass(frozen=True)
class IsrJoin:
    """The controller added a replica to a partition's ISR (same leader epoch: the leader's AlterPartition)."""

    at_ms: int
    broker_id: int
    topic_partition: TopicPartition
    log_end_offset: int  # the joining replica's, at that moment
    leader_high_watermark: int


@dataclass(frozen=True)
class Election:
    """The controller moved a partition's leadership to another broker; ``clean`` when the new
    leader was in the ISR the controller held just before."""

    at_ms: int
    topic_partition: TopicPartition
    leader_id: int
    leader_epoch: int
    clean: bool


class Invariants:
    """Invariant checks; ``Simulation`` sets up the state they use.

    Where they are checked: a broker's replicas as each step of that broker ends, those the step
    reached (``check_partitions``, called by ``Nodes._step_broker``); the controller's leaderships
    after every step, those written since the last look (``WatchedLeaderships``); and everything
    (``_check_invariants()``) at least every ``FULL_CHECK_INTERVAL_MS`` of simulated time, at the
    end of every run, and after every fault.
    """

    # -------------------------------------------------------------------------- invariants
    def _check_invariants(self, touched: str | None = None) -> None:
        """Check everything now; or, with ``touched`` (the node a step reached, or "" after a clock
        step), what the step changed that its brokers' own checks did not cover: the leaderships
        the controller wrote."""
        if touched is None:
            self._next_full_check_ms = self.now_ms + FULL_CHECK_INTERVAL_MS
            for node in self._brokers():
                self.check_partitions(node, dict.keys(node.core.replica_manager.partitions))
            self._observe_controller(full=True)
            return
        self._observe_controller(full=False)
        if self.now_ms >= self._next_full_check_ms:
            self._check_invariants()

    def check_partitions(self, node: Any, topic_partitions: Iterable[TopicPartition]) -> None:
        """HW <= LEO, one leader per epoch over the run, and a leader's HW never going back in its
        epoch, for the named partitions of the broker ``node`` (those it does not host are skipped)."""
        partitions = node.core.replica_manager.partitions
        for tp in topic_partitions:
            p = dict.get(partitions, tp)
            if p is None:
                continue
            high_watermark = p.high_watermark
            if high_watermark > p.log_end_offset:
                self._require(False, f"broker {node.broker_id} {tp[0]}-{tp[1]}: high watermark "
                                     f"{high_watermark} > log end offset {p.log_end_offset}")
            if not p.is_leader:
                continue
            key = (tp, p.leader_epoch)
            if self._epoch_leaders.setdefault(key, node.broker_id) != node.broker_id:
                self._require(False, f"{tp}: broker {node.broker_id} leads epoch {p.leader_epoch}, which "
                                     f"broker {self._epoch_leaders[key]} led before")
            hw_key = (node.broker_id, node.incarnation, tp, p.leader_epoch)
            previous = self._leader_high_watermarks.get(hw_key, -1)
            if high_watermark < previous:
                self._require(False, f"broker {node.broker_id} {tp[0]}-{tp[1]}: leader high watermark went "
                                     f"back from {previous} to {high_watermark} in epoch {p.leader_epoch}")
            self._leader_high_watermarks[hw_key] = high_watermark

    def _observe_controller(self, *, full: bool) -> None:
        """Record leader changes, and check that a replica the controller adds to the ISR (same
        leader epoch: the leader's AlterPartition) holds the leader's high watermark; for the
        leaderships written since the last look, or (``full``) for all."""
        leaderships = self.controller.context.leadership
        written = leaderships.take_written()
        for tp in (dict.keys(leaderships) if full else written):
            leadership = dict.get(leaderships, tp)
            if leadership is not None:
                self._observe_leadership(tp, leadership)

    def _observe_leadership(self, tp: TopicPartition, leadership: Any) -> None:
        view = (leadership.leader, leadership.leader_epoch, leadership.isr)
        previous = self._controller_view.get(tp)
        self._controller_view[tp] = view
        if previous is None or previous == view:
            return
        if view[0] >= 0 and view[0] != previous[0]:
            self.elections.append(Election(at_ms=self.now_ms, topic_partition=tp, leader_id=view[0],
                                           leader_epoch=view[1], clean=view[0] in previous[2]))
        if previous[1] != view[1]:
            return
        leader = self.replica(leadership.leader, *tp)
        for joined in sorted(set(view[2]) - set(previous[2])):
            replica = self.replica(joined, *tp)
            if leader is None or replica is None:
                continue
            self.isr_joins.append(IsrJoin(at_ms=self.now_ms, broker_id=joined, topic_partition=tp,
                                          log_end_offset=replica.log_end_offset,
                                          leader_high_watermark=leader.high_watermark))
            self._require(replica.log_end_offset >= leader.high_watermark,
                          f"{tp}: broker {joined} joined the ISR with log end offset "
                          f"{replica.log_end_offset} below the leader's high watermark {leader.high_watermark}")

    def _require(self, condition: bool, what: str) -> None:
        if not condition:
            recent = "\n  ".join(list(self.trace)[-40:])
            raise SimulationInvariantError(f"invariant broken ({self._where()}): {what}\nrecent events:\n  {recent}")
