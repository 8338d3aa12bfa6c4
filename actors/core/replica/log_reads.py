"""Reads of a replica's log that are not Kafka fetches: whole batches for the group coordinator's
load of a ``__consumer_offsets`` partition, and per-batch digests for checking that replicas agree.

Theory of operation. Both read whole batches as the log stores them and parse only the 61-byte
batch headers, never the records. ``read_log`` clamps the range it is asked for to the log
(before its start it reads from the start, at or past its end it returns nothing) and says where
the next read starts and where the log ends, so the caller's load loop ends. ``replica_digest``
lists (base offset, last offset, leader epoch, CRC) per batch: every replica stores the leader's
batches byte for byte, so equal digests mean equal logs. A replica not hosted here reads as empty.

Limits: one ``read_log`` returns at most ``max_bytes`` (but always one whole batch when there is
one, as a fetch does); a digest reads ``DIGEST_READ_BYTES`` per step and stops at ``end_offset``.
"""
from __future__ import annotations

from actors.core.log.record_batch import read_header

DIGEST_READ_BYTES = 1 << 20
BatchDigest = tuple[int, int, int, int]  # (base offset, last offset, partition leader epoch, CRC)


def next_offset_after(records, from_offset: int) -> int:
    """The offset after the last whole batch in ``records`` (``from_offset`` if there is none)."""
    view, position, next_offset = memoryview(records), 0, from_offset
    while position < len(view):
        header = read_header(view, position)
        next_offset = max(next_offset, header.next_offset)
        position = header.end_position
    return next_offset


def read_log(partition, offset: int, max_bytes: int) -> tuple[bytes, int, int]:
    """(records, the offset after them, the log end offset) from ``offset``; ``partition`` may be None."""
    if partition is None:
        return b"", offset, offset
    end_offset = partition.log_end_offset
    start = max(offset, partition.log_start_offset)
    if start >= end_offset or max_bytes <= 0:
        return b"", start, end_offset
    records = bytes(partition.log.read(start, max_bytes).records)
    return records, next_offset_after(records, start), end_offset


def replica_digest(partition, end_offset: int, start_offset: int = 0) -> list[BatchDigest]:
    """Per batch below ``end_offset``, from the batch holding ``start_offset`` (or the log start)."""
    if partition is None:
        return []
    log = partition.log
    digest, offset = [], max(log.log_start_offset, start_offset)
    while offset < min(end_offset, log.log_end_offset):
        records = log.read(offset, DIGEST_READ_BYTES, max_offset=end_offset).records
        if not records:
            break
        view, position = memoryview(records), 0
        while position < len(view):
            header = read_header(view, position)
            digest.append((header.base_offset, header.last_offset, header.partition_leader_epoch, header.crc))
            position = header.end_position
            offset = header.next_offset
    return digest
