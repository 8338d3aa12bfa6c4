"""A producer batch and the request that carries it: Kafka's ``ProducerBatch``, client side.

A ``ProducerBatch`` holds the records ``send`` queued for one partition, built once into a v2
record batch and resent as is on retry, and one future for the whole batch (Kafka's
``ProduceRequestResult``) that resolves to the batch's base offset or fails with its error. Each
``send`` gets a ``FutureRecordMetadata`` over it: the batch's future and the record's place in the
batch, as Kafka's producer answers a send, so a send costs no future (lock, condition) of its own.
A batch remembers whether any
attempt may have appended it (``maybe_written``), which is what makes its final failure
indeterminate (``info``) rather than definite (``fail``) in a run's history; ``OUTCOME_UNKNOWN_ERRORS``
are the answers that leave that open; ``record_send_outcome`` writes a send's outcome to the history
by those rules. An ``InFlightRequest`` is one Produce request to one broker, awaiting its answer.

A batch the leader refuses as larger than the topic's ``max.message.bytes`` is split
(``ProducerBatch.split``, Kafka's ``ProducerBatch.split``) into smaller batches of the same records,
which take its place in the partition's queue; its sends' futures then follow their records into
the pieces (``pieces``), so each still completes once, with the offset its record was written at.
"""
from __future__ import annotations

import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from loguru import logger

from actors.core.errors import ErrorCode
from actors.codecs.record_batches import with_producer_state
from actors.codecs.record_batches import BatchBuilder, RecordMetadata, read_records

# An attempt answered with one of these may have appended its records: the leader appended and
# then could not replicate in time (REQUEST_TIMED_OUT, NOT_ENOUGH_REPLICAS_AFTER_APPEND, both from
# the produce purgatory), the call's fate is unknown (NETWORK_EXCEPTION), or the broker failed
# somewhere inside the request (UNKNOWN_SERVER_ERROR, KAFKA_STORAGE_ERROR: a write may be partly
# on disk). Every other error is answered before the append, so it proves that attempt wrote
# nothing (NOT_LEADER_OR_FOLLOWER too, unless it carries a base offset: see ``Producer._complete``).
OUTCOME_UNKNOWN_ERRORS = frozenset({
    ErrorCode.REQUEST_TIMED_OUT, ErrorCode.NETWORK_EXCEPTION, ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
    ErrorCode.UNKNOWN_SERVER_ERROR, ErrorCode.KAFKA_STORAGE_ERROR,
})

# Records at least this large travel to the broker as a uint8 array: Ray writes it to shared memory
# once and the broker maps it without a copy, where a bytes object is copied into the pickled
# request and out of it again (the broker's fetch answers use the same threshold).
ZERO_COPY_THRESHOLD_BYTES = 100 * 1024


# What Kafka's producer adds to a record's key and value at most (DefaultRecord.MAX_RECORD_OVERHEAD:
# its length, attributes, timestamp and offset deltas and the key and value lengths as varints),
# and to a batch (DefaultRecordBatch.RECORD_BATCH_OVERHEAD, the v2 header).
MAX_RECORD_OVERHEAD_BYTES = 21
RECORD_BATCH_OVERHEAD_BYTES = 61


def record_size_upper_bound(key, value, headers) -> int:
    """A record's size in a batch of its own, at most (Kafka's ``estimateSizeInBytesUpperBound``,
    which the producer checks against max.request.size): a few additions, where an exact
    estimate would cost a varint computation per field on every send."""
    size = RECORD_BATCH_OVERHEAD_BYTES + MAX_RECORD_OVERHEAD_BYTES
    if key is not None:
        size += len(key)
    if value is not None:
        size += len(value)
    if headers:
        for header_key, header_value in headers:  # each: two varint lengths (5 bytes at most) and data
            size += 10 + len(header_key.encode() if isinstance(header_key, str) else header_key) + len(
                header_value or b"")
        size += 5  # the header count
    return size


@dataclass(slots=True)
class ProducerBatch:
    topic: str
    partition: int
    builder: BatchBuilder
    created_ms: float
    # Resolves to the base offset the leader gave the batch (-1 for acks=0), or fails with its error;
    # ``resolve`` sets it, after ``done``, ``base_offset`` and ``error``, which the sends' futures
    # read without the Future's lock once ``done`` is set.
    result: Future = field(default_factory=Future)
    done: bool = False
    base_offset: int = -1
    error: BaseException | None = None
    # The sends' done callbacks, run once by ``resolve``; None once it has. ``lock`` guards the
    # hand-over between ``FutureRecordMetadata.add_done_callback`` and ``resolve``.
    callbacks: list | None = field(default_factory=list)
    lock: Any = field(default_factory=threading.Lock)
    payload: bytes | bytearray | None = None  # built once (``seal``), resent as is on retry
    attempts: int = 0
    retry_after_ms: float = 0.0
    estimated_bytes: int = 0  # what this batch holds of buffer.memory
    # Set once any attempt may have appended this batch, and never cleared: a later attempt's
    # refusal (NOT_LEADER_OR_FOLLOWER, say) says nothing about the earlier one.
    maybe_written: bool = False
    # An idempotent producer's stamp (``Idempotence.stamp``): None until first drained.
    producer_id: int = -1
    producer_epoch: int = -1
    base_sequence: int | None = None
    # The producer's creation count: a partition's queue stays in this order, retries included.
    # The pieces of a split batch share its place: orders in [order, order + order_span).
    order: float = 0
    order_span: float = 1.0
    # Once split: (index of its first record here, piece) per piece, in record order. A split
    # batch is never resolved; its sends' futures read their pieces instead.
    pieces: list | None = None
    # Refused as too large in a request that held more of its partition's batches: which of them
    # was too large is unknown, so each goes alone next and is judged on its own.
    alone: bool = False

    def size_in_bytes(self) -> int:
        return len(self.payload) if self.payload is not None else self.builder.size_in_bytes()

    def seal(self) -> None:
        """Build the batch once it has left its queue (outside the producer's lock, so sends are
        not held up by a megabyte's CRC), with the idempotent producer's stamp if it has one."""
        if self.payload is None:
            payload = self.builder.build_buffer()
            if self.base_sequence is not None:
                payload = with_producer_state(payload, self.producer_id, self.producer_epoch, self.base_sequence)
            self.payload = payload

    def split(self) -> list["ProducerBatch"]:
        """Kafka's ``ProducerBatch.split`` for a batch of more than one record the leader refused as
        too large: its records, in order, in new batches of at most half its size each (Kafka
        splits to ``batch.size``, which here would often leave the batch as it was, since
        ``batch.size`` is larger than Kafka's), so a piece still too large is split again when it
        is refused in turn, until each fits or holds one record. The pieces keep the batch's
        creation time (``delivery.timeout.ms`` still counts from it) and its place in the queue;
        the caller stamps and seals them. The batch's sends follow their records into the pieces:
        their callbacks move there, and a thread waiting on the batch wakes to wait on its piece."""
        assert self.payload is not None and self.builder.record_count > 1, "a sent batch of several records"
        size_limit_bytes = max(1, len(self.payload) // 2)
        records = read_records(self.topic, self.partition, self.payload, 0)
        groups: list[list] = []
        builder = None
        for record in records:
            headers = list(record.headers)
            if builder is None or not builder.try_append(record.key, record.value, record.timestamp, headers):
                builder = BatchBuilder(size_limit_bytes, self.builder.compression_type)
                builder.try_append(record.key, record.value, record.timestamp, headers)
                groups.append([builder, 0])
            groups[-1][1] += record_size_upper_bound(record.key, record.value, headers)
        count = len(groups)
        pieces, first, left_bytes = [], 0, self.estimated_bytes
        for index, (builder, estimated_bytes) in enumerate(groups):
            estimated_bytes = left_bytes if index == count - 1 else min(estimated_bytes, left_bytes)
            left_bytes -= estimated_bytes
            pieces.append((first, ProducerBatch(
                self.topic, self.partition, builder, self.created_ms, estimated_bytes=estimated_bytes,
                maybe_written=self.maybe_written, order=self.order + index * self.order_span / count,
                order_span=self.order_span / count)))
            first += builder.record_count
        with self.lock:
            self.pieces = pieces
            callbacks, self.callbacks = self.callbacks, None
        for fn, future in callbacks:  # each to the piece that now holds its record
            piece, _ = future.locate()
            with piece.lock:
                piece.callbacks.append((fn, future))
        self.result.set_result(None)  # wakes the threads waiting on this batch: they look again
        return [piece for _, piece in pieces]

    def resolve(self, base_offset: int = -1, error: BaseException | None = None) -> None:
        """The batch's outcome, once: its future, then every send's callback (a callback that
        raises is logged, as ``concurrent.futures`` does, and the others still run)."""
        assert not self.done, "a batch is resolved once"
        self.base_offset, self.error = base_offset, error
        with self.lock:
            self.done = True
            callbacks, self.callbacks = self.callbacks, None
        if error is None:
            self.result.set_result(base_offset)
        else:
            self.result.set_exception(error)
        for fn, future in callbacks:
            try:
                fn(future)
            except Exception:
                logger.exception("a send's done callback raised")


class FutureRecordMetadata:
    """What ``send`` returns: a future of one record's ``RecordMetadata`` (Kafka's class of that
    name). It reads the outcome of the record's batch: the record's offset is the batch's base
    offset plus its place in the batch (-1 throughout for acks=0, as Kafka answers). It offers
    ``concurrent.futures.Future``'s reading methods; a send cannot be taken back, so ``cancel``
    always answers False. ``batch`` is None for a send refused before it was queued; once the
    record's batch was split, ``batch`` is the piece that holds the record (``locate``)."""

    __slots__ = ("_batch", "_result", "_relative_offset")

    def __init__(self, batch: ProducerBatch | None, relative_offset: int, result: Future | None = None) -> None:
        self._batch = batch
        self._result = result
        self._relative_offset = relative_offset

    @classmethod
    def failed(cls, error: BaseException) -> "FutureRecordMetadata":
        result: Future = Future()
        result.set_exception(error)
        return cls(None, 0, result)

    def locate(self) -> tuple[ProducerBatch | None, int]:
        """The batch that holds the record now and the record's place in it: the batch it was
        appended to, or, once that was split, the piece its record went to (again, if split again)."""
        batch, relative_offset = self._batch, self._relative_offset
        while batch is not None and batch.pieces is not None:
            for first, piece in reversed(batch.pieces):
                if relative_offset >= first:
                    batch, relative_offset = piece, relative_offset - first
                    break
        return batch, relative_offset

    @property
    def batch(self) -> ProducerBatch | None:
        return self.locate()[0]

    def _wait(self, timeout: float | None) -> tuple[ProducerBatch, int]:
        """The record's batch once it is resolved (a split sends the wait on to the piece)."""
        deadline = None  # read only for a wait: a send's completed future costs no clock read
        while True:
            batch, relative_offset = self.locate()
            if batch.done:  # read without the Future's lock
                return batch, relative_offset
            if timeout is not None and deadline is None:
                deadline = time.monotonic() + timeout
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            try:
                batch.result.result(remaining)
            except BaseException:
                if not batch.done:
                    raise  # the wait timed out (a batch's error is read from ``batch.error`` above)

    def result(self, timeout: float | None = None) -> RecordMetadata:
        if self._batch is None:
            return self._result.result(timeout)
        batch, relative_offset = self._wait(timeout)
        if batch.error is not None:
            raise batch.error
        base_offset = batch.base_offset
        return RecordMetadata(batch.topic, batch.partition, base_offset + relative_offset if base_offset >= 0 else -1)

    def exception(self, timeout: float | None = None) -> BaseException | None:
        if self._batch is None:
            return self._result.exception(timeout)
        return self._wait(timeout)[0].error

    def done(self) -> bool:
        batch = self.batch
        return batch.done if batch is not None else self._result.done()

    def running(self) -> bool:
        return not self.done()

    def cancelled(self) -> bool:
        return False

    def cancel(self) -> bool:
        return False

    def add_done_callback(self, fn) -> None:
        """``fn(self)`` once the record's outcome is known (at once, here, if it is; one that raises
        is logged, never raised to the caller, as ``concurrent.futures.Future`` does). The batch
        keeps the callbacks of all its sends: one list append per send, where a Future's would
        take its lock and a wrapper. A batch split meanwhile has handed its callbacks to its
        pieces: this one goes to the record's piece too."""
        while True:
            batch = self.batch
            if batch is None:
                break
            with batch.lock:
                if batch.callbacks is not None:
                    batch.callbacks.append((fn, self))
                    return
                if batch.pieces is None:
                    break  # resolved
        try:  # run at once, and, as concurrent.futures does, a callback that raises is logged
            fn(self)
        except Exception:
            logger.exception("a send's done callback raised")

    def __repr__(self) -> str:
        state = "pending" if not self.done() else "done"
        batch = self.batch
        return f"<FutureRecordMetadata {state} {batch.topic if batch else ''}>"


def splittable(group: list[ProducerBatch]) -> bool:
    """Whether MESSAGE_TOO_LARGE for ``group`` leaves something to try: it holds more than one
    batch, or a batch of more than one record. One batch of one record fails with it, as in Kafka."""
    return len(group) > 1 or group[0].builder.record_count > 1


def split_refused(group: list[ProducerBatch], idempotence) -> list[ProducerBatch]:
    """The batches to requeue after the leader refused ``group`` (one partition's batches in one
    request) as larger than the topic's ``max.message.bytes`` (Kafka's Sender, ``completeBatch``).

    The leader judges each batch but answers for the partition, so of several batches, which was
    too large is unknown: each goes back as it is, marked ``alone``, to be sent in a request of its
    own and judged on its own. A lone batch of several records is split (``ProducerBatch.split``)
    and its pieces take its place at the front of the queue, in order, as in Kafka's
    ``splitAndReenqueue``: no backoff and no retry counted, since the leader appended nothing.
    With idempotence (``idempotence`` not None) the pieces carry the batch's identity and its
    sequences, in order, as Kafka's ``split`` gives them, so the partition's later batches that
    were in flight, refused as out of sequence, follow them as they follow any retried batch.
    The caller counts the pieces as unfinished in place of the batch, which never finishes."""
    if len(group) > 1:
        for batch in group:
            batch.alone = True
        return group
    (batch,) = group
    pieces = batch.split()
    if idempotence is not None:
        idempotence.on_split(batch, pieces)
    for piece in pieces:
        piece.seal()  # closed to new sends' records: its sequences, if it has them, are fixed
    return pieces


def request_records(group: list[ProducerBatch]):
    """The records field for a partition's batches in one request: their payloads end to end."""
    records = group[0].payload if len(group) == 1 else b"".join(batch.payload for batch in group)
    return np.frombuffer(records, dtype=np.uint8) if len(records) >= ZERO_COPY_THRESHOLD_BYTES else records


@dataclass(slots=True)
class InFlightRequest:
    """One Produce request awaiting its answer; ``ref`` is kept to cancel an abandoned call."""
    broker_id: int
    groups: list  # [[ProducerBatch]]: per partition, the batches in the request, in order
    sent_ms: float
    ref: Any


# The history's error for a completed acks=0 send: the broker's answer is not an acknowledgement.
NO_ACKNOWLEDGEMENT = "NO_ACKNOWLEDGEMENT"


def record_send_outcome(history, process: str, acks: int, value_text: str, future) -> None:
    """How one send ended, for the history (a done callback, run by whoever resolved the
    future). A failure is ``fail`` only if no attempt may have appended the record: refused
    in ``send`` (``batch`` is None) or every attempt refused before the append."""
    error = future.exception()
    batch = future.batch
    if error is None:
        metadata = future.result()
        if acks == 0:
            history.info(process, value_text, NO_ACKNOWLEDGEMENT)
        else:
            history.ok(process, metadata.topic, metadata.partition, metadata.offset, value_text)
    elif batch is not None and batch.maybe_written:
        history.info(process, value_text, error)
    else:
        history.fail(process, value_text, error)


def history_text(value: bytes | bytearray | memoryview | None) -> str:
    """A record's value as the history writes it, here and in polls (UTF-8, else escaped)."""
    if isinstance(value, memoryview):
        value = bytes(value)
    return value.decode("utf-8", errors="backslashreplace") if isinstance(value, (bytes, bytearray)) else str(value)


__all__ = ["NO_ACKNOWLEDGEMENT", "OUTCOME_UNKNOWN_ERRORS", "ZERO_COPY_THRESHOLD_BYTES", "FutureRecordMetadata",
           "InFlightRequest", "ProducerBatch", "history_text", "record_send_outcome", "record_size_upper_bound",
           "request_records", "split_refused", "splittable"]
