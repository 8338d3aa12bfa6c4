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

import copyreg
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
    """Pickled flat (``__reduce__``, see the end of this module): one per replication round."""
    partitions: tuple[FollowerAppendPartition, ...]

    def __reduce__(self):
        return _reduce_append_request(self)


@message
class FollowerAppendResponse:
    """Pickled flat (``__reduce__``, see the end of this module): one per replication round."""
    partitions: tuple[FollowerPartitionState, ...]

    def __reduce__(self):
        return _reduce_append_response(self)


# An append and its answer cross between a fetcher and its broker every round, and name every
# partition the round carried. Pickled as dataclasses, each partition costs the pickler its field
# list on both sides (``dataclasses.fields``), and each ErrorCode a lookup of its class: at 64
# partitions the answer's unpickling alone was a tenth of a fetcher's time. So, as for Fetch
# (actors/core/messages/fetch.py), one of exactly the usual shape pickles as one function and a
# tuple of plain values per partition and is rebuilt equal; any other shape pickles as a
# dataclass, so that the broker still sees, and refuses, what the fetcher sent.

_ERROR_CODES = {code.value: code for code in ErrorCode}


def _dataclass_reduce(value):
    return copyreg.__newobj__, (type(value),), value.__getstate__()


def _reduce_append_request(request: FollowerAppendRequest):
    partitions = request.partitions
    if not (type(partitions) is tuple and all(type(p) is FollowerAppendPartition for p in partitions)):
        return _dataclass_reduce(request)
    return _append_request, (tuple(
        (p.topic, p.partition, p.current_leader_epoch, p.fetch_offset, p.records, p.leader_high_watermark,
         p.leader_log_start_offset) for p in partitions),)


def _append_request(partitions: tuple) -> FollowerAppendRequest:
    return FollowerAppendRequest(partitions=tuple(FollowerAppendPartition(
        topic=p[0], partition=p[1], current_leader_epoch=p[2], fetch_offset=p[3], records=p[4],
        leader_high_watermark=p[5], leader_log_start_offset=p[6]) for p in partitions))


def _reduce_append_response(response: FollowerAppendResponse):
    partitions = response.partitions
    if not (type(partitions) is tuple
            and all(type(p) is FollowerPartitionState and type(p.error_code) is ErrorCode for p in partitions)):
        return _dataclass_reduce(response)
    return _append_response, (tuple(
        (p.topic, p.partition, p.error_code.value, p.log_end_offset, p.latest_epoch, p.high_watermark,
         p.truncation_complete, p.log_start_offset) for p in partitions),)


def _append_response(partitions: tuple) -> FollowerAppendResponse:
    return FollowerAppendResponse(partitions=tuple(FollowerPartitionState(
        topic=p[0], partition=p[1], error_code=_ERROR_CODES[p[2]], log_end_offset=p[3], latest_epoch=p[4],
        high_watermark=p[5], truncation_complete=p[6], log_start_offset=p[7]) for p in partitions))
