"""Partition leader election, as Kafka 2.4's ``PartitionLeaderElectionAlgorithms`` and ``Election``.

Theory of operation
-------------------
Two layers, both pure functions of their arguments:

- The *algorithms* pick a leader from a partition's assignment (replica list, preferred leader
  first), its current ISR and the replicas on live brokers. They only choose; they change nothing.
  Every one of them walks the assignment in order, so the preferred replica wins whenever it is
  eligible and the choice is deterministic.
- The *elections* (``elect_*``) wrap an algorithm the way Kafka's ``Election`` object does: they
  take the partition's current ``LeaderAndIsr``, compute the new ISR by Kafka's rule for that kind
  of election, bump the leader epoch and partition epoch (``new_leader_and_isr``) and say which
  replicas must hear about it (the LeaderAndIsr recipients). When no leader can be chosen they
  return the Kafka error code and no new ``LeaderAndIsr``; the partition keeps its old record.

The new-ISR rules (Kafka 2.4 ``Election.scala``):

- offline (a leader died, or a new partition): a clean leader keeps the old ISR filtered to live
  replicas; an unclean leader (not in the ISR, chosen only when
  ``unclean.leader.election.enable`` is true) gets ``isr = [leader]``, since nothing else is known
  to be in sync with it.
- reassignment: the ISR is unchanged; the leader is the first live ISR member of the target
  replicas.
- preferred: the ISR is unchanged; only the leader moves, to the first replica of the assignment.
- controlled shutdown: the ISR loses every shutting-down broker, and the leader is the first
  assigned, live, in-ISR replica that is not shutting down.

Kafka's ``ElectLeaders`` API reports ``ELECTION_NOT_NEEDED`` when the preferred replica already
leads; ``elect_preferred`` does the same. The offline election is only run for partitions whose
leader is gone, so it does no such check.
"""
from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from actors.core.controller.state import (INITIAL_LEADER_EPOCH, INITIAL_PARTITION_EPOCH, LeaderAndIsr)
from actors.core.errors import ErrorCode


@dataclass(frozen=True, slots=True, kw_only=True)
class ElectionResult:
    """The outcome of one partition's election.

    Invariant: exactly one of ``leader_and_isr`` and ``error`` is None.
    """

    leader_and_isr: LeaderAndIsr | None  # the record to write, or None when nothing changes
    live_replicas_to_notify: tuple[int, ...]  # LeaderAndIsr recipients, in assignment order
    unclean: bool = False  # True when the leader came from outside the ISR
    error: ErrorCode | None = None

    def __post_init__(self) -> None:
        assert (self.leader_and_isr is None) != (self.error is None), \
            f"exactly one of leader_and_isr and error must be set: {self.leader_and_isr}, {self.error}"
        assert not self.unclean or self.leader_and_isr is not None, "an unclean election elected no one"

    @property
    def leader(self) -> int | None:
        return None if self.leader_and_isr is None else self.leader_and_isr.leader


# The algorithms: who may lead. ``live_replicas`` is any collection holding at least the live
# members of ``assignment`` (the set of live broker ids will do).

def offline_partition_leader_election(*, assignment: Sequence[int], isr: Collection[int],
                                      live_replicas: Collection[int],
                                      unclean_leader_election_enabled: bool) -> tuple[int | None, bool]:
    """(leader or None, unclean): the first live in-ISR replica; failing that, if unclean election
    is enabled, the first live replica."""
    for replica in assignment:
        if replica in live_replicas and replica in isr:
            return replica, False
    if unclean_leader_election_enabled:
        for replica in assignment:
            if replica in live_replicas:
                return replica, True
    return None, False


def reassign_partition_leader_election(*, reassignment: Sequence[int], isr: Collection[int],
                                       live_replicas: Collection[int]) -> int | None:
    """The first replica of the target assignment that is live and in the ISR."""
    return next((r for r in reassignment if r in live_replicas and r in isr), None)


def preferred_replica_partition_leader_election(*, assignment: Sequence[int], isr: Collection[int],
                                                live_replicas: Collection[int]) -> int | None:
    """The preferred (first assigned) replica if it is live and in the ISR; no fallback."""
    if assignment and assignment[0] in live_replicas and assignment[0] in isr:
        return assignment[0]
    return None


def controlled_shutdown_partition_leader_election(*, assignment: Sequence[int], isr: Collection[int],
                                                  live_replicas: Collection[int],
                                                  shutting_down_brokers: Collection[int]) -> int | None:
    """The first assigned replica that is live, in the ISR and not on a shutting-down broker."""
    return next((r for r in assignment
                 if r in live_replicas and r in isr and r not in shutting_down_brokers), None)


# The elections: the new LeaderAndIsr and who to tell.

def initial_leader_and_isr(*, assignment: Sequence[int], live_replicas: Collection[int],
                           controller_epoch: int) -> LeaderAndIsr | None:
    """A new partition's first record (``NewPartition -> OnlinePartition``), or None if no replica is live.

    Kafka's ``initializeLeaderAndIsrForPartitions``: leader = first live assigned replica, ISR = all
    live assigned replicas, epochs at their initial values.
    """
    live = tuple(r for r in assignment if r in live_replicas)
    if not live:
        return None
    return LeaderAndIsr(leader=live[0], leader_epoch=INITIAL_LEADER_EPOCH, isr=live,
                        partition_epoch=INITIAL_PARTITION_EPOCH, controller_epoch=controller_epoch)


def elect_for_offline_partition(*, leader_and_isr: LeaderAndIsr, assignment: Sequence[int],
                                live_replicas: Collection[int], unclean_leader_election_enabled: bool,
                                controller_epoch: int) -> ElectionResult:
    """Kafka's ``leaderForOffline``: a clean leader keeps the live part of the ISR, an unclean one
    gets ``isr = [leader]``. Fails with ELIGIBLE_LEADERS_NOT_AVAILABLE."""
    notify = _live_in_order(assignment, live_replicas)
    leader, unclean = offline_partition_leader_election(
        assignment=assignment, isr=leader_and_isr.isr, live_replicas=live_replicas,
        unclean_leader_election_enabled=unclean_leader_election_enabled)
    if leader is None:
        return ElectionResult(leader_and_isr=None, live_replicas_to_notify=notify,
                              error=ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE)
    if leader in leader_and_isr.isr:
        new_isr = tuple(r for r in leader_and_isr.isr if r in live_replicas)
    else:
        new_isr = (leader,)
    return ElectionResult(leader_and_isr=leader_and_isr.new_leader_and_isr(leader, new_isr, controller_epoch),
                          live_replicas_to_notify=notify, unclean=unclean)


def elect_preferred(*, leader_and_isr: LeaderAndIsr, assignment: Sequence[int],
                    live_replicas: Collection[int], controller_epoch: int) -> ElectionResult:
    """Kafka's ``leaderForPreferredReplica``: move leadership to the preferred replica, ISR unchanged.

    ELECTION_NOT_NEEDED if it already leads; PREFERRED_LEADER_NOT_AVAILABLE if it is dead or out
    of the ISR. Kafka addresses the whole assignment; dead brokers would be skipped at send time
    anyway, so only the live replicas are listed.
    """
    notify = _live_in_order(assignment, live_replicas)
    if assignment and leader_and_isr.leader == assignment[0]:
        return ElectionResult(leader_and_isr=None, live_replicas_to_notify=notify,
                              error=ErrorCode.ELECTION_NOT_NEEDED)
    leader = preferred_replica_partition_leader_election(assignment=assignment, isr=leader_and_isr.isr,
                                                         live_replicas=live_replicas)
    if leader is None:
        return ElectionResult(leader_and_isr=None, live_replicas_to_notify=notify,
                              error=ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE)
    return ElectionResult(leader_and_isr=leader_and_isr.new_leader(leader, controller_epoch),
                          live_replicas_to_notify=notify)


def elect_for_controlled_shutdown(*, leader_and_isr: LeaderAndIsr, assignment: Sequence[int],
                                  live_replicas: Collection[int], shutting_down_brokers: Collection[int],
                                  controller_epoch: int) -> ElectionResult:
    """Kafka's ``leaderForControlledShutdown``: the ISR loses the shutting-down brokers.

    A shutting-down broker is still alive and must hear that it no longer leads, so it is notified
    whether or not ``live_replicas`` lists it. Fails with ELIGIBLE_LEADERS_NOT_AVAILABLE; the
    partition then keeps its leader and the broker's controlled shutdown is retried.
    """
    live_or_shutting_down = set(live_replicas) | set(shutting_down_brokers)
    notify = _live_in_order(assignment, live_or_shutting_down)
    leader = controlled_shutdown_partition_leader_election(
        assignment=assignment, isr=leader_and_isr.isr, live_replicas=live_or_shutting_down,
        shutting_down_brokers=shutting_down_brokers)
    if leader is None:
        return ElectionResult(leader_and_isr=None, live_replicas_to_notify=notify,
                              error=ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE)
    new_isr = tuple(r for r in leader_and_isr.isr if r not in shutting_down_brokers)
    return ElectionResult(leader_and_isr=leader_and_isr.new_leader_and_isr(leader, new_isr, controller_epoch),
                          live_replicas_to_notify=notify)


def _live_in_order(assignment: Sequence[int], live_replicas: Collection[int]) -> tuple[int, ...]:
    return tuple(r for r in assignment if r in live_replicas)
