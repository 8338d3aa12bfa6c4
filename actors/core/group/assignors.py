"""Kafka's client-side partition assignors, as pure functions, and the leader's assignment step.

A consumer group's leader receives every member's subscription in its JoinGroup response, runs the
assignor the coordinator selected (the group's ``protocol_name``), and sends the result in its
SyncGroup request. The coordinator never looks inside; these functions are for the consumer.

Every assignor has the same shape: ``assign(partitions_per_topic, subscriptions) -> {member_id:
[(topic, partition), ...]}``, where ``partitions_per_topic`` maps each topic to its partition count
(topics missing from it are skipped, as Kafka skips topics without metadata) and every member in
``subscriptions`` appears in the result, possibly with no partitions. Output is deterministic:
members are ordered by member id, as Kafka sorts them, and each member's list is sorted.

- ``range`` (Kafka's ``RangeAssignor``): per topic, the sorted members subscribed to it get
  consecutive ranges; the first ``partitions % members`` get one extra.
- ``roundrobin`` (``RoundRobinAssignor``): all partitions of all subscribed topics, sorted by
  topic then partition, dealt to the sorted members in turn, skipping members not subscribed to
  the partition's topic.
- ``sticky`` (``StickyAssignor``): see ``sticky_assignor``.

The bytes on the wire are Kafka's ``ConsumerProtocol`` layout (``consumer_protocol``).
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from actors.core.group import sticky_assignor
from actors.core.group.consumer_protocol import (
    Assignment, Subscription, decode_assignment, decode_subscription, encode_assignment,
    encode_subscription,
)
from actors.core.group.sticky_assignor import sticky_assign
from actors.core.messages.join_group import JoinGroupResponseMember

TopicPartition = tuple[str, int]
__all__ = [
    "ASSIGNORS", "AssignFunction", "Assignment", "Subscription", "assign", "decode_assignment",
    "decode_subscription", "encode_assignment", "encode_subscription", "leader_assignments",
    "range_assign", "round_robin_assign", "sticky_assign", "subscription_metadata",
]

AssignFunction = Callable[[Mapping[str, int], Mapping[str, Subscription]], dict[str, list[TopicPartition]]]


def range_assign(partitions_per_topic: Mapping[str, int],
                 subscriptions: Mapping[str, Subscription]) -> dict[str, list[TopicPartition]]:
    assignment: dict[str, list[TopicPartition]] = {member: [] for member in sorted(subscriptions)}
    members_per_topic: dict[str, list[str]] = {}
    for member in sorted(subscriptions):
        for topic in subscriptions[member].topics:
            members_per_topic.setdefault(topic, []).append(member)
    for topic in sorted(members_per_topic):
        if topic not in partitions_per_topic:
            continue
        members = members_per_topic[topic]
        per_member, with_extra = divmod(partitions_per_topic[topic], len(members))
        for position, member in enumerate(members):
            start = per_member * position + min(position, with_extra)
            length = per_member + (1 if position < with_extra else 0)
            assignment[member] += [(topic, index) for index in range(start, start + length)]
    return {member: sorted(partitions) for member, partitions in assignment.items()}


def round_robin_assign(partitions_per_topic: Mapping[str, int],
                       subscriptions: Mapping[str, Subscription]) -> dict[str, list[TopicPartition]]:
    members = sorted(subscriptions)
    assignment: dict[str, list[TopicPartition]] = {member: [] for member in members}
    topics = sorted({topic for subscription in subscriptions.values() for topic in subscription.topics})
    cursor = 0
    for topic in topics:
        for index in range(partitions_per_topic.get(topic, 0)):
            # Some member is subscribed to ``topic``, so this finds one within len(members) steps.
            while topic not in subscriptions[members[cursor % len(members)]].topics:
                cursor += 1
            assignment[members[cursor % len(members)]].append((topic, index))
            cursor += 1
    return assignment


ASSIGNORS: dict[str, AssignFunction] = {
    "range": range_assign,
    "roundrobin": round_robin_assign,
    "sticky": sticky_assign,
}


def assign(protocol_name: str, partitions_per_topic: Mapping[str, int],
           subscriptions: Mapping[str, Subscription]) -> dict[str, list[TopicPartition]]:
    """Run the named assignor; a name Kafka's consumer would not know raises ``KeyError``."""
    return ASSIGNORS[protocol_name](partitions_per_topic, subscriptions)


def subscription_metadata(protocol_name: str, topics: Iterable[str],
                          owned_partitions: Iterable[TopicPartition] = (),
                          generation_id: int = sticky_assignor.DEFAULT_GENERATION) -> bytes:
    """What a consumer puts in JoinGroup's metadata for ``protocol_name``.

    The sticky assignor also carries the member's current assignment and its generation in the
    user data (Kafka's ``StickyAssignor.subscriptionUserData``); the others carry none.
    """
    owned = tuple(sorted(set(owned_partitions)))
    user_data = None
    if protocol_name == "sticky" and owned:
        user_data = sticky_assignor.encode_user_data(owned, generation_id)
    return encode_subscription(Subscription(topics=tuple(sorted(set(topics))), user_data=user_data,
                                            owned_partitions=owned))


def leader_assignments(protocol_name: str, members: Iterable[JoinGroupResponseMember],
                       partitions_per_topic: Mapping[str, int]) -> dict[str, bytes]:
    """The leader's step between JoinGroup and SyncGroup: member id -> encoded assignment.

    ``members`` is the leader's JoinGroup response's member list; the result maps every member id
    to the bytes for ``SyncGroupRequestAssignment.assignment``. Raises ``SchemaError`` if a
    member's metadata is not a consumer subscription.
    """
    subscriptions = {member.member_id: decode_subscription(member.metadata) for member in members}
    result = assign(protocol_name, partitions_per_topic, subscriptions)
    return {member: encode_assignment(Assignment(partitions=tuple(partitions)))
            for member, partitions in result.items()}

