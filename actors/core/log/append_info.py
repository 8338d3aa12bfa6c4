"""What a ``Log`` append wrote (Kafka's ``LogAppendInfo``), built from the headers of its batches."""
from __future__ import annotations

from dataclasses import dataclass

from actors.core.log.record_batch import BatchHeader


@dataclass(frozen=True, slots=True)
class LogAppendInfo:
    """What an append wrote: offsets [first_offset, last_offset] in ``batch_count`` batches."""

    first_offset: int
    last_offset: int
    batch_count: int
    record_count: int
    max_timestamp: int
    size_in_bytes: int


def _append_info(headers: tuple[BatchHeader, ...], size_in_bytes: int) -> LogAppendInfo:
    return LogAppendInfo(
        first_offset=headers[0].base_offset, last_offset=headers[-1].last_offset,
        batch_count=len(headers), record_count=sum(header.records_count for header in headers),
        max_timestamp=max(header.max_timestamp for header in headers), size_in_bytes=size_in_bytes)
