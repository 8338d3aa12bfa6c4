"""Kafka's compression codecs for the broker core (``compression.CompressionCodecs``), with aiokafka's
(gzip from the standard library; snappy, lz4 and zstd through cramjam).

The core cannot import aiokafka (it loads asyncio), so the broker shell and the simulator hand it
``KafkaCompressionCodecs``: the leader rebuilds a produced batch in its topic's ``compression.type``
with it (actors/core/log/compression.py), and ListOffsets by timestamp decompresses a batch's
records with it to answer with the exact record (actors/core/log/timestamps.py).
"""
from __future__ import annotations

from aiokafka import codec

from actors.records import read_header, rebuild_batch

# Kafka's codec ids (the low 3 bits of a v2 batch's attributes).
_DECODERS = {1: codec.gzip_decode, 2: codec.snappy_decode, 3: codec.lz4_decode, 4: codec.zstd_decode}
_AVAILABLE = {1: codec.has_gzip, 2: codec.has_snappy, 3: codec.has_lz4, 4: codec.has_zstd}


class KafkaCompressionCodecs:
    """Every codec Kafka has, for the broker core."""

    @staticmethod
    def decompress(codec_id: int, data: bytes) -> bytes:
        """The records of a batch compressed with ``codec_id``; raises ValueError for a codec that
        is unknown or whose library is not installed."""
        if codec_id not in _DECODERS or not _AVAILABLE[codec_id]():
            raise ValueError(f"compression codec {codec_id} is not available")
        return bytes(_DECODERS[codec_id](data))

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
