"""Clients' view of records; the format code lives in ``actors.records``, shared with the actors."""
from actors.records import (  # noqa: F401
    BatchBuilder, ConsumerRecord, RecordMetadata, fetch_extent, next_offset_after,
    read_records,
)
