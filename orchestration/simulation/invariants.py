"""The simulator's invariants, checked after every step of a ``Simulation``.

Theory of operation. ``Invariants`` is a part of ``orchestration.simulation.simulation.Simulation``
that reads the live brokers' replicas and the controller's leadership after each step: at most one
leader per (partition, leader epoch) across brokers, now and over the whole run; HW <= LEO on every
replica; a leader's HW never moves back within its epoch; a replica the controller adds to the ISR
within one leader epoch holds the leader's HW. It also keeps the histories of elections and ISR
joins. A broken invariant raises ``SimulationInvariantError`` naming the seed, the step and the
recent events, so the run can be replayed from its seed.
"""
from __future__ import annotations

from dataclasses import dataclass

from orchestration.simulation.nodes import TopicPartition


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
    """Invariant checks; ``Simulation`` sets up the state they use."""

    # -------------------------------------------------------------------------- invariants
    def _check_invariants(self, touched: str | None = None) -> None:
        """Check the brokers and the controller, or after a delivery only the node it reached
        (``touched``): one delivery steps one node, so no other node's state can have changed.
        Two brokers leading one epoch at once is caught by the whole run's record of who led it."""
        brokers = self._brokers() if touched is None else \
            [n for n in (self.nodes.get(touched),) if n is not None and hasattr(n, "fetchers")]
        for node in brokers:
            for tp, p in node.core.replica_manager.partitions.items():
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
        if touched is None or touched == "controller":
            self._observe_controller()

    def _observe_controller(self) -> None:
        """Record leader changes, and check that a replica the controller adds to the ISR (same
        leader epoch: the leader's AlterPartition) holds the leader's high watermark."""
        for tp, leadership in self.controller.context.leadership.items():
            view = (leadership.leader, leadership.leader_epoch, leadership.isr)
            previous = self._controller_view.get(tp)
            self._controller_view[tp] = view
            if previous is None:
                continue
            if view[0] >= 0 and view[0] != previous[0]:
                self.elections.append(Election(at_ms=self.now_ms, topic_partition=tp, leader_id=view[0],
                                               leader_epoch=view[1], clean=view[0] in previous[2]))
            if previous[1] != view[1]:
                continue
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
