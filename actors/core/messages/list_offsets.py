"""ListOffsets (API key 2): the earliest or latest offset of a partition."""
from __future__ import annotations

from typing import ClassVar

from actors.core.errors import ErrorCode
from actors.core.messages._base import CONSUMER_REPLICA_ID, NO_EPOCH, message

LATEST_TIMESTAMP = -1
EARLIEST_TIMESTAMP = -2


@message
class ListOffsetsPartition:
    partition_index: int
    timestamp: int  # LATEST_TIMESTAMP or EARLIEST_TIMESTAMP
    current_leader_epoch: int = NO_EPOCH


@message
class ListOffsetsTopic:
    name: str
    partitions: tuple[ListOffsetsPartition, ...]


@message
class ListOffsetsRequest:
    API_KEY: ClassVar[int] = 2
    topics: tuple[ListOffsetsTopic, ...]
    replica_id: int = CONSUMER_REPLICA_ID
    isolation_level: int = 0


@message
class ListOffsetsPartitionResponse:
    partition_index: int
    error_code: ErrorCode = ErrorCode.NONE
    timestamp: int = -1
    offset: int = -1
    leader_epoch: int = NO_EPOCH


@message
class ListOffsetsTopicResponse:
    name: str
    partitions: tuple[ListOffsetsPartitionResponse, ...]


@message
class ListOffsetsResponse:
    topics: tuple[ListOffsetsTopicResponse, ...]
    throttle_time_ms: int = 0
