"""One consumer group's state: its members, its generation, its state machine and its offsets
(Kafka 2.4's ``GroupMetadata`` and ``MemberMetadata`` from ``kafka.coordinator.group``).

Theory of operation. A group is plain data that the coordinator mutates; it performs no I/O and
answers nobody. Where Kafka keeps a response callback on a member (the JoinGroup or SyncGroup it
has parked), we keep that request's id, and the coordinator turns it into a ``Respond`` effect.

States (``GroupState``), each with where it may come from (``VALID_PREVIOUS_STATES``, Kafka's
``GroupMetadata.validPreviousStates``); ``transition_to`` asserts the table:

- EMPTY: no members; offsets may live on. From PREPARING_REBALANCE (the last member left or was
  expelled) and at creation. Goes to PREPARING_REBALANCE (a member joins) or DEAD.
- PREPARING_REBALANCE: collecting JoinGroups for the next generation. From EMPTY, STABLE and
  COMPLETING_REBALANCE. Goes to COMPLETING_REBALANCE (everyone joined or the rebalance timed
  out), EMPTY (nobody left) or DEAD.
- COMPLETING_REBALANCE (Kafka's AwaitingSync before 2.4): the generation is set, waiting for the
  leader's SyncGroup with assignments. From PREPARING_REBALANCE only. Goes to STABLE,
  PREPARING_REBALANCE (a member joined, left or expired) or DEAD.
- STABLE: assignments handed out; heartbeats keep members alive. From COMPLETING_REBALANCE only.
  Goes to PREPARING_REBALANCE or DEAD.
- DEAD: no members and no offsets, or unloaded (its ``__consumer_offsets`` partition moved away).
  From any state. Goes nowhere but DEAD.

Invariants: ``leader_id`` is a member or None, and None only when there are no members;
``protocol_name`` is set exactly when the group is COMPLETING_REBALANCE or STABLE (or loaded
with members); ``num_members_awaiting_join`` counts members with a parked JoinGroup;
``static_members`` maps the ``group.instance.id`` of every static member (KIP-345) to its member
id, and nothing else: ``add``, ``remove`` and ``replace_static_member`` keep it so.
"""
from __future__ import annotations

import enum
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from actors.core.errors import ErrorCode
from actors.core.messages._base import NO_EPOCH
from actors.core.messages.join_group import JoinGroupResponseMember

TopicPartition = tuple[str, int]
Protocols = tuple[tuple[str, bytes], ...]  # (protocol name, metadata), in the member's order of preference

NO_GENERATION = 0  # a new group's generation; the first rebalance makes it 1


class GroupState(enum.Enum):
    """A group's state; the value is Kafka's name for it, as DescribeGroups and ListGroups report it."""

    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"

    @property
    def kafka_name(self) -> str:
        return self.value


_S = GroupState
VALID_PREVIOUS_STATES: Mapping[GroupState, frozenset[GroupState]] = {
    _S.DEAD: frozenset({_S.STABLE, _S.PREPARING_REBALANCE, _S.COMPLETING_REBALANCE, _S.EMPTY, _S.DEAD}),
    _S.COMPLETING_REBALANCE: frozenset({_S.PREPARING_REBALANCE}),
    _S.STABLE: frozenset({_S.COMPLETING_REBALANCE}),
    _S.PREPARING_REBALANCE: frozenset({_S.STABLE, _S.COMPLETING_REBALANCE, _S.EMPTY}),
    _S.EMPTY: frozenset({_S.PREPARING_REBALANCE}),
}


def is_valid_transition(current: GroupState, target: GroupState) -> bool:
    return current in VALID_PREVIOUS_STATES[target]


@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetAndMetadata:
    """A committed position (Kafka's ``OffsetAndMetadata``)."""

    offset: int  # the next record to consume, >= 0 for a real commit
    leader_epoch: int = NO_EPOCH
    metadata: str = ""
    commit_timestamp_ms: int = 0
    # Set only by a commit with an explicit retention time (old OffsetCommit versions); such an
    # offset expires at this time instead of offsets.retention.minutes after the group emptied.
    expire_timestamp_ms: int | None = None


@dataclass(slots=True, kw_only=True)
class MemberMetadata:
    member_id: str
    group_id: str
    client_id: str = ""
    client_host: str = ""
    # KIP-345: set for a static member, which keeps its place (and assignment) across restarts of
    # its client: a JoinGroup with this instance id and no member id takes this member over.
    group_instance_id: str | None = None
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    supported_protocols: Protocols
    assignment: bytes = b""
    # The parked JoinGroup / SyncGroup request of this member, if any (Kafka's callbacks).
    awaiting_join_request_id: int | None = None
    awaiting_sync_request_id: int | None = None
    is_new: bool = False  # joined in the current rebalance and has not yet seen a JoinGroup answer
    latest_heartbeat_ms: int = 0
    # Kafka's DelayedHeartbeat for this member: when it fires, the member is expelled unless
    # ``should_keep_alive``; None when no expiration is scheduled.
    heartbeat_deadline_ms: int | None = None

    @property
    def is_awaiting_join(self) -> bool:
        return self.awaiting_join_request_id is not None

    @property
    def is_awaiting_sync(self) -> bool:
        return self.awaiting_sync_request_id is not None

    @property
    def protocol_names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.supported_protocols)

    def metadata(self, protocol: str) -> bytes:
        for name, metadata in self.supported_protocols:
            if name == protocol:
                return metadata
        raise AssertionError(f"member {self.member_id} does not support protocol {protocol!r}")

    def matches(self, protocols: Protocols) -> bool:
        """Same protocols, same order, same metadata: a rejoin that changes nothing."""
        return tuple(protocols) == tuple(self.supported_protocols)

    def vote(self, candidates: Iterable[str]) -> str:
        """The member's most preferred protocol among ``candidates`` (all members support them)."""
        candidate_set = set(candidates)
        for name in self.protocol_names:
            if name in candidate_set:
                return name
        raise AssertionError(f"member {self.member_id} supports none of {sorted(candidate_set)}")

    def should_keep_alive(self, deadline_ms: int, new_member_join_timeout_ms: int) -> bool:
        """Kafka 2.4's ``MemberMetadata.shouldKeepAlive``, asked when its heartbeat deadline passes.

        A member with a parked JoinGroup lives on (a new one only up to the new-member join
        timeout); a member with a parked SyncGroup lives on; anyone else only if it heartbeated
        since the deadline was set.
        """
        if self.is_awaiting_join:
            return not self.is_new or self.latest_heartbeat_ms + new_member_join_timeout_ms > deadline_ms
        return self.is_awaiting_sync or self.latest_heartbeat_ms + self.session_timeout_ms > deadline_ms


@dataclass(slots=True)
class GroupMetadata:
    group_id: str
    state_timestamp_ms: int  # when the group entered its current state (Kafka's currentStateTimestamp)
    state: GroupState = GroupState.EMPTY
    generation_id: int = NO_GENERATION
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str | None = None
    members: dict[str, MemberMetadata] = field(default_factory=dict)  # in join order
    # KIP-394: member ids handed out with MEMBER_ID_REQUIRED, with the deadline for their rejoin.
    pending_members: dict[str, int] = field(default_factory=dict)
    # KIP-345: group.instance.id -> the member id that instance holds now (Kafka's staticMembers).
    static_members: dict[str, str] = field(default_factory=dict)
    num_members_awaiting_join: int = 0
    # Set when a member joins the first rebalance of a new group, so the initial delay extends.
    new_member_added: bool = False
    offsets: dict[TopicPartition, OffsetAndMetadata] = field(default_factory=dict)
    # The ``__consumer_offsets`` offset each committed offset was appended at (last write wins).
    offset_log_positions: dict[TopicPartition, int] = field(default_factory=dict)
    # Commits appended but not yet acknowledged; they keep an Empty group from dying.
    pending_offset_commits: dict[TopicPartition, OffsetAndMetadata] = field(default_factory=dict)
    _supported_protocols: Counter = field(default_factory=Counter)

    # ------------------------------------------------------------------------------ state machine
    def is_state(self, state: GroupState) -> bool:
        return self.state is state

    def can_rebalance(self) -> bool:
        return is_valid_transition(self.state, GroupState.PREPARING_REBALANCE)

    def transition_to(self, target: GroupState, now_ms: int) -> None:
        assert is_valid_transition(self.state, target), \
            f"group {self.group_id}: illegal transition {self.state.kafka_name} -> {target.kafka_name}"
        self.state = target
        self.state_timestamp_ms = now_ms

    # ------------------------------------------------------------------------------------ members
    def has(self, member_id: str) -> bool:
        return member_id in self.members

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id == member_id

    @property
    def size(self) -> int:
        return len(self.members)

    def add(self, member: MemberMetadata, join_request_id: int | None) -> None:
        if not self.members:
            self.protocol_type = member.protocol_type
        assert member.group_id == self.group_id and member.member_id not in self.members
        assert self.supports_protocols(member.protocol_type, member.protocol_names)
        assert member.group_instance_id not in self.static_members, \
            f"group {self.group_id}: instance {member.group_instance_id} is held by another member"
        if self.leader_id is None:
            self.leader_id = member.member_id
        self.members[member.member_id] = member
        if member.group_instance_id is not None:
            self.static_members[member.group_instance_id] = member.member_id
        self.pending_members.pop(member.member_id, None)
        self._supported_protocols.update(member.protocol_names)
        member.awaiting_join_request_id = join_request_id
        if member.is_awaiting_join:
            self.num_members_awaiting_join += 1

    def remove(self, member_id: str) -> MemberMetadata | None:
        member = self.members.pop(member_id, None)
        if member is not None:
            if member.group_instance_id is not None and self.static_members.get(member.group_instance_id) == member_id:
                del self.static_members[member.group_instance_id]
            self._supported_protocols.subtract(member.protocol_names)
            self._supported_protocols += Counter()  # drop zero counts
            if member.is_awaiting_join:
                self.num_members_awaiting_join -= 1
        if self.is_leader(member_id):
            self.leader_id = next(iter(self.members), None)
        return member

    def replace_static_member(self, group_instance_id: str, old_member_id: str, new_member_id: str) -> MemberMetadata:
        """Kafka's ``replaceStaticMember``: the static member now answers to ``new_member_id``; its
        place in join order, its leadership, protocols and assignment stay. The caller answers the
        old id's parked requests first (they are still on the member)."""
        assert self.static_members.get(group_instance_id) == old_member_id and new_member_id not in self.members
        member = self.members[old_member_id]
        member.member_id = new_member_id
        self.members = {new_member_id if member_id == old_member_id else member_id: each
                        for member_id, each in self.members.items()}
        self.static_members[group_instance_id] = new_member_id
        if self.is_leader(old_member_id):
            self.leader_id = new_member_id
        return member

    def member_error(self, member_id: str, group_instance_id: str | None) -> ErrorCode | None:
        """Whether a request naming this member may act for it (Kafka's ``validateCurrentMember``):
        an instance id held by another member id is FENCED_INSTANCE_ID (an older incarnation of a
        static member, or a duplicate); an instance id held by nobody, or an unknown member id, is
        UNKNOWN_MEMBER_ID. None: it is the current member."""
        if group_instance_id is not None:
            current = self.static_members.get(group_instance_id)
            if current is None:
                return ErrorCode.UNKNOWN_MEMBER_ID
            return ErrorCode.FENCED_INSTANCE_ID if current != member_id else None
        return None if member_id in self.members else ErrorCode.UNKNOWN_MEMBER_ID

    def update_member(self, member: MemberMetadata, protocols: Protocols, join_request_id: int | None) -> None:
        """A known member rejoins: new protocols, and its JoinGroup parked (or cleared, with None)."""
        self._supported_protocols.subtract(member.protocol_names)
        self._supported_protocols += Counter()
        member.supported_protocols = tuple(protocols)
        self._supported_protocols.update(member.protocol_names)
        if join_request_id is not None and not member.is_awaiting_join:
            self.num_members_awaiting_join += 1
        elif join_request_id is None and member.is_awaiting_join:
            self.num_members_awaiting_join -= 1
        member.awaiting_join_request_id = join_request_id

    def take_join_request(self, member: MemberMetadata) -> int | None:
        """Kafka's ``maybeInvokeJoinCallback``: the parked JoinGroup's id, now no longer parked."""
        request_id = member.awaiting_join_request_id
        if request_id is not None:
            member.awaiting_join_request_id = None
            self.num_members_awaiting_join -= 1
        return request_id

    def take_sync_request(self, member: MemberMetadata) -> int | None:
        request_id = member.awaiting_sync_request_id
        member.awaiting_sync_request_id = None
        return request_id

    def not_yet_rejoined_members(self) -> list[MemberMetadata]:
        return [member for member in self.members.values() if not member.is_awaiting_join]

    def has_all_members_joined(self) -> bool:
        return len(self.members) == self.num_members_awaiting_join and not self.pending_members

    def maybe_elect_new_joined_leader(self) -> bool:
        """Make a rejoined member leader if the leader did not rejoin; False if nobody rejoined."""
        if self.leader_id is None:
            return False
        if self.members[self.leader_id].is_awaiting_join:
            return True
        for member_id, member in self.members.items():
            if member.is_awaiting_join:
                self.leader_id = member_id
                return True
        return False

    def rebalance_timeout_ms(self) -> int:
        return max((member.rebalance_timeout_ms for member in self.members.values()), default=0)

    def current_member_metadata(self) -> tuple[JoinGroupResponseMember, ...]:
        """What the leader's JoinGroup response lists: every member's metadata for the chosen protocol."""
        assert self.protocol_name is not None and self.state in (GroupState.COMPLETING_REBALANCE, GroupState.STABLE)
        return tuple(JoinGroupResponseMember(member_id=m.member_id, group_instance_id=m.group_instance_id,
                                             metadata=m.metadata(self.protocol_name))
                     for m in self.members.values())

    # ---------------------------------------------------------------------------------- protocols
    def supports_protocols(self, member_protocol_type: str, member_protocols: Iterable[str]) -> bool:
        """Whether a member with these protocols may join: an empty group takes any non-empty
        protocol type and list; otherwise the type must match and one protocol must be supported
        by every current member."""
        names = list(member_protocols)
        if self.state is GroupState.EMPTY:
            return bool(member_protocol_type) and bool(names)
        return self.protocol_type == member_protocol_type and \
            any(self._supported_protocols[name] == len(self.members) for name in names)

    def candidate_protocols(self) -> set[str]:
        return {name for name, count in self._supported_protocols.items() if count == len(self.members)}

    def select_protocol(self) -> str:
        """Kafka's vote: each member votes for its first preferred candidate; most votes wins.

        Kafka breaks a tie by hash-map order; we break it by the leader's preference order, then by
        name, so the result is deterministic.
        """
        assert self.members, f"group {self.group_id}: cannot select a protocol without members"
        candidates = self.candidate_protocols()
        votes = Counter(member.vote(candidates) for member in self.members.values())
        best = max(votes.values())
        tied = {name for name, count in votes.items() if count == best}
        leader = self.members.get(self.leader_id or "") or next(iter(self.members.values()))
        for name in leader.protocol_names:
            if name in tied:
                return name
        return min(tied)

    def init_next_generation(self, now_ms: int) -> None:
        assert all(m.group_instance_id is not None for m in self.not_yet_rejoined_members()), \
            "dynamic members that did not rejoin must be removed first"
        self.generation_id += 1
        if self.members:
            self.protocol_name = self.select_protocol()
            self.transition_to(GroupState.COMPLETING_REBALANCE, now_ms)
        else:
            self.protocol_name = None
            self.transition_to(GroupState.EMPTY, now_ms)

    # ------------------------------------------------------------------------------------ offsets
    def has_offsets(self) -> bool:
        return bool(self.offsets) or bool(self.pending_offset_commits)

    def prepare_offset_commit(self, offsets: Mapping[TopicPartition, OffsetAndMetadata]) -> None:
        self.pending_offset_commits.update(offsets)

    def on_offset_commit_append(self, topic_partition: TopicPartition, committed: OffsetAndMetadata,
                                log_offset: int) -> None:
        """The commit is in the log at ``log_offset`` (-1 if unknown); it wins unless a write
        further down the log already did. As Kafka's ``onOffsetCommitAppend``, it is applied only
        while a commit of that partition is still pending: ``remove_offsets`` (its topic was
        deleted, or the group) clears the pending commits, and the late answer must not bring the
        offset back into the cache."""
        if topic_partition not in self.pending_offset_commits:
            return
        known = self.offset_log_positions.get(topic_partition)
        if known is None or log_offset < 0 or log_offset >= known:
            self.offsets[topic_partition] = committed
            if log_offset >= 0:
                self.offset_log_positions[topic_partition] = log_offset
        if self.pending_offset_commits.get(topic_partition) == committed:
            del self.pending_offset_commits[topic_partition]

    def fail_pending_offset_write(self, topic_partition: TopicPartition, committed: OffsetAndMetadata) -> None:
        if self.pending_offset_commits.get(topic_partition) == committed:
            del self.pending_offset_commits[topic_partition]

    def load_offset(self, topic_partition: TopicPartition, committed: OffsetAndMetadata | None,
                    log_offset: int) -> None:
        """Replay one offset record from the log (None: a tombstone)."""
        if committed is None:
            self.offsets.pop(topic_partition, None)
            self.offset_log_positions.pop(topic_partition, None)
        else:
            self.offsets[topic_partition] = committed
            self.offset_log_positions[topic_partition] = log_offset

    def remove_offsets(self, topic_partitions: Iterable[TopicPartition]) -> dict[TopicPartition, OffsetAndMetadata]:
        removed = {}
        for topic_partition in topic_partitions:
            self.pending_offset_commits.pop(topic_partition, None)
            self.offset_log_positions.pop(topic_partition, None)
            if topic_partition in self.offsets:
                removed[topic_partition] = self.offsets.pop(topic_partition)
        return removed

    def remove_all_offsets(self) -> dict[TopicPartition, OffsetAndMetadata]:
        return self.remove_offsets(list(self.offsets) + list(self.pending_offset_commits))

    def remove_expired_offsets(self, now_ms: int, retention_ms: int) -> dict[TopicPartition, OffsetAndMetadata]:
        """Kafka 2.4's ``removeExpiredOffsets``: only an Empty consumer group's offsets expire,
        ``retention_ms`` after it became Empty; a group without a protocol type (offsets only,
        never joined) expires each offset ``retention_ms`` after its commit. An offset with an
        explicit expire timestamp expires then. Offsets with a commit in flight never expire."""
        if self.protocol_type is not None and self.state is GroupState.EMPTY:
            def base(committed: OffsetAndMetadata) -> int:
                return self.state_timestamp_ms
        elif self.protocol_type is None:
            def base(committed: OffsetAndMetadata) -> int:
                return committed.commit_timestamp_ms
        else:
            return {}
        expired = [
            topic_partition for topic_partition, committed in self.offsets.items()
            if topic_partition not in self.pending_offset_commits and (
                now_ms >= committed.expire_timestamp_ms if committed.expire_timestamp_ms is not None
                else now_ms - base(committed) >= retention_ms)
        ]
        return self.remove_offsets(expired)

