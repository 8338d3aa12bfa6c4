"""Record batches in Kafka's v2 format: build them (producer, group coordinator), read them (consumer).

Batches are built with aiokafka's implementation of the v2 format, in C (its pure-Python twin
where the extension is missing): a producer encodes every record it sends, and kafka-python's
pure-Python builder spent most of a producer's time there. Records are read with kafka-python's
reader. A fetch response holds
whole batches and may start before the fetch offset (a fetch inside a batch returns that batch);
``read_records`` drops the records before it, as Kafka's consumer does.
"""
from __future__ import annotations

import struct
import time
from dataclasses import dataclass

from crc32c import crc32c
from aiokafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords

from actors.core.log.record_batch import as_byte_view, read_header

NO_COMPRESSION = 0


@dataclass(frozen=True, slots=True)
class ConsumerRecord:
    topic: str
    partition: int
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple = ()
    leader_epoch: int = -1


@dataclass(frozen=True, slots=True)
class RecordMetadata:
    topic: str
    partition: int
    offset: int
    timestamp: int = -1


class BatchBuilder:
    """One open batch: records are appended until ``batch.size`` would be exceeded."""

    __slots__ = ("_builder", "record_count")

    def __init__(self, batch_size: int) -> None:
        self._builder = DefaultRecordBatchBuilder(
            magic=2, compression_type=NO_COMPRESSION, is_transactional=0, producer_id=-1,
            producer_epoch=-1, base_sequence=-1, batch_size=batch_size)
        self.record_count = 0

    def try_append(self, key: bytes | None, value: bytes | None, timestamp_ms: int | None,
                   headers: list | None) -> bool:
        """Append at the next relative offset; False when the batch is full (never for the first)."""
        timestamp = int(time.time() * 1000) if timestamp_ms is None else int(timestamp_ms)
        appended = self._builder.append(self.record_count, timestamp, key, value, list(headers) if headers else [])
        if appended is None:
            return False
        self.record_count += 1
        return True

    def size_in_bytes(self) -> int:
        return self._builder.size()

    def build(self) -> bytes:
        return bytes(self._builder.build())


# Kafka's v2 batch header: where a producer's identity sits, and where the CRC starts and lives.
_PRODUCER_STATE = struct.Struct(">qhi")  # producer_id, producer_epoch, base_sequence
_PRODUCER_STATE_POSITION = 43
_CRC_POSITION = 17
_CRC_START_POSITION = 21


def with_producer_state(batch: bytes, producer_id: int, producer_epoch: int, base_sequence: int) -> bytes:
    """One built v2 batch with an idempotent producer's id, epoch and first sequence in its
    header and its CRC made again (the CRC covers those fields), as Kafka's producer stamps a batch
    when it is first drained for sending."""
    buffer = bytearray(batch)
    _PRODUCER_STATE.pack_into(buffer, _PRODUCER_STATE_POSITION, producer_id, producer_epoch, base_sequence)
    struct.pack_into(">I", buffer, _CRC_POSITION, crc32c(bytes(memoryview(buffer)[_CRC_START_POSITION:])))
    return bytes(buffer)


def estimate_record_size(key: bytes | None, value: bytes | None, headers: list | None) -> int:
    return DefaultRecordBatchBuilder.estimate_size_in_bytes(key, value, list(headers or []))


def read_records(topic: str, partition: int, buffer, from_offset: int) -> list[ConsumerRecord]:
    """Records at or after ``from_offset`` in a buffer of whole v2 batches (bytes or uint8 array)."""
    records: list[ConsumerRecord] = []
    if buffer is None or len(buffer) == 0:
        return records
    batches = _batches(buffer)
    while batches.has_next():
        batch = batches.next_batch()
        if batch.base_offset + batch.last_offset_delta < from_offset:
            continue
        leader_epoch = batch.leader_epoch
        for record in batch:
            if record.offset < from_offset:
                continue
            records.append(ConsumerRecord(topic, partition, record.offset, record.timestamp,
                                          record.key, record.value, tuple(record.headers), leader_epoch))
    return records


def next_offset_after(buffer, from_offset: int) -> int:
    """The offset after the last batch in ``buffer`` (positions advance past whole batches).

    Reads only the 61-byte batch headers, so skipping over a fetch costs nothing per record.
    """
    view = as_byte_view(buffer)
    position, next_offset = 0, from_offset
    while position < len(view):
        header = read_header(view, position)
        next_offset = max(next_offset, header.next_offset)
        position = header.end_position
    return next_offset


def _batches(buffer) -> MemoryRecords:
    """kafka-python's batch iterator over bytes, or over a uint8 array Ray mapped from shared memory."""
    if not isinstance(buffer, (bytes, bytearray)):
        buffer = memoryview(buffer).cast("B")
    return MemoryRecords(buffer)


class KafkaRecordCodec:
    """The record codec a group coordinator's ``BrokerLink`` builds and reads its batches with."""

    @staticmethod
    def encode(records, timestamp_ms: int) -> bytes:
        builder = BatchBuilder(batch_size=1 << 30)
        for key, value in records:
            builder.try_append(key, value, timestamp_ms, None)
        return builder.build()

    @staticmethod
    def decode(buffer, from_offset: int) -> list[tuple[bytes | None, bytes | None]]:
        return [(r.key, r.value) for r in read_records("", -1, buffer, from_offset)]
