"""ListOffsets by timestamp: the first record at or after a time, found in the log's batches.

Kafka answers from a time index per segment; raykafka keeps none, so it walks the batch headers
from the log start (a header's ``max_timestamp`` says whether a batch can hold the answer), which
costs one pass over the headers below ``max_offset`` (the high watermark for consumers) and no
record decoding but in the one batch that holds the answer. In that batch the records are read
just far enough for their timestamp and offset deltas (the v2 record format's varints). A
compressed batch is not decompressed: its base offset and max timestamp are answered, the
earliest offset that can hold the record, so a consumer seeking there reads a few records more.
A batch with LogAppendTime stamps every record with its max timestamp.
"""
from __future__ import annotations

from actors.core.log.record_batch import HEADER_SIZE_BYTES, BatchHeader, as_byte_view, read_header

COMPRESSION_MASK = 0x07
LOG_APPEND_TIME_FLAG = 0x08
# Enough for a whole read of batches at a time; a batch bigger than this is still read whole.
READ_BYTES_MAX = 1 << 20


def offset_for_timestamp(log, target_timestamp_ms: int, max_offset: int) -> tuple[int, int] | None:
    """(offset, timestamp) of the first record below ``max_offset`` whose timestamp is at or
    after ``target_timestamp_ms``, or None when there is none."""
    offset = log.log_start_offset
    while offset < min(max_offset, log.log_end_offset):
        records = log.read(offset, READ_BYTES_MAX, max_offset=max_offset).records
        if not records:
            return None
        view, position = as_byte_view(records), 0
        while position < len(view):
            header = read_header(view, position)
            if header.last_offset >= offset and header.max_timestamp >= target_timestamp_ms:
                try:
                    return _first_record_at_or_after(view, header, target_timestamp_ms, offset)
                except (IndexError, ValueError):
                    # The log checks a batch's CRC, not its records: a client's malformed records
                    # get the batch's start, the answer that cannot skip a record.
                    return max(header.base_offset, offset), header.max_timestamp
            position = header.end_position
            offset = header.next_offset
    return None


def _first_record_at_or_after(view: memoryview, header: BatchHeader, target_ms: int,
                              from_offset: int) -> tuple[int, int]:
    if header.attributes & LOG_APPEND_TIME_FLAG:
        return max(header.base_offset, from_offset), header.max_timestamp
    if header.attributes & COMPRESSION_MASK:
        return max(header.base_offset, from_offset), header.max_timestamp
    position = header.position + HEADER_SIZE_BYTES
    for _ in range(header.records_count):
        length, position = _read_varint(view, position)
        record_end = position + length
        position += 1  # the record's attributes byte, unused
        timestamp_delta, position = _read_varint(view, position)
        offset_delta, position = _read_varint(view, position)
        offset, timestamp = header.base_offset + offset_delta, header.base_timestamp + timestamp_delta
        if offset >= from_offset and timestamp >= target_ms:
            return offset, timestamp
        position = record_end
    # max_timestamp promised a record at or after the target; an inconsistent batch still has
    # to get an answer that cannot skip data.
    return max(header.base_offset, from_offset), header.max_timestamp


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
