"""The in-memory part of Kafka's ``GroupMetadataManager``: which groups this broker coordinates,
the cache of their state, and every write they make to ``__consumer_offsets``.

Theory of operation. A group belongs to ``__consumer_offsets`` partition
``abs(java_string_hash(group_id)) % offsets.topic.num.partitions``; this broker coordinates it
while it leads that partition (``owned_partitions``). Becoming leader starts a load
(``begin_loading``: requests then get COORDINATOR_LOAD_IN_PROGRESS) that ``load_partition``
finishes by replaying the partition's records (last write per key wins, a null value deletes).
Resigning (``remove_partition``) drops the partition's groups from the cache.

Writes go out as ``OffsetsLogAppendRequest`` effects (see ``messages``), each registered here with
a completion callback and a deadline. ``on_append_response`` maps the append's error to what
Kafka answers the client (``store_group`` and ``store_offsets`` map differently, as Kafka's do)
and runs the callback; ``expire_appends`` completes appends whose answer never came as
REQUEST_TIMED_OUT once ``2 * offsets.commit.timeout.ms`` have passed (the broker's own produce
timeout is ``offsets.commit.timeout.ms``, so a live broker always answers first). A response for
an append that was already completed is ignored, so each callback runs exactly once.

Bounds: in-flight appends are bounded by the callers (at most one group write per rebalance and
``pending_commits_max`` offset commits, see ``has_room_for_commit``); groups by the owned
partitions' contents.
"""
from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from actors.core.effects import Effect, LogEvent, Send
from actors.core.errors import ErrorCode
from actors.core.group import offsets_topic_records as rec
from actors.core.group.group_config import GroupConfig
from actors.core.group.group_metadata import GroupMetadata, GroupState, MemberMetadata, OffsetAndMetadata
from actors.core.group.messages import (
    OFFSETS_LOG_DESTINATION, OffsetsLogAppendRequest, OffsetsLogAppendResponse,
)
from actors.core.group.wire import SchemaError
from actors.core.java_hash import java_string_hash, kafka_abs

TopicPartition = tuple[str, int]
# Called with the append's raw error, the log offset of its first record (-1 if unknown) and the
# time the outcome arrived.
AppendCallback = Callable[[ErrorCode, int, int], list[Effect]]

_COORDINATOR_NOT_AVAILABLE_ON = frozenset({
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.NOT_ENOUGH_REPLICAS,
    ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND, ErrorCode.COORDINATOR_NOT_AVAILABLE,
})
_NOT_COORDINATOR_ON = frozenset({ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.KAFKA_STORAGE_ERROR,
                                 ErrorCode.NOT_COORDINATOR, ErrorCode.FENCED_LEADER_EPOCH})
_TOO_LARGE = frozenset({ErrorCode.MESSAGE_TOO_LARGE, ErrorCode.RECORD_LIST_TOO_LARGE,
                        ErrorCode.INVALID_FETCH_SIZE})


def group_store_error(error: ErrorCode) -> ErrorCode:
    """Kafka's ``storeGroup`` mapping of an append error to the SyncGroup answer."""
    if error in _COORDINATOR_NOT_AVAILABLE_ON:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    if error in _NOT_COORDINATOR_ON:
        return ErrorCode.NOT_COORDINATOR
    if error is ErrorCode.REQUEST_TIMED_OUT:
        return ErrorCode.REBALANCE_IN_PROGRESS
    if error in _TOO_LARGE:
        return ErrorCode.UNKNOWN_SERVER_ERROR
    return error


def offset_store_error(error: ErrorCode) -> ErrorCode:
    """Kafka's ``storeOffsets`` mapping of an append error to the OffsetCommit answer."""
    if error in _COORDINATOR_NOT_AVAILABLE_ON:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    if error in _NOT_COORDINATOR_ON:
        return ErrorCode.NOT_COORDINATOR
    if error in _TOO_LARGE:
        return ErrorCode.INVALID_COMMIT_OFFSET_SIZE
    return error


@dataclass(slots=True)
class _PendingAppend:
    request: OffsetsLogAppendRequest
    deadline_ms: int
    callback: AppendCallback


class GroupMetadataManager:
    def __init__(self, config: GroupConfig) -> None:
        self.config = config
        self.groups: dict[str, GroupMetadata] = {}
        self.owned_partitions: set[int] = set()
        self.loading_partitions: set[int] = set()  # a subset of owned_partitions
        self._appends: dict[int, _PendingAppend] = {}
        self._deadlines: list[tuple[int, int]] = []  # heap of (deadline_ms, append_id), lazily cleaned
        self._next_append_id = 0
        self.pending_commit_count = 0

    # ------------------------------------------------------------------------------- ownership
    def partition_for(self, group_id: str) -> int:
        return kafka_abs(java_string_hash(group_id)) % self.config.offsets_topic_num_partitions

    def is_group_local(self, group_id: str) -> bool:
        return self.partition_for(group_id) in self.owned_partitions

    def is_group_loading(self, group_id: str) -> bool:
        return self.partition_for(group_id) in self.loading_partitions

    def get_group(self, group_id: str) -> GroupMetadata | None:
        return self.groups.get(group_id)

    def add_group(self, group: GroupMetadata) -> GroupMetadata:
        """Kafka's ``addGroup``: put if absent, and return whichever group is now cached."""
        return self.groups.setdefault(group.group_id, group)

    def remove_group(self, group: GroupMetadata) -> bool:
        if self.groups.get(group.group_id) is group:
            del self.groups[group.group_id]
            return True
        return False

    def group_not_exists(self, group_id: str) -> bool:
        group = self.groups.get(group_id)
        return self.is_group_local(group_id) and (group is None or group.state is GroupState.DEAD)

    def begin_loading(self, partition: int) -> None:
        self._check_partition(partition)
        self.owned_partitions.add(partition)
        self.loading_partitions.add(partition)

    def remove_partition(self, partition: int) -> list[GroupMetadata]:
        """Stop coordinating ``partition``'s groups; returns them (the caller unloads each)."""
        self.owned_partitions.discard(partition)
        self.loading_partitions.discard(partition)
        removed = [group for group_id, group in sorted(self.groups.items())
                   if self.partition_for(group_id) == partition]
        for group in removed:
            del self.groups[group.group_id]
        return removed

    def _check_partition(self, partition: int) -> None:
        assert 0 <= partition < self.config.offsets_topic_num_partitions, \
            f"__consumer_offsets partition {partition} out of range"

    # ---------------------------------------------------------------------------------- loading
    def load_partition(self, partition: int, records: Iterable[tuple[bytes, bytes | None]],
                       now_ms: int) -> tuple[list[GroupMetadata], list[Effect]]:
        """Kafka's ``loadGroupsAndOffsets``: replay the partition; returns the groups it added to
        the cache (a group already cached is kept, as Kafka's ``addGroup`` keeps it)."""
        self._check_partition(partition)
        offsets: dict[str, dict[TopicPartition, OffsetAndMetadata]] = {}
        group_records: dict[str, rec.GroupMetadataRecord] = {}
        effects: list[Effect] = []
        skipped = 0
        for key_bytes, value_bytes in records:
            try:
                key = rec.decode_key(key_bytes)
                if key.group_id and self.partition_for(key.group_id) != partition:
                    raise SchemaError(f"group {key.group_id!r} does not belong to partition {partition}")
                if isinstance(key, rec.OffsetCommitKey):
                    committed = rec.decode_offset_commit_value(value_bytes)
                    group_offsets = offsets.setdefault(key.group_id, {})
                    group_offsets.pop(key.topic_partition, None)  # re-insert: keep log order
                    if committed is not None:
                        group_offsets[key.topic_partition] = committed
                else:
                    record = rec.decode_group_metadata_value(value_bytes)
                    group_records.pop(key.group_id, None)
                    if record is not None:
                        group_records[key.group_id] = record
            except SchemaError as error:
                skipped += 1
                if skipped <= 10:
                    effects.append(LogEvent(level="warning", message=f"__consumer_offsets-{partition}: "
                                                                     f"skipping undecodable record: {error}"))
        loaded = []
        for group_id in sorted(set(group_records) | {g for g, o in offsets.items() if o}):
            group = _group_from_record(group_id, group_records.get(group_id), now_ms)
            for topic_partition, committed in offsets.get(group_id, {}).items():
                group.load_offset(topic_partition, committed, -1)
            cached = self.add_group(group)
            if cached is group:
                loaded.append(group)
            else:
                effects.append(LogEvent(level="warning", message=f"group {group_id}: keeping the cached "
                                        f"generation {cached.generation_id}, not the loaded {group.generation_id}"))
        self.owned_partitions.add(partition)
        self.loading_partitions.discard(partition)
        effects.append(LogEvent(level="info", message=f"loaded {len(loaded)} groups from "
                                                      f"__consumer_offsets-{partition}"))
        return loaded, effects

    # ---------------------------------------------------------------------------------- appends
    def append(self, partition: int, records: tuple[tuple[bytes, bytes | None], ...], now_ms: int,
               callback: AppendCallback) -> list[Effect]:
        """Send ``records`` to ``__consumer_offsets``-``partition``; ``callback`` runs exactly once."""
        self._next_append_id += 1
        request = OffsetsLogAppendRequest(append_id=self._next_append_id, partition=partition,
                                          records=records, timestamp_ms=now_ms,
                                          timeout_ms=self.config.offset_commit_timeout_ms)
        deadline_ms = now_ms + 2 * self.config.offset_commit_timeout_ms
        self._appends[request.append_id] = _PendingAppend(request, deadline_ms, callback)
        heapq.heappush(self._deadlines, (deadline_ms, request.append_id))
        return [Send(destination=OFFSETS_LOG_DESTINATION, message=request)]

    def on_append_response(self, request: OffsetsLogAppendRequest,
                           response: OffsetsLogAppendResponse | ErrorCode, now_ms: int) -> list[Effect]:
        pending = self._appends.get(request.append_id)
        if pending is None or pending.request != request:
            return [LogEvent(level="debug", message=f"ignoring the answer to offsets-log append "
                                                    f"{request.append_id}: already completed")]
        del self._appends[request.append_id]
        if isinstance(response, ErrorCode):
            return pending.callback(response, -1, now_ms)
        assert response.append_id == request.append_id, "response does not match its request"
        return pending.callback(response.error_code, response.base_offset, now_ms)

    def expire_appends(self, now_ms: int) -> list[Effect]:
        effects: list[Effect] = []
        while self._deadlines and self._deadlines[0][0] <= now_ms:
            _, append_id = heapq.heappop(self._deadlines)
            pending = self._appends.pop(append_id, None)
            if pending is not None:
                effects += pending.callback(ErrorCode.REQUEST_TIMED_OUT, -1, now_ms)
        return effects

    def appends_in_flight(self) -> int:
        return len(self._appends)

    def next_deadline_ms(self) -> int | None:
        while self._deadlines and self._deadlines[0][1] not in self._appends:
            heapq.heappop(self._deadlines)  # answered before its deadline
        return self._deadlines[0][0] if self._deadlines else None

    def store_group(self, group: GroupMetadata, assignment: Mapping[str, bytes], now_ms: int,
                    callback: Callable[[ErrorCode, int], list[Effect]]) -> list[Effect]:
        """Append the group's metadata (after a rebalance); ``callback`` gets the SyncGroup error and
        the time of the outcome."""
        value = rec.group_metadata_value(rec.group_metadata_record(group, assignment))
        records = ((rec.group_metadata_key(group.group_id), value),)
        return self.append(self.partition_for(group.group_id), records, now_ms,
                           lambda error, _offset, at_ms: callback(group_store_error(error), at_ms))

    def has_room_for_commit(self) -> bool:
        return self.pending_commit_count < self.config.pending_commits_max

    def store_offsets(self, group: GroupMetadata, offsets: Mapping[TopicPartition, OffsetAndMetadata],
                      now_ms: int, callback: Callable[[dict[TopicPartition, ErrorCode]], list[Effect]]
                      ) -> list[Effect]:
        """Kafka's ``storeOffsets``: commits with metadata over ``offset.metadata.max.bytes`` get
        OFFSET_METADATA_TOO_LARGE; the rest are appended, staged as pending on the group, and
        applied to it when the append is acknowledged."""
        too_large = {tp for tp, committed in offsets.items()
                     if len(committed.metadata.encode("utf-8")) > self.config.offset_metadata_max_bytes}
        valid = {tp: committed for tp, committed in offsets.items() if tp not in too_large}
        if not valid:
            return callback({tp: ErrorCode.OFFSET_METADATA_TOO_LARGE for tp in offsets})
        records = tuple((rec.offset_commit_key(group.group_id, tp), rec.offset_commit_value(committed))
                        for tp, committed in valid.items())
        group.prepare_offset_commit(valid)
        self.pending_commit_count += 1

        def on_appended(error: ErrorCode, base_offset: int, _at_ms: int) -> list[Effect]:
            self.pending_commit_count -= 1
            for index, (tp, committed) in enumerate(valid.items()):
                if error is ErrorCode.NONE:
                    group.on_offset_commit_append(tp, committed, base_offset + index if base_offset >= 0 else -1)
                else:
                    group.fail_pending_offset_write(tp, committed)
            answer = offset_store_error(error)
            return callback({tp: ErrorCode.OFFSET_METADATA_TOO_LARGE if tp in too_large else answer
                             for tp in offsets})

        return self.append(self.partition_for(group.group_id), records, now_ms, on_appended)

    # ---------------------------------------------------------------------------------- cleanup
    def cleanup_group_metadata(self, groups: Iterable[GroupMetadata],
                               selector: Callable[[GroupMetadata], Mapping[TopicPartition, OffsetAndMetadata]],
                               now_ms: int) -> tuple[int, list[Effect]]:
        """Kafka's ``cleanupGroupMetadata``: remove the offsets ``selector`` picks, kill groups left
        Empty without offsets, and tombstone both. The tombstones are not waited for: a lost one is
        written again by the next cleanup after the partition's next load."""
        removed_count = 0
        effects: list[Effect] = []
        for group in list(groups):
            removed = selector(group)
            removed_count += len(removed)
            if group.state is GroupState.EMPTY and not group.has_offsets():
                group.transition_to(GroupState.DEAD, now_ms)
            tombstones = [(rec.offset_commit_key(group.group_id, tp), None) for tp in sorted(removed)]
            # A group that never rebalanced (generation 0) only stored offsets: no metadata to delete.
            if group.state is GroupState.DEAD and self.remove_group(group) and group.generation_id > 0:
                tombstones.append((rec.group_metadata_key(group.group_id), None))
            if tombstones and self.is_group_local(group.group_id):
                effects += self.append(self.partition_for(group.group_id), tuple(tombstones), now_ms,
                                       _log_failed_tombstones(group.group_id))
        return removed_count, effects


def _log_failed_tombstones(group_id: str) -> AppendCallback:
    def on_appended(error: ErrorCode, _offset: int, _at_ms: int) -> list[Effect]:
        if error is ErrorCode.NONE:
            return []
        return [LogEvent(level="warning", message=f"group {group_id}: tombstones not written: {error.name}")]
    return on_appended


def _group_from_record(group_id: str, record: rec.GroupMetadataRecord | None, now_ms: int) -> GroupMetadata:
    """Kafka's ``GroupMetadata.loadGroup``: Stable with its members, or Empty; no record at all
    (only offsets were found) is an Empty group without a protocol type."""
    if record is None:
        return GroupMetadata(group_id, state_timestamp_ms=now_ms)
    # Records written before current_state_timestamp existed: count retention from the load.
    group = GroupMetadata(group_id, state_timestamp_ms=record.current_state_timestamp_ms
                          if record.current_state_timestamp_ms is not None else now_ms,
                          generation_id=record.generation_id, protocol_type=record.protocol_type or None)
    for member in record.members:
        assert record.protocol_name is not None  # decode_group_metadata_value checks it
        if member.group_instance_id is not None and member.group_instance_id in group.static_members:
            continue  # one member per instance id: a record naming it twice keeps the first
        group.add(MemberMetadata(
            member_id=member.member_id, group_id=group_id, client_id=member.client_id,
            client_host=member.client_host, group_instance_id=member.group_instance_id,
            rebalance_timeout_ms=member.rebalance_timeout_ms, session_timeout_ms=member.session_timeout_ms,
            protocol_type=record.protocol_type, supported_protocols=((record.protocol_name, member.subscription),),
            assignment=member.assignment), None)
    group.protocol_name = record.protocol_name if record.members else None
    group.leader_id = record.leader_id if record.leader_id in group.members else group.leader_id
    group.state = GroupState.STABLE if record.members else GroupState.EMPTY
    return group
