"""Where a follower's log must end so that it is a prefix of its leader's (KIP-101, KIP-279).

Theory of operation. Two pure functions over a follower's ``Log``; they own no state.

- ``offset_truncation_state`` is Kafka 2.4's ``AbstractFetcherThread.getOffsetTruncationState``:
  given the leader's answer to OffsetForLeaderEpoch (or a fetch response's diverging epoch,
  KIP-320) it returns (offset to truncate to, truncation complete?). "Not complete" means the
  leader answered with an epoch this follower never saw: the follower truncates to where its own
  largest smaller epoch ends and asks again with that epoch (KIP-279's extra round).
- ``apply_follower_truncation`` applies one ``FollowerTruncatePartition`` (any of the three
  ``TruncationMode``s) to a log and describes the log afterwards for the fetcher.

Kafka's rule, case by case (``LEO`` is the follower's log end offset; the follower's end offset
for an epoch comes from its own leader-epoch cache, Kafka's ``Log.endOffsetForEpoch``, which is
"none" when the cache answers UNDEFINED_EPOCH_OFFSET):

| leader's answer                         | follower's own end offset for that epoch | result                                   |
|-----------------------------------------|------------------------------------------|------------------------------------------|
| end offset UNDEFINED_EPOCH_OFFSET (-1)  | (not consulted)                          | (min(fallback, LEO), complete)           |
| epoch UNDEFINED_EPOCH (-1), offset o    | (not consulted)                          | (min(o, LEO), complete)                  |
| epoch e, offset o                       | none                                     | (min(o, LEO), complete)                  |
| epoch e, offset o                       | (epoch f != e, offset x)                 | (min(x, LEO), NOT complete: ask with f)  |
| epoch e, offset o                       | (epoch e, offset x)                      | (min(x, o, LEO), complete)               |

Deviation, and why: for an undefined leader offset Kafka truncates to the partition's initial
fetch offset, which in Kafka 2.4 is the follower's high watermark. raykafka's fetcher starts at
the log end offset instead, so the caller passes the fallback (the broker passes its high
watermark); with no fallback the log is left as it is (the LEO), and a later out-of-range fetch
repairs any excess. The result is clamped to the LEO as Kafka's ``truncateTo`` would be (it does
nothing for an offset at or above the LEO).
"""
from __future__ import annotations

from actors.core.errors import ErrorCode
from actors.core.log.leader_epoch_cache import UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
from actors.core.log.log import Log
from actors.core.fetcher.follower_messages import (
    FollowerPartitionState, FollowerTruncatePartition, TruncationMode,
)

__all__ = ["apply_follower_truncation", "offset_truncation_state"]


def offset_truncation_state(log: Log, *, leader_epoch: int, leader_end_offset: int,
                            fallback_offset: int | None = None) -> tuple[int, bool]:
    """(offset to truncate to, truncation complete?) for the leader's (epoch, end offset) answer.

    ``fallback_offset`` is used only when the leader knows no end offset (see the module
    docstring); ``None`` means "keep the log as it is". The offset returned is never above the
    log end offset and never negative.
    """
    log_end_offset = log.log_end_offset
    if leader_end_offset == UNDEFINED_EPOCH_OFFSET:
        fallback = log_end_offset if fallback_offset is None else max(0, fallback_offset)
        return min(fallback, log_end_offset), True
    assert leader_end_offset >= 0, f"leader end offset {leader_end_offset} is not an offset"
    if leader_epoch == UNDEFINED_EPOCH:
        # The leader's answer has no epoch (Kafka: a pre-2.0 protocol); trust its offset.
        return min(leader_end_offset, log_end_offset), True
    follower_epoch, follower_end_offset = log.end_offset_for_epoch(leader_epoch)
    if follower_end_offset == UNDEFINED_EPOCH_OFFSET:
        # This replica tracks no epoch at or below the leader's: only the leader's offset is known.
        return min(leader_end_offset, log_end_offset), True
    if follower_epoch != leader_epoch:
        # The leader answered with an epoch this replica never saw. Cut back to where this
        # replica's largest smaller epoch ends and ask the leader again about that epoch.
        return min(follower_end_offset, log_end_offset), False
    return min(follower_end_offset, leader_end_offset, log_end_offset), True


def apply_follower_truncation(log: Log, request_partition: FollowerTruncatePartition, *,
                              high_watermark: int) -> FollowerPartitionState:
    """Truncates ``log`` as ``request_partition`` asks; returns the log's state afterwards.

    A request with a negative offset for ``TO_OFFSET`` / ``FULLY_AND_START_AT`` (or a leader end
    offset below -1 for ``TO_LEADER_EPOCH_END``) is a peer's illegal input: it is answered with INVALID_REQUEST and the log is left alone. The returned
    high watermark is ``high_watermark`` clamped to [log start offset, log end offset], as
    Kafka's ``Log`` clamps it after a truncation.
    """
    asked = request_partition
    truncation_complete = True
    if asked.mode is TruncationMode.TO_LEADER_EPOCH_END and asked.leader_end_offset < UNDEFINED_EPOCH_OFFSET:
        return _describe(log, asked, high_watermark, error_code=ErrorCode.INVALID_REQUEST)
    if asked.mode is TruncationMode.TO_LEADER_EPOCH_END:
        offset, truncation_complete = offset_truncation_state(
            log, leader_epoch=asked.leader_epoch, leader_end_offset=asked.leader_end_offset,
            fallback_offset=high_watermark)
        log.truncate_to(offset)
    elif asked.offset < 0:
        return _describe(log, asked, high_watermark, error_code=ErrorCode.INVALID_REQUEST)
    elif asked.mode is TruncationMode.TO_OFFSET:
        log.truncate_to(asked.offset)
    elif asked.mode is TruncationMode.FULLY_AND_START_AT:
        log.truncate_fully_and_start_at(asked.offset)
    else:
        return _describe(log, asked, high_watermark, error_code=ErrorCode.INVALID_REQUEST)
    return _describe(log, asked, high_watermark, truncation_complete=truncation_complete)


def _describe(log: Log, asked: FollowerTruncatePartition, high_watermark: int, *,
              error_code: ErrorCode = ErrorCode.NONE,
              truncation_complete: bool = True) -> FollowerPartitionState:
    log_end_offset = log.log_end_offset
    clamped_high_watermark = min(max(high_watermark, log.log_start_offset), log_end_offset)
    return FollowerPartitionState(
        topic=asked.topic, partition=asked.partition, error_code=error_code,
        log_end_offset=log_end_offset, latest_epoch=log.latest_epoch,
        high_watermark=clamped_high_watermark, truncation_complete=truncation_complete,
        log_start_offset=log.log_start_offset)
