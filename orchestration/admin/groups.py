"""The admin view of consumer groups: describe one (members, assignments, committed offsets and
lag) or list them all, by asking the group coordinators as Kafka's AdminClient does.

Each function makes one attempt, bounded by ``deadline`` (``time.monotonic``), and raises a
``KafkaError`` when a coordinator is not there yet, loads, or has moved (``COORDINATOR_NOT_AVAILABLE``,
``COORDINATOR_LOAD_IN_PROGRESS``, ``NOT_COORDINATOR``, a call that failed in Ray); ``Cluster``
retries those until its admin timeout."""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import ray
from ray.exceptions import ActorDiedError, RayError

from actors.core.errors import ErrorCode
from actors.core.group.consumer_protocol import decode_assignment
from actors.core.messages.describe_groups import DescribeGroupsRequest
from actors.core.messages.find_coordinator import FindCoordinatorRequest
from actors.core.messages.list_groups import ListGroupsRequest
from actors.core.group.messages import DeleteGroupsRequest
from actors.core.messages.list_offsets import LATEST_TIMESTAMP, ListOffsetsPartition, ListOffsetsRequest, ListOffsetsTopic
from actors.core.messages.offset_commit import OffsetCommitRequest, OffsetCommitRequestPartition, OffsetCommitRequestTopic
from actors.core.messages.offset_delete import OffsetDeleteRequest, OffsetDeleteRequestPartition, OffsetDeleteRequestTopic
from actors.core.messages.offset_fetch import OffsetFetchRequest
from orchestration.clients.broker_directory import BrokerDirectory, as_kafka_error
from orchestration.errors import KafkaError

CALL_TIMEOUT_S = 30  # the longest wait for one answer
CALL_TIMEOUT_MIN_S = 1.0  # the shortest, even at the deadline


@dataclass(frozen=True)
class GroupMember:
    member_id: str
    client_id: str
    client_host: str
    assignment: list[tuple[str, int]]


@dataclass(frozen=True)
class PartitionLag:
    committed_offset: int  # -1: nothing committed
    log_end_offset: int  # the partition's high watermark: what a consumer can read
    lag: int


@dataclass(frozen=True)
class GroupDescription:
    group_id: str
    state: str
    protocol_type: str
    protocol: str
    generation_id: int
    coordinator: int
    members: list[GroupMember] = field(default_factory=list)
    offsets: dict[tuple[str, int], PartitionLag] = field(default_factory=dict)


def _call_timeout_s(deadline: float | None) -> float:
    if deadline is None:
        return CALL_TIMEOUT_S
    return min(CALL_TIMEOUT_S, max(CALL_TIMEOUT_MIN_S, deadline - time.monotonic()))


def _ask(coordinator, request, deadline: float | None):
    """One call to a coordinator actor; a failure in Ray is the Kafka error a client would see."""
    try:
        return ray.get(coordinator.handle.remote(request), timeout=_call_timeout_s(deadline))
    except RayError as exc:
        raise as_kafka_error(exc) from exc


def find_coordinator(directory: BrokerDirectory, group_id: str, *, deadline: float | None = None):
    """(node id, coordinator actor) for ``group_id``, asking the live brokers in turn."""
    last = KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE, group_id)
    for broker_id in directory.known_broker_ids():
        try:
            answer = directory.call(broker_id, FindCoordinatorRequest(key=group_id),
                                    timeout_ms=int(_call_timeout_s(deadline) * 1000))
        except KafkaError as exc:
            last = exc
            continue
        if answer.error_code != ErrorCode.NONE:
            raise KafkaError(answer.error_code, answer.error_message or group_id)
        try:
            return answer.node_id, ray.get_actor(answer.host, namespace=directory.namespace)
        except ValueError as exc:  # the coordinator's actor is not up (yet, or again)
            raise KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE, f"no actor {answer.host!r}") from exc
    raise last


def describe_group(directory: BrokerDirectory, group_id: str, *, deadline: float | None = None) -> GroupDescription:
    node_id, coordinator = find_coordinator(directory, group_id, deadline=deadline)
    described = _ask(coordinator, DescribeGroupsRequest(groups=(group_id,)),
                     deadline).groups[0]
    if described.error_code != ErrorCode.NONE:
        raise KafkaError(described.error_code, group_id)
    members = [GroupMember(m.member_id, m.client_id, m.client_host,
                           sorted(decode_assignment(m.member_assignment).partitions) if m.member_assignment else [])
               for m in described.members]
    fetched = _ask(coordinator, OffsetFetchRequest(group_id=group_id), deadline)
    if fetched.error_code != ErrorCode.NONE:
        raise KafkaError(fetched.error_code, group_id)
    committed = {(t.name, p.partition_index): p.committed_offset for t in fetched.topics for p in t.partitions}
    for member in members:
        for topic_partition in member.assignment:
            committed.setdefault(topic_partition, -1)
    offsets = {}
    for topic_partition, offset in sorted(committed.items()):
        end = _high_watermark(directory, topic_partition)
        offsets[topic_partition] = PartitionLag(offset, end, max(0, end - max(offset, 0)) if end >= 0 else -1)
    return GroupDescription(group_id=group_id, state=described.group_state, protocol_type=described.protocol_type,
                            protocol=described.protocol_data, generation_id=described.generation_id,
                            coordinator=node_id, members=members, offsets=offsets)


def delete_group(directory: BrokerDirectory, group_id: str, *, deadline: float | None = None) -> None:
    """DeleteGroups at the group's coordinator: only an Empty group goes (``NON_EMPTY_GROUP``
    otherwise), with its committed offsets."""
    _, coordinator = find_coordinator(directory, group_id, deadline=deadline)
    result = _ask(coordinator, DeleteGroupsRequest(groups_names=(group_id,)), deadline).results[0]
    if result.error_code != ErrorCode.NONE:
        raise KafkaError(result.error_code, group_id)


def delete_offsets(directory: BrokerDirectory, group_id: str, partitions: list[tuple[str, int]], *,
                   deadline: float | None = None) -> dict[tuple[str, int], ErrorCode]:
    """OffsetDelete at the group's coordinator: each partition's answer (``GROUP_SUBSCRIBED_TO_TOPIC``
    for a topic a member consumes); a group-level error (``GROUP_ID_NOT_FOUND``, ``NON_EMPTY_GROUP``,
    a coordinator not there) is raised."""
    _, coordinator = find_coordinator(directory, group_id, deadline=deadline)
    topics: dict[str, list[OffsetDeleteRequestPartition]] = {}
    for topic, partition in sorted(set(partitions)):
        topics.setdefault(topic, []).append(OffsetDeleteRequestPartition(partition_index=partition))
    answer = _ask(coordinator, OffsetDeleteRequest(group_id=group_id, topics=tuple(
        OffsetDeleteRequestTopic(name=t, partitions=tuple(ps)) for t, ps in topics.items())), deadline)
    if answer.error_code != ErrorCode.NONE:
        raise KafkaError(answer.error_code, group_id)
    return {(t.name, p.partition_index): ErrorCode(p.error_code) for t in answer.topics for p in t.partitions}


def commit_offsets(directory: BrokerDirectory, group_id: str, offsets: dict[tuple[str, int], int], *,
                   deadline: float | None = None) -> None:
    """OffsetCommit outside any generation, as kafka-consumer-groups --reset-offsets does: the
    coordinator takes it only while the group has no members."""
    _, coordinator = find_coordinator(directory, group_id, deadline=deadline)
    topics = {}
    for (topic, partition), offset in sorted(offsets.items()):
        topics.setdefault(topic, []).append(OffsetCommitRequestPartition(partition_index=partition,
                                                                         committed_offset=offset))
    answer = _ask(coordinator, OffsetCommitRequest(group_id=group_id, topics=tuple(
        OffsetCommitRequestTopic(name=t, partitions=tuple(ps)) for t, ps in topics.items())), deadline)
    for topic in answer.topics:
        for partition in topic.partitions:
            if partition.error_code != ErrorCode.NONE:
                raise KafkaError(partition.error_code, f"{group_id} {topic.name}-{partition.partition_index}")


def list_groups(directory: BrokerDirectory, broker_ids: list[int], *,
                deadline: float | None = None) -> list[tuple[str, str]]:
    """(group id, state) of every group every coordinator knows. A coordinator whose actor is gone
    for good (its broker stopped) is skipped: its groups move with their partitions. One that is
    restarting or still loading its groups raises, to be asked again."""
    from actors.broker import group_coordinator_actor_name
    groups = []
    for broker_id in broker_ids:
        try:
            coordinator = ray.get_actor(group_coordinator_actor_name(broker_id), namespace=directory.namespace)
            answer = ray.get(coordinator.handle.remote(ListGroupsRequest()),
                             timeout=_call_timeout_s(deadline))
        except (ValueError, ActorDiedError):
            continue
        except RayError as exc:
            raise as_kafka_error(exc) from exc
        if answer.error_code != ErrorCode.NONE:
            raise KafkaError(answer.error_code, f"ListGroups at the coordinator of broker {broker_id}")
        groups += [(g.group_id, g.group_state) for g in answer.groups]
    return sorted(set(groups))


# Answers after which the metadata's leader is probably stale: ask for metadata and try once more.
_STALE_LEADER = frozenset({ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.FENCED_LEADER_EPOCH,
                           ErrorCode.UNKNOWN_LEADER_EPOCH, ErrorCode.LEADER_NOT_AVAILABLE,
                           ErrorCode.NETWORK_EXCEPTION, ErrorCode.BROKER_NOT_AVAILABLE})


def list_offset(directory: BrokerDirectory, topic_partition: tuple[str, int], timestamp: int) -> int:
    """The partition's earliest or latest offset (``timestamp`` is EARLIEST_TIMESTAMP or
    LATEST_TIMESTAMP) from its leader; a KafkaError when it cannot be had now."""
    offset, error = _list_latest_offset(directory, topic_partition, timestamp)
    if error in _STALE_LEADER:
        directory.refresh_metadata()
        offset, error = _list_latest_offset(directory, topic_partition, timestamp)
    if error != ErrorCode.NONE:
        raise KafkaError(error, f"ListOffsets {topic_partition[0]}-{topic_partition[1]}")
    return offset


def _high_watermark(directory: BrokerDirectory, topic_partition: tuple[str, int]) -> int:
    """The partition's high watermark from its leader, or -1 if it cannot be had now. Metadata
    that names no leader or a stale one is read again once, so a lag is not left unknown because
    the metadata was read a moment before a leadership change."""
    offset, error = _list_latest_offset(directory, topic_partition)
    if error in _STALE_LEADER:
        try:
            directory.refresh_metadata()
        except KafkaError:
            return -1
        offset, error = _list_latest_offset(directory, topic_partition)
    return offset if error == ErrorCode.NONE else -1


def _list_latest_offset(directory: BrokerDirectory, topic_partition: tuple[str, int],
                        timestamp: int = LATEST_TIMESTAMP) -> tuple[int, ErrorCode]:
    """(latest offset, NONE), or (-1, the error that kept it from being read)."""
    try:
        leader, epoch = directory.leader_for(*topic_partition)
        if leader < 0:
            return -1, ErrorCode.LEADER_NOT_AVAILABLE
        answer = directory.call(leader, ListOffsetsRequest(topics=(ListOffsetsTopic(
            name=topic_partition[0], partitions=(ListOffsetsPartition(
                partition_index=topic_partition[1], timestamp=timestamp, current_leader_epoch=epoch),)),)))
    except KafkaError as exc:
        return -1, exc.error_code
    result = answer.topics[0].partitions[0]
    return (result.offset, ErrorCode.NONE) if result.error_code == ErrorCode.NONE else (-1, ErrorCode(result.error_code))
