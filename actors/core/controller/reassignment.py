"""Partition reassignment on the controller: Kafka 2.4's ``onPartitionReassignment`` (KIP-455).

Theory of operation. A reassignment moves a partition from its original replicas (ORS) to target
replicas (TRS) without ever having fewer copies than it started with: first add, then remove.

- Submit (``handle_alter_partition_reassignments``). The target is checked as Kafka's
  ``validateReassignment`` does (not empty, no broker twice, no negative id, every broker it adds
  live), else ``INVALID_REPLICA_ASSIGNMENT``; an unknown partition, or one of a topic being
  deleted, is ``UNKNOWN_TOPIC_OR_PARTITION``. A target of None cancels: the partition goes back
  to its original replicas through the same steps (``NO_REASSIGNMENT_IN_PROGRESS`` if none runs).
  A request that does not allow a replication factor change (KIP-860) refuses a target of another
  size than the partition's original replicas with ``INVALID_REPLICATION_FACTOR``.
- Phase A (``_start``). The assignment becomes RS = TRS + (ORS - TRS), with adding = TRS - ORS and
  removing = RS - TRS; the record {target, original, adding, removing} is written to the store
  (``/admin/reassign_partitions/<topic>/<partition>``) before anything is sent, so a new
  controller resumes it. The leader epoch is bumped so that every replica, the leader included,
  accepts the new replica set, and a LeaderAndIsr goes to every live replica of RS; the new
  replicas start as followers and fetch from the leader.
- Phase B (``complete_finished``), tried after every ISR change, broker startup and controller
  failover: once every target replica is in the ISR, the assignment becomes TRS, the ISR keeps only
  TRS, and, if the leader is not in TRS or not live, the first live in-sync replica of TRS is
  elected (Kafka's ``ReassignPartitionLeaderElectionStrategy``); one new leader epoch carries all
  of it. The removed replicas get StopReplica with delete, and the record is removed last.

A target replica that is down simply keeps the reassignment in phase A: it cannot join the ISR,
so nothing is removed until it comes back and catches up (or the reassignment is cancelled).
A new reassignment of a partition already moving starts from its current RS: everything in RS
that the new target leaves out is removed when the new target is in sync.

Limit: ``REASSIGNMENTS_MAX`` partitions may move at once; a submission past that is answered
``REASSIGNMENT_IN_PROGRESS`` for the partitions over the limit.
"""
from __future__ import annotations

from dataclasses import dataclass

from actors.core import metrics
from actors.core.controller.broker_requests import BrokerRequests
from actors.core.controller.elections import reassign_partition_leader_election
from actors.core.controller.state import ReplicaState, TopicPartition
from actors.core.effects import Effect, LogEvent, Respond
from actors.core.errors import ErrorCode, KafkaProtocolError
from actors.core.messages.partition_reassignments import (
    AlterPartitionReassignmentsRequest, AlterPartitionReassignmentsResponse, ListPartitionReassignmentsRequest,
    ListPartitionReassignmentsResponse, OngoingPartitionReassignment, OngoingTopicReassignment,
    ReassignablePartitionResponse, ReassignableTopicResponse,
)

REASSIGNMENTS_MAX = 10_000


@dataclass(frozen=True, slots=True)
class Reassignment:
    target: tuple[int, ...]  # TRS, in the order the caller gave (its first is the preferred leader)
    original: tuple[int, ...]  # ORS when the first reassignment of this partition began; for cancel
    adding: tuple[int, ...]  # TRS - replicas before this step
    removing: tuple[int, ...]  # RS - TRS

    def as_record(self) -> dict:
        return {"target": list(self.target), "original": list(self.original), "adding": list(self.adding),
                "removing": list(self.removing)}

    @classmethod
    def from_record(cls, record: dict) -> Reassignment:
        return cls(tuple(record["target"]), tuple(record["original"]), tuple(record["adding"]),
                   tuple(record["removing"]))


class PartitionReassignments:
    def __init__(self, requests: BrokerRequests) -> None:
        self.requests = requests
        self.context = requests.context
        self.store = requests.context.store
        # Loaded from the store: a new controller resumes what its predecessor started.
        self.ongoing: dict[TopicPartition, Reassignment] = {
            tp: Reassignment.from_record(record) for tp, record in self.store.partition_reassignments().items()
            if tp[0] in self.context.topics}

    def _log(self, message: str, level: str = "info") -> LogEvent:
        return LogEvent(level=level, message=f"[controller epoch {self.requests.controller_epoch}] {message}")

    # ---------------------------------------------------------------------------- requests
    def handle_alter_partition_reassignments(self, request_id: int,
                                             request: AlterPartitionReassignmentsRequest) -> list[Effect]:
        effects: list[Effect] = []
        topics = []
        self.requests.batch.new_batch()
        for topic in request.topics:
            answers = []
            for asked in topic.partitions:
                try:
                    effects += self._submit((topic.name, asked.partition_index), asked.replicas,
                                            request.allow_replication_factor_change)
                    answers.append(ReassignablePartitionResponse(partition_index=asked.partition_index))
                except KafkaProtocolError as exc:
                    answers.append(ReassignablePartitionResponse(partition_index=asked.partition_index,
                                                                 error_code=exc.error_code, error_message=str(exc)))
            topics.append(ReassignableTopicResponse(name=topic.name, partitions=tuple(answers)))
        effects += self.requests.flush()
        effects += self.complete_finished()
        effects.append(Respond(request_id=request_id, response=AlterPartitionReassignmentsResponse(
            responses=tuple(topics), allow_replication_factor_change=request.allow_replication_factor_change)))
        return effects

    def handle_list_partition_reassignments(self, request_id: int,
                                            request: ListPartitionReassignmentsRequest) -> list[Effect]:
        wanted = None if request.topics is None else {(t.name, p) for t in request.topics for p in t.partition_indexes}
        by_topic: dict[str, list[OngoingPartitionReassignment]] = {}
        for tp, reassignment in sorted(self.ongoing.items()):
            if wanted is not None and tp not in wanted:
                continue
            by_topic.setdefault(tp[0], []).append(OngoingPartitionReassignment(
                partition_index=tp[1], replicas=self.context.replicas(tp), adding_replicas=reassignment.adding,
                removing_replicas=reassignment.removing))
        return [Respond(request_id=request_id, response=ListPartitionReassignmentsResponse(topics=tuple(
            OngoingTopicReassignment(name=t, partitions=tuple(ps)) for t, ps in by_topic.items())))]

    def _submit(self, tp: TopicPartition, replicas: tuple[int, ...] | None,
                allow_replication_factor_change: bool = True) -> list[Effect]:
        context = self.context
        if tp[0] not in context.topics or tp[0] in context.topics_to_delete or not context.replicas(tp):
            raise KafkaProtocolError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"{tp[0]}-{tp[1]} does not exist")
        current = context.replicas(tp)
        ongoing = self.ongoing.get(tp)
        if replicas is None:
            if ongoing is None:
                raise KafkaProtocolError(ErrorCode.NO_REASSIGNMENT_IN_PROGRESS,
                                         f"no reassignment of {tp[0]}-{tp[1]} to cancel")
            target = ongoing.original
        else:
            target = tuple(replicas)
            if not target:
                raise KafkaProtocolError(ErrorCode.INVALID_REPLICA_ASSIGNMENT, "Empty replica list specified "
                                                                               "in partition reassignment.")
            if len(set(target)) != len(target):
                raise KafkaProtocolError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                                         f"Duplicate replica ids in partition reassignment replica list: {list(target)}")
            if any(r < 0 for r in target):
                raise KafkaProtocolError(ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"Invalid broker id in replica "
                                                                               f"list: {list(target)}")
            if not allow_replication_factor_change and len(target) != len(ongoing.original if ongoing else current):
                raise KafkaProtocolError(ErrorCode.INVALID_REPLICATION_FACTOR, "The replication factor is changed "
                                         f"from {len(ongoing.original if ongoing else current)} to {len(target)}")
            adding = sorted(set(target) - set(current))
            if not set(adding) <= context.live_broker_ids:
                raise KafkaProtocolError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                                         f"Replica assignment has brokers that are not alive. Replica list: "
                                         f"{adding}, live broker list: {sorted(context.live_broker_ids)}")
        if ongoing is None and len(self.ongoing) >= REASSIGNMENTS_MAX:
            raise KafkaProtocolError(ErrorCode.REASSIGNMENT_IN_PROGRESS,
                                     f"{len(self.ongoing)} partitions are being reassigned already")
        if ongoing is None and target == current:
            return []  # nothing to move: Kafka completes such a reassignment at once
        return self._start(tp, target, ongoing.original if ongoing else current)

    # ------------------------------------------------------------------------------ phase A
    def _start(self, tp: TopicPartition, target: tuple[int, ...], original: tuple[int, ...]) -> list[Effect]:
        current = self.context.replicas(tp)
        full = target + tuple(r for r in current if r not in target)
        reassignment = Reassignment(target=target, original=original,
                                    adding=tuple(r for r in target if r not in current),
                                    removing=tuple(r for r in full if r not in target))
        self.store.put_partition_reassignment(tp[0], tp[1], reassignment.as_record())
        self.ongoing[tp] = reassignment
        self._phase_a(tp, reassignment)
        return [self._log(f"reassigning {tp[0]}-{tp[1]} from {list(current)} to {list(target)}: replicas "
                          f"{list(full)}, adding {list(reassignment.adding)}, removing {list(reassignment.removing)}")]

    def _phase_a(self, tp: TopicPartition, reassignment: Reassignment) -> None:
        """RS = TRS + removing in the assignment, a new leader epoch, LeaderAndIsr to every live
        replica of RS, the new replicas online. Repeating it (a new controller resuming) is harmless."""
        context = self.context
        full = reassignment.target + reassignment.removing
        context.set_assignment(tp, full)
        for replica in reassignment.adding:
            if (tp, replica) not in context.replica_states:
                context.replica_states.initialize((tp, replica), ReplicaState.NEW_REPLICA)
        leadership = context.leadership.get(tp)
        if leadership is not None:
            # A new leader epoch, so that the replicas, the leader first, take the new replica set.
            bumped = leadership.new_leader_and_isr(leadership.leader, leadership.isr, self.requests.controller_epoch)
            context.set_leadership(tp, bumped)
            self._send_leader_and_isr(tp, full, reassignment)
        for replica in reassignment.adding:
            if replica in context.live_or_shutting_down_broker_ids:
                context.replica_states.transition((tp, replica), ReplicaState.ONLINE_REPLICA)

    def resume(self) -> list[Effect]:
        """Kafka's ``initializePartitionReassignments`` on controller failover: phase A again for
        every reassignment the store holds (its predecessor may have died half-way through it),
        then phase B for those already in sync."""
        self.requests.batch.new_batch()
        effects: list[Effect] = []
        for tp, reassignment in sorted(self.ongoing.items()):
            if tp[0] in self.context.topics_to_delete:
                continue
            self._phase_a(tp, reassignment)
            effects.append(self._log(f"resuming the reassignment of {tp[0]}-{tp[1]} to {list(reassignment.target)}"))
        return effects + self.requests.flush() + self.complete_finished()

    def _send_leader_and_isr(self, tp: TopicPartition, broker_ids, reassignment: Reassignment | None) -> None:
        context = self.context
        live = context.live_or_shutting_down_broker_ids
        self.requests.batch.add_leader_and_isr_request_for_brokers(
            [b for b in broker_ids if b in live], tp, context.leadership[tp], context.replicas(tp),
            topic_config=context.topic_config_pairs(tp[0]),
            adding_replicas=reassignment.adding if reassignment else (),
            removing_replicas=reassignment.removing if reassignment else ())

    # ------------------------------------------------------------------------------ phase B
    def complete_finished(self) -> list[Effect]:
        """Finish every reassignment whose target replicas are all in the ISR. Called with an
        empty batch (after the caller's flush)."""
        context = self.context
        effects: list[Effect] = []
        self.requests.batch.new_batch()
        for tp, reassignment in sorted(self.ongoing.items()):
            if tp[0] not in context.topics or tp[0] in context.topics_to_delete:
                self.ongoing.pop(tp)  # its topic went: the store's record went with it
                continue
            leadership = context.leadership.get(tp)
            if leadership is None or not set(reassignment.target) <= set(leadership.isr):
                continue
            effects += self._complete(tp, reassignment)
        return effects + self.requests.flush()

    def _complete(self, tp: TopicPartition, reassignment: Reassignment) -> list[Effect]:
        context = self.context
        leadership = context.leadership[tp]
        live = context.live_broker_ids
        leader = leadership.leader
        if leader not in reassignment.target or leader not in live:
            leader = reassign_partition_leader_election(reassignment=reassignment.target, isr=leadership.isr,
                                                        live_replicas=live)
            if leader is None:
                return []  # no live target replica in the ISR to lead: try again on the next change
        isr = tuple(r for r in leadership.isr if r in reassignment.target)
        context.set_assignment(tp, reassignment.target)
        context.set_leadership(tp, leadership.new_leader_and_isr(leader, isr, self.requests.controller_epoch))
        self._send_leader_and_isr(tp, reassignment.target, None)
        for replica in reassignment.removing:
            # Kafka's OfflineReplica -> ReplicaDeletionStarted -> NonExistentReplica for each
            # removed replica; the StopReplica is dropped for a broker that is down, whose stale
            # copy then stays on its disk.
            self.requests.batch.add_stop_replica_request_for_brokers([replica], tp, delete_partition=True)
            context.replica_states.remove((tp, replica))
        self.store.delete_partition_reassignment(tp[0], tp[1])
        del self.ongoing[tp]
        effects: list[Effect] = [self._log(f"reassignment of {tp[0]}-{tp[1]} complete: replicas "
                                           f"{list(reassignment.target)}, leader {leader}, isr {list(isr)}")]
        if leader != leadership.leader:
            effects += metrics.leader_elections(1)
        return effects
