"""Static membership (KIP-345): a member named by its ``group.instance.id`` keeps its place in the
group across restarts of its client, so a restart does not cost the whole group a rebalance.

Theory of operation. A mixin of ``GroupMembership`` (it uses its ``manager``, timers and
rebalance steps). A JoinGroup with no member id and a ``group_instance_id``:

- that nobody holds: a new static member, added at once (no KIP-394 MEMBER_ID_REQUIRED round:
  the instance id already tells a retry from a new member) and a rebalance, as for any new member;
- that a member holds: the client restarted. The member gets a new member id (Kafka's
  ``updateStaticMemberAndRebalance``), the old id's parked JoinGroup/SyncGroup are answered
  FENCED_INSTANCE_ID and any later request with the old id gets FENCED_INSTANCE_ID too
  (``GroupMetadata.member_error``). What happens next depends on the group's state:

  - Stable: no rebalance, unless the new protocols change the group's selected protocol. The
    group (with the new member id and everyone's current assignment) is appended to
    ``__consumer_offsets`` first, so that a coordinator failover knows the new id; once that
    write is acknowledged the JoinGroup is answered with the current generation and the *old*
    leader id (so a restarted leader does not think it must assign: a Stable group would not hand
    out a new assignment). The member then gets its old assignment from SyncGroup. A failed write
    puts the old member id back and answers the JoinGroup with the error. This is Kafka 2.7+'s
    behaviour; 2.4 answered without writing, so a failover brought the old id back.
  - CompletingRebalance: a new rebalance (Kafka 2.5+; in 2.4 the leader's assignment named the
    old id, so the restarted member got nothing).
  - PreparingRebalance: the JoinGroup is parked with the others, as any rejoin.

LeaveGroup is here too, since KIP-345 it names members by instance id as well as member id.

Static members are not expelled by a rebalance they miss (the rebalance waits the full timeout
for them instead); only their session timeout, or a LeaveGroup naming them, removes them. Stock
consumers send no LeaveGroup when a static member closes, which is what lets it come back.
"""
from __future__ import annotations

from actors.core.effects import Effect, LogEvent, Respond
from actors.core.errors import ErrorCode
from actors.core.group.group_metadata import GroupMetadata, GroupState, MemberMetadata, Protocols
from actors.core.messages.join_group import UNKNOWN_MEMBER_ID, JoinGroupRequest, JoinGroupResponse
from actors.core.messages.leave_group import LeaveGroupRequest, MemberResponse

_S = GroupState


class StaticMembership:
    """The static-member half of ``GroupMembership``; see the module docstring."""

    def _static_member_rejoin(self, group: GroupMetadata, request_id: int, request: JoinGroupRequest,
                              protocols: Protocols, now_ms: int) -> list[Effect]:
        """A JoinGroup with no member id and the instance id of a current member."""
        instance_id = request.group_instance_id
        assert instance_id is not None
        old_member_id = group.static_members[instance_id]
        member = group.members[old_member_id]
        effects = self._answer_parked(group, member, ErrorCode.FENCED_INSTANCE_ID)
        current_leader = group.leader_id
        old_protocols = member.supported_protocols
        new_member_id = self._new_member_id(group, instance_id)
        group.replace_static_member(instance_id, old_member_id, new_member_id)
        # The old id's heartbeat timer dies with the id; the new id must heartbeat from now on.
        self.schedule_heartbeat(group, member, now_ms)
        group.update_member(member, protocols, request_id)
        effects.append(LogEvent(level="info", message=f"group {group.group_id}: static member {instance_id} "
                                                      f"rejoined, member id {old_member_id} -> {new_member_id}"))
        if group.is_state(_S.STABLE):
            if group.select_protocol() != group.protocol_name:
                return effects + self.prepare_rebalance(
                    group, now_ms, f"static member {instance_id} rejoined with protocols that change the group's")
            assignment = {m.member_id: m.assignment for m in group.members.values()}
            return effects + self.manager.store_group(group, assignment, now_ms, self._on_static_member_stored(
                group, member, request_id, old_member_id, old_protocols, current_leader))
        if group.is_state(_S.COMPLETING_REBALANCE):
            return effects + self.prepare_rebalance(group, now_ms, f"static member {instance_id} rejoined "
                                                                   f"while the assignment was being made")
        assert group.is_state(_S.PREPARING_REBALANCE), f"unexpected state {group.state}"
        return effects

    def _on_static_member_stored(self, group: GroupMetadata, member: MemberMetadata, request_id: int,
                                 old_member_id: str, old_protocols: Protocols, current_leader: str | None):
        new_member_id = member.member_id
        instance_id = member.group_instance_id
        assert instance_id is not None

        def on_stored(error: ErrorCode, now_ms: int) -> list[Effect]:
            # Someone else answered the JoinGroup meanwhile: a rebalance took it in, the instance
            # rejoined again (this one was fenced), or the group was unloaded.
            if self.manager.get_group(group.group_id) is not group or not group.is_state(_S.STABLE) or \
                    group.members.get(new_member_id) is not member or member.awaiting_join_request_id != request_id:
                return []
            group.take_join_request(member)
            if error is not ErrorCode.NONE:
                group.update_member(member, old_protocols, None)
                group.replace_static_member(instance_id, new_member_id, old_member_id)
                self.schedule_heartbeat(group, member, now_ms)
                return [LogEvent(level="warning", message=f"group {group.group_id}: static member {instance_id} "
                                                          f"keeps member id {old_member_id}: {error.name}"),
                        Respond(request_id=request_id, response=JoinGroupResponse(
                            error_code=error, generation_id=group.generation_id, protocol_type=group.protocol_type,
                            protocol_name=group.protocol_name, leader=current_leader or "",
                            member_id=UNKNOWN_MEMBER_ID))]
            return [Respond(request_id=request_id, response=JoinGroupResponse(
                generation_id=group.generation_id, protocol_type=group.protocol_type,
                protocol_name=group.protocol_name, leader=current_leader or "", member_id=new_member_id))]
        return on_stored

    # ------------------------------------------------------------------------------- LeaveGroup
    def leave_group(self, request: LeaveGroupRequest, now_ms: int) -> tuple[ErrorCode, list[MemberResponse], list[Effect]]:
        """(group error, per-member answers, effects), after the coordinator's validation."""
        group = self.manager.get_group(request.group_id)
        if group is None:
            return ErrorCode.NONE, [MemberResponse(member_id=m.member_id, group_instance_id=m.group_instance_id,
                                                   error_code=ErrorCode.UNKNOWN_MEMBER_ID)
                                    for m in request.members], []
        if group.is_state(_S.DEAD):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, [], []
        answers: list[MemberResponse] = []
        effects: list[Effect] = []
        for leaving in request.members:
            error = ErrorCode.NONE
            # KIP-345: a static member may be named by its instance id alone (an admin's
            # removeMembersFromConsumerGroup); a member id with it must be the current one.
            static_member_id = None if leaving.group_instance_id is None else \
                group.static_members.get(leaving.group_instance_id)
            if leaving.group_instance_id is not None and leaving.member_id != UNKNOWN_MEMBER_ID and \
                    static_member_id is not None and static_member_id != leaving.member_id:
                error = ErrorCode.FENCED_INSTANCE_ID
            elif leaving.member_id in group.pending_members:
                del group.pending_members[leaving.member_id]
                if group.is_state(_S.PREPARING_REBALANCE):
                    effects += self._try_complete_join(group, now_ms)
            elif leaving.member_id in group.members or static_member_id is not None:
                member = group.members[static_member_id or leaving.member_id]
                effects.append(LogEvent(level="info", message=f"group {group.group_id}: member "
                                                              f"{member.member_id} left"))
                effects += self._remove_member_and_update_group(group, member, now_ms)
            else:
                error = ErrorCode.UNKNOWN_MEMBER_ID
            answers.append(MemberResponse(member_id=leaving.member_id, group_instance_id=leaving.group_instance_id,
                                          error_code=error))
        return ErrorCode.NONE, answers, effects
