"""OffsetDelete on the group coordinator: Kafka 2.4's ``GroupCoordinator.handleDeleteOffsets``
(KIP-496) with the partition checks of ``KafkaApis.handleOffsetDeleteRequest``.

Theory of operation. The group is checked as every group API is (``validateGroupStatus``: an
empty id INVALID_GROUP_ID, a loading partition COORDINATOR_LOAD_IN_PROGRESS, another broker's group
NOT_COORDINATOR); an unknown or Dead group is GROUP_ID_NOT_FOUND. A partition the broker's
metadata does not hold is UNKNOWN_TOPIC_OR_PARTITION. Then by the group's state:

- Empty: every named partition's offset goes;
- PreparingRebalance, CompletingRebalance, Stable, of a consumer group: the offsets of topics no
  member subscribes to go, the others get GROUP_SUBSCRIBED_TO_TOPIC and stay;
- otherwise (a live group of another protocol type): NON_EMPTY_GROUP for the whole request.

The removed offsets are tombstoned in ``__consumer_offsets`` (``cleanup_group_metadata``, which
also ends an Empty group left without offsets, as Kafka's does). A group-level error answers with
no partitions, as Kafka's ``getErrorResponse``.
"""
from __future__ import annotations

from actors.core.effects import Effect, Respond
from actors.core.errors import ErrorCode
from actors.core.group.consumer_protocol import CONSUMER_PROTOCOL_TYPE, decode_subscription
from actors.core.group.group_metadata import GroupMetadata, GroupState
from actors.core.messages.offset_delete import (
    OffsetDeleteRequest, OffsetDeleteResponse, OffsetDeleteResponsePartition, OffsetDeleteResponseTopic,
)

TopicPartition = tuple[str, int]
_LIVE = (GroupState.PREPARING_REBALANCE, GroupState.COMPLETING_REBALANCE, GroupState.STABLE)


def subscribed_topics(group: GroupMetadata) -> frozenset[str] | None:
    """The topics the group's members subscribe to (Kafka's ``GroupMetadata.subscribedTopics``),
    read from their consumer-protocol metadata: the selected protocol's once there is one, else
    every protocol each member offers. None, meaning every topic, when a member's metadata is not
    a consumer subscription that parses."""
    topics: set[str] = set()
    try:
        for member in group.members.values():
            protocols = ((group.protocol_name, member.metadata(group.protocol_name)),) \
                if group.protocol_name is not None else member.supported_protocols
            for _, metadata in protocols:
                topics.update(decode_subscription(metadata).topics)
    except Exception:  # a client's bytes that are no consumer subscription: assume every topic
        return None
    return frozenset(topics)


def handle_offset_delete(core, request_id: int, request: OffsetDeleteRequest, now_ms: int) -> list[Effect]:
    """OffsetDelete on ``core`` (a ``GroupCoordinatorCore``)."""
    def answer(group_error: ErrorCode, errors: dict[TopicPartition, ErrorCode]) -> list[Effect]:
        by_topic: dict[str, list[OffsetDeleteResponsePartition]] = {}
        for (topic, partition), code in errors.items():
            by_topic.setdefault(topic, []).append(OffsetDeleteResponsePartition(partition_index=partition, error_code=code))
        return [Respond(request_id=request_id, response=OffsetDeleteResponse(error_code=group_error, topics=tuple(
            OffsetDeleteResponseTopic(name=t, partitions=tuple(ps)) for t, ps in by_topic.items())))]

    errors: dict[TopicPartition, ErrorCode] = {}
    named: list[TopicPartition] = []
    for topic in request.topics:
        for partition in topic.partitions:
            tp = (topic.name, partition.partition_index)
            if core.partition_view.contains(tp):
                named.append(tp)
            else:
                errors[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    error = core._status_error(request.group_id)
    group = core.manager.get_group(request.group_id) if error is None else None
    if error is None and (group is None or group.is_state(GroupState.DEAD)):
        error = ErrorCode.GROUP_ID_NOT_FOUND if core.manager.group_not_exists(request.group_id) \
            else ErrorCode.NOT_COORDINATOR
    if error is not None:
        return core._finish(answer(error, {}), now_ms)
    if group.is_state(GroupState.EMPTY):
        eligible = named
    elif group.state in _LIVE and group.protocol_type == CONSUMER_PROTOCOL_TYPE:
        subscribed = subscribed_topics(group)
        eligible = [tp for tp in named if subscribed is not None and tp[0] not in subscribed]
        errors.update({tp: ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC for tp in named if tp not in eligible})
    else:
        return core._finish(answer(ErrorCode.NON_EMPTY_GROUP, {}), now_ms)
    effects: list[Effect] = []
    if eligible:
        _, effects = core.manager.cleanup_group_metadata([group], lambda g: g.remove_offsets(eligible), now_ms)
        errors.update(dict.fromkeys(eligible, ErrorCode.NONE))
    return core._finish(effects + answer(ErrorCode.NONE, errors), now_ms)


__all__ = ["handle_offset_delete", "subscribed_topics"]
