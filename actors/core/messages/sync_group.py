"""SyncGroup (API key 14): the group leader hands out assignments and every member collects its own.

Members send it after JoinGroup; the leader's request carries every member's assignment, the
others' carry none. The coordinator answers all of them once the leader's assignments arrive
(the group becomes Stable), or with ``REBALANCE_IN_PROGRESS`` if a new rebalance began first.
"""
from __future__ import annotations

from typing import ClassVar

from actors.core.errors import ErrorCode
from actors.core.messages._base import message


@message
class SyncGroupRequestAssignment:
    member_id: str
    assignment: bytes  # opaque to the coordinator: the assignor's encoding


@message
class SyncGroupRequest:
    API_KEY: ClassVar[int] = 14
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None = None
    protocol_type: str | None = None  # if set, must match the group's (INCONSISTENT_GROUP_PROTOCOL)
    protocol_name: str | None = None  # if set, must match the group's (INCONSISTENT_GROUP_PROTOCOL)
    assignments: tuple[SyncGroupRequestAssignment, ...] = ()  # the leader's only


@message
class SyncGroupResponse:
    error_code: ErrorCode = ErrorCode.NONE
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""
    throttle_time_ms: int = 0
