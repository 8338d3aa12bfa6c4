"""LeaveGroup (API key 13): members leave a consumer group, which then rebalances at once.

A consumer sends it on close so that the group need not wait out its session timeout. Several
members can leave in one request (KIP-345); each gets its own error code, and the top-level
``error_code`` is for the group as a whole (``NOT_COORDINATOR``,
``COORDINATOR_LOAD_IN_PROGRESS``, ...).
"""
from __future__ import annotations

from typing import ClassVar

from actors.core.errors import ErrorCode
from actors.core.messages._base import message


@message
class MemberIdentity:
    member_id: str
    group_instance_id: str | None = None


@message
class LeaveGroupRequest:
    API_KEY: ClassVar[int] = 13
    group_id: str
    members: tuple[MemberIdentity, ...]


@message
class MemberResponse:
    member_id: str
    group_instance_id: str | None = None
    error_code: ErrorCode = ErrorCode.NONE


@message
class LeaveGroupResponse:
    error_code: ErrorCode = ErrorCode.NONE
    members: tuple[MemberResponse, ...] = ()
    throttle_time_ms: int = 0
