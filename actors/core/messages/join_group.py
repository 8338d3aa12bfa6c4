"""JoinGroup (API key 11): a consumer joins a group and takes part in a rebalance.

The coordinator collects every member's protocols, waits up to the rebalance timeout for the
rest to (re)join, then bumps the generation, picks a protocol all members support and answers
everyone; only the leader's response lists the members, and the leader computes the assignment
it then sends with SyncGroup. A first join with an empty ``member_id`` is answered
``MEMBER_ID_REQUIRED`` with a fresh id to join with (KIP-394).
"""
from __future__ import annotations

from typing import ClassVar

from actors.core.errors import ErrorCode
from actors.core.messages._base import message

# Kafka's JoinGroupRequest.UNKNOWN_MEMBER_ID and UNKNOWN_GENERATION_ID: not yet a member.
UNKNOWN_MEMBER_ID = ""
UNKNOWN_GENERATION_ID = -1


@message
class JoinGroupRequestProtocol:
    name: str  # an assignor, e.g. "range"
    metadata: bytes  # opaque to the coordinator: the subscription, in the assignor's encoding


@message
class JoinGroupRequest:
    API_KEY: ClassVar[int] = 11
    group_id: str
    protocol_type: str  # "consumer" for consumer groups
    protocols: tuple[JoinGroupRequestProtocol, ...]  # in the member's order of preference
    member_id: str = UNKNOWN_MEMBER_ID
    group_instance_id: str | None = None  # static membership (KIP-345); None for dynamic
    session_timeout_ms: int = 10000  # the consumer's session.timeout.ms in Kafka 2.4
    rebalance_timeout_ms: int = 300000  # the consumer's max.poll.interval.ms
    # Not in Kafka's body: the request header's client id and the connection's host, which the
    # wire listener fills in (the member id starts with the client id; DescribeGroups reports both).
    client_id: str = ""
    client_host: str = ""


@message
class JoinGroupResponseMember:
    member_id: str
    group_instance_id: str | None = None
    metadata: bytes = b""


@message
class JoinGroupResponse:
    error_code: ErrorCode = ErrorCode.NONE
    generation_id: int = UNKNOWN_GENERATION_ID
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str = ""  # the leader's member id
    member_id: str = UNKNOWN_MEMBER_ID
    members: tuple[JoinGroupResponseMember, ...] = ()  # empty except in the leader's response
    throttle_time_ms: int = 0
