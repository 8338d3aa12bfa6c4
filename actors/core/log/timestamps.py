"""ListOffsets by timestamp: the first record at or after a time, found through the time index.

Theory of operation (Kafka 2.4's ``Log.fetchOffsetByTimestamp`` and
``LogSegment.findOffsetByTimestamp``). The search takes the first segment whose largest
timestamp is at or after the target; its time index and offset index give the position to start
from (``LogSegment.timestamp_scan_start``: no batch before it can hold the answer, and one within
about ``index.interval.bytes`` after it does); batch headers are read from there to the first
batch whose max timestamp reaches the target, and only that batch's records are read, for their
timestamp and offset deltas (the v2 record format's varints), to answer the exact record's offset
and timestamp. So one request costs an index lookup, a scan of about an index interval and one
batch's records: never a pass over the log.

A compressed batch is decompressed with ``compression.decompress_records`` (every codec Kafka
has). A batch whose records cannot be read (bytes that do not decompress, or a client's malformed
records under a valid CRC: the log checks the CRC, not the records) gets the
answer that cannot skip a record: its first offset at or after the log start, with its max
timestamp. A batch with LogAppendTime stamps every record with its max timestamp.
"""
from __future__ import annotations

from typing import NamedTuple

from actors.core.log.compression import CodecError, decompress_records
from actors.core.log.record_batch import (
    COMPRESSION_CODEC_MASK, HEADER_SIZE_BYTES, LOG_APPEND_TIME_FLAG, BatchHeader,
)


class TimestampAndOffset(NamedTuple):
    """Kafka's ``TimestampAndOffset``: the record found and the leader epoch of its batch."""

    timestamp: int
    offset: int
    leader_epoch: int  # the batch's partition leader epoch; -1 when it has none


def offset_for_timestamp(log, target_timestamp_ms: int, max_offset: int) -> TimestampAndOffset | None:
    """The first record at or after the log start whose timestamp is at or after
    ``target_timestamp_ms``, or None when there is none or it is at or past ``max_offset`` (the
    high watermark for consumers: Kafka answers none rather than a record they may not read)."""
    starting_offset = log.log_start_offset
    for segment in log.segments:
        if segment.next_offset <= starting_offset or segment.largest_timestamp < target_timestamp_ms:
            continue
        found = _search_segment(segment, target_timestamp_ms, starting_offset)
        if found is not None:
            return found if found.offset < max_offset else None
    return None


def _search_segment(segment, target_ms: int, starting_offset: int) -> TimestampAndOffset | None:
    for header in segment.headers_from(segment.timestamp_scan_start(target_ms, starting_offset)):
        if header.last_offset < starting_offset or header.max_timestamp < target_ms:
            continue
        found = first_record_at_or_after(segment.read_batch(header), header, target_ms, starting_offset)
        if found is not None:
            return found
    return None


def first_record_at_or_after(batch: bytes, header: BatchHeader, target_ms: int, starting_offset: int) -> TimestampAndOffset | None:
    """The first record of ``batch`` (whose header is ``header``) at or after both the target time
    and ``starting_offset``; None when it has none (Kafka then goes on to the next batch)."""
    epoch = max(header.partition_leader_epoch, -1)
    unreadable = TimestampAndOffset(header.max_timestamp, max(header.base_offset, starting_offset), epoch)
    records = memoryview(batch)[HEADER_SIZE_BYTES:header.size_in_bytes]
    codec = header.attributes & COMPRESSION_CODEC_MASK
    if codec:
        try:
            records = memoryview(decompress_records(codec, records))
        except CodecError:
            return unreadable
    log_append_time = bool(header.attributes & LOG_APPEND_TIME_FLAG)
    position = 0
    try:
        for _ in range(header.records_count):
            length, position = _read_varint(records, position)
            record_end = position + length
            position += 1  # the record's attributes byte, unused
            timestamp_delta, position = _read_varint(records, position)
            offset_delta, position = _read_varint(records, position)
            offset = header.base_offset + offset_delta
            timestamp = header.max_timestamp if log_append_time else header.base_timestamp + timestamp_delta
            if offset >= starting_offset and timestamp >= target_ms:
                return TimestampAndOffset(timestamp, offset, epoch)
            position = record_end
    except (IndexError, ValueError):
        return unreadable
    return None


def _read_varint(view: memoryview, position: int) -> tuple[int, int]:
    """A zigzag varint (or varlong) at ``position``: (value, position after it)."""
    shift, raw = 0, 0
    for _ in range(10):  # a varlong is at most 10 bytes
        byte = view[position]
        position += 1
        raw |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return (raw >> 1) ^ -(raw & 1), position
        shift += 7
    raise ValueError("varint longer than 10 bytes")
