"""Heartbeat (API key 12): a group member keeps its session alive and learns of rebalances.

A member that sends none for ``session.timeout.ms`` is removed and the group rebalances. The
answer ``REBALANCE_IN_PROGRESS`` tells the member to rejoin; ``ILLEGAL_GENERATION`` and
``UNKNOWN_MEMBER_ID`` tell it that it has already been removed.
"""
from __future__ import annotations

from typing import ClassVar

from actors.core.errors import ErrorCode
from actors.core.messages._base import message


@message
class HeartbeatRequest:
    API_KEY: ClassVar[int] = 12
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None = None


@message
class HeartbeatResponse:
    error_code: ErrorCode = ErrorCode.NONE
    throttle_time_ms: int = 0
