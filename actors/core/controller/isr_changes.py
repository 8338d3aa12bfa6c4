"""AlterPartition on the controller: a partition leader's ISR change, as a compare-and-set.

A leader proposes a new ISR with the leader epoch and partition epoch it last saw. The controller
accepts it when the proposer still leads at that epoch, the partition epoch matches (nobody
changed the partition since), and the new ISR is well formed (contains the leader, no duplicates,
only assigned replicas) and live; the change bumps the partition epoch only. A retry of a change
already committed (its answer was lost) is answered with the current state, as Kafka's
``processAlterIsr`` does, so the leader learns the new partition epoch instead of being refused
forever.

One request carries every change its leader has pending (the broker keeps one in flight and sends
what queued meanwhile in the next), and each is answered on its own. Every live broker then gets
one UpdateMetadata for the whole request, carrying only the partitions whose ISR changed, as
Kafka's controller refreshes caches after an AlterIsr; a request that changed nothing (all
refused, or retries of committed changes) is no news for any cache and sends none.
"""
from __future__ import annotations

from actors.core.controller.broker_requests import BrokerRequests
from actors.core.controller.state import LeaderAndIsr, TopicPartition
from actors.core.effects import Effect, Respond
from actors.core.errors import ErrorCode
from actors.core.messages._base import NO_LEADER
from actors.core.messages.alter_partition import (
    AlterPartitionRequest, AlterPartitionResponse, AlterPartitionResponsePartitionData,
    AlterPartitionResponseTopicData,
)


def handle_alter_partition(requests: BrokerRequests, request_id: int, request: AlterPartitionRequest,
                           error) -> list[Effect]:
    context = requests.context
    info = context.brokers.get(request.broker_id)
    if info is None or request.broker_epoch != info.broker_epoch:
        return [Respond(request_id=request_id, response=error(ErrorCode.STALE_BROKER_EPOCH))]
    requests.batch.new_batch()
    topics = []
    changed = False
    for topic in request.topics:
        answers = []
        for asked in topic.partitions:
            code, state, done = _alter_one(requests, request.broker_id, (topic.topic_name, asked.partition_index),
                                           asked)
            changed = changed or done
            answers.append(AlterPartitionResponsePartitionData(
                partition_index=asked.partition_index, error_code=code,
                leader_id=state.leader if state else NO_LEADER,
                leader_epoch=state.leader_epoch if state else -1,
                isr=state.isr if state else (), partition_epoch=state.partition_epoch if state else -1))
        topics.append(AlterPartitionResponseTopicData(topic_name=topic.topic_name, partitions=tuple(answers)))
    if changed:
        requests.batch.add_update_metadata_request_for_brokers(context.live_or_shutting_down_broker_ids)
    effects = requests.flush()
    effects.append(Respond(request_id=request_id, response=AlterPartitionResponse(topics=tuple(topics))))
    return effects


def _alter_one(requests: BrokerRequests, broker_id: int, topic_partition: TopicPartition, asked
               ) -> tuple[ErrorCode, LeaderAndIsr | None, bool]:
    """(error, the partition's state to answer with, whether the ISR changed)."""
    context = requests.context
    current = context.leadership.get(topic_partition)
    if current is None or topic_partition[0] in context.topics_to_delete:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None, False
    if current.leader != broker_id:
        return ErrorCode.NOT_LEADER_OR_FOLLOWER, current, False
    if asked.leader_epoch != current.leader_epoch:
        return ErrorCode.FENCED_LEADER_EPOCH, current, False
    new_isr = tuple(asked.new_isr)
    if (broker_id not in new_isr or len(set(new_isr)) != len(new_isr)
            or not set(new_isr) <= set(context.replicas(topic_partition))):
        return ErrorCode.INVALID_REQUEST, current, False
    if set(new_isr) == set(current.isr):
        return ErrorCode.NONE, current, False  # a retry of a change already made: say where it stands
    if asked.partition_epoch != current.partition_epoch:
        return ErrorCode.INVALID_UPDATE_VERSION, current, False
    if not set(new_isr) <= context.live_or_shutting_down_broker_ids:
        return ErrorCode.INELIGIBLE_REPLICA, current, False
    changed = current.new_isr(new_isr, requests.controller_epoch)
    context.set_leadership(topic_partition, changed)
    requests.batch.add_update_metadata_request_for_brokers((), [topic_partition])
    return ErrorCode.NONE, changed, True
