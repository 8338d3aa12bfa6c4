"""The producer: batches records per partition and sends them to partition leaders.

It mirrors Kafka's producer: ``send`` appends to a per-partition batch (``batch.size``, 256 KiB by
default where Kafka's is 16 KiB, for Ray's cost per call: see ``producer_config.py``) and returns
a future; a sender thread ships batches that are full, older than ``linger.ms``, or being flushed,
grouping one batch per partition into one Produce request per leader, with at most
``max.in.flight.requests.per.connection`` requests outstanding per broker. Retriable errors
(leadership moved, the broker unreachable or restarting) are retried after ``retry.backoff.ms``
until ``delivery.timeout.ms``. With ``enable.idempotence`` (on by default with acks=all, retries
and at most 5 requests in flight, as in Kafka 3.x; see ``idempotence.py``) every batch carries the
producer's id and a sequence number, so a retry of a request whose first attempt did land is
answered with the original offsets instead of being written twice; without it, a retry can write a
record twice, as in Kafka. The future resolves to ``RecordMetadata`` (topic, partition, offset) or
raises ``KafkaError``.

A request unanswered after ``request.timeout.ms`` is abandoned and handled as
``REQUEST_TIMED_OUT`` (Kafka's NetworkClient does the same), so a paused or partitioned broker
cannot hold the producer forever; a batch still queued ``delivery.timeout.ms`` after it was made
expires, as in Kafka's accumulator. So every send completes, and ``flush`` returns, within about
``delivery.timeout.ms`` + ``request.timeout.ms``.

Metadata is asked for again as Kafka's sender asks (``MetadataRefresher``): whenever a partition
with queued batches has no known leader (it had none when metadata was last read, say during an
election), after an answer that says the leader moved, and every ``metadata.max.age.ms`` anyway;
never more often than every ``retry.backoff.ms``. A batch waits for its partition's leader no
longer than ``delivery.timeout.ms``.

A ``HistoryWriter`` gets every send, Jepsen-style: ``invoke``, then ``ok``, ``fail`` or ``info``
(indeterminate, or acks=0); ``producer_batch.py`` says which answers leave the outcome open.
"""
from __future__ import annotations

import collections
import functools
import itertools
import threading
import time
from concurrent import futures
from concurrent.futures import Future

from ray.exceptions import ActorDiedError, RayTaskError

from actors.core.errors import ErrorCode, KafkaProtocolError
from actors.core.log.compression import producer_codec
from actors.core.messages.produce import PartitionProduceData, ProduceRequest, TopicProduceData
from orchestration.history import HistoryWriter
from orchestration.clients.broker_directory import BrokerDirectory, MetadataRefresher, as_future, as_kafka_error, cancel_quietly
from orchestration.clients.idempotence import Idempotence, idempotence_enabled
from orchestration.clients.partitioner import StickyPartitioner
from orchestration.clients.producer_batch import (  # noqa: F401 (NO_ACKNOWLEDGEMENT: part of the producer's API)
    NO_ACKNOWLEDGEMENT, OUTCOME_UNKNOWN_ERRORS, FutureRecordMetadata, InFlightRequest, ProducerBatch, history_text,
    record_send_outcome, record_size_upper_bound, request_records, split_refused, splittable,
)
from orchestration.clients.producer_config import (  # noqa: F401 (the producer's API)
    PRODUCER_DEFAULTS, PRODUCER_KEYS, parse_acks,
)
from orchestration.clients.producer_drain import ProducerDrain
from actors.codecs.record_batches import BatchBuilder
from orchestration.errors import KafkaError

# Errors after which the leader the metadata names is probably wrong: ask for metadata again. A
# broker with no actor (BROKER_NOT_AVAILABLE) is a disconnected node to Kafka's client.
_METADATA_ERRORS = {ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                    ErrorCode.LEADER_NOT_AVAILABLE, ErrorCode.FENCED_LEADER_EPOCH,
                    ErrorCode.UNKNOWN_LEADER_EPOCH, ErrorCode.NETWORK_EXCEPTION,
                    ErrorCode.BROKER_NOT_AVAILABLE}
_PROCESS_IDS = itertools.count()


class Producer(ProducerDrain):
    def __init__(self, directory: BrokerDirectory, config: dict | None = None, *,
                 history: HistoryWriter | None = None, process: str | None = None) -> None:
        """``history`` records every send under ``process`` (default: ``producer-N``, unique in
        this Python process, which is all one ``HistoryWriter`` serves)."""
        settings = PRODUCER_KEYS.settings(config)
        self.config = settings
        self.acks = parse_acks(settings["acks"])
        self._batch_size = int(settings["batch.size"])
        try:
            self._compression_type = producer_codec(settings["compression.type"])
        except KafkaProtocolError as exc:
            raise KafkaError(ErrorCode.INVALID_CONFIG, str(exc)) from None
        self._linger_ms = float(settings["linger.ms"])
        self._max_request_size = int(settings["max.request.size"])
        self._retries = int(settings["retries"])
        self._retry_backoff_ms = float(settings["retry.backoff.ms"])
        self._delivery_timeout_ms = float(settings["delivery.timeout.ms"])
        self._request_timeout_ms = int(settings["request.timeout.ms"])
        self._max_in_flight = max(1, int(settings["max.in.flight.requests.per.connection"]))
        self._buffer_memory = int(settings["buffer.memory"])
        self._max_block_ms = int(settings["max.block.ms"])
        self._directory = directory
        self._idempotence = Idempotence(directory, request_timeout_ms=self._request_timeout_ms) if idempotence_enabled(
            settings, self.acks, explicit="enable.idempotence" in (config or {})) else None
        self._metadata = MetadataRefresher(directory, retry_backoff_ms=self._retry_backoff_ms,
                                           metadata_max_age_ms=float(settings["metadata.max.age.ms"]))
        self._history = history
        self.process = process or f"producer-{next(_PROCESS_IDS)}"
        self.client_id = settings["client.id"] or self.process
        self._partitioner = StickyPartitioner()
        # Sends take the C-level RLock itself: the Condition's Python __enter__/__exit__ cost more.
        self._lock = threading.RLock()
        self._condition = threading.Condition(self._lock)
        self._queues: dict[tuple[str, int], collections.deque[ProducerBatch]] = {}
        self._queued_bytes = 0
        self._in_flight: dict[Future, InFlightRequest] = {}  # keyed by the answer's future
        self._batch_orders = itertools.count()  # ProducerBatch.order
        self._drain_starts: dict[int, int] = {}  # leader -> where its next drain starts (Kafka's drainIndex)
        self._unfinished = 0  # batches queued or in flight
        self._flushing = 0
        self._closed = False
        self._sender = threading.Thread(target=self._run, name=f"raykafka-producer-sender | {self.client_id}",
                                        daemon=True)
        self._sender.start()

    # ----------------------------------------------------------------------------- user API
    def send(self, topic: str, value: bytes | None = None, key: bytes | None = None,
             partition: int | None = None, timestamp_ms: int | None = None, headers=None) -> FutureRecordMetadata:
        value_text = None
        if self._history is not None:
            value_text = history_text(value)
            self._history.invoke(self.process, topic, partition, value_text,
                                 key=None if key is None else history_text(key), tombstone=value is None)
        try:
            future = self._append(topic, value, key, partition, timestamp_ms, headers)
        except KafkaError as exc:
            future = FutureRecordMetadata.failed(exc)  # refused before anything was queued: recorded as fail below
        except Exception as exc:
            if value_text is not None:
                self._history.fail(self.process, value_text, exc)
            raise
        if value_text is not None:
            future.add_done_callback(functools.partial(record_send_outcome, self._history, self.process, self.acks,
                                                       value_text))
        return future

    def flush(self, timeout: float | None = None) -> None:
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._condition:
            self._flushing += 1
            self._condition.notify_all()
            try:
                while self._unfinished:
                    remaining = None if deadline is None else deadline - time.monotonic()
                    if remaining is not None and remaining <= 0:
                        raise KafkaError(ErrorCode.REQUEST_TIMED_OUT, "flush timed out")
                    self._condition.wait(remaining if remaining is not None else 0.1)
            finally:
                self._flushing -= 1

    def close(self, timeout: float | None = None) -> None:
        if self._closed:
            return
        try:
            self.flush(timeout)
        finally:
            with self._condition:
                self._closed = True
                self._condition.notify_all()
            self._sender.join(timeout=5)

    def __enter__(self) -> "Producer":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ---------------------------------------------------------------------------- accumulator
    def _append(self, topic, value, key, partition, timestamp_ms, headers) -> FutureRecordMetadata:
        if self._closed:
            raise KafkaError(ErrorCode.UNKNOWN_SERVER_ERROR, "producer is closed")
        for name, data in (("key", key), ("value", value)):
            if data is not None and type(data) is not bytes and not isinstance(data, (bytes, bytearray, memoryview)):
                raise TypeError(f"{name} must be bytes or None, not {type(data).__name__}")
        num_partitions = self._partition_count(topic)
        sticky = partition is None and key is None  # the sticky partitioner chooses, batch by batch
        if partition is None:
            partition = self._partitioner.partition(topic, key, num_partitions)
        elif not isinstance(partition, int) or not 0 <= partition < num_partitions:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                             f"partition {partition!r} of {topic!r} (it has {num_partitions})")
        size = record_size_upper_bound(key, value, headers)
        if size > self._max_request_size:
            raise KafkaError(ErrorCode.MESSAGE_TOO_LARGE,
                             f"a {size}-byte record exceeds max.request.size={self._max_request_size}")
        with self._lock:
            while self._queued_bytes + size > self._buffer_memory and self._queued_bytes:
                self._condition.wait(0.1)  # buffer.memory bounds what waits to be sent
            queue = self._queues.setdefault((topic, partition), collections.deque())
            batch = queue[-1] if queue and queue[-1].payload is None else None
            appended = batch is not None and batch.builder.try_append(key, value, timestamp_ms, headers)
            if not appended and sticky:
                # As Kafka's producer does (KIP-480): a keyless record that would open a new batch
                # (the last one is full or already sent) moves the sticky partition on first.
                self._partitioner.on_new_batch(topic, partition, num_partitions)
                partition = self._partitioner.partition(topic, None, num_partitions)
                queue = self._queues.setdefault((topic, partition), collections.deque())
                batch = queue[-1] if queue and queue[-1].payload is None else None
                appended = batch is not None and batch.builder.try_append(key, value, timestamp_ms, headers)
            if not appended:
                batch = ProducerBatch(topic, partition, BatchBuilder(self._batch_size, self._compression_type), _now_ms(),
                                      order=next(self._batch_orders))
                appended = batch.builder.try_append(key, value, timestamp_ms, headers)
                assert appended, "the first record always fits an empty batch"
                queue.append(batch)
                self._unfinished += 1
            batch.estimated_bytes += size
            self._queued_bytes += size
            if len(queue) > 1 or batch.builder.size_in_bytes() >= self._batch_size or self._linger_ms <= 0:
                self._condition.notify_all()
            return FutureRecordMetadata(batch, batch.builder.record_count - 1)

    def _partition_count(self, topic: str) -> int:
        """Wait up to ``max.block.ms`` for the topic to appear in metadata, as Kafka's send does."""
        deadline = None  # taken only when the topic is missing: a send should not pay for a clock read
        while True:
            try:
                return len(self._directory.partitions_for(topic))
            except KafkaError as exc:
                deadline = deadline or time.monotonic() + self._max_block_ms / 1000
                if exc.error_code != ErrorCode.UNKNOWN_TOPIC_OR_PARTITION or time.monotonic() >= deadline:
                    raise
            time.sleep(min(self._retry_backoff_ms / 1000, max(0.0, deadline - time.monotonic())))
            self._directory.refresh_metadata()

    # --------------------------------------------------------------------------------- sender
    def _run(self) -> None:
        while True:
            # Outside the lock: a refresh is a call to a broker, and send() must not wait for it.
            self._metadata.update_if_due()
            can_send = self._identity_ready()
            with self._condition:
                if self._closed and not self._unfinished:
                    return
                ready, wait_ms, expired, leaderless = self._drain_ready(can_send)
                if leaderless:
                    # Kafka's Sender: a partition with data and no known leader makes the client
                    # ask for metadata again (at the next pass, once retry.backoff.ms allows).
                    self._metadata.request_update()
                    wait_ms = min(wait_ms, self._metadata.time_to_next_update_ms())
                if not ready and not expired and not self._in_flight:
                    self._condition.wait(min(wait_ms, 100) / 1000)
                    continue
            for batch, error in expired:
                self._fail(batch, error)
            for _, group in ready:
                for batch in group:
                    batch.seal()
            self._send(ready)
            self._collect(timeout_s=0 if ready else min(wait_ms, 5) / 1000)

    def _identity_ready(self) -> bool:
        """An idempotent producer sends nothing before it has a producer id, asked for (once there is
        something to send) outside the lock; a fatal answer fails every queued batch, as in Kafka."""
        if self._idempotence is None or self._idempotence.ready:
            return True
        if not self._unfinished:
            return False
        try:
            if self._idempotence.init_producer_id():
                return True
            time.sleep(self._retry_backoff_ms / 1000)  # a retriable answer: try again after the backoff
        except KafkaError as exc:
            with self._condition:
                batches = [batch for queue in self._queues.values() for batch in queue]
                for queue in self._queues.values():
                    queue.clear()
            for batch in batches:
                self._fail(batch, exc)
        return False

    def _send(self, ready: list) -> None:
        by_broker: dict[int, list[list[ProducerBatch]]] = collections.defaultdict(list)
        for leader, group in ready:
            by_broker[leader].append(group)
        for broker_id, groups in by_broker.items():
            # Split so that no request exceeds max.request.size (a lone large group goes alone).
            request_groups, size = [], 0
            for group in groups:
                group_size = sum(len(batch.payload) for batch in group)
                if request_groups and size + group_size > self._max_request_size:
                    self._send_request(broker_id, request_groups)
                    request_groups, size = [], 0
                request_groups.append(group)
                size += group_size
            self._send_request(broker_id, request_groups)

    def _send_request(self, broker_id: int, groups: list[list[ProducerBatch]]) -> None:
        topics: dict[str, list[PartitionProduceData]] = collections.defaultdict(list)
        for group in groups:
            for batch in group:
                batch.attempts += 1
            topics[group[0].topic].append(PartitionProduceData(index=group[0].partition, records=request_records(group)))
        request = ProduceRequest(acks=self.acks, timeout_ms=self._request_timeout_ms, topic_data=tuple(
            TopicProduceData(name=name, partition_data=tuple(parts)) for name, parts in topics.items()))
        try:
            ref = self._directory.broker(broker_id).handle.remote(request)
        except KafkaError as exc:  # no actor for the broker: nothing was sent
            self._requeue_unsent(groups, exc)
            return
        with self._lock:
            self._in_flight[as_future(ref)] = InFlightRequest(broker_id, groups, _now_ms(), ref)

    def _requeue_unsent(self, groups: list[list[ProducerBatch]], error: KafkaError) -> None:
        """The leader has no actor (killed, not yet replaced): a node Kafka's producer cannot
        connect to. Kafka drains no batch for such a node; its batches wait, whatever ``retries``
        says, while metadata is refreshed, until ``delivery.timeout.ms``. So these were no
        attempt: they go back to the front of their queues after ``retry.backoff.ms``."""
        self._metadata.refresh_now()
        now = _now_ms()
        for group in groups:
            for batch in group:
                batch.attempts -= 1
                if now - batch.created_ms >= self._delivery_timeout_ms:
                    self._fail(batch, error)
                    continue
                batch.retry_after_ms = now + self._retry_backoff_ms
                self._requeue([batch])

    def _requeue(self, batches: list[ProducerBatch], unfinished_added: int = 0) -> None:
        """Back into their queues in creation order (Kafka's ``insertInSequenceOrder``), whatever the answers' order."""
        with self._condition:
            for batch in batches:
                queue = self._queues[(batch.topic, batch.partition)]
                index = 0
                while index < len(queue) and queue[index].order < batch.order:
                    index += 1
                queue.insert(index, batch)
            self._unfinished += unfinished_added
            self._condition.notify_all()

    def _collect(self, timeout_s: float) -> None:
        if not self._in_flight:
            return
        self._abandon_timed_out()
        answers = list(self._in_flight)
        if not answers:
            return
        done, _ = futures.wait(answers, timeout=timeout_s)  # all that answer within timeout_s
        if not done:
            done, _ = futures.wait(answers, timeout=0.005, return_when=futures.FIRST_COMPLETED)
        for answer in done:
            with self._condition:
                request = self._in_flight.pop(answer)
            try:
                response = answer.result()
            except Exception as exc:  # a dead, restarting or failing broker: the call may have run
                if isinstance(exc, ActorDiedError):
                    self._directory.forget(request.broker_id)
                # An error the broker raised itself (RayTaskError) is its answer: one with an
                # error code refused the request and appended nothing; UNKNOWN_SERVER_ERROR, a
                # failure inside its handler, stays of unknown outcome (see OUTCOME_UNKNOWN_ERRORS).
                for group in request.groups:
                    self._fail_or_retry(group, as_kafka_error(exc), outcome_unknown=not isinstance(exc, RayTaskError))
                continue
            self._complete(request.groups, response)

    def _abandon_timed_out(self) -> None:
        """Give up on requests unanswered for ``request.timeout.ms``, as Kafka's NetworkClient
        does: the broker may be paused or cut off, and may still run the request, so each is
        ``REQUEST_TIMED_OUT`` with an unknown outcome, retried per ``retries`` and
        ``delivery.timeout.ms``. Ray is asked to cancel the call; a late answer is ignored."""
        now = _now_ms()
        timed_out = [answer for answer, request in self._in_flight.items()
                     if now - request.sent_ms >= self._request_timeout_ms and not answer.done()]
        if not timed_out:
            return
        with self._condition:
            abandoned = [self._in_flight.pop(answer) for answer in timed_out]
        for request in abandoned:
            cancel_quietly(request.ref)
        # The leader may have been replaced meanwhile (a paused leader is fenced): ask again.
        self._metadata.refresh_now()
        for request in abandoned:
            error = KafkaError(ErrorCode.REQUEST_TIMED_OUT, f"no answer from broker {request.broker_id} within "
                                                            f"request.timeout.ms={self._request_timeout_ms}")
            for group in request.groups:
                self._fail_or_retry(group, error, outcome_unknown=True)

    def _complete(self, groups: list[list[ProducerBatch]], response) -> None:
        results = {(topic.name, part.index): part for topic in response.responses for part in topic.partition_responses}
        for group in groups:
            result = results.get((group[0].topic, group[0].partition))
            if result is None:
                self._fail_or_retry(group, KafkaError(ErrorCode.UNKNOWN_SERVER_ERROR, "no answer for partition"))
            elif result.error_code == ErrorCode.MESSAGE_TOO_LARGE and splittable(group):
                requeued = split_refused(group, self._idempotence)  # Kafka's splitAndReenqueue: see there
                self._requeue(requeued, unfinished_added=len(requeued) - len(group))  # pieces finish, not their batch
            elif result.error_code != ErrorCode.NONE:
                # An error answered with a base offset comes after the append (the leader lost its
                # leadership while waiting for acks=all, say): the records are in its log.
                self._fail_or_retry(group, KafkaError(result.error_code, result.error_message or ""),
                                    outcome_unknown=result.base_offset >= 0)
            else:
                offset = result.base_offset
                for batch in group:
                    if self._idempotence is not None:
                        self._idempotence.on_acknowledged(batch)
                    batch.resolve(offset)  # acks=0 answers -1, as Kafka does
                    if offset >= 0:
                        offset += batch.builder.record_count
                    self._finish(batch)

    def _fail_or_retry(self, batches: list[ProducerBatch], error: KafkaError, *,
                       outcome_unknown: bool = False) -> None:
        """One attempt of ``batches`` ended with ``error``; ``outcome_unknown`` when the attempt
        may have appended them whatever the error says (the call failed in Ray or timed out)."""
        if outcome_unknown or error.error_code in OUTCOME_UNKNOWN_ERRORS:
            for batch in batches:
                batch.maybe_written = True
        now = _now_ms()
        if error.error_code in _METADATA_ERRORS:
            self._metadata.refresh_now()  # or, within retry.backoff.ms of the last, at the next pass
        for batch in batches:
            expired = now - batch.created_ms >= self._delivery_timeout_ms
            retriable = error.retriable if self._idempotence is None else self._idempotence.may_retry(batch, error)
            if retriable and batch.attempts <= self._retries and not expired:
                batch.retry_after_ms = now + self._retry_backoff_ms
                self._requeue([batch])
                continue
            self._fail(batch, error)

    def _fail(self, batch: ProducerBatch, error: KafkaError) -> None:
        if self._idempotence is not None:
            self._idempotence.on_failed_for_good(batch)
        batch.resolve(error=error)
        self._finish(batch)

    def _finish(self, batch: ProducerBatch) -> None:
        with self._lock:
            self._unfinished -= 1
            self._queued_bytes -= batch.estimated_bytes
            assert self._queued_bytes >= 0
            self._condition.notify_all()

def _now_ms() -> float:
    return time.monotonic() * 1000
