"""The broker core's batch builder (``compression.CompressionCodecs``), with aiokafka's builder.

The core cannot import aiokafka (it loads asyncio), so the broker shell and the simulator hand it
``KafkaCompressionCodecs``: the leader rebuilds a produced batch in its topic's
``compression.type`` with it (actors/core/log/compression.py). Reading compressed records needs
no builder and is the core's own (``compression.decompress_records``).
"""
from __future__ import annotations

from actors.codecs.record_batches import read_header, rebuild_batch


class KafkaCompressionCodecs:
    """Builds batches with every codec Kafka has (aiokafka's codecs: gzip from the standard
    library; snappy, lz4 and zstd through cramjam)."""

    @staticmethod
    def rebuild(batch: memoryview, compression_type: int) -> bytes:
        """``batch`` built again with codec ``compression_type``. A batch whose records are not the
        ones its header counts is refused (Kafka's LogValidator checks the count as it reads them)."""
        expected = read_header(batch, 0).records_count
        rebuilt = rebuild_batch(batch, compression_type)
        found = 0 if rebuilt is None else read_header(rebuilt, 0).records_count
        if found != expected:
            raise ValueError(f"the batch's header counts {expected} records, its data holds {found}")
        return rebuilt
