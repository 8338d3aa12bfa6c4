"""The fetch path of the replica manager: whole batches for consumers and followers.

A consumer (``replica_id == -1``) reads up to the high watermark; a follower reads up to the log
end offset, and its fetch offset is recorded as its log end offset, which may move the high
watermark (after the read, as in Kafka: the answer carries the high watermark the read saw). Byte
limits follow Kafka: each partition gets at most ``partition_max_bytes``, the whole response at
most ``max_bytes``, except that the first batch of the first partition with data is returned whole
so that a batch larger than the limits cannot stall a reader.

A fetch is answered at once when it may not wait, found ``min_bytes``, hit an error, or is a
follower's and the leader's high watermark is above the one last sent to that follower (KIP-392:
followers learn a new high watermark on their next fetch). Otherwise it parks in the fetch
purgatory as a ``DelayedFetch`` (Kafka 2.4's) and is answered with a fresh read when, for a watched
partition (checked at once too, as ``tryCompleteElseWatch`` does, and again whenever an append,
a follower's fetch or an ISR change moves one of its partitions):
- this broker no longer leads it, or the fetch's leader epoch is fenced (Kafka's cases A-E);
- the readable end (log end offset for followers, high watermark for consumers) moved into a
  segment other than the one the fetch offset was in when it parked: the log rolled, the fetch
  fell behind into an older segment, or the log was cut below it (case F); a read never spans
  segments, so waiting there for ``min_bytes`` could only run out the clock;
- the fetch is a follower's and the high watermark rose above the one last sent to it (case H),
  once ``raykafka.replica.high.watermark.linger.ms`` has passed (below);
- together the watched partitions hold ``min_bytes`` (case G), counted as Kafka counts them,
  from log positions: per partition, the bytes between where the read would start and the
  readable end in that segment, at most ``partition_max_bytes``; no log data is read for it;
or at ``max_wait_ms``. Only the completing read reads the log. When a fetch offset is no longer
within the log (the log was cut below it, or its start moved above it) the parked fetch reads at
once, and answers with the error that read finds.

The high watermark linger (raykafka's, not Kafka's). In Kafka a follower's fetch is answered as
soon as the high watermark rose above the one it was last sent, records or not: the follower
learns the new high watermark at once, at the price of a record-less round (answer, append, next
fetch) after every acknowledged write. A network round costs Kafka little; here each of its steps
is a Ray call, and under load the record-less rounds made nearly half of the replication path's
calls and collide with the next write's records, which then wait for it. With
``raykafka.replica.high.watermark.linger.ms`` above 0, a follower's fetch whose only reason to be
answered is a newer high watermark waits up to that long (never beyond its ``max_wait_ms``) for
records to carry it: records that arrive meanwhile complete it at once with the new high watermark
beside them, and otherwise it is answered record-less when the linger runs out. Nothing a
producer waits for changes: an acks=all write is acknowledged when the followers' fetch offsets
pass it, which the linger does not delay; only a follower's own high watermark may trail the
leader's by up to the linger when no records follow. 0 is Kafka's behaviour.

Fetch sessions (KIP-227, ``fetch_session.py``): the request is first resolved against the
broker's session cache into a context whose request names every partition to read (an
incremental fetch's cached partitions filled in); everything above works on that request, and
the context shapes the answer (an incremental one leaves out partitions with nothing new). A
session error is answered at once, with no partition.

The replica manager owns one ``FetchPath``, built from what it needs of the manager: the hosted
partitions, ``leader_partition``, the fetch session cache, the purgatories, and the replication
side (a follower's fetch may add it to the ISR).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from actors.core import metrics
from actors.core.effects import ArmTimer, Effect, Respond
from actors.core.errors import ErrorCode, KafkaProtocolError
from actors.core.log.record_batch import holds_zstd_batch
from actors.core.messages.fetch import (
    EpochEndOffset, FetchableTopicResponse, FetchPartitionData, FetchRequest, FetchResponse,
)
from actors.core.replica.fetch_session import FetchContext, FetchSessionCache
from actors.core.replica.partition import Partition
from actors.core.replica.purgatory import DelayedOperation, DelayedOperations
from actors.core.replica.replication import Replication


TopicPartition = tuple[str, int]


@dataclass(frozen=True, slots=True)
class FetchStart:
    """Where a parked fetch began in one partition (Kafka's ``FetchPartitionStatus``)."""
    topic_partition: TopicPartition
    fetch_offset: int
    segment_base_offset: int  # of the segment holding ``fetch_offset`` when the fetch parked
    current_leader_epoch: int
    fetch_position: int = 0  # where a read at ``fetch_offset`` starts in that segment
    partition_max_bytes: int = 0


@dataclass(slots=True, kw_only=True)
class DelayedFetch(DelayedOperation):
    """Kafka's ``DelayedFetch``: a fetch that found too little, parked until one of the cases in
    the module docstring completes it (``FetchPath.try_complete``) or ``max_wait_ms`` passes."""
    request: FetchRequest
    starts: tuple[FetchStart, ...]
    context: FetchContext | None  # its fetch session's view; None: answered as read
    path: FetchPath
    # When a follower's fetch that waits only to pass on a newer high watermark is answered at the
    # latest (the linger's end); None while it has no newer high watermark to pass on.
    high_watermark_due_ms: int | None = None

    def try_complete(self, now_ms: int, *, expired: bool) -> list[Effect]:
        return self.path.try_complete(self, now_ms, expired=expired)


class FetchPath:
    def __init__(self, *, broker_id: int, partitions: dict[TopicPartition, Partition],
                 leader_partition: Callable[[TopicPartition], Partition], fetch_sessions: FetchSessionCache,
                 delayed: DelayedOperations, replication: Replication,
                 high_watermark_linger_ms: int = 0) -> None:
        self.broker_id = broker_id
        self.high_watermark_linger_ms = high_watermark_linger_ms
        self.partitions = partitions
        self.leader_partition = leader_partition
        self.fetch_sessions = fetch_sessions
        self.delayed = delayed
        self.replication = replication  # a follower's fetch may expand the ISR

    def handle_fetch(self, request_id: int, request: FetchRequest, now_ms: int) -> list[Effect]:
        if request.max_bytes < 0 or request.min_bytes < 0:
            return [Respond(request_id=request_id, response=FetchResponse(
                responses=(), error_code=ErrorCode.INVALID_REQUEST))]
        context = self.fetch_sessions.new_context(request, now_ms)
        if context.kind == "error":
            return [Respond(request_id=request_id, response=context.respond(self.fetch_sessions, None, now_ms))]
        request = context.request
        response, size_bytes, must_answer = self.read_for_fetch(request)
        effects: list[Effect] = []
        needs_high_watermark = False
        if request.replica_id >= 0:
            # Kafka's followerNeedsHwUpdate: decided on what this follower was sent before this fetch.
            needs_high_watermark = self._sends_newer_high_watermark(request.replica_id, response)
            effects.extend(self._update_follower_fetch_states(request, response, now_ms))
        keys = tuple((topic.topic, p.partition) for topic in request.topics for p in topic.partitions)
        if (request.max_wait_ms <= 0 or size_bytes >= request.min_bytes or must_answer or not keys
                or (needs_high_watermark and self.high_watermark_linger_ms <= 0) or self.delayed.fetch.is_full):
            response = context.respond(self.fetch_sessions, response, now_ms)
            effects.append(Respond(request_id=request_id, response=response))
            return effects + self._bytes_out(request, response)
        operation = DelayedFetch(request_id=request_id, deadline_ms=now_ms + request.max_wait_ms, keys=keys,
                                 request=request, starts=self._fetch_starts(request), context=context, path=self)
        if self._must_complete(operation, now_ms):  # e.g. this follower's own fetch offset moved the HW
            return effects + self._complete(operation, now_ms)
        effects.extend(self.delayed.park(self.delayed.fetch, operation))
        return effects

    def try_complete(self, operation: DelayedFetch, now_ms: int, *, expired: bool) -> list[Effect]:
        due_before = operation.high_watermark_due_ms
        if expired or self._must_complete(operation, now_ms):
            return self._complete(operation, now_ms)
        # A newer high watermark to pass on started the linger just now: wake up when it ends.
        waiting = ([] if operation.high_watermark_due_ms is None or due_before is not None
                   else [ArmTimer(deadline_ms=operation.deadline_ms)])
        available_bytes = self._available_bytes(operation)
        if available_bytes is not None:
            return self._complete(operation, now_ms) if available_bytes >= operation.request.min_bytes else waiting
        response, size_bytes, must_answer = self.read_for_fetch(operation.request)
        if not (must_answer or size_bytes >= operation.request.min_bytes):
            return waiting
        return self._complete(operation, now_ms, response)

    def _available_bytes(self, parked: DelayedFetch) -> int | None:
        """Case G without a read: the bytes readable now for the parked fetch, from log positions
        (Kafka's ``positionDiff``); None when a fetch offset left the log, which only a read can answer.
        Runs after ``_must_complete``, so every partition is led here and its readable end lies in the
        segment the fetch offset was in."""
        replica_id, available_bytes = parked.request.replica_id, 0
        for start in parked.starts:
            partition = self.partitions[start.topic_partition]
            end_offset = partition.log_end_offset if replica_id >= 0 else partition.high_watermark
            if not partition.log_start_offset <= start.fetch_offset <= partition.log_end_offset:
                return None
            if end_offset > start.fetch_offset:
                _, end_position = partition.log.read_position(end_offset)
                available_bytes += max(0, min(end_position - start.fetch_position, start.partition_max_bytes))
        return available_bytes

    def _complete(self, operation: DelayedFetch, now_ms: int,
                  response: FetchResponse | None = None) -> list[Effect]:
        """Answer a delayed fetch with a fresh read (or ``response``, read just now)."""
        request, context = operation.request, operation.context
        if response is None:
            response, _, _ = self.read_for_fetch(request)
        self.delayed.fetch.remove(operation.request_id)
        if request.replica_id >= 0:
            for topic_partition, data in _served(response).items():
                partition = self.partitions.get(topic_partition)
                if partition is not None:
                    partition.record_sent_high_watermark(request.replica_id, data.high_watermark)
        if context is not None:
            response = context.respond(self.fetch_sessions, response, now_ms)
        return [Respond(request_id=operation.request_id, response=response)] + self._bytes_out(request, response)

    def _bytes_out(self, request: FetchRequest, response: FetchResponse) -> list[Effect]:
        """Kafka's ``updateBytesOut`` when a fetch is answered: per topic, the record bytes sent, to
        consumers (BytesOutPerSec) or to followers (ReplicationBytesOutPerSec)."""
        sent: dict[str, int] = {}
        for topic in response.responses:
            size = sum(len(p.records) for p in topic.partitions if p.records is not None)
            if size:
                sent[topic.topic] = sent.get(topic.topic, 0) + size
        return [effect for topic, size in sorted(sent.items())
                for effect in metrics.bytes_out(self.broker_id, topic, size, replication=request.replica_id >= 0)]

    def _fetch_starts(self, request: FetchRequest) -> tuple[FetchStart, ...]:
        """Each asked partition's fetch offset and segment; called only after a read without errors,
        so every partition is led here and every fetch offset lies within its log."""
        starts = []
        for topic in request.topics:
            for asked in topic.partitions:
                topic_partition = (topic.topic, asked.partition)
                segment_base_offset, position = self.partitions[topic_partition].log.read_position(asked.fetch_offset)
                starts.append(FetchStart(topic_partition=topic_partition, fetch_offset=asked.fetch_offset,
                                         segment_base_offset=segment_base_offset,
                                         current_leader_epoch=asked.current_leader_epoch, fetch_position=position,
                                         partition_max_bytes=asked.partition_max_bytes))
        return tuple(starts)

    def _must_complete(self, parked: DelayedFetch, now_ms: int) -> bool:
        """Kafka 2.4's DelayedFetch cases A-F and H (G, the byte count, needs a read); H once the
        high watermark linger has run out (it starts here, and brings the deadline forward)."""
        replica_id = parked.request.replica_id
        for start in parked.starts:
            partition = self.partitions.get(start.topic_partition)
            if partition is None or not partition.is_leader:
                return True
            if partition.check_leader_epoch(start.current_leader_epoch) != ErrorCode.NONE:
                return True
            end_offset = partition.log_end_offset if replica_id >= 0 else partition.high_watermark
            if (end_offset != start.fetch_offset
                    and partition.log.segment_base_offset(end_offset) != start.segment_base_offset):
                return True
            if replica_id >= 0 and partition.follower_needs_high_watermark(replica_id):
                if self.high_watermark_linger_ms <= 0:
                    return True
                if parked.high_watermark_due_ms is None:
                    parked.high_watermark_due_ms = now_ms + self.high_watermark_linger_ms
                    parked.deadline_ms = min(parked.deadline_ms, parked.high_watermark_due_ms)
                if now_ms >= parked.high_watermark_due_ms:
                    return True
        return False

    def _sends_newer_high_watermark(self, replica_id: int, response: FetchResponse) -> bool:
        for topic_partition, data in _served(response).items():
            partition = self.partitions.get(topic_partition)
            remote = None if partition is None else partition.remote_replicas.get(replica_id)
            if remote is not None and data.high_watermark > remote.last_sent_high_watermark:
                return True
        return False

    def read_for_fetch(self, request: FetchRequest) -> tuple[FetchResponse, int, bool]:
        """Read every asked partition; returns the response, its record bytes and whether any partition
        errored or diverged (either is answered at once: waiting cannot change it)."""
        remaining_bytes = request.max_bytes
        min_one_batch = True
        size_bytes = 0
        must_answer = False
        topics = []
        for topic in request.topics:
            partitions = []
            for asked in topic.partitions:
                data, records_size = self._read_partition(topic.topic, asked, request.replica_id,
                                                     max(0, min(asked.partition_max_bytes, remaining_bytes)),
                                                     min_one_batch)
                if records_size:
                    min_one_batch = False
                    remaining_bytes -= records_size
                    size_bytes += records_size
                must_answer = must_answer or data.error_code != ErrorCode.NONE or data.diverging_epoch is not None
                partitions.append(data)
            topics.append(FetchableTopicResponse(topic=topic.topic, partitions=tuple(partitions)))
        return FetchResponse(responses=tuple(topics)), size_bytes, must_answer

    def _read_partition(self, topic: str, asked, replica_id: int,
                        max_bytes: int, min_one_batch: bool) -> tuple[FetchPartitionData, int]:
        """One partition's answer and the size of its records (the records may be wrapped for transport)."""
        from_follower = replica_id >= 0
        try:
            partition = self.leader_partition((topic, asked.partition))
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
        if asked.last_fetched_epoch >= 0:  # any fetcher's, as Kafka's Partition.readRecords checks it
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
                                  records=info.records,
                                  **positions), len(info.records)

    def _update_follower_fetch_states(self, request: FetchRequest, response: FetchResponse,
                                      now_ms: int) -> list[Effect]:
        """A follower's fetch offset acknowledges its log below it, but only for a partition whose read
        succeeded: a fenced fetch, or one answered with a diverging epoch, says nothing about what the
        follower holds (Kafka's ``updateFollowerFetchState`` skips such reads too). The high watermark
        the answer carries is recorded as the one last sent to the follower."""
        served = _served(response)
        effects: list[Effect] = []
        read: list[tuple[str, int]] = []
        for topic in request.topics:
            for asked in topic.partitions:
                partition = self.partitions.get((topic.topic, asked.partition))
                data = served.get((topic.topic, asked.partition))
                if partition is None or not partition.is_leader or data is None:
                    continue
                low_watermark = partition.low_watermark
                if partition.update_follower_fetch_state(request.replica_id, asked.fetch_offset, now_ms,
                                                         sent_high_watermark=data.high_watermark,
                                                         log_start_offset=asked.log_start_offset):
                    effects.extend(self.delayed.try_complete((topic.topic, asked.partition), now_ms))
                if partition.low_watermark != low_watermark:  # the follower's start moved: a DeleteRecords may be done
                    effects.extend(self.delayed.try_complete_delete_records((topic.topic, asked.partition), now_ms))
                read.append((topic.topic, asked.partition))
        # Every expansion this fetch allows goes to the controller in one AlterPartition.
        return effects + self.replication.maybe_expand_isrs(read, request.replica_id)


def _served(response: FetchResponse) -> dict[TopicPartition, FetchPartitionData]:
    """The partitions a read answered with data or an empty read, not an error or a divergence."""
    return {(topic.topic, data.partition_index): data for topic in response.responses for data in topic.partitions
            if data.error_code == ErrorCode.NONE and data.diverging_epoch is None}


def _diverging_epoch(partition, asked) -> EpochEndOffset | None:
    """KIP-320's check, in the form later Kafka puts in the fetch itself: if the fetcher's last
    fetched epoch ends on this leader before the fetch offset (or the leader never had that epoch),
    its log (a follower's, or what a consumer read) has diverged; answer with where that epoch ends
    instead of with data. A consumer sends the epoch from Fetch v12 on (Kafka's Java consumer and
    librdkafka send -1, no check); Kafka checks it for consumers and followers alike."""
    epoch, end_offset = partition.log.end_offset_for_epoch(asked.last_fetched_epoch)
    if epoch != asked.last_fetched_epoch or end_offset < asked.fetch_offset:
        return EpochEndOffset(epoch=epoch, end_offset=end_offset)
    return None


def refuse_zstd(response: FetchResponse) -> FetchResponse:
    """``response`` as a client that cannot read zstd may see it (the listener applies this to a
    Fetch below v10, KIP-110): each partition whose records hold a zstd batch is answered
    UNSUPPORTED_COMPRESSION_TYPE with no data and unknown offsets, as Kafka's ``KafkaApis``
    answers it. Only batch headers are read, and only here, off the path of newer clients."""
    topics, changed = [], False
    for topic in response.responses:
        partitions = tuple(
            FetchPartitionData(partition_index=data.partition_index, error_code=ErrorCode.UNSUPPORTED_COMPRESSION_TYPE)
            if data.records is not None and len(data.records) and holds_zstd_batch(data.records) else data
            for data in topic.partitions)
        changed = changed or any(new is not old for new, old in zip(partitions, topic.partitions))
        topics.append(replace(topic, partitions=partitions))
    return replace(response, responses=tuple(topics)) if changed else response
