"""Kafka's compression codecs, and the leader's rule for a topic's ``compression.type``.

Theory of operation. A v2 batch names its codec in the low three bits of its attributes: none 0,
gzip 1, snappy 2, lz4 3, zstd 4. A producer picks one (its ``compression.type``: none, gzip,
snappy, lz4, zstd); a topic's ``compression.type`` (the broker's ``compression.type`` is every
topic's default) is one of uncompressed, gzip, snappy, lz4, zstd, or ``producer``, Kafka's
default, which keeps what the producer sent. The leader's append (Kafka 2.4's
``LogValidator.validateMessagesAndAssignOffsets``) takes a batch as it is when its codec is the
topic's target (the fast path: no per-record work, as for ``producer``), and otherwise
decompresses it and builds it again with the target codec (the slow path). Building is the
``CompressionCodecs``' job: the core reads only headers, so the shell hands it codecs that know the
record format (``actors.compression_codecs.KafkaCompressionCodecs``), the same that decompress a batch's
records for ListOffsets by timestamp (``timestamps.py``).

A rebuilt batch keeps what its header says of the producer (id, epoch, base sequence,
transactional flag) and its records' timestamps, keys, values and headers; offsets are assigned
by the append as for any batch. A control batch is never rebuilt (Kafka never compresses one).
A batch the rebuilder cannot read (a codec it does not know, bytes that do not decompress) is
CORRUPT_MESSAGE and nothing is appended.
"""
from __future__ import annotations

from typing import Protocol

from actors.core.errors import ErrorCode, KafkaProtocolError
from actors.core.log.record_batch import parse_batches

COMPRESSION_MASK = 0x07
_CONTROL_FLAG = 0x20

# The codec ids of Kafka's v2 attributes, by the name a producer's ``compression.type`` uses.
PRODUCER_CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
# A topic's (and the broker's) ``compression.type``: Kafka's BrokerCompressionCodec names.
PRODUCER = "producer"
BROKER_CODECS = {"uncompressed": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
BROKER_COMPRESSION_TYPES = (*BROKER_CODECS, PRODUCER)


class CompressionCodecs(Protocol):
    """Kafka's record codecs, for the broker core, which cannot import them (they load asyncio)."""

    def decompress(self, codec: int, data: bytes) -> bytes:
        """A batch's records compressed with ``codec``, uncompressed; raises when it cannot."""

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
             if h.attributes & COMPRESSION_MASK != target and not h.attributes & _CONTROL_FLAG}
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
