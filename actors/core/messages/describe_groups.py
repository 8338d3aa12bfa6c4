"""DescribeGroups (API key 15): the state, protocol and members of consumer groups.

An admin tool's view of the coordinator's group state machine. A group the coordinator does not
know is described with state "Dead" and no error, as in Kafka; a group the broker does not
coordinate gets ``NOT_COORDINATOR``.
"""
from __future__ import annotations

from typing import ClassVar

from actors.core.errors import ErrorCode
from actors.core.messages._base import message


@message
class DescribeGroupsRequest:
    API_KEY: ClassVar[int] = 15
    groups: tuple[str, ...]


@message
class DescribedGroupMember:
    member_id: str
    group_instance_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    member_metadata: bytes = b""  # the member's metadata for the group's chosen protocol
    member_assignment: bytes = b""


@message
class DescribedGroup:
    group_id: str
    error_code: ErrorCode = ErrorCode.NONE
    # One of Kafka's state names: "Empty", "PreparingRebalance", "CompletingRebalance",
    # "Stable" or "Dead".
    group_state: str = ""
    protocol_type: str = ""
    protocol_data: str = ""  # the chosen protocol's name, once the group is Stable
    members: tuple[DescribedGroupMember, ...] = ()
    # Not in Kafka's schema (its admin client cannot see the generation); raykafka's admin view
    # reports it, since rebalances are what users watch.
    generation_id: int = -1


@message
class DescribeGroupsResponse:
    groups: tuple[DescribedGroup, ...]
    throttle_time_ms: int = 0
