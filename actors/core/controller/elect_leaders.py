"""ElectLeaders on the controller: Kafka 2.4's ``processReplicaLeaderElection`` (KIP-460).

A preferred election moves leadership to the first replica of the assignment where that replica
does not lead already; an unclean election elects a leader, from outside the ISR if need be, for
partitions no live broker leads. Every other partition is answered ``ELECTION_NOT_NEEDED``, an
unknown one (or one of a topic being deleted) ``UNKNOWN_TOPIC_OR_PARTITION``, and a request of any
other election type ``INVALID_REQUEST`` as a whole. The new leaderships go out in one batch.
An unclean election that does elect from outside the ISR is logged at WARNING with the partition,
its new leader and that an operator asked for it, so an operator's choice to lose records reads
differently in the log from a loss the topic's ``unclean.leader.election.enable`` allowed.
"""
from __future__ import annotations

from actors.core import metrics
from actors.core.controller import elections
from actors.core.controller.broker_requests import BrokerRequests
from actors.core.controller.state import PartitionState, TopicPartition
from actors.core.effects import Effect, LogEvent, Respond
from actors.core.errors import ErrorCode
from actors.core.messages.elect_leaders import (
    PREFERRED_ELECTION, UNCLEAN_ELECTION, ElectLeadersRequest, ElectLeadersResponse, PartitionResult,
    ReplicaElectionResult,
)


def handle_elect_leaders(requests: BrokerRequests, request_id: int, request: ElectLeadersRequest) -> list[Effect]:
    if request.election_type not in (PREFERRED_ELECTION, UNCLEAN_ELECTION):
        return [Respond(request_id=request_id, response=ElectLeadersResponse(
            replica_election_results=(), error_code=ErrorCode.INVALID_REQUEST))]
    unclean_logs: list[LogEvent] = []
    if request.election_type == PREFERRED_ELECTION:
        elect_one = elect_preferred_one
    else:
        def elect_one(requests: BrokerRequests, topic_partition: TopicPartition) -> ErrorCode:
            return elect_unclean_one(requests, topic_partition, unclean_logs)
    if request.topic_partitions is None:
        wanted = requests.context.all_partitions()
    else:
        wanted = [(t.topic, p) for t in request.topic_partitions for p in t.partitions]
    results: dict[str, list[PartitionResult]] = {}
    requests.batch.new_batch()
    for topic_partition in wanted:
        code = elect_one(requests, topic_partition)
        results.setdefault(topic_partition[0], []).append(
            PartitionResult(partition_id=topic_partition[1], error_code=code))
    effects: list[Effect] = [*unclean_logs, *requests.flush()]
    elected = sum(r.error_code == ErrorCode.NONE for rs in results.values() for r in rs)
    effects += metrics.leader_elections(elected, unclean=len(unclean_logs))
    effects.append(Respond(request_id=request_id, response=ElectLeadersResponse(
        replica_election_results=tuple(ReplicaElectionResult(topic=t, partition_result=tuple(r))
                                       for t, r in sorted(results.items())))))
    return effects


def elect_preferred_one(requests: BrokerRequests, topic_partition: TopicPartition) -> ErrorCode:
    context = requests.context
    current = context.leadership.get(topic_partition)
    if current is None or topic_partition[0] in context.topics_to_delete:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    result = elections.elect_preferred(leader_and_isr=current, assignment=context.replicas(topic_partition),
                                       live_replicas=context.live_broker_ids,
                                       controller_epoch=requests.controller_epoch)
    return _apply(requests, topic_partition, result)


def elect_unclean_one(requests: BrokerRequests, topic_partition: TopicPartition,
                      logs: list[LogEvent] | None = None) -> ErrorCode:
    """An operator's unclean election of one partition; when it elects from outside the ISR it
    appends its WARNING to ``logs``."""
    context = requests.context
    current = context.leadership.get(topic_partition)
    if current is None or topic_partition[0] in context.topics_to_delete:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    if current.leader in context.live_broker_ids:
        return ErrorCode.ELECTION_NOT_NEEDED
    result = elections.elect_for_offline_partition(
        leader_and_isr=current, assignment=context.replicas(topic_partition), live_replicas=context.live_broker_ids,
        unclean_leader_election_enabled=True, controller_epoch=requests.controller_epoch)
    code = _apply(requests, topic_partition, result)
    if code == ErrorCode.NONE and result.unclean and logs is not None:
        logs.append(LogEvent(level="warning", message=(
            f"[controller epoch {requests.controller_epoch}] unclean election requested by an operator "
            f"(ElectLeaders): broker {result.leader} leads {topic_partition[0]}-{topic_partition[1]} from outside "
            f"the ISR {list(current.isr)}; records it never had are lost")))
    return code


def _apply(requests: BrokerRequests, topic_partition: TopicPartition, result: elections.ElectionResult) -> ErrorCode:
    if result.leader_and_isr is None:
        return result.error
    requests.context.set_leadership(topic_partition, result.leader_and_isr)
    requests.context.partition_states.transition(topic_partition, PartitionState.ONLINE_PARTITION)
    requests.add_leader_and_isr(topic_partition, result.live_replicas_to_notify)
    return ErrorCode.NONE


def rebalance_preferred_leaders(requests: BrokerRequests, threshold: float) -> int:
    """Kafka's auto leader rebalance: for each live broker whose share of the partitions it is the
    preferred replica of but does not lead is over ``threshold``, a preferred election for those
    partitions (into the current request batch). Returns how many leaderships moved."""
    context = requests.context
    by_preferred: dict[int, list[TopicPartition]] = {}
    for topic_partition in context.all_partitions():
        replicas = context.replicas(topic_partition)
        if replicas and topic_partition[0] not in context.topics_to_delete:
            by_preferred.setdefault(replicas[0], []).append(topic_partition)
    moved = 0
    for broker_id, partitions in sorted(by_preferred.items()):
        if broker_id not in context.live_broker_ids:
            continue
        imbalanced = [tp for tp in partitions
                      if context.leadership.get(tp) is not None and context.leadership[tp].leader != broker_id]
        if partitions and len(imbalanced) / len(partitions) > threshold:
            moved += sum(elect_preferred_one(requests, tp) == ErrorCode.NONE for tp in imbalanced)
    return moved
