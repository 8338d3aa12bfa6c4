"""The admin view of consumer groups: describe one (members, assignments, committed offsets and
lag) or list them all, by asking the group coordinators as Kafka's AdminClient does."""
from __future__ import annotations

from dataclasses import dataclass, field

import ray

from actors.core.errors import ErrorCode
from actors.core.group.consumer_protocol import decode_assignment
from actors.core.messages.describe_groups import DescribeGroupsRequest
from actors.core.messages.find_coordinator import FindCoordinatorRequest
from actors.core.messages.list_groups import ListGroupsRequest
from actors.core.messages.list_offsets import LATEST_TIMESTAMP, ListOffsetsPartition, ListOffsetsRequest, ListOffsetsTopic
from actors.core.messages.offset_fetch import OffsetFetchRequest
from orchestration.client import BrokerDirectory
from orchestration.errors import KafkaError

CALL_TIMEOUT_S = 30


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


def find_coordinator(directory: BrokerDirectory, group_id: str):
    """(node id, coordinator actor) for ``group_id``, asking the live brokers in turn."""
    last = KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE, group_id)
    for broker_id in directory.known_broker_ids():
        try:
            answer = directory.call(broker_id, "handle_find_coordinator", FindCoordinatorRequest(key=group_id))
        except KafkaError as exc:
            last = exc
            continue
        if answer.error_code != ErrorCode.NONE:
            raise KafkaError(answer.error_code, answer.error_message or group_id)
        return answer.node_id, ray.get_actor(answer.host, namespace=directory.namespace)
    raise last


def describe_group(directory: BrokerDirectory, group_id: str) -> GroupDescription:
    node_id, coordinator = find_coordinator(directory, group_id)
    described = ray.get(coordinator.handle_describe_groups.remote(DescribeGroupsRequest(groups=(group_id,))),
                        timeout=CALL_TIMEOUT_S).groups[0]
    if described.error_code != ErrorCode.NONE:
        raise KafkaError(described.error_code, group_id)
    members = [GroupMember(m.member_id, m.client_id, m.client_host,
                           sorted(decode_assignment(m.member_assignment).partitions) if m.member_assignment else [])
               for m in described.members]
    fetched = ray.get(coordinator.handle_offset_fetch.remote(OffsetFetchRequest(group_id=group_id)),
                      timeout=CALL_TIMEOUT_S)
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


def list_groups(directory: BrokerDirectory, broker_ids: list[int]) -> list[tuple[str, str]]:
    """(group id, state) of every group every coordinator knows."""
    from actors.broker import group_coordinator_actor_name
    groups = []
    for broker_id in broker_ids:
        try:
            coordinator = ray.get_actor(group_coordinator_actor_name(broker_id), namespace=directory.namespace)
            answer = ray.get(coordinator.handle_list_groups.remote(ListGroupsRequest()), timeout=CALL_TIMEOUT_S)
        except Exception:
            continue  # that coordinator is down; its groups move with their partitions
        groups += [(g.group_id, g.group_state) for g in answer.groups]
    return sorted(set(groups))


def _high_watermark(directory: BrokerDirectory, topic_partition: tuple[str, int]) -> int:
    try:
        leader, epoch = directory.leader_for(*topic_partition)
        answer = directory.call(leader, "handle_list_offsets", ListOffsetsRequest(topics=(ListOffsetsTopic(
            name=topic_partition[0], partitions=(ListOffsetsPartition(
                partition_index=topic_partition[1], timestamp=LATEST_TIMESTAMP, current_leader_epoch=epoch),)),)))
    except KafkaError:
        return -1
    result = answer.topics[0].partitions[0]
    return result.offset if result.error_code == ErrorCode.NONE else -1
