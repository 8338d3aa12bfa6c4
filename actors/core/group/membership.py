"""Group membership and rebalances: JoinGroup, SyncGroup, Heartbeat, LeaveGroup and their delayed
operations (the membership half of Kafka 2.4's ``GroupCoordinator``).

Theory of operation. The coordinator validates a request (group id, ownership, loading) and hands
it here with the cached group. A rebalance runs:

1. A member joins or rejoins, or leaves or expires: the group goes to PreparingRebalance and gets
   a *delayed join* (Kafka's DelayedJoin) due after the longest member rebalance timeout. A new,
   Empty group gets Kafka's InitialDelayedJoin instead: it waits ``group.initial.rebalance.delay.ms``
   and waits again (up to the rebalance timeout in all) while new members keep arriving.
2. JoinGroups are parked (the member keeps the request id) until every known member has rejoined
   and no KIP-394 pending member is outstanding, or the delayed join comes due; members that did
   not rejoin are then removed. The generation is bumped, a protocol is voted, the group goes to
   CompletingRebalance and every parked JoinGroup is answered; the leader's answer lists the
   members and their metadata.
3. SyncGroups are parked until the leader's arrives with the assignments; the group (with its
   assignment) is appended to ``__consumer_offsets`` and, once that write is acknowledged, every
   parked SyncGroup gets its member's assignment and the group is Stable. A failed write answers
   them with the mapped error and starts another rebalance.

Liveness (Kafka's DelayedHeartbeat): each member has a heartbeat deadline, re-armed by heartbeats,
commits and completed joins/syncs, ``session.timeout.ms`` ahead (a member new to this rebalance
gets ``NewMemberJoinTimeoutMs`` instead). When it passes, the member is removed unless it has a
parked JoinGroup (new members: only within the new-member timeout) or SyncGroup. Removing a
member of a Stable or CompletingRebalance group starts a rebalance; followers parked in SyncGroup
then get REBALANCE_IN_PROGRESS. A KIP-394 pending member id that is not used to rejoin within its
session timeout is forgotten.

Every parked request is answered exactly once: when the rebalance or sync completes, when its
member is removed (UNKNOWN_MEMBER_ID), when the same member sends a newer JoinGroup/SyncGroup
(the older one gets REBALANCE_IN_PROGRESS; Kafka silently drops it), or when the group is
unloaded (NOT_COORDINATOR). At most one JoinGroup and one SyncGroup per member are parked.

Static members (KIP-345, ``group.instance.id``) are in ``static_membership``: a restarted one takes
its old place without a rebalance, and the id it had is fenced (FENCED_INSTANCE_ID).
"""
from __future__ import annotations

from actors.core.effects import Effect, LogEvent, Respond
from actors.core.errors import ErrorCode
from actors.core.group.group_config import GroupConfig
from actors.core.group.group_manager import GroupMetadataManager
from actors.core.group.group_metadata import GroupMetadata, GroupState, MemberMetadata, Protocols
from actors.core.group.static_membership import StaticMembership
from actors.core.group.timers import Timer, TimerKind, TimerQueue
from actors.core.messages.heartbeat import HeartbeatRequest
from actors.core.messages.join_group import UNKNOWN_MEMBER_ID, JoinGroupRequest, JoinGroupResponse
from actors.core.messages.sync_group import SyncGroupRequest, SyncGroupResponse

_S = GroupState


class _DelayedJoin:
    """A group's pending rebalance completion (Kafka's DelayedJoin / InitialDelayedJoin)."""

    __slots__ = ("deadline_ms", "delay_ms", "initial", "remaining_ms")

    def __init__(self, deadline_ms: int, delay_ms: int, initial: bool = False, remaining_ms: int = 0) -> None:
        self.deadline_ms = deadline_ms
        self.delay_ms = delay_ms
        self.initial = initial  # an initial delay never completes early, only at its deadline
        self.remaining_ms = remaining_ms  # initial only: how much longer it may still be extended


def join_error(request_id: int, error: ErrorCode, member_id: str) -> Respond:
    return Respond(request_id=request_id, response=JoinGroupResponse(error_code=error, member_id=member_id))


def sync_error(request_id: int, error: ErrorCode) -> Respond:
    return Respond(request_id=request_id, response=SyncGroupResponse(error_code=error))


class GroupMembership(StaticMembership):
    def __init__(self, config: GroupConfig, manager: GroupMetadataManager, new_member_id) -> None:
        self.config = config
        self.manager = manager
        self._new_member_id = new_member_id  # (group, client_id) -> a member id unused in the group
        self._delayed_joins: dict[str, _DelayedJoin] = {}
        self.timers = TimerQueue(self._is_live)

    # ------------------------------------------------------------------------------------ timers
    def _is_live(self, timer: Timer) -> bool:
        group = self.manager.get_group(timer.group_id)
        if group is None:
            return False
        if timer.kind is TimerKind.JOIN:
            delayed = self._delayed_joins.get(timer.group_id)
            return delayed is not None and delayed.deadline_ms == timer.deadline_ms
        if timer.kind is TimerKind.PENDING_MEMBER:
            return group.pending_members.get(timer.member_id) == timer.deadline_ms
        member = group.members.get(timer.member_id)
        return member is not None and member.heartbeat_deadline_ms == timer.deadline_ms

    def schedule_heartbeat(self, group: GroupMetadata, member: MemberMetadata, now_ms: int,
                           timeout_ms: int | None = None) -> None:
        """Kafka's ``completeAndScheduleNextExpiration``: a heartbeat now, the next one due later."""
        member.latest_heartbeat_ms = now_ms
        member.heartbeat_deadline_ms = now_ms + (member.session_timeout_ms if timeout_ms is None else timeout_ms)
        self.timers.push(Timer(member.heartbeat_deadline_ms, TimerKind.HEARTBEAT, group.group_id, member.member_id))

    def _set_delayed_join(self, group: GroupMetadata, delayed: _DelayedJoin) -> None:
        self._delayed_joins[group.group_id] = delayed
        self.timers.push(Timer(delayed.deadline_ms, TimerKind.JOIN, group.group_id))

    def fire(self, timer: Timer, now_ms: int) -> list[Effect]:
        """Run a due, live timer (from ``timers.pop_due``)."""
        group = self.manager.get_group(timer.group_id)
        assert group is not None
        if timer.kind is TimerKind.JOIN:
            return self._on_join_deadline(group, now_ms)
        if timer.kind is TimerKind.PENDING_MEMBER:
            del group.pending_members[timer.member_id]
            effects: list[Effect] = [LogEvent(level="info", message=f"group {group.group_id}: pending member "
                                                                    f"{timer.member_id} did not rejoin in time")]
            return effects + (self._try_complete_join(group, now_ms) if group.is_state(_S.PREPARING_REBALANCE) else [])
        member = group.members[timer.member_id]
        member.heartbeat_deadline_ms = None
        if member.should_keep_alive(timer.deadline_ms, self.config.new_member_join_timeout_ms):
            return []
        return [LogEvent(level="info", message=f"group {group.group_id}: member {member.member_id} failed "
                                               f"(no heartbeat), removing it")] + \
            self._remove_member_and_update_group(group, member, now_ms)

    # -------------------------------------------------------------------------------- JoinGroup
    def join_group(self, request_id: int, request: JoinGroupRequest, now_ms: int,
                   client_id: str, client_host: str) -> list[Effect]:
        """After the coordinator's validation (group id, ownership, session timeout bounds)."""
        group = self.manager.get_group(request.group_id)
        unknown = request.member_id == UNKNOWN_MEMBER_ID
        if group is None:
            if not unknown:
                return [join_error(request_id, ErrorCode.UNKNOWN_MEMBER_ID, request.member_id)]
            group = self.manager.add_group(GroupMetadata(request.group_id, state_timestamp_ms=now_ms))
            effects = self._unknown_member_join(group, request_id, request, now_ms, client_id, client_host)
        elif unknown and group.size >= self.config.group_max_size \
                and request.group_instance_id not in group.static_members:  # a restart adds nobody
            return [join_error(request_id, ErrorCode.GROUP_MAX_SIZE_REACHED, UNKNOWN_MEMBER_ID)]
        elif group.size > self.config.group_max_size and group.has(request.member_id) \
                and not group.members[request.member_id].is_awaiting_join:
            # An oversized group (loaded with more members than group.max.size allows) sheds
            # members that have not rejoined yet, until it fits.
            group.members[request.member_id].heartbeat_deadline_ms = None
            group.remove(request.member_id)
            effects = [join_error(request_id, ErrorCode.GROUP_MAX_SIZE_REACHED, UNKNOWN_MEMBER_ID)]
        elif unknown:
            effects = self._unknown_member_join(group, request_id, request, now_ms, client_id, client_host)
        else:
            effects = self._known_member_join(group, request_id, request, now_ms, client_id, client_host)
        if group.is_state(_S.PREPARING_REBALANCE):
            effects += self._try_complete_join(group, now_ms)
        return effects

    def _unknown_member_join(self, group: GroupMetadata, request_id: int, request: JoinGroupRequest,
                             now_ms: int, client_id: str, client_host: str) -> list[Effect]:
        if group.is_state(_S.DEAD):
            return [join_error(request_id, ErrorCode.COORDINATOR_NOT_AVAILABLE, UNKNOWN_MEMBER_ID)]
        if not group.supports_protocols(request.protocol_type, [p.name for p in request.protocols]):
            return [join_error(request_id, ErrorCode.INCONSISTENT_GROUP_PROTOCOL, UNKNOWN_MEMBER_ID)]
        if request.group_instance_id is not None:
            protocols: Protocols = tuple((p.name, p.metadata) for p in request.protocols)
            if request.group_instance_id in group.static_members:
                return self._static_member_rejoin(group, request_id, request, protocols, now_ms)
            return self._add_member_and_rebalance(group, request_id, request, protocols, now_ms, client_id,
                                                  client_host, self._new_member_id(group, request.group_instance_id))
        # KIP-394: hand out an id and ask the member to rejoin with it, so that a client that
        # never got this answer does not leave a member behind.
        member_id = self._new_member_id(group, client_id)
        deadline_ms = now_ms + request.session_timeout_ms
        group.pending_members[member_id] = deadline_ms
        self.timers.push(Timer(deadline_ms, TimerKind.PENDING_MEMBER, group.group_id, member_id))
        return [join_error(request_id, ErrorCode.MEMBER_ID_REQUIRED, member_id)]

    def _known_member_join(self, group: GroupMetadata, request_id: int, request: JoinGroupRequest,
                           now_ms: int, client_id: str, client_host: str) -> list[Effect]:
        member_id = request.member_id
        protocols: Protocols = tuple((p.name, p.metadata) for p in request.protocols)
        if group.is_state(_S.DEAD):
            return [join_error(request_id, ErrorCode.COORDINATOR_NOT_AVAILABLE, member_id)]
        if not group.supports_protocols(request.protocol_type, [name for name, _ in protocols]):
            return [join_error(request_id, ErrorCode.INCONSISTENT_GROUP_PROTOCOL, member_id)]
        if member_id in group.pending_members and request.group_instance_id not in group.static_members:
            return self._add_member_and_rebalance(group, request_id, request, protocols, now_ms,
                                                  client_id, client_host, member_id)
        error = group.member_error(member_id, request.group_instance_id)
        if error is not None:
            return [join_error(request_id, error, member_id)]
        member = group.members[member_id]
        if group.is_state(_S.EMPTY):
            return [join_error(request_id, ErrorCode.UNKNOWN_MEMBER_ID, member_id)]
        if group.is_state(_S.PREPARING_REBALANCE):
            return self._update_member_and_rebalance(group, member, protocols, request_id, now_ms)
        if group.is_state(_S.COMPLETING_REBALANCE) and member.matches(protocols):
            # It missed its JoinGroup answer: repeat it for the current generation.
            return [Respond(request_id=request_id, response=self._join_result(group, member))]
        if group.is_state(_S.STABLE) and not group.is_leader(member_id) and member.matches(protocols):
            return [Respond(request_id=request_id, response=self._join_result(group, member, with_members=False))]
        # Changed metadata, or the leader rejoining a Stable group (it may have seen new topic
        # metadata the others cannot): a new rebalance.
        return self._update_member_and_rebalance(group, member, protocols, request_id, now_ms)

    def _join_result(self, group: GroupMetadata, member: MemberMetadata, with_members: bool = True) -> JoinGroupResponse:
        members = group.current_member_metadata() if with_members and group.is_leader(member.member_id) else ()
        return JoinGroupResponse(error_code=ErrorCode.NONE, generation_id=group.generation_id,
                                 protocol_type=group.protocol_type, protocol_name=group.protocol_name,
                                 leader=group.leader_id or "", member_id=member.member_id, members=members)

    def _add_member_and_rebalance(self, group: GroupMetadata, request_id: int, request: JoinGroupRequest,
                                  protocols: Protocols, now_ms: int, client_id: str, client_host: str,
                                  member_id: str) -> list[Effect]:
        rebalance_timeout_ms = request.rebalance_timeout_ms
        if rebalance_timeout_ms < 0:  # JoinGroup v0 had none: Kafka then uses the session timeout
            rebalance_timeout_ms = request.session_timeout_ms
        member = MemberMetadata(
            member_id=member_id, group_id=group.group_id, client_id=client_id, client_host=client_host,
            group_instance_id=request.group_instance_id, rebalance_timeout_ms=rebalance_timeout_ms,
            session_timeout_ms=request.session_timeout_ms, protocol_type=request.protocol_type,
            supported_protocols=protocols, is_new=True)
        if group.is_state(_S.PREPARING_REBALANCE) and group.generation_id == 0:
            group.new_member_added = True  # lets the initial delay extend
        group.add(member, request_id)
        # A new member cannot heartbeat before its JoinGroup is answered; its JoinGroup times out
        # instead after the new-member timeout, so a vanished client does not stall the rebalance.
        self.schedule_heartbeat(group, member, now_ms, self.config.new_member_join_timeout_ms)
        return self._maybe_prepare_rebalance(group, now_ms, f"adding new member {member.member_id}")

    def _update_member_and_rebalance(self, group: GroupMetadata, member: MemberMetadata, protocols: Protocols,
                                     request_id: int, now_ms: int) -> list[Effect]:
        effects: list[Effect] = []
        superseded = group.take_join_request(member)
        if superseded is not None:
            effects.append(join_error(superseded, ErrorCode.REBALANCE_IN_PROGRESS, member.member_id))
        group.update_member(member, protocols, request_id)
        return effects + self._maybe_prepare_rebalance(group, now_ms, f"updating metadata for member {member.member_id}")

    # -------------------------------------------------------------------------------- rebalance
    def _maybe_prepare_rebalance(self, group: GroupMetadata, now_ms: int, reason: str) -> list[Effect]:
        return self.prepare_rebalance(group, now_ms, reason) if group.can_rebalance() else []

    def prepare_rebalance(self, group: GroupMetadata, now_ms: int, reason: str) -> list[Effect]:
        effects: list[Effect] = []
        if group.is_state(_S.COMPLETING_REBALANCE):
            effects += self._reset_and_propagate_assignment_error(group, ErrorCode.REBALANCE_IN_PROGRESS, now_ms)
        if group.is_state(_S.EMPTY):
            delay_ms = self.config.group_initial_rebalance_delay_ms
            delayed = _DelayedJoin(now_ms + delay_ms, delay_ms, initial=True,
                                   remaining_ms=max(group.rebalance_timeout_ms() - delay_ms, 0))
        else:
            delayed = _DelayedJoin(now_ms + group.rebalance_timeout_ms(), group.rebalance_timeout_ms())
        group.transition_to(_S.PREPARING_REBALANCE, now_ms)
        self._set_delayed_join(group, delayed)
        effects.append(LogEvent(level="info", message=f"group {group.group_id}: preparing to rebalance from "
                                                      f"generation {group.generation_id} ({reason})"))
        return effects + self._try_complete_join(group, now_ms)

    def _try_complete_join(self, group: GroupMetadata, now_ms: int) -> list[Effect]:
        """Kafka's ``tryCompleteJoin``: complete now if everybody is in (never for an initial delay)."""
        delayed = self._delayed_joins.get(group.group_id)
        if delayed is None or delayed.initial or not group.has_all_members_joined():
            return []
        return self._complete_join(group, now_ms)

    def _on_join_deadline(self, group: GroupMetadata, now_ms: int) -> list[Effect]:
        delayed = self._delayed_joins[group.group_id]
        if delayed.initial and group.new_member_added and delayed.remaining_ms != 0:
            # InitialDelayedJoin: members are still arriving, so wait another delay (bounded by
            # the rebalance timeout) before the first generation.
            group.new_member_added = False
            delay_ms = min(self.config.group_initial_rebalance_delay_ms, delayed.remaining_ms)
            remaining_ms = max(delayed.remaining_ms - delayed.delay_ms, 0)
            self._set_delayed_join(group, _DelayedJoin(now_ms + delay_ms, delay_ms, True, remaining_ms))
            return []
        return self._complete_join(group, now_ms)

    def _complete_join(self, group: GroupMetadata, now_ms: int) -> list[Effect]:
        """Kafka's ``onCompleteJoin``: drop who did not rejoin, start the next generation, answer."""
        del self._delayed_joins[group.group_id]
        effects: list[Effect] = []
        # Static members stay (Kafka's onCompleteJoin): only their session timeout removes them.
        for member in [m for m in group.not_yet_rejoined_members() if m.group_instance_id is None]:
            member.heartbeat_deadline_ms = None
            effects += self._answer_parked(group, member, ErrorCode.UNKNOWN_MEMBER_ID)
            group.remove(member.member_id)
            effects.append(LogEvent(level="info", message=f"group {group.group_id}: member {member.member_id} "
                                                          f"did not rejoin in time, removing it"))
        if group.is_state(_S.DEAD):
            return effects
        if not group.maybe_elect_new_joined_leader() and group.members:
            # Nobody rejoined (possible only with members that are never expelled, such as static
            # ones): wait another rebalance timeout.
            self._set_delayed_join(group, _DelayedJoin(now_ms + group.rebalance_timeout_ms(),
                                                       group.rebalance_timeout_ms()))
            return effects
        group.init_next_generation(now_ms)
        if group.is_state(_S.EMPTY):
            effects.append(LogEvent(level="info", message=f"group {group.group_id} is now empty "
                                                          f"(generation {group.generation_id})"))
            return effects + self.manager.store_group(group, {}, now_ms, self._warn_empty_store_failed(group))
        effects.append(LogEvent(level="info", message=f"group {group.group_id}: stabilized generation "
                                                      f"{group.generation_id} with {group.size} members"))
        for member in list(group.members.values()):
            request_id = group.take_join_request(member)
            assert request_id is not None or member.group_instance_id is not None, "every dynamic member rejoined"
            if request_id is not None:
                effects.append(Respond(request_id=request_id, response=self._join_result(group, member)))
            self.schedule_heartbeat(group, member, now_ms)
            member.is_new = False
        return effects

    @staticmethod
    def _warn_empty_store_failed(group: GroupMetadata):
        def on_stored(error: ErrorCode, _at_ms: int) -> list[Effect]:
            # Safe to ignore, as Kafka does: if the broker fails before the next rebalance, the
            # previous generation comes back from the log and its members simply time out.
            if error is ErrorCode.NONE:
                return []
            return [LogEvent(level="warning", message=f"group {group.group_id}: failed to write empty "
                                                      f"group metadata: {error.name}")]
        return on_stored

    def _remove_member_and_update_group(self, group: GroupMetadata, member: MemberMetadata,
                                        now_ms: int) -> list[Effect]:
        effects = self._answer_parked(group, member, ErrorCode.UNKNOWN_MEMBER_ID)
        member.heartbeat_deadline_ms = None
        group.remove(member.member_id)
        if group.state in (_S.STABLE, _S.COMPLETING_REBALANCE):
            effects += self._maybe_prepare_rebalance(group, now_ms, f"member {member.member_id} left")
        elif group.is_state(_S.PREPARING_REBALANCE):
            effects += self._try_complete_join(group, now_ms)
        return effects

    def _answer_parked(self, group: GroupMetadata, member: MemberMetadata, error: ErrorCode) -> list[Effect]:
        effects: list[Effect] = []
        join_request_id = group.take_join_request(member)
        if join_request_id is not None:
            effects.append(join_error(join_request_id, error, UNKNOWN_MEMBER_ID
                                      if error is ErrorCode.UNKNOWN_MEMBER_ID else member.member_id))
        sync_request_id = group.take_sync_request(member)
        if sync_request_id is not None:
            effects.append(sync_error(sync_request_id, error))
        return effects

    # -------------------------------------------------------------------------------- SyncGroup
    def sync_group(self, request_id: int, request: SyncGroupRequest, now_ms: int) -> list[Effect]:
        """After the coordinator's validation (group id, ownership, loading)."""
        group = self.manager.get_group(request.group_id)
        error = self._sync_error(group, request)
        if error is not None:
            return [sync_error(request_id, error)]
        assert group is not None
        member = group.members[request.member_id]
        if group.is_state(_S.STABLE):
            self.schedule_heartbeat(group, member, now_ms)
            return [Respond(request_id=request_id, response=SyncGroupResponse(
                protocol_type=group.protocol_type, protocol_name=group.protocol_name,
                assignment=member.assignment))]
        assert group.is_state(_S.COMPLETING_REBALANCE)
        effects: list[Effect] = []
        superseded = group.take_sync_request(member)
        if superseded is not None:
            effects.append(sync_error(superseded, ErrorCode.REBALANCE_IN_PROGRESS))
        member.awaiting_sync_request_id = request_id
        if group.is_leader(member.member_id):
            given = {entry.member_id: entry.assignment for entry in request.assignments}
            # Members the leader left out get an empty assignment.
            assignment = {member_id: given.get(member_id, b"") for member_id in group.members}
            effects.append(LogEvent(level="info", message=f"group {group.group_id}: assignment received from "
                                                          f"leader for generation {group.generation_id}"))
            effects += self.manager.store_group(group, assignment, now_ms,
                                                self._on_group_stored(group, group.generation_id, assignment))
        return effects

    @staticmethod
    def _sync_error(group: GroupMetadata | None, request: SyncGroupRequest) -> ErrorCode | None:
        if group is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if group.is_state(_S.DEAD):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        error = group.member_error(request.member_id, request.group_instance_id)
        if error is not None:
            return error
        if request.generation_id != group.generation_id:
            return ErrorCode.ILLEGAL_GENERATION
        if (request.protocol_type is not None and request.protocol_type != group.protocol_type) or \
                (request.protocol_name is not None and group.protocol_name is not None
                 and request.protocol_name != group.protocol_name):
            return ErrorCode.INCONSISTENT_GROUP_PROTOCOL
        if group.is_state(_S.EMPTY):
            return ErrorCode.UNKNOWN_MEMBER_ID
        if group.is_state(_S.PREPARING_REBALANCE):
            return ErrorCode.REBALANCE_IN_PROGRESS
        return None

    def _on_group_stored(self, group: GroupMetadata, generation_id: int, assignment: dict[str, bytes]):
        def on_stored(error: ErrorCode, now_ms: int) -> list[Effect]:
            # The group may have moved on (a member joined, the partition moved) while the write
            # was in flight; then this outcome no longer concerns anyone.
            if self.manager.get_group(group.group_id) is not group or \
                    not group.is_state(_S.COMPLETING_REBALANCE) or group.generation_id != generation_id:
                return []
            if error is not ErrorCode.NONE:
                effects = self._reset_and_propagate_assignment_error(group, error, now_ms)
                return effects + self._maybe_prepare_rebalance(
                    group, now_ms, f"error {error.name} storing the group assignment")
            for member_id, member in group.members.items():
                member.assignment = assignment.get(member_id, b"")
            effects = self._propagate_assignment(group, ErrorCode.NONE, now_ms)
            group.transition_to(_S.STABLE, now_ms)
            return effects
        return on_stored

    def _reset_and_propagate_assignment_error(self, group: GroupMetadata, error: ErrorCode,
                                              now_ms: int) -> list[Effect]:
        assert group.is_state(_S.COMPLETING_REBALANCE)
        for member in group.members.values():
            member.assignment = b""
        return self._propagate_assignment(group, error, now_ms)

    def _propagate_assignment(self, group: GroupMetadata, error: ErrorCode, now_ms: int) -> list[Effect]:
        effects: list[Effect] = []
        ok = error is ErrorCode.NONE
        for member in group.members.values():
            request_id = group.take_sync_request(member)
            if request_id is None:
                continue
            effects.append(Respond(request_id=request_id, response=SyncGroupResponse(
                error_code=error, protocol_type=group.protocol_type if ok else None,
                protocol_name=group.protocol_name if ok else None, assignment=member.assignment)))
            # Its heartbeat expiry was ignored while it waited here; expect heartbeats from now on.
            self.schedule_heartbeat(group, member, now_ms)
        return effects

    # -------------------------------------------------------------------------------- Heartbeat
    def heartbeat(self, request: HeartbeatRequest, now_ms: int) -> ErrorCode:
        group = self.manager.get_group(request.group_id)
        if group is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if group.is_state(_S.DEAD):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        error = group.member_error(request.member_id, request.group_instance_id)
        if error is not None:
            return error
        member = group.members[request.member_id]
        if request.generation_id != group.generation_id:
            return ErrorCode.ILLEGAL_GENERATION
        if group.is_state(_S.EMPTY):
            return ErrorCode.UNKNOWN_MEMBER_ID
        if group.is_state(_S.COMPLETING_REBALANCE):
            return ErrorCode.REBALANCE_IN_PROGRESS  # Kafka 2.4 does not re-arm the deadline here
        self.schedule_heartbeat(group, member, now_ms)
        return ErrorCode.REBALANCE_IN_PROGRESS if group.is_state(_S.PREPARING_REBALANCE) else ErrorCode.NONE

    # ------------------------------------------------------------------------ loading/unloading
    def on_group_loaded(self, group: GroupMetadata, now_ms: int) -> list[Effect]:
        """Kafka's ``onGroupLoaded``: loaded members must heartbeat within their session timeout."""
        assert group.state in (_S.STABLE, _S.EMPTY)
        effects: list[Effect] = []
        if group.size > self.config.group_max_size:
            effects += self.prepare_rebalance(group, now_ms, "freshly loaded group is over capacity")
        for member in group.members.values():
            self.schedule_heartbeat(group, member, now_ms)
        return effects

    def on_group_unloaded(self, group: GroupMetadata, now_ms: int) -> list[Effect]:
        """Kafka's ``onGroupUnloaded``: the group is Dead here; parked requests get NOT_COORDINATOR."""
        group.transition_to(_S.DEAD, now_ms)
        self._delayed_joins.pop(group.group_id, None)
        effects: list[Effect] = []
        for member in group.members.values():
            member.heartbeat_deadline_ms = None
            join_request_id = group.take_join_request(member)
            if join_request_id is not None:
                effects.append(join_error(join_request_id, ErrorCode.NOT_COORDINATOR, member.member_id))
            sync_request_id = group.take_sync_request(member)
            if sync_request_id is not None:
                effects.append(sync_error(sync_request_id, ErrorCode.NOT_COORDINATOR))
        return effects

