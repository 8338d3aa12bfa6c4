"""Fetch (API key 1): consumers read committed records; followers replicate a leader's log.

``replica_id`` is -1 for a consumer, the follower's broker id for a replica fetcher. A consumer
reads up to the high watermark, a follower up to the log end offset; the follower's
``fetch_offset`` doubles as its acknowledgement of everything below it.

A request's ``session_id``/``session_epoch`` place it in an incremental fetch session (KIP-227;
Kafka's ``FetchMetadata``): ``INVALID_SESSION_ID`` with ``FINAL_EPOCH`` is a sessionless full
fetch, ``INITIAL_EPOCH`` a full fetch that opens a session, and each later request of a session
carries ``next_epoch`` of the one before. Both sides count with these: the broker's session cache
(actors/core/replica/fetch_session.py) and the follower's session handler
(actors/core/fetcher/fetch_session_handler.py).
"""
from __future__ import annotations

import copyreg
from typing import Any, ClassVar

from actors.core.errors import ErrorCode
from actors.core.messages._base import CONSUMER_REPLICA_ID, NO_EPOCH, message

INVALID_SESSION_ID = 0
INITIAL_EPOCH = 0
FINAL_EPOCH = -1
EPOCH_MAX = 2**31 - 1


def next_epoch(epoch: int) -> int:
    """The epoch after ``epoch``: FINAL stays FINAL, and the largest wraps to 1 (0 means INITIAL)."""
    if epoch < 0:
        return FINAL_EPOCH
    return 1 if epoch >= EPOCH_MAX else epoch + 1


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
    """Pickled flat (``__reduce__``, see the end of this module): fetches are most of a broker's calls."""
    API_KEY: ClassVar[int] = 1
    max_wait_ms: int
    min_bytes: int
    max_bytes: int
    topics: tuple[FetchTopic, ...]
    replica_id: int = CONSUMER_REPLICA_ID
    isolation_level: int = 0
    # KIP-227 (actors/core/replica/fetch_session.py): id 0 with epoch -1 is a sessionless full
    # fetch; epoch 0 asks for a new session; id > 0 with epoch > 0 is an incremental fetch.
    session_id: int = INVALID_SESSION_ID
    session_epoch: int = FINAL_EPOCH
    forgotten_topics_data: tuple[ForgottenTopic, ...] = ()
    rack_id: str = ""

    def __reduce__(self):
        return _reduce_fetch_request(self)


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
    """Pickled flat (``__reduce__``, see the end of this module), its records out of band."""
    responses: tuple[FetchableTopicResponse, ...]
    error_code: ErrorCode = ErrorCode.NONE
    throttle_time_ms: int = 0
    session_id: int = INVALID_SESSION_ID  # the session the answer belongs to; 0: none (the next fetch must be full)

    def __reduce__(self):
        return _reduce_fetch_response(self)


# Fetch requests and answers cross Ray on every fetch, and Ray pickles them. Pickled as dataclasses,
# each nested message and each ErrorCode costs the pickler a lookup of its class, and each one its
# field list, on both sides of the call: more than the answer's records cost when they travel out
# of band (a numpy array). So a request or an answer of exactly the usual shape (tuples of exactly
# these message types) is pickled as one function and a tree of tuples of plain values, and
# rebuilt equal; any other shape (a list for a tuple, a subclass, a field of a wrong type) is
# pickled as a dataclass, so that the broker still sees, and refuses, what the caller sent.


def _dataclass_reduce(value):
    return copyreg.__newobj__, (type(value),), value.__getstate__()


def _reduce_fetch_request(request: FetchRequest):
    topics, forgotten = request.topics, request.forgotten_topics_data
    if not (type(topics) is tuple and type(forgotten) is tuple
            and all(type(t) is FetchTopic and type(t.partitions) is tuple
                    and all(type(p) is FetchPartition for p in t.partitions) for t in topics)
            and all(type(f) is ForgottenTopic and type(f.partitions) is tuple for f in forgotten)):
        return _dataclass_reduce(request)
    return _fetch_request, ((
        request.max_wait_ms, request.min_bytes, request.max_bytes,
        tuple((t.topic, tuple((p.partition, p.fetch_offset, p.partition_max_bytes, p.current_leader_epoch,
                               p.last_fetched_epoch, p.log_start_offset) for p in t.partitions)) for t in topics),
        request.replica_id, request.isolation_level, request.session_id, request.session_epoch,
        tuple((f.topic, f.partitions) for f in forgotten), request.rack_id),)


def _fetch_request(state: tuple) -> FetchRequest:
    (max_wait_ms, min_bytes, max_bytes, topics, replica_id, isolation_level, session_id, session_epoch, forgotten,
     rack_id) = state
    return FetchRequest(
        max_wait_ms=max_wait_ms, min_bytes=min_bytes, max_bytes=max_bytes,
        topics=tuple(FetchTopic(topic=topic, partitions=tuple(
            FetchPartition(partition=p[0], fetch_offset=p[1], partition_max_bytes=p[2], current_leader_epoch=p[3],
                           last_fetched_epoch=p[4], log_start_offset=p[5]) for p in partitions))
            for topic, partitions in topics),
        replica_id=replica_id, isolation_level=isolation_level, session_id=session_id, session_epoch=session_epoch,
        forgotten_topics_data=tuple(ForgottenTopic(topic=topic, partitions=partitions) for topic, partitions in forgotten),
        rack_id=rack_id)


def _flat_partition_data(data: FetchPartitionData) -> tuple | None:
    diverging, leader = data.diverging_epoch, data.current_leader
    if (type(data) is not FetchPartitionData or type(data.error_code) is not ErrorCode
            or not (diverging is None or type(diverging) is EpochEndOffset)
            or not (leader is None or type(leader) is LeaderIdAndEpoch)):
        return None
    return (data.partition_index, int(data.error_code), data.high_watermark, data.last_stable_offset,
            data.log_start_offset, None if diverging is None else (diverging.epoch, diverging.end_offset),
            None if leader is None else (leader.leader_id, leader.leader_epoch), data.preferred_read_replica,
            data.records)


def _reduce_fetch_response(response: FetchResponse):
    responses = response.responses
    if not (type(responses) is tuple and type(response.error_code) is ErrorCode
            and all(type(t) is FetchableTopicResponse and type(t.partitions) is tuple for t in responses)):
        return _dataclass_reduce(response)
    topics = []
    for topic in responses:
        partitions = tuple(_flat_partition_data(p) for p in topic.partitions)
        if None in partitions:
            return _dataclass_reduce(response)
        topics.append((topic.topic, partitions))
    return _fetch_response, ((int(response.error_code), response.throttle_time_ms, response.session_id,
                              tuple(topics)),)


def _fetch_response(state: tuple) -> FetchResponse:
    error_code, throttle_time_ms, session_id, topics = state
    return FetchResponse(
        responses=tuple(FetchableTopicResponse(topic=topic, partitions=tuple(FetchPartitionData(
            partition_index=p[0], error_code=ErrorCode(p[1]), high_watermark=p[2], last_stable_offset=p[3],
            log_start_offset=p[4],
            diverging_epoch=None if p[5] is None else EpochEndOffset(epoch=p[5][0], end_offset=p[5][1]),
            current_leader=None if p[6] is None else LeaderIdAndEpoch(leader_id=p[6][0], leader_epoch=p[6][1]),
            preferred_read_replica=p[7], records=p[8]) for p in partitions)) for topic, partitions in topics),
        error_code=ErrorCode(error_code), throttle_time_ms=throttle_time_ms, session_id=session_id)
