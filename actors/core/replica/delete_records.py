"""DeleteRecords on the leader: Kafka's ``ReplicaManager.deleteRecords`` and ``DelayedDeleteRecords``.

Theory of operation. A DeleteRecords request names partitions and the offset below which their
records go (-1: the high watermark). For each partition this broker leads, the leader moves its
log start offset at once (``Partition.delete_records_on_leader``: never above the high watermark,
OFFSET_OUT_OF_RANGE; only with cleanup.policy delete, POLICY_VIOLATION); segments wholly below it
go by the log's storage work. A partition refused gets its error and low watermark -1 (an internal
topic INVALID_TOPIC_EXCEPTION, an unknown one UNKNOWN_TOPIC_OR_PARTITION, one led elsewhere
NOT_LEADER_OR_FOLLOWER, an offline log directory KAFKA_STORAGE_ERROR).

The answer waits while a partition's low watermark (the smallest log start offset over the leader
and its in-sync followers, ``Partition.low_watermark``) is below the offset asked for: the
request parks as a ``DelayedDeleteRecords`` in the delete-records purgatory, keyed by its
partitions. A follower learns the leader's start offset from its next fetch answer, raises its
own, and tells the leader in the fetch after that; each such fetch, and every retention check
that moves a leader's start, retries the parked requests watching the partition. A partition is
done when its low watermark reaches the offset (NONE, with the low watermark), or when the leader
lost it (NOT_LEADER_OR_FOLLOWER / UNKNOWN_TOPIC_OR_PARTITION, -1); the request is answered when
every partition is done, or at ``timeout_ms``, each partition not done then answering
REQUEST_TIMED_OUT. At the purgatory's limit a request is answered at once the same way.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from actors.core.effects import Effect, LogEvent, Respond
from actors.core.errors import ErrorCode, KafkaProtocolError
from actors.core.messages.delete_records import (
    INVALID_LOW_WATERMARK, DeleteRecordsPartitionResult, DeleteRecordsRequest, DeleteRecordsResponse,
    DeleteRecordsTopicResult,
)
from actors.core.replica.partition import Partition
from actors.core.replica.purgatory import DelayedOperation, DelayedOperations
from actors.core.topics import INTERNAL_TOPICS

TopicPartition = tuple[str, int]


@dataclass(slots=True)
class _PartitionStatus:
    """One partition of a DeleteRecords: the offset it waits for and its answer so far."""
    requested_offset: int
    low_watermark: int = INVALID_LOW_WATERMARK
    error_code: ErrorCode = ErrorCode.NONE
    pending: bool = False  # waits for the low watermark; answers REQUEST_TIMED_OUT if it expires


@dataclass(slots=True, kw_only=True)
class DelayedDeleteRecords(DelayedOperation):
    """A DeleteRecords waiting for its partitions' low watermarks (the order of ``statuses`` is the
    request's, which the answer keeps)."""
    path: "DeleteRecordsPath"
    statuses: dict[TopicPartition, _PartitionStatus] = field(default_factory=dict)

    def try_complete(self, now_ms: int, *, expired: bool) -> list[Effect]:
        return self.path.try_complete(self, now_ms, expired=expired)


class DeleteRecordsPath:
    def __init__(self, *, partitions: dict[TopicPartition, Partition],
                 leader_partition: Callable[[TopicPartition], Partition], delayed: DelayedOperations,
                 broker_id: int) -> None:
        self.partitions = partitions
        self.leader_partition = leader_partition
        self.delayed = delayed
        self.broker_id = broker_id

    def handle_delete_records(self, request_id: int, request: DeleteRecordsRequest, now_ms: int) -> list[Effect]:
        statuses: dict[TopicPartition, _PartitionStatus] = {}
        effects: list[Effect] = []
        for topic in request.topics:
            for asked in topic.partitions:
                topic_partition = (topic.name, asked.partition_index)
                status = self._delete_on_local_log(topic_partition, asked.offset)
                statuses[topic_partition] = status
                if status.error_code == ErrorCode.NONE:
                    effects.append(LogEvent(level="info", message=(
                        f"broker {self.broker_id} moved the log start offset of {topic.name}-"
                        f"{asked.partition_index} to {status.requested_offset} (DeleteRecords)")))
        operation = DelayedDeleteRecords(request_id=request_id, deadline_ms=now_ms + max(request.timeout_ms, 0),
                                         keys=tuple(statuses), path=self, statuses=statuses)
        if (not any(s.pending for s in statuses.values()) or request.timeout_ms <= 0
                or self.delayed.delete_records.is_full):
            return effects + self._answer(operation)
        return effects + self.delayed.park(self.delayed.delete_records, operation)

    def _delete_on_local_log(self, topic_partition: TopicPartition, offset: int) -> _PartitionStatus:
        if topic_partition[0] in INTERNAL_TOPICS:
            return _PartitionStatus(offset, error_code=ErrorCode.INVALID_TOPIC_EXCEPTION)
        try:
            partition = self.leader_partition(topic_partition)
            requested_offset = partition.delete_records_on_leader(offset)
        except KafkaProtocolError as exc:
            return _PartitionStatus(offset, error_code=exc.error_code)
        low_watermark = partition.low_watermark
        return _PartitionStatus(requested_offset, low_watermark=low_watermark,
                                pending=low_watermark < requested_offset)

    def try_complete(self, operation: DelayedDeleteRecords, now_ms: int, *, expired: bool) -> list[Effect]:
        for topic_partition, status in operation.statuses.items():
            if not status.pending:
                continue
            partition = self.partitions.get(topic_partition)
            if partition is None or not partition.is_leader:
                status.pending = False
                status.low_watermark = INVALID_LOW_WATERMARK
                status.error_code = (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if partition is None
                                     else ErrorCode.NOT_LEADER_OR_FOLLOWER)
                continue
            status.low_watermark = partition.low_watermark
            if status.low_watermark >= status.requested_offset:
                status.pending = False
        if any(s.pending for s in operation.statuses.values()) and not expired:
            return []
        self.delayed.delete_records.remove(operation.request_id)
        return self._answer(operation)

    @staticmethod
    def _answer(operation: DelayedDeleteRecords) -> list[Effect]:
        """The response: each partition's error and low watermark; one still waiting timed out."""
        by_topic: dict[str, list[DeleteRecordsPartitionResult]] = {}
        for (topic, index), status in operation.statuses.items():
            if status.pending:
                result = DeleteRecordsPartitionResult(partition_index=index, low_watermark=INVALID_LOW_WATERMARK,
                                                      error_code=ErrorCode.REQUEST_TIMED_OUT)
            else:
                result = DeleteRecordsPartitionResult(partition_index=index, low_watermark=status.low_watermark,
                                                      error_code=status.error_code)
            by_topic.setdefault(topic, []).append(result)
        return [Respond(request_id=operation.request_id, response=DeleteRecordsResponse(topics=tuple(
            DeleteRecordsTopicResult(name=topic, partitions=tuple(results)) for topic, results in by_topic.items())))]
