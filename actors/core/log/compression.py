"""Kafka's compression codecs, and the leader's rule for a topic's ``compression.type``.

Theory of operation. A v2 batch names its codec in the low three bits of its attributes: none 0,
gzip 1, snappy 2, lz4 3, zstd 4. A producer picks one (its ``compression.type``: none, gzip,
snappy, lz4, zstd); a topic's ``compression.type`` (the broker's ``compression.type`` is every
topic's default) is one of uncompressed, gzip, snappy, lz4, zstd, or ``producer``, Kafka's
default, which keeps what the producer sent. The leader's append (Kafka 2.4's
``LogValidator.validateMessagesAndAssignOffsets``) takes a batch as it is when its codec is the
topic's target (the fast path: no per-record work, as for ``producer``), and otherwise
decompresses it and builds it again with the target codec (the slow path). Building is the
``CompressionCodecs``' job: the core has no record builder (aiokafka's loads asyncio), so the shell
hands it one (``actors.codecs.compression.KafkaCompressionCodecs``). Reading compressed records
is the core's own (``decompress_records``: zlib and cramjam), for the log's validation and
ListOffsets by timestamp.

A rebuilt batch keeps what its header says of the producer (id, epoch, base sequence,
transactional flag) and its records' timestamps, keys, values and headers; offsets are assigned
by the append as for any batch. A control batch is never rebuilt (Kafka never compresses one).
A batch the rebuilder cannot read (a codec it does not know, bytes that do not decompress) is
CORRUPT_MESSAGE and nothing is appended.
"""
from __future__ import annotations

import zlib
from typing import Protocol

import cramjam

from actors.core.errors import ErrorCode, KafkaProtocolError
from actors.core.log.record_batch import COMPRESSION_CODEC_MASK, CONTROL_FLAG, parse_batches

# The codec ids of Kafka's v2 attributes, by the name a producer's ``compression.type`` uses.
PRODUCER_CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
# A topic's (and the broker's) ``compression.type``: Kafka's BrokerCompressionCodec names.
PRODUCER = "producer"
BROKER_CODECS = {"uncompressed": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
BROKER_COMPRESSION_TYPES = (*BROKER_CODECS, PRODUCER)
# Kafka's snappy codec writes snappy-java's framing: this magic, two version ints, then blocks
# of a big-endian int32 length and a raw snappy block. librdkafka may send raw snappy instead.
_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER_BYTES = 16
_XERIAL_BLOCK_BYTES = 32 * 1024


class CompressionCodecs(Protocol):
    """A record-batch builder for the broker core, which cannot import aiokafka's (it loads asyncio)."""

    def rebuild(self, batch: memoryview, compression_type: int) -> bytes:
        """``batch`` (one whole v2 data batch) built again with codec ``compression_type``: the
        same records and producer fields. Raises on a batch it cannot read."""


def producer_codec(compression_type: str) -> int:
    """A producer's ``compression.type`` as a codec id; INVALID_CONFIG for any other name."""
    codec = PRODUCER_CODECS.get(str(compression_type).strip().lower())
    if codec is None:
        raise KafkaProtocolError(ErrorCode.INVALID_CONFIG, (
            f"Invalid value {compression_type} for configuration compression.type: "
            f"String must be one of: {', '.join(PRODUCER_CODECS)}"))
    return codec


def check_broker_compression_type(compression_type: str) -> str:
    """A topic's or broker's ``compression.type``, checked as Kafka's LogConfig checks it."""
    if compression_type not in BROKER_COMPRESSION_TYPES:
        raise KafkaProtocolError(ErrorCode.INVALID_CONFIG, (
            f"Invalid value {compression_type} for configuration compression.type: "
            f"String must be one of: {', '.join(BROKER_COMPRESSION_TYPES)}"))
    return compression_type


def recompressed_for_topic(view: memoryview, compression_type: str, codecs: CompressionCodecs | None, *,
                           max_message_bytes: int):
    """``view`` (a producer's record set) as the topic's ``compression.type`` wants it stored:
    ``view`` itself when nothing differs (always for ``producer``), else new bytes with every
    data batch of another codec rebuilt with the topic's. A batch larger than
    ``max.message.bytes`` as sent is left for the append to refuse, as Kafka checks sizes before
    it recompresses."""
    target = BROKER_CODECS.get(compression_type)
    if target is None:  # ``producer``: what the producer sent is what is stored
        return view
    headers = parse_batches(view)  # CORRUPT_MESSAGE before anything is decompressed
    stale = {h.position for h in headers
             if h.attributes & COMPRESSION_CODEC_MASK != target and not h.attributes & CONTROL_FLAG}
    if not stale or any(h.size_in_bytes > max_message_bytes for h in headers):
        return view
    if codecs is None:
        raise KafkaProtocolError(ErrorCode.UNSUPPORTED_COMPRESSION_TYPE,
                                 f"this broker cannot build {compression_type} batches")
    pieces = []
    for header in headers:
        batch = view[header.position:header.end_position]
        if header.position in stale:
            try:
                batch = codecs.rebuild(batch, target)
            except Exception as exc:  # the producer's bytes, read for the first time: bad input
                raise KafkaProtocolError(ErrorCode.CORRUPT_MESSAGE, (
                    f"batch at position {header.position} could not be rebuilt as {compression_type}: "
                    f"{type(exc).__name__}: {exc}")) from None
        pieces.append(batch)
    return b"".join(pieces)


class CodecError(ValueError):
    """Compressed records that do not decompress, or a codec Kafka does not have."""


def decompress_records(codec: int, data) -> bytes:
    """A v2 batch's records compressed with ``codec`` (1 gzip, 2 snappy, 3 lz4, 4 zstd), as the
    broker reads them (Kafka's ``LogValidator`` and its time-index lookup): the standard library's
    zlib and cramjam's snappy, lz4 (the frame format, KIP-57) and zstd. Raises ``CodecError``."""
    try:
        if codec == 1:
            return zlib.decompress(data, wbits=16 + zlib.MAX_WBITS)  # 16+: a gzip header and trailer
        if codec == 2:
            return _snappy_decompress(bytes(data))
        if codec == 3:
            return bytes(cramjam.lz4.decompress(data))
        if codec == 4:
            return bytes(cramjam.zstd.decompress(data))
    except (zlib.error, cramjam.DecompressionError, ValueError) as exc:
        raise CodecError(f"{type(exc).__name__}: {exc}") from None
    raise CodecError(f"unknown compression codec {codec}")


def compress_records(codec: int, data) -> bytes:
    """``data`` (a v2 batch's records) compressed with ``codec`` as Kafka's Java producer and broker
    write it: gzip, snappy in snappy-java's framing (one block per 32 KiB, as its default), the lz4
    frame format and zstd. The log cleaner rewrites a compressed batch with it (cleaner.py), so a
    batch keeps its codec. Raises ``CodecError`` for a codec Kafka does not have."""
    data = bytes(data)
    if codec == 0:
        return data
    if codec == 1:
        compressor = zlib.compressobj(wbits=16 + zlib.MAX_WBITS)
        return compressor.compress(data) + compressor.flush()
    if codec == 2:
        blocks = [_XERIAL_MAGIC, (1).to_bytes(4, "big"), (1).to_bytes(4, "big")]
        for start in range(0, len(data), _XERIAL_BLOCK_BYTES):
            block = bytes(cramjam.snappy.compress_raw(data[start:start + _XERIAL_BLOCK_BYTES]))
            blocks += [len(block).to_bytes(4, "big"), block]
        return b"".join(blocks)
    if codec == 3:
        return bytes(cramjam.lz4.compress(data))
    if codec == 4:
        return bytes(cramjam.zstd.compress(data))
    raise CodecError(f"unknown compression codec {codec}")


def _snappy_decompress(data: bytes) -> bytes:
    if not data.startswith(_XERIAL_MAGIC):
        return bytes(cramjam.snappy.decompress_raw(data))
    blocks, position = [], _XERIAL_HEADER_BYTES
    while position < len(data):  # each block moves past its 4-byte length at least
        length = int.from_bytes(data[position:position + 4], "big", signed=True)
        if length < 0 or position + 4 + length > len(data):
            raise ValueError(f"snappy block of {length} bytes at {position} runs past the batch")
        blocks.append(bytes(cramjam.snappy.decompress_raw(data[position + 4:position + 4 + length])))
        position += 4 + length
    return b"".join(blocks)
