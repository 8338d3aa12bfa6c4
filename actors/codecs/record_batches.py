"""Record batches in Kafka's v2 format: build them (producer, group coordinator), read them (consumer).

Batches are built and read with aiokafka's implementation of Kafka's v2 record-batch format, in C
(``aiokafka.record._crecords``; its pure-Python twin where the extension is missing): a producer
encodes every record it sends and a consumer decodes every record it reads, and kafka-python's
pure-Python builder and reader spent most of a client's time there. A fetch response holds whole
batches and may start before the fetch offset (a fetch inside a batch returns that batch);
``read_records`` drops the records before it, as Kafka's consumer does, and skips control batches
(transaction markers), which hold no application records. Every codec Kafka has (none, gzip,
snappy, lz4, zstd) is built and read: aiokafka's codecs do gzip with zlib and the others with
cramjam. ``rebuild_batch`` builds a batch again from its records (a leader recompressing for its
topic's ``compression.type``, a consumer handing out part of a batch).
"""
from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import NamedTuple

from aiokafka.record._crecords import DefaultRecordBatch as _CDefaultRecordBatch
from crc32c import crc32c
from aiokafka.record.default_records import DefaultRecordBatchBuilder

from actors.core.log.record_batch import (
    CONTROL_FLAG, HEADER_SIZE_BYTES, LOG_APPEND_TIME_FLAG, as_byte_view, read_header,
)

NO_COMPRESSION = 0


class ConsumerRecord(NamedTuple):
    """One record as ``poll`` returns it: immutable, and a tuple, as kafka-python's is, because a
    consumer makes one per record and a tuple is made about 5x faster than a frozen dataclass."""

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
    """One open batch: records are appended until ``batch.size`` would be exceeded (counted
    before compression, which ``build`` applies: ``compression_type`` is a codec id,
    ``actors.core.log.compression.producer_codec``). Where compressing does not make the records smaller,
    aiokafka's builder keeps them uncompressed, and the batch says so."""

    __slots__ = ("_builder", "record_count", "compression_type")

    def __init__(self, batch_size: int, compression_type: int = NO_COMPRESSION) -> None:
        self._builder = DefaultRecordBatchBuilder(
            magic=2, compression_type=compression_type, is_transactional=0, producer_id=-1,
            producer_epoch=-1, base_sequence=-1, batch_size=batch_size)
        self.record_count = 0
        self.compression_type = compression_type

    def try_append(self, key: bytes | None, value: bytes | None, timestamp_ms: int | None,
                   headers: list | None) -> bool:
        """Append at the next relative offset; False when the batch is full (never for the first)."""
        # Without a timestamp the builder reads the clock itself, in C: half a send's cost here.
        timestamp = None if timestamp_ms is None else int(timestamp_ms)
        appended = self._builder.append(self.record_count, timestamp, key, value, list(headers) if headers else [])
        if appended is None:
            return False
        self.record_count += 1
        return True

    def size_in_bytes(self) -> int:
        return self._builder.size()

    def build(self) -> bytes:
        return bytes(self._builder.build())

    def build_buffer(self) -> bytearray:
        """The batch as the builder made it, without ``build``'s copy into bytes (a millisecond
        per MiB): for a producer that hands it to one request and never changes it after."""
        return self._builder.build()


# Kafka's v2 batch header: where a producer's identity sits, and where the CRC starts and lives.
_PRODUCER_STATE = struct.Struct(">qhi")  # producer_id, producer_epoch, base_sequence
_PRODUCER_STATE_POSITION = 43
_CRC_POSITION = 17
_CRC_START_POSITION = 21


def with_producer_state(batch: bytes, producer_id: int, producer_epoch: int, base_sequence: int) -> bytes:
    """One built v2 batch with an idempotent producer's id, epoch and first sequence in its
    header and its CRC made again (the CRC covers those fields), as Kafka's producer stamps a batch
    when it is first drained for sending. A bytearray is stamped in place and returned (no copy);
    anything else is copied and returned as bytes."""
    buffer = batch if isinstance(batch, bytearray) else bytearray(batch)
    _PRODUCER_STATE.pack_into(buffer, _PRODUCER_STATE_POSITION, producer_id, producer_epoch, base_sequence)
    struct.pack_into(">I", buffer, _CRC_POSITION, crc32c(memoryview(buffer)[_CRC_START_POSITION:]))
    return buffer if buffer is batch else bytes(buffer)


# Header fields a rebuilt batch keeps that the builder does not write: where they sit.
_BASE_OFFSET = struct.Struct(">q")
_LEADER_EPOCH = struct.Struct(">i")
_LEADER_EPOCH_POSITION = 12
_ATTRIBUTES = struct.Struct(">h")
_ATTRIBUTES_POSITION = 21
_MAX_TIMESTAMP = struct.Struct(">q")
_MAX_TIMESTAMP_POSITION = 35
_TRANSACTIONAL_FLAG = 0x10


def rebuild_batch(batch, compression_type: int, from_offset: int = -1) -> bytes | None:
    """One whole v2 data batch built again with codec ``compression_type``, from its records at or
    after ``from_offset`` (all by default), with aiokafka's C builder: the same producer id and
    epoch (the base sequence moved with the base offset), transactional flag, leader epoch and
    timestamps (LogAppendTime kept), CRC made anew. None when no record is left."""
    batch = as_byte_view(batch)
    header = read_header(batch, 0)
    records = [r for r in _CDefaultRecordBatch(batch) if r.offset >= from_offset]
    if not records:
        return None
    base_offset = records[0].offset
    base_sequence = (header.base_sequence + (base_offset - header.base_offset)
                     if header.base_sequence >= 0 else -1)
    builder = DefaultRecordBatchBuilder(
        magic=2, compression_type=compression_type,
        is_transactional=int(bool(header.attributes & _TRANSACTIONAL_FLAG)), producer_id=header.producer_id,
        producer_epoch=header.producer_epoch, base_sequence=base_sequence, batch_size=1 << 31)
    for record in records:
        builder.append(record.offset - base_offset, record.timestamp, record.key, record.value, list(record.headers))
    rebuilt = builder.build()
    _BASE_OFFSET.pack_into(rebuilt, 0, base_offset)
    _LEADER_EPOCH.pack_into(rebuilt, _LEADER_EPOCH_POSITION, header.partition_leader_epoch)
    if header.attributes & LOG_APPEND_TIME_FLAG:
        # The builder writes create time; the broker's timestamp type and time are kept, and the
        # CRC (which covers both) made again.
        attributes = _ATTRIBUTES.unpack_from(rebuilt, _ATTRIBUTES_POSITION)[0] | LOG_APPEND_TIME_FLAG
        _ATTRIBUTES.pack_into(rebuilt, _ATTRIBUTES_POSITION, attributes)
        _MAX_TIMESTAMP.pack_into(rebuilt, _MAX_TIMESTAMP_POSITION, header.max_timestamp)
        struct.pack_into(">I", rebuilt, _CRC_POSITION, crc32c(memoryview(rebuilt)[_CRC_START_POSITION:]))
    return bytes(rebuilt)


def read_records(topic: str, partition: int, buffer, from_offset: int) -> list[ConsumerRecord]:
    """Records at or after ``from_offset`` in a buffer of whole v2 batches (bytes or uint8 array).

    A batch torn off at the end of the buffer is left out, as Kafka's consumer leaves out the
    partial batch a size-limited fetch may end with.
    """
    records: list[ConsumerRecord] = []
    if buffer is None or len(buffer) == 0:
        return records
    append = records.append
    for header, batch in _whole_batches(buffer, from_offset):
        leader_epoch = header.partition_leader_epoch
        for record in batch:
            offset = record.offset
            if offset >= from_offset:
                append(ConsumerRecord(topic, partition, offset, record.timestamp, record.key, record.value,
                                      tuple(record.headers), leader_epoch))
    return records


def _whole_batches(buffer, from_offset: int):
    """(header, C batch reader) per whole data batch in ``buffer`` that holds offsets at or after
    ``from_offset``; the headers are read with raykafka's own parser (it knows the leader epoch)."""
    view = as_byte_view(buffer)
    position, size = 0, len(view)
    while size - position >= HEADER_SIZE_BYTES:
        header = read_header(view, position)
        end = header.end_position
        if end > size:
            return
        position = end
        if header.last_offset < from_offset or header.attributes & CONTROL_FLAG:
            continue
        yield header, _CDefaultRecordBatch(view[header.position:end])


class FetchExtent(NamedTuple):
    next_offset: int  # where the consumer fetches next
    record_count: int  # at most how many records it gets
    last_leader_epoch: int  # the partition leader epoch of the last whole batch; -1 if none


def fetch_extent(buffer, from_offset: int) -> FetchExtent:
    """What ``buffer`` holds for a consumer at ``from_offset``: where it fetches next (past the
    last whole batch that holds offsets at or after ``from_offset``, Kafka's next fetch offset; a
    control batch counts; else ``from_offset``), at most how many records (the record counts of
    those batches), and the leader epoch of the last of them (the epoch of the record before
    the next fetch offset, which KIP-320 validates after a leader change). Reads only batch
    headers."""
    next_offset, record_count, last_leader_epoch = from_offset, 0, -1
    if buffer is None or len(buffer) == 0:
        return FetchExtent(next_offset, record_count, last_leader_epoch)
    view = as_byte_view(buffer)
    position, size = 0, len(view)
    while size - position >= HEADER_SIZE_BYTES:
        header = read_header(view, position)
        if header.end_position > size:
            break
        if header.last_offset >= from_offset:
            next_offset, record_count = max(next_offset, header.next_offset), record_count + header.records_count
            last_leader_epoch = header.partition_leader_epoch
        position = header.end_position
    return FetchExtent(next_offset, record_count, last_leader_epoch)


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
