"""Kafka's v2 record batch header: parsing, validation and stamping, with no per-record work.

A v2 batch is a 61-byte big-endian header followed by varint-encoded records. raykafka never
decodes the records: the log only needs the header (offsets, sizes, leader epoch, timestamps) and
the CRC. The CRC-32C covers the bytes from ``attributes`` (offset 21) to the end of the batch, so
``base_offset``, ``batch_length`` and ``partition_leader_epoch`` sit outside it: the leader can
stamp ``base_offset`` and ``partition_leader_epoch`` in place and the CRC stays valid, exactly as
Kafka's ``DefaultRecordBatch.setLastOffset`` / ``setPartitionLeaderEpoch`` rely on.

Three ways in, from most to least thorough:

- ``parse_batches``: the whole buffer must be complete, structurally valid batches with good
  CRCs (an append from a producer or a leader).
- ``scan_valid_prefix``: the longest prefix of valid batches and why it stopped (log recovery).
- ``read_header``: one header, structure only, no CRC (the fetch hot path).

Every failure raises ``KafkaProtocolError(ErrorCode.CORRUPT_MESSAGE)``.
"""
from __future__ import annotations

import struct
from typing import NamedTuple

from crc32c import crc32c

from actors.core.errors import ErrorCode, KafkaProtocolError

MAGIC_V2 = 2
HEADER_SIZE_BYTES = 61
# base_offset (8) + batch_length (4): the bytes before what batch_length counts.
LOG_OVERHEAD_BYTES = 12
BATCH_LENGTH_MIN_BYTES = HEADER_SIZE_BYTES - LOG_OVERHEAD_BYTES  # 49
CRC_START_POSITION = 21  # attributes: first byte the CRC covers
# The attributes' bits (Kafka's DefaultRecordBatch): the codec in the low three, then the
# timestamp type, the transactional flag and the control flag.
COMPRESSION_CODEC_MASK = 0x07
ZSTD_CODEC = 4
LOG_APPEND_TIME_FLAG = 0x08
CONTROL_FLAG = 0x20
_ATTRIBUTES = struct.Struct(">h")  # at CRC_START_POSITION
_BATCH_LENGTH = struct.Struct(">i")  # at 8

# base_offset, batch_length, partition_leader_epoch, magic, crc, attributes, last_offset_delta,
# base_timestamp, max_timestamp, producer_id, producer_epoch, base_sequence, records_count.
_HEADER = struct.Struct(">qiibIhiqqqhii")
assert _HEADER.size == HEADER_SIZE_BYTES
_STAMP = struct.Struct(">q")  # base_offset at 0
_EPOCH = struct.Struct(">i")  # partition_leader_epoch at 12
_EPOCH_POSITION = 12


class BatchHeader(NamedTuple):
    """One batch's header, plus where it sits in the buffer it was parsed from.

    ``last_offset`` is ``base_offset + last_offset_delta``; ``size_in_bytes`` is the whole batch
    (``batch_length + 12``), always >= 61.
    """

    position: int
    base_offset: int
    last_offset: int
    size_in_bytes: int
    partition_leader_epoch: int
    records_count: int
    max_timestamp: int
    base_timestamp: int
    last_offset_delta: int
    magic: int
    crc: int
    attributes: int
    producer_id: int
    producer_epoch: int
    base_sequence: int

    @property
    def end_position(self) -> int:
        return self.position + self.size_in_bytes

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1


def _corrupt(message: str) -> KafkaProtocolError:
    return KafkaProtocolError(ErrorCode.CORRUPT_MESSAGE, message)


def as_byte_view(data) -> memoryview:
    """A flat, byte-typed memoryview over any bytes-like object (bytes, bytearray, numpy uint8).
    Anything else (None, a str, a number) is no record set: CORRUPT_MESSAGE, like a torn batch."""
    try:
        view = data if isinstance(data, memoryview) else memoryview(data)
    except TypeError:
        raise _corrupt(f"records must be bytes-like, not {type(data).__name__}") from None
    if view.ndim != 1 or view.format not in ("B", "b", "c"):
        view = view.cast("B")
    return view


def read_header(buffer, position: int = 0) -> BatchHeader:
    """Parses and structurally checks the header at ``position``; no CRC, the body may be absent.

    Checks magic == 2, batch_length >= 49, records_count >= 0 and last_offset_delta >= 0.
    Raises CORRUPT_MESSAGE when fewer than 61 bytes remain or a check fails.
    """
    if len(buffer) - position < HEADER_SIZE_BYTES:
        raise _corrupt(f"truncated batch header at position {position}: "
                       f"{len(buffer) - position} of {HEADER_SIZE_BYTES} bytes")
    (base_offset, batch_length, partition_leader_epoch, magic, crc, attributes,
     last_offset_delta, base_timestamp, max_timestamp, producer_id, producer_epoch,
     base_sequence, records_count) = _HEADER.unpack_from(buffer, position)
    if magic != MAGIC_V2:
        raise _corrupt(f"batch at position {position} has magic {magic}, expected {MAGIC_V2}")
    if batch_length < BATCH_LENGTH_MIN_BYTES:
        raise _corrupt(f"batch at position {position} has batch_length {batch_length} "
                       f"< {BATCH_LENGTH_MIN_BYTES}")
    if records_count < 0:
        raise _corrupt(f"batch at position {position} has records_count {records_count}")
    if last_offset_delta < 0:
        raise _corrupt(f"batch at position {position} has last_offset_delta {last_offset_delta}")
    return BatchHeader(
        position=position, base_offset=base_offset,
        last_offset=base_offset + last_offset_delta,
        size_in_bytes=batch_length + LOG_OVERHEAD_BYTES,
        partition_leader_epoch=partition_leader_epoch, records_count=records_count,
        max_timestamp=max_timestamp, base_timestamp=base_timestamp,
        last_offset_delta=last_offset_delta, magic=magic, crc=crc, attributes=attributes,
        producer_id=producer_id, producer_epoch=producer_epoch, base_sequence=base_sequence)


def verify_crc(buffer, header: BatchHeader) -> None:
    """Raises CORRUPT_MESSAGE unless the CRC-32C over attributes..end matches the header's crc."""
    view = as_byte_view(buffer)
    if header.end_position > len(view):
        raise _corrupt(f"batch at position {header.position} needs {header.size_in_bytes} bytes, "
                       f"{len(view) - header.position} remain")
    computed = crc32c(view[header.position + CRC_START_POSITION:header.end_position])
    if computed != header.crc:
        raise _corrupt(f"batch at position {header.position} (base offset {header.base_offset}) "
                       f"has CRC {header.crc:#010x}, computed {computed:#010x}")


def read_complete_batch(buffer, position: int, *, check_crc: bool) -> BatchHeader:
    """``read_header`` plus: the whole batch fits in ``buffer`` (and, if asked, its CRC holds)."""
    header = read_header(buffer, position)
    if header.end_position > len(buffer):
        raise _corrupt(f"batch at position {position} needs {header.size_in_bytes} bytes, "
                       f"{len(buffer) - position} remain")
    if check_crc:
        verify_crc(buffer, header)
    return header


def parse_batches(buffer, *, check_crc: bool = True) -> tuple[BatchHeader, ...]:
    """Headers of every batch in ``buffer``, which must hold nothing but whole, valid batches.

    Raises CORRUPT_MESSAGE on an empty buffer, a torn or malformed batch, trailing bytes or a
    CRC mismatch. The loop is bounded by the buffer: each batch consumes at least 61 bytes.

    Every append (a producer's to a leader, a leader's to a follower) runs this over each batch,
    and a follower of many partitions appends many small batches, so the loop makes the checks
    of ``read_complete_batch`` inline, with no call and no keyword arguments per batch; a batch
    that fails any of them is read again by ``read_complete_batch``, which raises the error.
    """
    view = as_byte_view(buffer)
    size = len(view)
    if size == 0:
        raise _corrupt("empty record set")
    headers = []
    unpack_from, new_header = _HEADER.unpack_from, tuple.__new__
    position = 0
    while position < size:
        if size - position < HEADER_SIZE_BYTES:
            break
        (base_offset, batch_length, partition_leader_epoch, magic, crc, attributes, last_offset_delta,
         base_timestamp, max_timestamp, producer_id, producer_epoch, base_sequence,
         records_count) = unpack_from(view, position)
        end_position = position + batch_length + LOG_OVERHEAD_BYTES
        if (magic != MAGIC_V2 or batch_length < BATCH_LENGTH_MIN_BYTES or records_count < 0
                or last_offset_delta < 0 or end_position > size):
            break
        if check_crc and crc32c(view[position + CRC_START_POSITION:end_position]) != crc:
            break
        # BatchHeader's fields in order (see its definition).
        headers.append(new_header(BatchHeader, (
            position, base_offset, base_offset + last_offset_delta, batch_length + LOG_OVERHEAD_BYTES,
            partition_leader_epoch, records_count, max_timestamp, base_timestamp, last_offset_delta, magic,
            crc, attributes, producer_id, producer_epoch, base_sequence)))
        position = end_position
    else:
        return tuple(headers)
    read_complete_batch(view, position, check_crc=check_crc)  # raises what is wrong at ``position``
    raise AssertionError(f"parse_batches stopped at position {position} of a batch read_complete_batch accepts")


def scan_valid_prefix(buffer, *, check_crc: bool = True, position: int = 0,
                      expected_base_offset: int | None = None, max_offset: int | None = None
                      ) -> tuple[tuple[BatchHeader, ...], int, str | None]:
    """The longest run of whole valid batches from ``position``: (headers, end, why_stopped).

    ``why_stopped`` is None when the run reaches the end of the buffer exactly, else a sentence
    (a torn tail, a malformed header, a bad CRC). With ``expected_base_offset`` each batch must
    start at or after where the previous one ended (a cleaned log has gaps between batches, as
    Kafka's offsets may), which also catches corrupt ``base_offset`` fields that the CRC does not
    cover and that go backwards. With ``max_offset`` a batch whose last offset is past it stops the
    run (Kafka's ``ensureOffsetInRange``: a segment's offsets fit its index's 32-bit relative ones).
    """
    view = as_byte_view(buffer)
    headers = []
    expected = expected_base_offset
    while position < len(view):
        try:
            header = read_complete_batch(view, position, check_crc=check_crc)
        except KafkaProtocolError as error:
            return tuple(headers), position, str(error)
        if expected is not None:
            if header.base_offset < expected:
                return tuple(headers), position, (
                    f"batch at position {position} has base offset {header.base_offset}, "
                    f"expected {expected}")
            expected = header.next_offset
        if max_offset is not None and header.last_offset > max_offset:
            return tuple(headers), position, (
                f"batch at position {position} has last offset {header.last_offset}, past {max_offset}")
        headers.append(header)
        position = header.end_position
    return tuple(headers), position, None


def holds_zstd_batch(buffer) -> bool:
    """Whether a batch of ``buffer`` (whole batches, as a fetch serves them) is zstd-compressed,
    read from each batch's attributes with no decompression; a torn tail is not looked at.
    Bounded by the buffer: each step moves past at least one batch header."""
    view = as_byte_view(buffer)
    size, position = len(view), 0
    while size - position >= HEADER_SIZE_BYTES:
        (attributes,) = _ATTRIBUTES.unpack_from(view, position + CRC_START_POSITION)
        if attributes & COMPRESSION_CODEC_MASK == ZSTD_CODEC:
            return True
        (batch_length,) = _BATCH_LENGTH.unpack_from(view, position + 8)
        position += LOG_OVERHEAD_BYTES + max(batch_length, BATCH_LENGTH_MIN_BYTES)
    return False


def stamp_batch(buffer: bytearray, header: BatchHeader, *, base_offset: int,
                partition_leader_epoch: int) -> BatchHeader:
    """Writes base_offset and partition_leader_epoch into the batch in place; the CRC stays valid.

    Returns the header as it now reads.
    """
    _STAMP.pack_into(buffer, header.position, base_offset)
    _EPOCH.pack_into(buffer, header.position + _EPOCH_POSITION, partition_leader_epoch)
    return header._replace(base_offset=base_offset,
                           last_offset=base_offset + header.last_offset_delta,
                           partition_leader_epoch=partition_leader_epoch)


def build_batch(*, base_offset: int, partition_leader_epoch: int, attributes: int, last_offset_delta: int,
                base_timestamp: int, max_timestamp: int, producer_id: int, producer_epoch: int,
                base_sequence: int, records_count: int, body) -> bytes:
    """A whole v2 batch: the header (with its batch_length and CRC-32C computed) and ``body``, the
    records as stored (already compressed with the codec ``attributes`` names). The log cleaner
    writes the batches it keeps with this (actors/core/log/cleaner.py)."""
    header = bytearray(_HEADER.pack(
        base_offset, BATCH_LENGTH_MIN_BYTES + len(body), partition_leader_epoch, MAGIC_V2, 0, attributes,
        last_offset_delta, base_timestamp, max_timestamp, producer_id, producer_epoch, base_sequence,
        records_count))
    crc = crc32c(body, crc32c(bytes(header[CRC_START_POSITION:])))
    struct.pack_into(">I", header, 17, crc)
    return bytes(header) + bytes(body)
