"""OffsetCommit (API key 8): a consumer stores its positions with its group coordinator.

The coordinator appends the offsets to the group's ``__consumer_offsets`` partition and answers
once that write is replicated. A group member's commit must carry the current ``generation_id``
and its ``member_id`` (else ``ILLEGAL_GENERATION`` or ``UNKNOWN_MEMBER_ID``, and
``REBALANCE_IN_PROGRESS`` mid-rebalance); a consumer outside any group commits with the
defaults, -1 and "", which the coordinator accepts only while the group has no members.
"""
from __future__ import annotations

from typing import ClassVar

from actors.core.errors import ErrorCode
from actors.core.messages._base import NO_EPOCH, message
from actors.core.messages.join_group import UNKNOWN_GENERATION_ID, UNKNOWN_MEMBER_ID


@message
class OffsetCommitRequestPartition:
    partition_index: int
    committed_offset: int  # the offset of the next record to consume, not the last consumed
    committed_leader_epoch: int = NO_EPOCH
    committed_metadata: str | None = ""


@message
class OffsetCommitRequestTopic:
    name: str
    partitions: tuple[OffsetCommitRequestPartition, ...]


@message
class OffsetCommitRequest:
    API_KEY: ClassVar[int] = 8
    group_id: str
    topics: tuple[OffsetCommitRequestTopic, ...]
    generation_id: int = UNKNOWN_GENERATION_ID
    member_id: str = UNKNOWN_MEMBER_ID
    group_instance_id: str | None = None
    retention_time_ms: int = -1  # -1 keeps the broker's offsets.retention.minutes


@message
class OffsetCommitResponsePartition:
    partition_index: int
    error_code: ErrorCode = ErrorCode.NONE


@message
class OffsetCommitResponseTopic:
    name: str
    partitions: tuple[OffsetCommitResponsePartition, ...]


@message
class OffsetCommitResponse:
    topics: tuple[OffsetCommitResponseTopic, ...]
    throttle_time_ms: int = 0
