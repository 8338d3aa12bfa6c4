"""DeleteRecords (API key 21): an admin client moves partitions' log start offsets up.

Served by each partition's leader (a client sends one request per leader broker). ``offset`` -1
means the high watermark. The leader moves its log start offset at once and answers each
partition with the low watermark (the smallest log start offset over the leader and its in-sync
followers) once that has reached the offset asked for, or ``timeout_ms`` passed
(``REQUEST_TIMED_OUT``), as Kafka's ``DelayedDeleteRecords`` does.
"""
from __future__ import annotations

from typing import ClassVar

from actors.core.errors import ErrorCode
from actors.core.messages._base import message

# The offset that means "the high watermark" (Kafka's DeleteRecordsRequest.HIGH_WATERMARK).
HIGH_WATERMARK = -1
# The low watermark of a partition answered with an error (DeleteRecordsResponse.INVALID_LOW_WATERMARK).
INVALID_LOW_WATERMARK = -1


@message
class DeleteRecordsPartition:
    partition_index: int
    offset: int


@message
class DeleteRecordsTopic:
    name: str
    partitions: tuple[DeleteRecordsPartition, ...]


@message
class DeleteRecordsRequest:
    API_KEY: ClassVar[int] = 21
    topics: tuple[DeleteRecordsTopic, ...]
    timeout_ms: int = 60000


@message
class DeleteRecordsPartitionResult:
    partition_index: int
    low_watermark: int = INVALID_LOW_WATERMARK
    error_code: ErrorCode = ErrorCode.NONE


@message
class DeleteRecordsTopicResult:
    name: str
    partitions: tuple[DeleteRecordsPartitionResult, ...]


@message
class DeleteRecordsResponse:
    topics: tuple[DeleteRecordsTopicResult, ...]
    throttle_time_ms: int = 0
