"""OffsetForLeaderEpoch (API key 23): the end offset of a leader epoch on the current leader.

A replica that becomes a follower asks the new leader where its own latest epoch ended, then
truncates its log to that offset before fetching, so that records a deposed leader wrote but
never committed are thrown away (KIP-101, KIP-279); consumers use it to detect truncation
after a leader change (KIP-320).
``end_offset`` is the start offset of the first epoch greater than ``leader_epoch``, or the log
end offset if ``leader_epoch`` is the leader's latest; the response's ``leader_epoch`` is the
largest epoch at or below the requested one, since the leader may never have seen that epoch.
"""
from __future__ import annotations

from typing import ClassVar

from actors.core.errors import ErrorCode
from actors.core.messages._base import CONSUMER_REPLICA_ID, NO_EPOCH, message

# Kafka's UNDEFINED_EPOCH_OFFSET: the leader knows no epoch at or below the requested one.
UNDEFINED_EPOCH_OFFSET = -1


@message
class OffsetForLeaderPartition:
    partition: int
    leader_epoch: int  # the epoch whose end offset is wanted
    current_leader_epoch: int = NO_EPOCH  # -1 skips the fencing check, as in Kafka


@message
class OffsetForLeaderTopic:
    topic: str
    partitions: tuple[OffsetForLeaderPartition, ...]


@message
class OffsetForLeaderEpochRequest:
    API_KEY: ClassVar[int] = 23
    topics: tuple[OffsetForLeaderTopic, ...]
    replica_id: int = CONSUMER_REPLICA_ID  # the follower's broker id, or -1 for a consumer


@message
class OffsetForLeaderPartitionResult:
    partition: int
    error_code: ErrorCode = ErrorCode.NONE
    leader_epoch: int = NO_EPOCH
    end_offset: int = UNDEFINED_EPOCH_OFFSET


@message
class OffsetForLeaderTopicResult:
    topic: str
    partitions: tuple[OffsetForLeaderPartitionResult, ...]


@message
class OffsetForLeaderEpochResponse:
    topics: tuple[OffsetForLeaderTopicResult, ...]
    throttle_time_ms: int = 0
