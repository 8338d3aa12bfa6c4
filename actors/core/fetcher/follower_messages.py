"""What a replica fetcher asks of its own broker, and what the broker's fetcher manager tells it.

In Kafka the fetcher thread calls into its broker's log directly; here the fetcher is its own
actor, so these calls are messages. They are raykafka's own, not Kafka APIs. Every request
names the leader epoch the fetcher is working under (``current_leader_epoch``): the broker
refuses it (``FENCED_LEADER_EPOCH``) if the partition has since moved to a newer epoch, or
(``NOT_LEADER_OR_FOLLOWER``) if this broker no longer follows the partition, and the fetcher
drops the partition until the broker adds it again.

Truncation modes:
- ``TO_LEADER_EPOCH_END``: KIP-101/279's rule for the leader's OffsetForLeaderEpoch answer (or a
  fetch response's diverging epoch): ``leader_epoch`` and ``leader_end_offset`` are the leader's
  answer; the broker truncates to min(its own end offset for that epoch, the leader's), and says
  whether truncation is complete or another OffsetForLeaderEpoch round is needed (the follower
  did not know the epoch the leader answered with).
- ``TO_OFFSET``: truncate to ``offset`` exactly (the leader's log end offset after an out-of-range
  fetch, or the high watermark under the pre-KIP-101 ``high-watermark`` policy).
- ``FULLY_AND_START_AT``: drop the whole log and restart it at ``offset`` (the fetch offset fell
  below the leader's log start offset).
"""
from __future__ import annotations

import enum
from typing import Any

from actors.core.errors import ErrorCode
from actors.core.messages._base import NO_EPOCH, message


class TruncationMode(enum.Enum):
    TO_LEADER_EPOCH_END = "to-leader-epoch-end"
    TO_OFFSET = "to-offset"
    FULLY_AND_START_AT = "fully-and-start-at"


@message
class InitialFetchState:
    """Where a fetcher starts with a partition the broker hands it."""
    topic: str
    partition: int
    current_leader_epoch: int  # the leader epoch of the LeaderAndIsr that made us follower
    fetch_offset: int  # the follower's log end offset
    latest_epoch: int = NO_EPOCH  # the follower log's latest leader epoch (-1: none)
    needs_truncation: bool = True  # False under the high-watermark policy (already truncated)
    log_start_offset: int = -1  # the follower log's start, which its fetches tell the leader


@message
class FollowerTruncatePartition:
    topic: str
    partition: int
    current_leader_epoch: int
    mode: TruncationMode
    leader_epoch: int = NO_EPOCH  # TO_LEADER_EPOCH_END only
    leader_end_offset: int = -1  # TO_LEADER_EPOCH_END only
    offset: int = -1  # TO_OFFSET and FULLY_AND_START_AT


@message
class FollowerTruncateRequest:
    partitions: tuple[FollowerTruncatePartition, ...]


@message
class FollowerPartitionState:
    """The follower's log after a truncation or an append."""
    topic: str
    partition: int
    error_code: ErrorCode = ErrorCode.NONE
    log_end_offset: int = -1
    latest_epoch: int = NO_EPOCH
    high_watermark: int = -1
    truncation_complete: bool = True  # False: ask the leader again with ``latest_epoch``
    log_start_offset: int = -1  # the follower log's start now (-1: not known, as with an error)


@message
class FollowerTruncateResponse:
    partitions: tuple[FollowerPartitionState, ...]


@message
class FollowerAppendPartition:
    topic: str
    partition: int
    current_leader_epoch: int
    fetch_offset: int  # must equal the follower's log end offset, or the append is stale
    records: Any  # whole v2 batches as the leader sent them (bytes, uint8 array or a SharedRecords slice)
    leader_high_watermark: int
    leader_log_start_offset: int = -1


@message
class FollowerAppendRequest:
    partitions: tuple[FollowerAppendPartition, ...]


@message
class FollowerAppendResponse:
    partitions: tuple[FollowerPartitionState, ...]
