"""CreatePartitions on the controller: Kafka 2.4's ``KafkaApis.handleCreatePartitionsRequest``,
``AdminManager.createPartitions`` and ``AdminZkClient.addPartitions``.

Theory of operation. Each topic of the request is checked alone and either refused with Kafka's
code or given new partitions; one topic's refusal does not stop the others. The checks, in
Kafka's order: a topic named twice (``INVALID_REQUEST``, every entry of it), queued for deletion
(``INVALID_TOPIC_EXCEPTION``), unknown (``UNKNOWN_TOPIC_OR_PARTITION``), with a partition being
reassigned (``REASSIGNMENT_IN_PROGRESS``), a count not above the current one
(``INVALID_PARTITIONS``), then a manual assignment: a broker not registered or a wrong number of
entries (``INVALID_REPLICA_ASSIGNMENT``), an empty or duplicated replica list or a replication
factor other than partition 0's (``INVALID_REPLICA_ASSIGNMENT``). Without a manual assignment the
new partitions continue Kafka's rack-unaware assignment: the start index is that of the first
registered broker whose id is at least partition 0's first replica, and partition numbering
continues from the current count.

A topic that passes is stored with its whole new assignment (what Kafka writes to
/brokers/topics/<topic>), its new partitions and replicas enter the state machines as NEW, and
the controller elects their leaders as for a new topic, which sends LeaderAndIsr to their replicas
and UpdateMetadata to every broker. ``validate_only`` checks and changes nothing. A ``timeout_ms``
of 0 or less adds the partitions and answers each topic that got them ``REQUEST_TIMED_OUT`` at once
(Kafka's "do not wait"), as Kafka's ``AdminManager.createPartitions`` does.
"""
from __future__ import annotations

import collections
from collections.abc import Callable, Iterable

from actors.core.controller.state import PartitionState, ReplicaState
from actors.core.controller.topics import assign_replicas_to_brokers
from actors.core.effects import Effect, Respond
from actors.core.errors import ErrorCode, KafkaProtocolError
from actors.core.messages.create_partitions import (
    CreatePartitionsRequest, CreatePartitionsResponse, CreatePartitionsTopic, CreatePartitionsTopicResult,
)


def _invalid_assignment(message: str) -> KafkaProtocolError:
    return KafkaProtocolError(ErrorCode.INVALID_REPLICA_ASSIGNMENT, message)


def new_partitions_assignment(topic: CreatePartitionsTopic, existing: dict[int, tuple[int, ...]],
                              brokers: Iterable[int]) -> dict[int, tuple[int, ...]]:
    """The replicas of each partition ``topic`` adds to a topic assigned ``existing``, with
    ``brokers`` registered; raises ``KafkaProtocolError`` with Kafka's code for a refused request."""
    brokers = sorted(brokers)
    old_count = len(existing)
    increment = topic.count - old_count
    if increment < 0:
        raise KafkaProtocolError(ErrorCode.INVALID_PARTITIONS, f"Topic currently has {old_count} partitions, "
                                                               f"which is higher than the requested {topic.count}.")
    if increment == 0:
        raise KafkaProtocolError(ErrorCode.INVALID_PARTITIONS, f"Topic already has {old_count} partitions.")
    partition_zero = existing[0]
    if topic.assignments is None:
        start_index = next((i for i, b in enumerate(brokers) if b >= partition_zero[0]), 0)
        assigned = assign_replicas_to_brokers(
            num_partitions=increment, replication_factor=len(partition_zero), brokers=brokers,
            start_index=start_index, next_replica_shift=start_index, start_partition_id=old_count)
        return {p: tuple(r) for p, r in assigned.items()}
    unknown = sorted({b for a in topic.assignments for b in a.broker_ids} - set(brokers))
    if unknown:
        raise _invalid_assignment(f"Unknown broker(s) in replica assignment: {', '.join(map(str, unknown))}.")
    if len(topic.assignments) != increment:
        raise _invalid_assignment(f"Increasing the number of partitions by {increment} but "
                                  f"{len(topic.assignments)} assignments provided.")
    proposed = {old_count + i: tuple(a.broker_ids) for i, a in enumerate(topic.assignments)}
    for partition, replicas in proposed.items():
        if not replicas:
            raise _invalid_assignment(f"Cannot have replication factor of 0 for partition id {partition}.")
        if len(set(replicas)) != len(replicas):
            raise _invalid_assignment(f"Duplicate brokers not allowed in replica assignment: "
                                      f"{', '.join(map(str, replicas))} for partition id {partition}.")
    bad = {p: len(r) for p, r in proposed.items() if len(r) != len(partition_zero)}
    if bad:
        raise _invalid_assignment(
            f"Inconsistent replication factor between partitions, partition 0 has {len(partition_zero)} while "
            f"partitions [{', '.join(map(str, bad))}] have replication factors "
            f"[{', '.join(map(str, bad.values()))}], respectively.")
    return proposed


def create_partitions(requests, request_id: int, request: CreatePartitionsRequest, *,
                      reassigning_topics: set[str], elect_offline_partitions: Callable[[], list[Effect]],
                      log: Callable[[str], Effect]) -> tuple[list[Effect], dict[str, list[int]]]:
    """The controller's effects for ``request`` (its answer among them) and, per topic that got new
    partitions, their indexes (what the answer's propagation waits for)."""
    context = requests.context
    named = collections.Counter(topic.name for topic in request.topics)
    results: list[CreatePartitionsTopicResult] = []
    added: dict[str, list[int]] = {}
    effects: list[Effect] = []
    for topic in request.topics:
        try:
            if named[topic.name] > 1:
                raise KafkaProtocolError(ErrorCode.INVALID_REQUEST, "Duplicate topic in request.")
            if topic.name in context.topics_to_delete:
                raise KafkaProtocolError(ErrorCode.INVALID_TOPIC_EXCEPTION, "The topic is queued for deletion.")
            info = context.topics.get(topic.name)
            if info is None:
                raise KafkaProtocolError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                         f"The topic '{topic.name}' does not exist.")
            if topic.name in reassigning_topics:
                raise KafkaProtocolError(ErrorCode.REASSIGNMENT_IN_PROGRESS,
                                         f"A partition reassignment is in progress for the topic '{topic.name}'.")
            new = new_partitions_assignment(topic, info.assignment, context.live_broker_ids)
        except KafkaProtocolError as exc:
            results.append(CreatePartitionsTopicResult(name=topic.name, error_code=exc.error_code,
                                                       error_message=exc.message))
            continue
        if request.validate_only:
            results.append(CreatePartitionsTopicResult(name=topic.name))
            continue
        # Kafka's AdminManager.createPartitions: with timeout_ms <= 0 the partitions are added but
        # not waited for, and the topic is answered REQUEST_TIMED_OUT at once.
        results.append(CreatePartitionsTopicResult(
            name=topic.name, error_code=ErrorCode.REQUEST_TIMED_OUT if request.timeout_ms <= 0 else ErrorCode.NONE))
        context.add_topic(topic.name, {**info.assignment, **new}, info.config)
        for partition, replicas in new.items():
            context.partition_states.initialize((topic.name, partition), PartitionState.NEW_PARTITION)
            for replica in replicas:
                context.replica_states.initialize(((topic.name, partition), replica), ReplicaState.NEW_REPLICA)
        added[topic.name] = sorted(new)
        effects.append(log(f"added {len(new)} partition(s) to topic {topic.name} with assignment "
                           f"{ {p: list(r) for p, r in new.items()} }"))
    if added:
        effects += elect_offline_partitions()
        for name, partitions in added.items():
            for partition in partitions:
                for replica in context.replicas((name, partition)):
                    if replica in context.live_or_shutting_down_broker_ids:
                        context.replica_states.transition(((name, partition), replica), ReplicaState.ONLINE_REPLICA)
    effects.append(Respond(request_id=request_id, response=CreatePartitionsResponse(results=tuple(results))))
    return effects, added


__all__ = ["create_partitions", "new_partitions_assignment"]
