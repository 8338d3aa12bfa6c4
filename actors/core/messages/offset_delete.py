"""OffsetDelete (API key 47, KIP-496, Kafka 2.4): an admin client asks a group's coordinator to
delete the group's committed offsets of some partitions.

The coordinator deletes them for an Empty group, and for a live consumer group only those of
topics no member subscribes to (``GROUP_SUBSCRIBED_TO_TOPIC`` for the others). A group-level error
(``error_code``) leaves ``topics`` empty, as Kafka's ``getErrorResponse``.
"""
from __future__ import annotations

from typing import ClassVar

from actors.core.errors import ErrorCode
from actors.core.messages._base import message


@message
class OffsetDeleteRequestPartition:
    partition_index: int


@message
class OffsetDeleteRequestTopic:
    name: str
    partitions: tuple[OffsetDeleteRequestPartition, ...]


@message
class OffsetDeleteRequest:
    API_KEY: ClassVar[int] = 47
    group_id: str
    topics: tuple[OffsetDeleteRequestTopic, ...]


@message
class OffsetDeleteResponsePartition:
    partition_index: int
    error_code: ErrorCode = ErrorCode.NONE


@message
class OffsetDeleteResponseTopic:
    name: str
    partitions: tuple[OffsetDeleteResponsePartition, ...]


@message
class OffsetDeleteResponse:
    topics: tuple[OffsetDeleteResponseTopic, ...] = ()
    error_code: ErrorCode = ErrorCode.NONE
    throttle_time_ms: int = 0
