"""The group coordinator core: Kafka 2.4's ``GroupCoordinator`` and the in-memory part of its
``GroupMetadataManager``, as a pure state machine.

Theory of operation. One core per broker. It coordinates the groups whose ``__consumer_offsets``
partition (``abs(java_string_hash(group_id)) % offsets.topic.num.partitions``) this broker leads,
and learns which those are from its ``BrokerLink`` (broker_link.py): ``begin_loading(p)`` then ``on_become_leader(p,
records, now_ms)`` when the broker becomes leader of partition ``p`` (the records are the
partition's (key, value) pairs, in log order), ``on_resign(p)`` when it stops leading it. It learns
which partitions exist from its broker's metadata cache, through ``on_metadata_update`` (see
``partition_view``).

Inputs, each returning a list of effects the driver applies in order:

- client requests ``handle_<api>(request_id, request, now_ms)`` for JoinGroup, SyncGroup,
  Heartbeat, LeaveGroup, OffsetCommit, OffsetFetch, DescribeGroups, ListGroups, DeleteGroups and
  OffsetDelete;
- ``on_offsets_log_response(request, response_or_error, now_ms)``: the outcome of an append the
  core asked for;
- ``on_metadata_update(update, now_ms)``: the partitions the broker's metadata cache holds, and
  those an UpdateMetadata deleted. OffsetCommit for a partition not in the newest view answers
  UNKNOWN_TOPIC_OR_PARTITION before the group is looked at (Kafka's KafkaApis checks its metadata
  cache first). A deleted partition's offsets leave every cached group, with tombstones in
  ``__consumer_offsets`` so that a reload does not bring them back (Kafka's
  ``handleDeletedPartitions``); a deletion heard while a partition loads is also applied to the
  groups that load brings in, which Kafka's coordinator misses;
- ``tick(now_ms)``: the passage of time (delayed joins, heartbeat expiry, append timeouts, and
  every ``offsets.retention.check.interval.ms`` the expiry of offsets and of Empty groups).

Outputs: ``Respond(request_id, response)``, at once or later for parked JoinGroup/SyncGroup and
OffsetCommit requests (each request is answered exactly once); ``Send("offsets-log",
OffsetsLogAppendRequest)`` for every write to ``__consumer_offsets`` (see ``messages``; the
record format is in ``records``); ``ArmTimer`` when the next deadline changes; ``LogEvent``.

Before any group API, the request is checked as Kafka's ``validateGroupStatus`` does: an empty
group id is INVALID_GROUP_ID (OffsetCommit, OffsetFetch and DescribeGroups accept it), a group of a
partition being loaded gets COORDINATOR_LOAD_IN_PROGRESS (SyncGroup: REBALANCE_IN_PROGRESS, and
Heartbeat: NONE, as in Kafka), and a group of a partition this broker does not lead gets
NOT_COORDINATOR. Membership and rebalances live in ``membership``; offsets here.
"""
from __future__ import annotations

import uuid
from collections.abc import Iterable

from actors.core.config import KafkaConfig
from actors.core.effects import ArmTimer, CoordinatorMetadataUpdate, Effect, LogEvent, Respond
from actors.core.errors import ErrorCode
from actors.core.group.group_config import GroupConfig
from actors.core.group.group_manager import GroupMetadataManager
from actors.core.group.group_metadata import GroupMetadata, GroupState, OffsetAndMetadata
from actors.core.group.membership import GroupMembership, join_error, sync_error
from actors.core.group import offset_delete
from actors.core.group.partition_view import PartitionView
from actors.core.group.messages import (
    DeletableGroupResult, DeleteGroupsRequest, DeleteGroupsResponse, OffsetsLogAppendRequest,
    OffsetsLogAppendResponse,
)
from actors.core.messages.describe_groups import (
    DescribedGroup, DescribedGroupMember, DescribeGroupsRequest, DescribeGroupsResponse,
)
from actors.core.messages.heartbeat import HeartbeatRequest, HeartbeatResponse
from actors.core.messages.join_group import JoinGroupRequest
from actors.core.messages.leave_group import LeaveGroupRequest, LeaveGroupResponse
from actors.core.messages.list_groups import ListedGroup, ListGroupsRequest, ListGroupsResponse
from actors.core.messages.offset_commit import (
    OffsetCommitRequest, OffsetCommitResponse, OffsetCommitResponsePartition, OffsetCommitResponseTopic,
)
from actors.core.messages.offset_delete import OffsetDeleteRequest
from actors.core.messages.offset_fetch import (
    OffsetFetchRequest, OffsetFetchResponse, OffsetFetchResponsePartition, OffsetFetchResponseTopic,
)
from actors.core.messages.sync_group import SyncGroupRequest

TopicPartition = tuple[str, int]
_S = GroupState

# A tick handles at most this many due timers; the rest stay due, and the ArmTimer it emits asks
# the driver to tick again at once.
TIMERS_PER_TICK_MAX = 100_000
MEMBER_ID_ATTEMPTS_MAX = 100


class GroupCoordinatorCore:
    def __init__(self, *, broker_id: int, now_ms: int, config: KafkaConfig | dict | None = None,
                 member_id_random=None) -> None:
        """``member_id_random``: an object with ``getrandbits`` (a seeded ``random.Random``) for the
        UUID part of new member ids, as Kafka's ``clientId-UUID``; without it ids are
        ``clientId-<broker id>-<now_ms at construction>-<counter>``, unique across restarts."""
        self.broker_id = broker_id
        self.config = GroupConfig.from_config(config)
        self.manager = GroupMetadataManager(self.config)
        self.membership = GroupMembership(self.config, self.manager, self._new_member_id)
        self._member_id_random = member_id_random
        self._member_id_counter = 0
        self._incarnation_ms = now_ms
        self._next_cleanup_ms = now_ms + self.config.offsets_retention_check_interval_ms
        self._armed_deadline_ms: int | None = None
        self.partition_view = PartitionView()
        # Partitions deleted while some offsets partition was loading: the groups the load brings in
        # lose their offsets too. Emptied whenever no partition is loading, so it holds at most the
        # partitions deleted during one stretch of loading.
        self._deleted_while_loading: set[TopicPartition] = set()

    # ------------------------------------------------------------------------------- plumbing
    def partition_for(self, group_id: str) -> int:
        return self.manager.partition_for(group_id)

    @property
    def groups(self) -> dict[str, GroupMetadata]:
        """The cached groups by id (read-only use: describe, tests, invariants)."""
        return self.manager.groups

    def _new_member_id(self, group: GroupMetadata, client_id: str) -> str:
        for _ in range(MEMBER_ID_ATTEMPTS_MAX):
            if self._member_id_random is not None:
                suffix = str(uuid.UUID(int=self._member_id_random.getrandbits(128), version=4))
            else:
                self._member_id_counter += 1
                suffix = f"{self.broker_id}-{self._incarnation_ms}-{self._member_id_counter}"
            member_id = f"{client_id or 'consumer'}-{suffix}"
            if member_id not in group.members and member_id not in group.pending_members:
                return member_id
        raise AssertionError("could not find an unused member id")

    def _status_error(self, group_id: str | None, empty_id_allowed: bool = False) -> ErrorCode | None:
        """Kafka's ``validateGroupStatus``."""
        if group_id is None or (group_id == "" and not empty_id_allowed):
            return ErrorCode.INVALID_GROUP_ID
        if self.manager.is_group_loading(group_id):
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        if not self.manager.is_group_local(group_id):
            return ErrorCode.NOT_COORDINATOR
        return None

    def next_deadline_ms(self) -> int | None:
        deadlines = [d for d in (self.membership.timers.next_deadline_ms(), self.manager.next_deadline_ms(),
                                 self._next_cleanup_ms) if d is not None]
        return min(deadlines)

    def _finish(self, effects: list[Effect], now_ms: int) -> list[Effect]:
        deadline_ms = self.next_deadline_ms()
        if deadline_ms is not None and (deadline_ms != self._armed_deadline_ms or deadline_ms <= now_ms):
            self._armed_deadline_ms = deadline_ms
            effects.append(ArmTimer(deadline_ms=deadline_ms))
        return effects

    # ------------------------------------------------------------------------- group membership
    def handle_join_group(self, request_id: int, request: JoinGroupRequest, now_ms: int) -> list[Effect]:
        """The request's ``client_id``/``client_host`` are the request header's and the connection's
        (the member id starts with the client id, and DescribeGroups reports both)."""
        error = self._status_error(request.group_id)
        if error is None and not (self.config.group_min_session_timeout_ms <= request.session_timeout_ms
                                  <= self.config.group_max_session_timeout_ms):
            error = ErrorCode.INVALID_SESSION_TIMEOUT
        if error is not None:
            return self._finish([join_error(request_id, error, request.member_id)], now_ms)
        return self._finish(self.membership.join_group(
            request_id, request, now_ms, request.client_id, request.client_host), now_ms)

    def handle_sync_group(self, request_id: int, request: SyncGroupRequest, now_ms: int) -> list[Effect]:
        error = self._status_error(request.group_id)
        if error is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
            # The rebalance's state was lost with the old coordinator: rejoin, without looking
            # for the coordinator again (and older clients do not expect LOAD_IN_PROGRESS here).
            error = ErrorCode.REBALANCE_IN_PROGRESS
        if error is not None:
            return self._finish([sync_error(request_id, error)], now_ms)
        return self._finish(self.membership.sync_group(request_id, request, now_ms), now_ms)

    def handle_heartbeat(self, request_id: int, request: HeartbeatRequest, now_ms: int) -> list[Effect]:
        error = self._status_error(request.group_id)
        if error is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
            error = ErrorCode.NONE  # the group is still loading: answer blindly, as Kafka does
        elif error is None:
            error = self.membership.heartbeat(request, now_ms)
        return self._finish([Respond(request_id=request_id, response=HeartbeatResponse(error_code=error))], now_ms)

    def handle_leave_group(self, request_id: int, request: LeaveGroupRequest, now_ms: int) -> list[Effect]:
        error = self._status_error(request.group_id)
        if error is not None:
            return self._finish([Respond(request_id=request_id, response=LeaveGroupResponse(error_code=error))], now_ms)
        error, members, effects = self.membership.leave_group(request, now_ms)
        effects.append(Respond(request_id=request_id, response=LeaveGroupResponse(
            error_code=error, members=tuple(members))))
        return self._finish(effects, now_ms)

    # ---------------------------------------------------------------------------------- offsets
    def handle_offset_commit(self, request_id: int, request: OffsetCommitRequest, now_ms: int) -> list[Effect]:
        offsets: dict[TopicPartition, OffsetAndMetadata] = {}
        unknown: set[TopicPartition] = set()
        for topic in request.topics:
            for partition in topic.partitions:
                if not self.partition_view.contains((topic.name, partition.partition_index)):
                    unknown.add((topic.name, partition.partition_index))
                    continue
                offsets[(topic.name, partition.partition_index)] = OffsetAndMetadata(
                    offset=partition.committed_offset, leader_epoch=partition.committed_leader_epoch,
                    metadata=partition.committed_metadata or "", commit_timestamp_ms=now_ms,
                    expire_timestamp_ms=None if request.retention_time_ms == -1 else now_ms + request.retention_time_ms)

        def answer(errors: dict[TopicPartition, ErrorCode]) -> list[Effect]:
            errors = {**errors, **dict.fromkeys(unknown, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)}
            return [Respond(request_id=request_id, response=OffsetCommitResponse(topics=tuple(
                OffsetCommitResponseTopic(name=topic.name, partitions=tuple(
                    OffsetCommitResponsePartition(partition_index=p.partition_index,
                                                  error_code=errors[(topic.name, p.partition_index)])
                    for p in topic.partitions))
                for topic in request.topics)))]

        def answer_all(error: ErrorCode) -> list[Effect]:
            return answer({tp: error for tp in offsets})

        error = self._status_error(request.group_id, empty_id_allowed=True)
        if error is not None or not offsets:
            return self._finish(answer_all(error or ErrorCode.NONE), now_ms)
        group = self.manager.get_group(request.group_id)
        if group is None:
            if request.generation_id >= 0:
                # A member of a generation this coordinator never saw (or a stale one).
                return self._finish(answer_all(ErrorCode.ILLEGAL_GENERATION), now_ms)
            # Not using Kafka for group management (assign mode): a group just to hold offsets.
            group = self.manager.add_group(GroupMetadata(request.group_id, state_timestamp_ms=now_ms))
        error = self._commit_error(group, request, now_ms)
        if error is None and not self.manager.has_room_for_commit():
            error = ErrorCode.COORDINATOR_NOT_AVAILABLE
        if error is not None:
            return self._finish(answer_all(error), now_ms)
        return self._finish(self.manager.store_offsets(group, offsets, now_ms, answer), now_ms)

    def _commit_error(self, group: GroupMetadata, request: OffsetCommitRequest, now_ms: int) -> ErrorCode | None:
        """Kafka's ``doCommitOffsets`` checks; None means store. A member's commit re-arms its heartbeat."""
        if group.is_state(_S.DEAD):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if request.group_instance_id is not None and \
                group.member_error(request.member_id, request.group_instance_id) is ErrorCode.FENCED_INSTANCE_ID:
            return ErrorCode.FENCED_INSTANCE_ID
        if request.generation_id < 0 and group.is_state(_S.EMPTY):
            return None  # offsets only, no group management
        error = group.member_error(request.member_id, request.group_instance_id)
        if error is not None:
            return error
        member = group.members[request.member_id]
        if request.generation_id != group.generation_id:
            return ErrorCode.ILLEGAL_GENERATION
        if group.is_state(_S.COMPLETING_REBALANCE):
            return ErrorCode.REBALANCE_IN_PROGRESS
        assert group.state in (_S.STABLE, _S.PREPARING_REBALANCE), f"unexpected state {group.state}"
        # While PreparingRebalance the commit is still allowed; the member learns of the
        # rebalance from its next heartbeat.
        self.membership.schedule_heartbeat(group, member, now_ms)
        return None

    def handle_offset_fetch(self, request_id: int, request: OffsetFetchRequest, now_ms: int) -> list[Effect]:
        error = self._status_error(request.group_id, empty_id_allowed=True)
        if error is not None:
            response = OffsetFetchResponse(topics=(), error_code=error)
            return self._finish([Respond(request_id=request_id, response=response)], now_ms)
        group = self.manager.get_group(request.group_id)
        offsets = group.offsets if group is not None and not group.is_state(_S.DEAD) else {}
        if request.topics is None:
            wanted: Iterable[TopicPartition] = sorted(offsets)
        else:
            wanted = [(topic.name, index) for topic in request.topics for index in topic.partition_indexes]
        by_topic: dict[str, list[OffsetFetchResponsePartition]] = {}
        for topic, index in wanted:
            committed = offsets.get((topic, index))
            by_topic.setdefault(topic, []).append(
                OffsetFetchResponsePartition(partition_index=index) if committed is None else
                OffsetFetchResponsePartition(partition_index=index, committed_offset=committed.offset,
                                             committed_leader_epoch=committed.leader_epoch,
                                             metadata=committed.metadata))
        response = OffsetFetchResponse(topics=tuple(OffsetFetchResponseTopic(name=name, partitions=tuple(parts))
                                                    for name, parts in by_topic.items()))
        return self._finish([Respond(request_id=request_id, response=response)], now_ms)

    # ------------------------------------------------------------------------------------ admin
    def handle_describe_groups(self, request_id: int, request: DescribeGroupsRequest, now_ms: int) -> list[Effect]:
        described = []
        for group_id in request.groups:
            error = self._status_error(group_id, empty_id_allowed=True)
            group = self.manager.get_group(group_id)
            if error is not None:
                described.append(DescribedGroup(group_id=group_id, error_code=error))
            elif group is None:
                described.append(DescribedGroup(group_id=group_id, group_state=_S.DEAD.kafka_name))
            else:
                described.append(_summary(group))
        return self._finish([Respond(request_id=request_id, response=DescribeGroupsResponse(groups=tuple(described)))],
                            now_ms)

    def handle_list_groups(self, request_id: int, request: ListGroupsRequest, now_ms: int) -> list[Effect]:
        wanted = {state.lower() for state in request.states_filter}
        listed = tuple(ListedGroup(group_id=group.group_id, protocol_type=group.protocol_type or "",
                                   group_state=group.state.kafka_name)
                       for _, group in sorted(self.manager.groups.items())
                       if not wanted or group.state.kafka_name.lower() in wanted)
        error = ErrorCode.COORDINATOR_LOAD_IN_PROGRESS if self.manager.loading_partitions else ErrorCode.NONE
        return self._finish([Respond(request_id=request_id, response=ListGroupsResponse(error_code=error, groups=listed))],
                            now_ms)

    def handle_delete_groups(self, request_id: int, request: DeleteGroupsRequest, now_ms: int) -> list[Effect]:
        """Kafka's ``handleDeleteGroups``: only Empty groups (NON_EMPTY_GROUP otherwise); an unknown
        group is GROUP_ID_NOT_FOUND. Answered at once; the tombstones are not waited for."""
        results: dict[str, ErrorCode] = {}
        deletable: list[GroupMetadata] = []
        for group_id in request.groups_names:
            error = self._status_error(group_id, empty_id_allowed=True)
            group = self.manager.get_group(group_id)
            if error is None and (group is None or group.is_state(_S.DEAD)):
                error = ErrorCode.GROUP_ID_NOT_FOUND if self.manager.group_not_exists(group_id) else ErrorCode.NOT_COORDINATOR
            elif error is None and not group.is_state(_S.EMPTY):
                error = ErrorCode.NON_EMPTY_GROUP
            elif error is None:
                group.transition_to(_S.DEAD, now_ms)
                deletable.append(group)
            results[group_id] = error or ErrorCode.NONE
        _, effects = self.manager.cleanup_group_metadata(deletable, GroupMetadata.remove_all_offsets, now_ms)
        effects.append(Respond(request_id=request_id, response=DeleteGroupsResponse(results=tuple(
            DeletableGroupResult(group_id=group_id, error_code=error) for group_id, error in results.items()))))
        return self._finish(effects, now_ms)

    def handle_offset_delete(self, request_id: int, request: OffsetDeleteRequest, now_ms: int) -> list[Effect]:
        """KIP-496: the offsets of partitions the group does not consume (offset_delete.py)."""
        return offset_delete.handle_offset_delete(self, request_id, request, now_ms)

    # -------------------------------------------------------------------------------- ownership
    def begin_loading(self, offsets_partition: int) -> list[Effect]:
        """This broker became leader of ``offsets_partition`` and started reading it: until
        ``on_become_leader`` its groups' requests get COORDINATOR_LOAD_IN_PROGRESS."""
        self.manager.begin_loading(offsets_partition)
        return [LogEvent(level="info", message=f"loading __consumer_offsets-{offsets_partition}")]

    def on_become_leader(self, offsets_partition: int, records: Iterable[tuple[bytes, bytes | None]],
                         now_ms: int) -> list[Effect]:
        """Immigration: load the partition's groups and offsets from its records (in log order) and
        start coordinating them; loaded members must heartbeat within their session timeouts."""
        loaded, effects = self.manager.load_partition(offsets_partition, records, now_ms)
        if self._deleted_while_loading:
            deleted = tuple(sorted(self._deleted_while_loading))
            effects += self._remove_offsets_of(loaded, deleted, now_ms)
            self._forget_deletions_unless_loading()
        for group in loaded:
            if self.manager.get_group(group.group_id) is group:  # not killed by the deletions above
                effects += self.membership.on_group_loaded(group, now_ms)
        return self._finish(effects, now_ms)

    def on_resign(self, offsets_partition: int, now_ms: int | None = None) -> list[Effect]:
        """Emigration: stop coordinating the partition's groups. Their parked JoinGroups and
        SyncGroups get NOT_COORDINATOR, and so do later requests."""
        effects: list[Effect] = []
        groups = self.manager.remove_partition(offsets_partition)
        self._forget_deletions_unless_loading()
        for group in groups:
            effects += self.membership.on_group_unloaded(group, group.state_timestamp_ms if now_ms is None else now_ms)
        effects.append(LogEvent(level="info", message=f"unloaded {len(groups)} groups of "
                                                      f"__consumer_offsets-{offsets_partition}"))
        return effects if now_ms is None else self._finish(effects, now_ms)

    # ------------------------------------------------------------------------------- the cluster
    def on_metadata_update(self, update: CoordinatorMetadataUpdate, now_ms: int) -> list[Effect]:
        """The broker's metadata cache changed (or this is the coordinator's first look at it)."""
        deleted = self.partition_view.apply(update)
        effects = self.handle_deleted_partitions(deleted, now_ms) if deleted else []
        return self._finish(effects, now_ms)

    def handle_deleted_partitions(self, deleted: tuple[TopicPartition, ...], now_ms: int) -> list[Effect]:
        """Kafka's ``handleDeletedPartitions``: remove the partitions' offsets from every cached
        group and tombstone them (Empty groups left without offsets die, as in any cleanup)."""
        if self.manager.loading_partitions:
            self._deleted_while_loading.update(deleted)
        groups = [group for _, group in sorted(self.manager.groups.items())]
        return self._remove_offsets_of(groups, deleted, now_ms)

    def _remove_offsets_of(self, groups: list[GroupMetadata], deleted: tuple[TopicPartition, ...],
                           now_ms: int) -> list[Effect]:
        removed, effects = self.manager.cleanup_group_metadata(
            groups, lambda group: group.remove_offsets(deleted), now_ms)
        if removed:
            named = ", ".join(f"{topic}-{index}" for topic, index in deleted[:10])
            effects.append(LogEvent(level="info", message=f"removed {removed} offsets of deleted partitions "
                                                          f"{named}{' ...' if len(deleted) > 10 else ''}"))
        return effects

    def _forget_deletions_unless_loading(self) -> None:
        if not self.manager.loading_partitions:
            self._deleted_while_loading.clear()

    def on_offsets_log_response(self, request: OffsetsLogAppendRequest,
                                response: OffsetsLogAppendResponse | ErrorCode, now_ms: int) -> list[Effect]:
        return self._finish(self.manager.on_append_response(request, response, now_ms), now_ms)

    # ------------------------------------------------------------------------------------- time
    def tick(self, now_ms: int) -> list[Effect]:
        effects = self.manager.expire_appends(now_ms)
        for _ in range(TIMERS_PER_TICK_MAX):
            timer = self.membership.timers.pop_due(now_ms)
            if timer is None:
                break
            effects += self.membership.fire(timer, now_ms)
        if now_ms >= self._next_cleanup_ms:
            self._next_cleanup_ms = now_ms + self.config.offsets_retention_check_interval_ms
            effects += self.cleanup_group_metadata(now_ms)
        return self._finish(effects, now_ms)

    def cleanup_group_metadata(self, now_ms: int) -> list[Effect]:
        """Expire offsets (``offsets.retention.minutes``) and retire Empty groups without offsets."""
        groups = [group for _, group in sorted(self.manager.groups.items())
                  if not self.manager.is_group_loading(group.group_id)]
        removed, effects = self.manager.cleanup_group_metadata(
            groups, lambda group: group.remove_expired_offsets(now_ms, self.config.offsets_retention_ms), now_ms)
        if removed:
            effects.append(LogEvent(level="info", message=f"removed {removed} expired offsets"))
        return effects


def _summary(group: GroupMetadata) -> DescribedGroup:
    """Kafka's ``GroupMetadata.summary``: member metadata and assignments only when Stable."""
    stable = group.is_state(_S.STABLE)
    members = tuple(DescribedGroupMember(
        member_id=m.member_id, group_instance_id=m.group_instance_id, client_id=m.client_id,
        client_host=m.client_host,
        member_metadata=m.metadata(group.protocol_name) if stable and group.protocol_name else b"",
        member_assignment=m.assignment if stable else b"")
        for m in group.members.values())
    return DescribedGroup(group_id=group.group_id, group_state=group.state.kafka_name,
                          protocol_type=group.protocol_type or "",
                          protocol_data=group.protocol_name or "" if stable else "", members=members,
                          generation_id=group.generation_id)
