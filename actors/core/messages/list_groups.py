"""ListGroups (API key 16): the consumer groups a broker coordinates.

An admin client sends it to every broker and merges the answers. ``states_filter`` (KIP-518)
keeps only groups in the named states; empty keeps all.
"""
from __future__ import annotations

from typing import ClassVar

from actors.core.errors import ErrorCode
from actors.core.messages._base import message


@message
class ListGroupsRequest:
    API_KEY: ClassVar[int] = 16
    states_filter: tuple[str, ...] = ()


@message
class ListedGroup:
    group_id: str
    protocol_type: str = ""
    group_state: str = ""


@message
class ListGroupsResponse:
    error_code: ErrorCode = ErrorCode.NONE
    groups: tuple[ListedGroup, ...] = ()
    throttle_time_ms: int = 0
