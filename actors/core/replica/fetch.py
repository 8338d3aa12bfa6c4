"""The fetch path of the replica manager: whole batches for consumers and followers.

A consumer (``replica_id == -1``) reads up to the high watermark; a follower reads up to the log
end offset, and its fetch offset is recorded as its log end offset, which may move the high
watermark (after the read, so the follower learns of the new high watermark on its next fetch, as
in Kafka). Byte limits follow Kafka: each partition gets at most ``partition_max_bytes``, the whole
response at most ``max_bytes``, except that the first batch of the first partition with data is
returned whole so that a batch larger than the limits cannot stall a reader.

A fetch that found fewer than ``min_bytes`` parks in the fetch purgatory (Kafka's
``DelayedFetch``) and is answered with a fresh read when a watched partition makes progress past
``min_bytes``, when a watched partition errors (leadership moved), or at ``max_wait_ms``.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from actors.core.effects import Effect, Respond
from actors.core.errors import ErrorCode, KafkaProtocolError
from actors.core.messages.fetch import (
    EpochEndOffset, FetchableTopicResponse, FetchPartitionData, FetchRequest, FetchResponse,
)
from actors.core.replica import replication
from actors.core.replica.purgatory import DelayedOperation

if TYPE_CHECKING:
    from actors.core.replica.replica_manager import ReplicaManager


def handle_fetch(manager: "ReplicaManager", request_id: int, request: FetchRequest,
                 now_ms: int) -> list[Effect]:
    if request.max_bytes < 0 or request.min_bytes < 0:
        return [Respond(request_id=request_id, response=FetchResponse(
            responses=(), error_code=ErrorCode.INVALID_REQUEST))]
    response, size_bytes, has_error = read_for_fetch(manager, request)
    effects: list[Effect] = []
    if request.replica_id >= 0:
        effects.extend(_update_follower_fetch_states(manager, request, response, now_ms))
    keys = tuple((topic.topic, p.partition) for topic in request.topics for p in topic.partitions)
    if (request.max_wait_ms <= 0 or size_bytes >= request.min_bytes or has_error or not keys
            or manager.fetch_purgatory.is_full):
        effects.append(Respond(request_id=request_id, response=response))
        return effects
    operation = DelayedOperation(request_id=request_id, deadline_ms=now_ms + request.max_wait_ms,
                                 keys=keys, payload=request)
    effects.extend(manager.park(manager.fetch_purgatory, operation))
    return effects


def try_complete_fetch(manager: "ReplicaManager", operation: DelayedOperation, now_ms: int,
                       *, expired: bool) -> list[Effect]:
    request: FetchRequest = operation.payload
    response, size_bytes, has_error = read_for_fetch(manager, request)
    if not (expired or has_error or size_bytes >= request.min_bytes):
        return []
    manager.fetch_purgatory.remove(operation.request_id)
    return [Respond(request_id=operation.request_id, response=response)]


def read_for_fetch(manager: "ReplicaManager", request: FetchRequest) -> tuple[FetchResponse, int, bool]:
    """Read every asked partition; returns the response, its record bytes and whether any errored."""
    remaining_bytes = request.max_bytes
    min_one_batch = True
    size_bytes = 0
    has_error = False
    topics = []
    for topic in request.topics:
        partitions = []
        for asked in topic.partitions:
            data, records_size = _read_partition(manager, topic.topic, asked, request.replica_id,
                                                 max(0, min(asked.partition_max_bytes, remaining_bytes)),
                                                 min_one_batch)
            if records_size:
                min_one_batch = False
                remaining_bytes -= records_size
                size_bytes += records_size
            has_error = has_error or data.error_code != ErrorCode.NONE
            partitions.append(data)
        topics.append(FetchableTopicResponse(topic=topic.topic, partitions=tuple(partitions)))
    return FetchResponse(responses=tuple(topics)), size_bytes, has_error


def _read_partition(manager: "ReplicaManager", topic: str, asked, replica_id: int,
                    max_bytes: int, min_one_batch: bool) -> tuple[FetchPartitionData, int]:
    """One partition's answer and the size of its records (the records may be wrapped for transport)."""
    from_follower = replica_id >= 0
    try:
        partition = manager._leader_partition((topic, asked.partition))
    except KafkaProtocolError as exc:
        return FetchPartitionData(partition_index=asked.partition, error_code=exc.error_code), 0
    positions = dict(high_watermark=partition.high_watermark, last_stable_offset=partition.high_watermark,
                     log_start_offset=partition.log_start_offset)
    fenced = partition.check_leader_epoch(asked.current_leader_epoch)
    if fenced != ErrorCode.NONE:
        return FetchPartitionData(partition_index=asked.partition, error_code=fenced, **positions), 0
    if asked.partition_max_bytes < 0 or asked.fetch_offset < 0:
        return FetchPartitionData(partition_index=asked.partition, error_code=ErrorCode.OFFSET_OUT_OF_RANGE
                                  if asked.fetch_offset < 0 else ErrorCode.INVALID_REQUEST, **positions), 0
    if from_follower and asked.last_fetched_epoch >= 0:
        diverging = _diverging_epoch(partition, asked)
        if diverging is not None:
            return FetchPartitionData(partition_index=asked.partition, diverging_epoch=diverging, **positions), 0
    try:
        info = partition.read_records(fetch_offset=asked.fetch_offset, max_bytes=max_bytes,
                                      from_follower=from_follower, min_one_batch=min_one_batch)
    except KafkaProtocolError as exc:
        return FetchPartitionData(partition_index=asked.partition, error_code=exc.error_code, **positions), 0
    if from_follower and replica_id not in partition.remote_replicas:
        # Kafka's leader reads, then answers a "follower" it does not recognise as one of the
        # partition's replicas with no records: its uncommitted tail is for replicas only.
        return FetchPartitionData(partition_index=asked.partition, **positions), 0
    return FetchPartitionData(partition_index=asked.partition,
                              records=manager.wrap_records(info.records, for_replica=from_follower),
                              **positions), len(info.records)


def _diverging_epoch(partition, asked) -> EpochEndOffset | None:
    """KIP-320's check, in the form later Kafka puts in the fetch itself: if the follower's last
    fetched epoch ends on this leader before the fetch offset (or the leader never had that epoch),
    the follower's log has diverged; answer with where that epoch ends instead of with data."""
    epoch, end_offset = partition.log.end_offset_for_epoch(asked.last_fetched_epoch)
    if epoch != asked.last_fetched_epoch or end_offset < asked.fetch_offset:
        return EpochEndOffset(epoch=epoch, end_offset=end_offset)
    return None


def _update_follower_fetch_states(manager: "ReplicaManager", request: FetchRequest, response: FetchResponse,
                                  now_ms: int) -> list[Effect]:
    """A follower's fetch offset acknowledges its log below it, but only for a partition whose read
    succeeded: a fenced fetch, or one answered with a diverging epoch, says nothing about what the
    follower holds (Kafka's ``updateFollowerFetchState`` skips such reads too)."""
    served = {(topic.topic, data.partition_index) for topic in response.responses for data in topic.partitions
              if data.error_code == ErrorCode.NONE and data.diverging_epoch is None}
    effects: list[Effect] = []
    for topic in request.topics:
        for asked in topic.partitions:
            partition = manager.partitions.get((topic.topic, asked.partition))
            if partition is None or not partition.is_leader or (topic.topic, asked.partition) not in served:
                continue
            if partition.update_follower_fetch_state(request.replica_id, asked.fetch_offset, now_ms):
                effects.extend(manager._try_complete_delayed((topic.topic, asked.partition), now_ms))
            effects.extend(replication.maybe_expand_isr(manager, (topic.topic, asked.partition), request.replica_id))
    return effects
