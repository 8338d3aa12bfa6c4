"""OffsetFetch (API key 9): a consumer reads a group's committed positions from its coordinator.

A partition with no committed offset is answered with ``committed_offset`` -1 and no error; the
consumer then falls back to its ``auto.offset.reset`` policy. ``COORDINATOR_LOAD_IN_PROGRESS``
means the coordinator is still reading ``__consumer_offsets`` and the client retries.
"""
from __future__ import annotations

from typing import ClassVar

from actors.core.errors import ErrorCode
from actors.core.messages._base import NO_EPOCH, message


@message
class OffsetFetchRequestTopic:
    name: str
    partition_indexes: tuple[int, ...]


@message
class OffsetFetchRequest:
    API_KEY: ClassVar[int] = 9
    group_id: str
    topics: tuple[OffsetFetchRequestTopic, ...] | None = None  # None asks for every partition


@message
class OffsetFetchResponsePartition:
    partition_index: int
    committed_offset: int = -1
    committed_leader_epoch: int = NO_EPOCH
    metadata: str | None = ""
    error_code: ErrorCode = ErrorCode.NONE


@message
class OffsetFetchResponseTopic:
    name: str
    partitions: tuple[OffsetFetchResponsePartition, ...]


@message
class OffsetFetchResponse:
    topics: tuple[OffsetFetchResponseTopic, ...]
    error_code: ErrorCode = ErrorCode.NONE
    throttle_time_ms: int = 0
