"""Fetch (API key 1): consumers read committed records; followers replicate a leader's log.

``replica_id`` is -1 for a consumer, the follower's broker id for a replica fetcher. A consumer
reads up to the high watermark, a follower up to the log end offset; the follower's
``fetch_offset`` doubles as its acknowledgement of everything below it.
"""
from __future__ import annotations

from typing import Any

from actors.core.errors import ErrorCode
from actors.core.messages._base import CONSUMER_REPLICA_ID, NO_EPOCH, message


@message
class FetchPartition:
    partition: int
    fetch_offset: int
    partition_max_bytes: int
    current_leader_epoch: int = NO_EPOCH  # -1 skips the fencing check, as in Kafka
    last_fetched_epoch: int = NO_EPOCH
    log_start_offset: int = -1


@message
class FetchTopic:
    topic: str
    partitions: tuple[FetchPartition, ...]


@message
class ForgottenTopic:
    """Partitions an incremental fetch drops from its session (KIP-227)."""
    topic: str
    partitions: tuple[int, ...]


@message
class FetchRequest:
    max_wait_ms: int
    min_bytes: int
    max_bytes: int
    topics: tuple[FetchTopic, ...]
    replica_id: int = CONSUMER_REPLICA_ID
    isolation_level: int = 0
    # KIP-227 (actors/core/replica/fetch_session.py): id 0 with epoch -1 is a sessionless full
    # fetch; epoch 0 asks for a new session; id > 0 with epoch > 0 is an incremental fetch.
    session_id: int = 0
    session_epoch: int = -1
    forgotten_topics_data: tuple[ForgottenTopic, ...] = ()
    rack_id: str = ""


@message
class EpochEndOffset:
    epoch: int = NO_EPOCH
    end_offset: int = -1


@message
class LeaderIdAndEpoch:
    leader_id: int = -1
    leader_epoch: int = NO_EPOCH


@message
class FetchPartitionData:
    partition_index: int
    error_code: ErrorCode = ErrorCode.NONE
    high_watermark: int = -1
    last_stable_offset: int = -1
    log_start_offset: int = -1
    diverging_epoch: EpochEndOffset | None = None
    current_leader: LeaderIdAndEpoch | None = None
    preferred_read_replica: int = -1
    records: Any = b""  # whole v2 batches; may start before fetch_offset (mid-batch fetch)


@message
class FetchableTopicResponse:
    topic: str
    partitions: tuple[FetchPartitionData, ...]


@message
class FetchResponse:
    responses: tuple[FetchableTopicResponse, ...]
    error_code: ErrorCode = ErrorCode.NONE
    throttle_time_ms: int = 0
    session_id: int = 0  # the session the answer belongs to; 0: none (the next fetch must be full)
