"""The produce path of the replica manager: append on the leader, answer per ``acks``.

acks=0 and acks=1 are answered once the leader has appended. acks=all (-1) is refused up front
when the ISR is smaller than ``min.insync.replicas``; otherwise it waits in the produce purgatory
until the high watermark reaches every appended partition's next offset, as Kafka's
``DelayedProduce`` does, and is answered ``REQUEST_TIMED_OUT`` for the partitions still short when
``timeout_ms`` passes. A partition that loses leadership meanwhile answers
``NOT_LEADER_OR_FOLLOWER``: its records may or may not survive, and the producer must treat the
send as failed. A Kafka client's Produce is first checked by its version, partition by partition,
as Kafka's ``KafkaApis`` does (``log_validator.check_produce_records``: one v2 batch, no zstd
below v7); a refused partition is answered alone and nothing of it is appended.

The replica manager owns one ``ProducePath``, built from what it needs of the manager: the hosted
partitions, ``leader_partition`` (which answers the client's error for a partition not led here)
and the purgatories. A parked produce is a ``DelayedProduce``, which settles itself.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from actors.core import metrics
from actors.core.effects import Effect, Respond
from actors.core.errors import ErrorCode, KafkaProtocolError
from actors.core.log.log_validator import check_produce_records
from actors.core.messages.produce import (
    PartitionProduceResponse, ProduceRequest, ProduceResponse, TopicProduceResponse,
)
from actors.core.replica.partition import Partition
from actors.core.replica.purgatory import DelayedOperation, DelayedOperations, Purgatory
from actors.core.topics import INTERNAL_TOPICS


VALID_ACKS = (-1, 0, 1)
TopicPartition = tuple[str, int]


@dataclass(slots=True)
class _PendingPartition:
    """One partition of a parked acks=all produce: what it waits for and what it will answer."""
    required_offset: int  # the high watermark that acknowledges the append (last offset + 1)
    response: PartitionProduceResponse
    done: bool = False


@dataclass(slots=True, kw_only=True)
class DelayedProduce(DelayedOperation):
    """Kafka's ``DelayedProduce``: an acks=all produce waiting for the high watermark to reach
    each appended partition's next offset."""
    request: ProduceRequest
    results: dict[TopicPartition, _PendingPartition]
    partitions: dict[TopicPartition, Partition]
    purgatory: Purgatory

    def try_complete(self, now_ms: int, *, expired: bool) -> list[Effect]:
        if not _check_pending(self.partitions, self.results):
            if not expired:
                return []
            _finish(self.results, ErrorCode.REQUEST_TIMED_OUT)
        return self.complete()

    def complete(self) -> list[Effect]:
        self.purgatory.remove(self.request_id)
        return [Respond(request_id=self.request_id, response=_response(self.request, self.results))]


class ProducePath:
    def __init__(self, *, broker_id: int, partitions: dict[TopicPartition, Partition],
                 leader_partition: Callable[[TopicPartition], Partition], delayed: DelayedOperations) -> None:
        self.broker_id = broker_id
        self.partitions = partitions
        self.leader_partition = leader_partition
        self.delayed = delayed

    def handle_produce(self, request_id: int, request: ProduceRequest, now_ms: int, *,
                       internal_topics_allowed: bool = False) -> list[Effect]:
        """``internal_topics_allowed`` only for the broker's own group coordinator: a client's write
        to ``__consumer_offsets`` is INVALID_TOPIC_EXCEPTION, as in Kafka (it would corrupt group state)."""
        if request.acks not in VALID_ACKS:
            return [Respond(request_id=request_id, response=_uniform_error(request, ErrorCode.INVALID_REQUIRED_ACKS))]
        effects: list[Effect] = []
        results: dict[TopicPartition, _PendingPartition] = {}
        appended = []
        for topic in request.topic_data:
            topic_bytes = topic_records = 0  # counted once per topic: each Metric is an export call
            for data in topic.partition_data:
                topic_partition = (topic.name, data.index)
                if topic_partition in results:
                    continue  # Kafka keys a request's partitions by name: a repeat is not appended twice.
                try:
                    if topic.name in INTERNAL_TOPICS and not internal_topics_allowed:
                        raise KafkaProtocolError(ErrorCode.INVALID_TOPIC_EXCEPTION,
                                                 f"cannot append to internal topic {topic.name}")
                    partition = self.leader_partition(topic_partition)
                    if request.request_api_version is not None:
                        check_produce_records(request.request_api_version, data.records)
                    info = partition.append_records_to_leader(data.records, required_acks=request.acks, now_ms=now_ms)
                except KafkaProtocolError as exc:
                    results[topic_partition] = _PendingPartition(-1, PartitionProduceResponse(
                        index=data.index, error_code=exc.error_code, error_message=str(exc)), done=True)
                    continue
                results[topic_partition] = _PendingPartition(info.last_offset + 1, PartitionProduceResponse(
                    index=data.index, base_offset=info.first_offset,
                    log_start_offset=partition.log_start_offset))
                appended.append(topic_partition)
                topic_bytes += info.size_in_bytes
                topic_records += info.record_count
            if topic_bytes:
                effects.extend(metrics.bytes_in(self.broker_id, topic.name, topic_bytes, topic_records))
        for topic_partition in appended:
            effects.extend(self.delayed.try_complete(topic_partition, now_ms))

        if request.acks == -1 and appended:
            operation = DelayedProduce(request_id=request_id, deadline_ms=now_ms + max(0, request.timeout_ms),
                                       keys=tuple(appended), request=request, results=results,
                                       partitions=self.partitions, purgatory=self.delayed.produce)
            if _check_pending(self.partitions, results) or self.delayed.produce.is_full:
                if not all(p.done for p in results.values()):
                    _finish(results, ErrorCode.REQUEST_TIMED_OUT)
                effects.append(Respond(request_id=request_id, response=_response(request, results)))
            else:
                effects.extend(self.delayed.park(self.delayed.produce, operation))
            return effects
        for pending in results.values():
            pending.done = True
        effects.append(Respond(request_id=request_id, response=_response(request, results)))
        return effects

    def fail_parked(self, error_code: ErrorCode) -> list[Effect]:
        """Answer every parked acks=all produce now, ``error_code`` for each partition still waiting:
        after a log directory failure nothing more is acknowledged (Kafka's KAFKA_STORAGE_ERROR)."""
        effects: list[Effect] = []
        for operation in self.delayed.produce.all():
            _finish(operation.results, error_code)
            effects.extend(operation.complete())
        return effects


def _check_pending(partitions: dict[TopicPartition, Partition], results: dict) -> bool:
    """Settle what can be settled (Kafka's ``checkEnoughReplicasReachOffset``); True when all are."""
    for topic_partition, pending in results.items():
        if pending.done:
            continue
        partition = partitions.get(topic_partition)
        if partition is None or not partition.is_leader:
            pending.response = replace(pending.response, error_code=ErrorCode.NOT_LEADER_OR_FOLLOWER)
            pending.done = True
        elif partition.high_watermark >= pending.required_offset:
            if len(partition.isr) < partition.min_insync_replicas:
                pending.response = replace(pending.response,
                                           error_code=ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND)
            pending.done = True
    return all(pending.done for pending in results.values())


def _finish(results: dict, error_code: ErrorCode) -> None:
    for pending in results.values():
        if not pending.done:
            pending.response = replace(pending.response, error_code=error_code)
            pending.done = True


def _response(request: ProduceRequest, results: dict) -> ProduceResponse:
    topics = []
    for topic in request.topic_data:
        indexes = dict.fromkeys(data.index for data in topic.partition_data)
        topics.append(TopicProduceResponse(name=topic.name, partition_responses=tuple(
            results[(topic.name, index)].response for index in indexes)))
    return ProduceResponse(responses=tuple(topics))


def _uniform_error(request: ProduceRequest, error_code: ErrorCode) -> ProduceResponse:
    return ProduceResponse(responses=tuple(
        TopicProduceResponse(name=topic.name, partition_responses=tuple(
            PartitionProduceResponse(index=data.index, error_code=error_code)
            for data in topic.partition_data))
        for topic in request.topic_data))
