"""What a fetch brought for one partition, until the consumer hands it out: as records, as whole
v2 record batches, or as Arrow columns.

Theory of operation. A fetch answer holds whole v2 batches of one partition, and it may start
before the fetch offset (a fetch inside a batch returns that batch) and hold control batches
(transaction markers). The consumer keeps each answer as a ``FetchedPartition`` and hands it out
from ``position``, the offset of the first record not handed out yet, which starts at the fetch
offset and only grows:

- ``take_records`` (``Consumer.poll``) decodes the batches once, with aiokafka's C reader, and
  hands out ``ConsumerRecord`` tuples;
- ``take_batches`` (``Consumer.poll_batches``, ``Consumer.poll_arrow``) hands out the data batches
  as they are stored: slices of the fetched buffer, without a copy. A control batch is not handed
  out, and a batch that starts before ``position`` is built again from its records at or after
  ``position`` (the rare case: after a seek into a batch, or after ``poll`` handed out part of it),
  so that nothing is handed out twice.

``FetchBuffer`` holds the answers in the order they came, at most one per partition, and hands
out from the front within a limit (records or bytes); an answer sure to be handed out whole is
taken off the buffer first, so that the consumer can send that partition's next fetch before
the work of decoding begins. ``orchestration.clients.arrow_records`` turns handed-out batches into
Arrow columns. Nothing here reads the buffers' bytes beyond what is handed out; the consumer owns
fetch positions and commits.
"""
from __future__ import annotations

import collections
from typing import Callable, NamedTuple

from actors.core.log.record_batch import CONTROL_FLAG, HEADER_SIZE_BYTES, as_byte_view, read_header
from actors.codecs.record_batches import NO_COMPRESSION, ConsumerRecord, read_records, rebuild_batch


class FetchedBatch(NamedTuple):
    """One v2 record batch as ``Consumer.poll_batches`` hands it out.

    ``data`` is the whole batch in Kafka's v2 format (header and records, CRC valid), a read-only
    memoryview of the fetched buffer; it holds exactly the records ``base_offset`` ..
    ``last_offset`` that this consumer had not handed out. ``leader_epoch`` is the batch's
    partition leader epoch (what a commit of the next offset carries). ``data`` keeps the whole
    fetch answer it came from in memory while it lives: copy it (``bytes(batch.data)``) to keep a
    batch for long."""

    topic: str
    partition: int
    base_offset: int
    last_offset: int
    record_count: int
    leader_epoch: int
    data: memoryview

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1


class FetchedPartition:
    """One partition's fetch answer, held until all of it is handed out (``exhausted``).

    ``position`` is the offset of the first record not handed out yet; it never goes back.
    ``next_fetch_offset`` is where the consumer's next fetch of this partition starts (past the
    last whole batch, control batches included); ``position`` reaches it when all is handed out.
    """

    __slots__ = ("topic", "partition", "position", "next_fetch_offset", "record_count_max", "size_in_bytes",
                 "last_leader_epoch", "_view", "_records", "_record_index", "_batch_position")

    def __init__(self, topic: str, partition: int, buffer, fetch_offset: int, next_fetch_offset: int,
                 record_count_max: int) -> None:
        assert next_fetch_offset > fetch_offset, (fetch_offset, next_fetch_offset)
        self.topic, self.partition = topic, partition
        self.position = fetch_offset
        self.next_fetch_offset = next_fetch_offset
        self.record_count_max = record_count_max  # from the batch headers: an upper bound
        self.last_leader_epoch: int | None = None  # of the last record or batch handed out
        self._view = as_byte_view(buffer).toreadonly()
        self.size_in_bytes = len(self._view)
        self._records: list[ConsumerRecord] | None = None  # decoded by the first take_records
        self._record_index = 0
        self._batch_position = 0  # byte position of the first batch take_batches still reads

    @property
    def topic_partition(self) -> tuple[str, int]:
        return self.topic, self.partition

    @property
    def exhausted(self) -> bool:
        return self.position >= self.next_fetch_offset

    def take_records(self, limit: int) -> list[ConsumerRecord]:
        """Up to ``limit`` records from ``position`` on, decoded (all at once, the first time)."""
        if self._records is None:
            self._records = read_records(self.topic, self.partition, self._view[self._batch_position:],
                                         self.position)
            self._record_index = 0
        start = self._record_index
        taken = self._records[start:start + limit]
        self._record_index = start + len(taken)
        if self._record_index >= len(self._records):
            self._finish()
        elif taken:
            self.position = taken[-1].offset + 1
        if taken:
            self.last_leader_epoch = taken[-1].leader_epoch
        return taken

    def take_batches(self, max_bytes: int) -> list[FetchedBatch]:
        """Data batches from ``position`` on, as stored, while their sizes add up to at most
        ``max_bytes`` (always at least one, so that a batch larger than ``max_bytes`` still goes)."""
        view, taken, taken_bytes = self._view, [], 0
        position, size = self._batch_position, len(self._view)
        while size - position >= HEADER_SIZE_BYTES:
            header = read_header(view, position)
            end = header.end_position
            if end > size:
                break  # a batch torn off at the end of a size-limited fetch: fetched again next time
            if header.last_offset < self.position or header.attributes & CONTROL_FLAG:
                position = end
                continue
            if taken and taken_bytes + header.size_in_bytes > max_bytes:
                break
            batch = (view[position:end] if header.base_offset >= self.position
                     else trim_batch(view[position:end], self.position))
            position = end
            if batch is None:
                continue  # compaction left no record at or after the position
            taken.append(batch_of(self.topic, self.partition, batch))
            taken_bytes += header.size_in_bytes
            self.position = header.next_offset
        self._batch_position = position
        self._records = None  # a later take_records decodes from the new position
        if size - position < HEADER_SIZE_BYTES or read_header(view, position).end_position > size:
            self._finish()
        if taken:
            self.last_leader_epoch = taken[-1].leader_epoch
        return taken

    def _finish(self) -> None:
        self.position = self.next_fetch_offset
        self._records, self._batch_position = [], len(self._view)


def batch_of(topic: str, partition: int, data: memoryview) -> FetchedBatch:
    header = read_header(data, 0)
    return FetchedBatch(topic, partition, header.base_offset, header.last_offset, header.records_count,
                        header.partition_leader_epoch, data)


def trim_batch(batch: memoryview, from_offset: int) -> memoryview | None:
    """A v2 batch with only the records of ``batch`` at or after ``from_offset``, built again
    (``actors.codecs.record_batches.rebuild_batch``: producer fields, leader epoch and timestamps kept),
    uncompressed. None when no record is left."""
    rebuilt = rebuild_batch(batch, NO_COMPRESSION, from_offset)
    return None if rebuilt is None else memoryview(rebuilt)


class FetchBuffer:
    """The consumer's fetch answers not all handed out yet: in the order they came, at most one
    per partition (the consumer does not fetch a partition that has one)."""

    def __init__(self) -> None:
        self._answers: collections.deque[FetchedPartition] = collections.deque()

    def __len__(self) -> int:
        return len(self._answers)

    def append(self, answer: FetchedPartition) -> None:
        self._answers.append(answer)

    def topic_partitions(self) -> set[tuple[str, int]]:
        return {answer.topic_partition for answer in self._answers}

    def positions(self) -> dict[tuple[str, int], int]:
        """Per partition with an answer here, the offset of the first record not handed out."""
        return {answer.topic_partition: answer.position for answer in self._answers}

    def drop(self, predicate: Callable[[tuple[str, int]], bool]) -> None:
        self._answers = collections.deque(a for a in self._answers if not predicate(a.topic_partition))

    def clear(self) -> None:
        self._answers.clear()

    def take_records(self, limit: int, before_decoding: Callable[[], None]) -> list[ConsumerRecord]:
        """Up to ``limit`` records, from the front; ``before_decoding`` is called once the answers
        sure to be handed out whole are off the buffer (their partitions can be fetched again)."""
        records: list[ConsumerRecord] = []
        for answer in self._pop_whole(lambda a: a.record_count_max, limit, before_decoding):
            records += answer.take_records(limit)
        while self._answers and len(records) < limit:
            records += self._answers[0].take_records(limit - len(records))
            if not self._answers[0].exhausted:
                break
            self._answers.popleft()
        return records

    def take_batches(self, max_bytes: int, before_slicing: Callable[[], None]) -> list[FetchedBatch]:
        """Data batches from the front while their sizes add up to at most ``max_bytes`` (at least
        one); ``before_slicing`` as ``take_records``' ``before_decoding``."""
        taken: list[FetchedBatch] = []
        for answer in self._pop_whole(lambda a: a.size_in_bytes, max_bytes, before_slicing):
            taken += answer.take_batches(max_bytes)
            assert answer.exhausted, answer.topic_partition
        spent = sum(len(batch.data) for batch in taken)
        while self._answers and (spent < max_bytes or not taken):
            batches = self._answers[0].take_batches(max(max_bytes - spent, 0))
            taken += batches
            spent += sum(len(batch.data) for batch in batches)
            if not self._answers[0].exhausted:
                break
            self._answers.popleft()
        return taken

    def _pop_whole(self, cost: Callable[[FetchedPartition], int], budget: int,
                   then: Callable[[], None]) -> list[FetchedPartition]:
        """Take off the buffer the leading answers whose ``cost`` (an upper bound of what they hand
        out) adds up to at most ``budget``, then call ``then`` if there were any."""
        whole, spent = [], 0
        while self._answers and spent + cost(self._answers[0]) <= budget:
            spent += cost(self._answers[0])
            whole.append(self._answers.popleft())
        if whole:
            then()
        return whole
