"""The producer: batches records per partition and sends them to partition leaders.

It mirrors Kafka's producer: ``send`` appends to a per-partition batch (``batch.size``) and returns
a future; a sender thread ships batches that are full, older than ``linger.ms``, or being flushed,
grouping one batch per partition into one Produce request per leader, with at most
``max.in.flight.requests.per.connection`` requests outstanding per broker. Retriable errors
(leadership moved, the broker unreachable or restarting) are retried after ``retry.backoff.ms``
until ``delivery.timeout.ms``; as in Kafka without idempotence, a retry of a request whose first
attempt did land can write a record twice. The future resolves to ``RecordMetadata`` (topic,
partition, offset) or raises ``KafkaError``.
"""
from __future__ import annotations

import collections
import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass, field

import ray
from ray.exceptions import ActorDiedError

from actors.core.errors import ErrorCode
from actors.core.messages.produce import PartitionProduceData, ProduceRequest, TopicProduceData
from orchestration.client import BrokerDirectory, as_kafka_error
from orchestration.errors import KafkaError
from orchestration.partitioner import StickyPartitioner
from orchestration.records import BatchBuilder, RecordMetadata, estimate_record_size

PRODUCER_DEFAULTS = {
    "acks": "1",
    "batch.size": "16384",
    "linger.ms": "0",
    "max.request.size": "1048576",
    "retries": "2147483647",
    "retry.backoff.ms": "100",
    "delivery.timeout.ms": "120000",
    "request.timeout.ms": "30000",
    "max.in.flight.requests.per.connection": "5",
    "buffer.memory": "33554432",
    "max.block.ms": "60000",
}

_METADATA_ERRORS = {ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                    ErrorCode.LEADER_NOT_AVAILABLE, ErrorCode.FENCED_LEADER_EPOCH,
                    ErrorCode.UNKNOWN_LEADER_EPOCH, ErrorCode.NETWORK_EXCEPTION}


def parse_acks(value: str) -> int:
    """'all' is -1; other values are sent as given, so the broker judges them (INVALID_REQUIRED_ACKS)."""
    text = str(value).strip().lower()
    if text == "all":
        return -1
    try:
        return int(text)
    except ValueError:
        raise KafkaError(ErrorCode.INVALID_CONFIG, f"acks={value!r}") from None


@dataclass(slots=True)
class _ProducerBatch:
    topic: str
    partition: int
    builder: BatchBuilder
    created_ms: float
    futures: list = field(default_factory=list)
    payload: bytes | None = None  # built once, resent as is on retry
    attempts: int = 0
    retry_after_ms: float = 0.0
    estimated_bytes: int = 0  # what this batch holds of buffer.memory

    def size_in_bytes(self) -> int:
        return len(self.payload) if self.payload is not None else self.builder.size_in_bytes()


class Producer:
    def __init__(self, directory: BrokerDirectory, config: dict | None = None) -> None:
        settings = {**PRODUCER_DEFAULTS, **{k: str(v) for k, v in (config or {}).items()}}
        self.config = settings
        self.acks = parse_acks(settings["acks"])
        self._batch_size = int(settings["batch.size"])
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
        self._partitioner = StickyPartitioner()
        self._condition = threading.Condition()
        self._queues: dict[tuple[str, int], collections.deque[_ProducerBatch]] = {}
        self._queued_bytes = 0
        self._in_flight: dict = {}  # ObjectRef -> (broker id, [batches])
        self._unfinished = 0  # batches queued or in flight
        self._flushing = 0
        self._closed = False
        self._sender = threading.Thread(target=self._run, name="raykafka-producer-sender", daemon=True)
        self._sender.start()

    # ----------------------------------------------------------------------------- user API
    def send(self, topic: str, value: bytes | None = None, key: bytes | None = None,
             partition: int | None = None, timestamp_ms: int | None = None, headers=None) -> Future:
        future: Future = Future()
        try:
            self._append(topic, value, key, partition, timestamp_ms, headers, future)
        except KafkaError as exc:
            future.set_exception(exc)
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
    def _append(self, topic, value, key, partition, timestamp_ms, headers, future) -> None:
        if self._closed:
            raise KafkaError(ErrorCode.UNKNOWN_SERVER_ERROR, "producer is closed")
        for name, data in (("key", key), ("value", value)):
            if data is not None and not isinstance(data, (bytes, bytearray, memoryview)):
                raise TypeError(f"{name} must be bytes or None, not {type(data).__name__}")
        num_partitions = self._partition_count(topic)
        if partition is None:
            partition = self._partitioner.partition(topic, key, num_partitions)
        elif not isinstance(partition, int) or not 0 <= partition < num_partitions:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                             f"partition {partition!r} of {topic!r} (it has {num_partitions})")
        size = estimate_record_size(key, value, headers)
        if size > self._max_request_size:
            raise KafkaError(ErrorCode.MESSAGE_TOO_LARGE,
                             f"a {size}-byte record exceeds max.request.size={self._max_request_size}")
        with self._condition:
            while self._queued_bytes + size > self._buffer_memory and self._queued_bytes:
                self._condition.wait(0.1)  # buffer.memory bounds what waits to be sent
            queue = self._queues.setdefault((topic, partition), collections.deque())
            batch = queue[-1] if queue and queue[-1].payload is None else None
            if batch is None or not batch.builder.try_append(key, value, timestamp_ms, headers):
                if batch is not None and key is None:
                    self._partitioner.on_new_batch(topic, partition, num_partitions)
                batch = _ProducerBatch(topic, partition, BatchBuilder(self._batch_size), _now_ms())
                appended = batch.builder.try_append(key, value, timestamp_ms, headers)
                assert appended, "the first record always fits an empty batch"
                queue.append(batch)
                self._unfinished += 1
            batch.futures.append(future)
            batch.estimated_bytes += size
            self._queued_bytes += size
            if len(queue) > 1 or batch.builder.size_in_bytes() >= self._batch_size or self._linger_ms <= 0:
                self._condition.notify_all()

    def _partition_count(self, topic: str) -> int:
        """Wait up to ``max.block.ms`` for the topic to appear in metadata, as Kafka's send does."""
        deadline = time.monotonic() + self._max_block_ms / 1000
        while True:
            try:
                return len(self._directory.partitions_for(topic))
            except KafkaError as exc:
                if exc.error_code != ErrorCode.UNKNOWN_TOPIC_OR_PARTITION or time.monotonic() >= deadline:
                    raise
            time.sleep(min(self._retry_backoff_ms / 1000, max(0.0, deadline - time.monotonic())))
            self._directory.refresh_metadata()

    # --------------------------------------------------------------------------------- sender
    def _run(self) -> None:
        while True:
            with self._condition:
                if self._closed and not self._unfinished:
                    return
                ready, wait_ms = self._drain_ready()
                if not ready and not self._in_flight:
                    self._condition.wait(min(wait_ms, 100) / 1000)
                    continue
            self._send(ready)
            self._collect(timeout_s=0 if ready else min(wait_ms, 5) / 1000)

    def _drain_ready(self) -> tuple[list, float]:
        """Per partition, the ready batches to send now, and how long until the next is due.

        A partition whose head batch is ready sends it together with the batches queued behind it
        (up to ``max.request.size``): they travel as one records field, which the leader appends
        with consecutive offsets, so a busy partition costs one Ray call per request, not per batch.
        """
        now = _now_ms()
        hurry = self._flushing > 0 or self._closed
        per_broker_in_flight = collections.Counter(broker for broker, _ in self._in_flight.values())
        ready, wait_ms = [], 100.0
        for key, queue in self._queues.items():
            if not queue:
                continue
            batch = queue[0]
            if batch.retry_after_ms > now:
                wait_ms = min(wait_ms, batch.retry_after_ms - now)
                continue
            due = batch.created_ms + self._linger_ms
            full = len(queue) > 1 or batch.builder.size_in_bytes() >= self._batch_size
            if not (hurry or full or batch.payload is not None or due <= now):
                wait_ms = min(wait_ms, due - now)
                continue
            leader = self._leader_or_none(*key)
            if leader is None or per_broker_in_flight[leader] >= self._max_in_flight:
                wait_ms = min(wait_ms, self._retry_backoff_ms)
                continue
            group, size = [], 0
            while queue and queue[0].retry_after_ms <= now:
                head = queue[0]
                is_open = head.payload is None and head is queue[-1]
                if group and (size + head.size_in_bytes() > self._max_request_size
                              or (is_open and not hurry and head.created_ms + self._linger_ms > now)):
                    break
                queue.popleft()
                if head.payload is None:
                    head.payload = head.builder.build()
                group.append(head)
                size += len(head.payload)
            ready.append((leader, group))
            per_broker_in_flight[leader] += 1
        return ready, max(wait_ms, 0.0)

    def _leader_or_none(self, topic: str, partition: int) -> int | None:
        try:
            leader, _ = self._directory.leader_for(topic, partition)
        except KafkaError:
            return None
        return leader if leader >= 0 else None

    def _send(self, ready: list) -> None:
        by_broker: dict[int, list[list[_ProducerBatch]]] = collections.defaultdict(list)
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

    def _send_request(self, broker_id: int, groups: list[list[_ProducerBatch]]) -> None:
        topics: dict[str, list[PartitionProduceData]] = collections.defaultdict(list)
        for group in groups:
            for batch in group:
                batch.attempts += 1
            records = group[0].payload if len(group) == 1 else b"".join(batch.payload for batch in group)
            topics[group[0].topic].append(PartitionProduceData(index=group[0].partition, records=records))
        request = ProduceRequest(acks=self.acks, timeout_ms=self._request_timeout_ms, topic_data=tuple(
            TopicProduceData(name=name, partition_data=tuple(parts)) for name, parts in topics.items()))
        try:
            ref = self._directory.broker(broker_id).handle_produce.remote(request)
        except KafkaError as exc:
            for group in groups:
                self._fail_or_retry(group, exc)
            return
        with self._condition:
            self._in_flight[ref] = (broker_id, groups)

    def _collect(self, timeout_s: float) -> None:
        if not self._in_flight:
            return
        refs = list(self._in_flight)
        done, _ = ray.wait(refs, num_returns=len(refs), timeout=timeout_s)
        if not done:
            done, _ = ray.wait(refs, num_returns=1, timeout=0.005)
        for ref in done:
            with self._condition:
                broker_id, groups = self._in_flight.pop(ref)
            try:
                response = ray.get(ref)
            except Exception as exc:  # a dead or restarting broker: the outcome is unknown
                if isinstance(exc, ActorDiedError):
                    self._directory.forget(broker_id)
                for group in groups:
                    self._fail_or_retry(group, as_kafka_error(exc))
                continue
            self._complete(groups, response)

    def _complete(self, groups: list[list[_ProducerBatch]], response) -> None:
        results = {(topic.name, part.index): part for topic in response.responses
                   for part in topic.partition_responses}
        for group in groups:
            result = results.get((group[0].topic, group[0].partition))
            if result is None:
                self._fail_or_retry(group, KafkaError(ErrorCode.UNKNOWN_SERVER_ERROR, "no answer for partition"))
            elif result.error_code != ErrorCode.NONE:
                self._fail_or_retry(group, KafkaError(result.error_code, result.error_message or ""))
            else:
                offset = result.base_offset
                for batch in group:
                    for future in batch.futures:
                        future.set_result(RecordMetadata(batch.topic, batch.partition, offset))
                        offset = offset + 1 if offset >= 0 else -1  # acks=0 answers -1, as Kafka does
                    self._finish(batch)

    def _fail_or_retry(self, batches: list[_ProducerBatch], error: KafkaError) -> None:
        now = _now_ms()
        if error.error_code in _METADATA_ERRORS:
            try:
                self._directory.refresh_metadata()
            except KafkaError:
                pass  # every broker unreachable for now: the retry will ask again
        # Requeue from the back of the group so the batches keep their order at the queue's front.
        for batch in reversed(batches):
            expired = now - batch.created_ms >= self._delivery_timeout_ms
            if error.retriable and batch.attempts <= self._retries and not expired:
                batch.retry_after_ms = now + self._retry_backoff_ms
                with self._condition:
                    self._queues[(batch.topic, batch.partition)].appendleft(batch)
                    self._condition.notify_all()
                continue
            for future in batch.futures:
                future.set_exception(error)
            self._finish(batch)

    def _finish(self, batch: _ProducerBatch) -> None:
        with self._condition:
            self._unfinished -= 1
            self._queued_bytes -= batch.estimated_bytes
            assert self._queued_bytes >= 0
            self._condition.notify_all()


def _now_ms() -> float:
    return time.monotonic() * 1000
