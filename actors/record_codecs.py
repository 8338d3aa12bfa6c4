"""Decompression of a record batch's records for the broker, with aiokafka's codecs (gzip from the
standard library; snappy, lz4 and zstd through cramjam where it is installed).

The broker core reads a compressed batch's records to answer ListOffsets by timestamp with the
exact record (actors/core/log/timestamps.py); the core cannot import aiokafka (it loads asyncio),
so the broker shell hands it this function.
"""
from __future__ import annotations

from aiokafka import codec

# Kafka's codec ids (the low 3 bits of a v2 batch's attributes).
_DECODERS = {1: codec.gzip_decode, 2: codec.snappy_decode, 3: codec.lz4_decode, 4: codec.zstd_decode}
_AVAILABLE = {1: codec.has_gzip, 2: codec.has_snappy, 3: codec.has_lz4, 4: codec.has_zstd}


def decompress_records(codec_id: int, data: bytes) -> bytes:
    """The records of a batch compressed with ``codec_id``; raises ValueError for a codec that is
    unknown or whose library is not installed."""
    if codec_id not in _DECODERS or not _AVAILABLE[codec_id]():
        raise ValueError(f"compression codec {codec_id} is not available")
    return bytes(_DECODERS[codec_id](data))
