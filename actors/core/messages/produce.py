"""Produce (API key 0): a producer appends record batches to partition leaders."""
from __future__ import annotations

from typing import Any, ClassVar

from actors.core.errors import ErrorCode
from actors.core.messages._base import message


@message
class PartitionProduceData:
    index: int
    records: Any  # one or more v2 record batches, as bytes-like


@message
class TopicProduceData:
    name: str
    partition_data: tuple[PartitionProduceData, ...]


@message
class ProduceRequest:
    API_KEY: ClassVar[int] = 0
    acks: int  # 0, 1 or -1 (all); anything else is INVALID_REQUIRED_ACKS
    timeout_ms: int
    topic_data: tuple[TopicProduceData, ...]
    transactional_id: str | None = None
    # The Produce version a Kafka client sent (its request header's ``request_api_version``), for
    # the checks Kafka makes by version (``log_validator.check_produce_records``); None for
    # raykafka's own callers over Ray, which may send several batches per partition.
    request_api_version: int | None = None


@message
class PartitionProduceResponse:
    index: int
    error_code: ErrorCode = ErrorCode.NONE
    base_offset: int = -1
    log_append_time_ms: int = -1
    log_start_offset: int = -1
    error_message: str | None = None


@message
class TopicProduceResponse:
    name: str
    partition_responses: tuple[PartitionProduceResponse, ...]


@message
class ProduceResponse:
    responses: tuple[TopicProduceResponse, ...]
    throttle_time_ms: int = 0
