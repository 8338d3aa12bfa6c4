"""What a leader refuses in a client's record batches: Kafka's ``LogValidator`` and
``ProduceRequest.validateRecords``.

Theory of operation. Two checks, both run before anything is written, so a refusal leaves the
log as it was and answers only the partition it concerns:

- ``check_produce_records(api_version, records)``: Kafka's ``ProduceRequest.validateRecords``,
  which ``KafkaApis.handleProduceRequest`` runs on each partition of a Produce from the wire. From
  v3 on a partition carries exactly one batch of magic 2 (else ``INVALID_RECORD``), and below v7
  no zstd batch (``UNSUPPORTED_COMPRESSION_TYPE``: such a client cannot read zstd either). It reads
  the first header and the length of what follows: no per-batch or per-record work on the hot path.
- ``check_client_batches(view, headers, compacted=...)``: ``LogValidator.validateBatch`` and
  ``validateKey`` for the batches a client appends: no control batch (only the transaction
  coordinator writes those), no negative base sequence with a producer id, and on a compacted
  topic (``cleanup.policy`` holds ``compact``) no record without a key, which the cleaner could
  never compact. Each is ``INVALID_RECORD``, as Kafka 2.4 answers (``InvalidRecordException``).
  Only the key check reads records (a compressed batch is decompressed for it, as Kafka does),
  and only on compacted topics.

A record set too short or torn to hold a batch where these checks look is left to
``record_batch.parse_batches``, which answers ``CORRUPT_MESSAGE``.
"""
from __future__ import annotations

from actors.core.errors import ErrorCode, KafkaProtocolError
from actors.core.log.compression import CodecError, decompress_records
from actors.core.log.record_batch import (
    BATCH_LENGTH_MIN_BYTES, COMPRESSION_CODEC_MASK, CONTROL_FLAG, HEADER_SIZE_BYTES, LOG_OVERHEAD_BYTES, MAGIC_V2,
    ZSTD_CODEC, BatchHeader, as_byte_view,
)

# The first Produce version that carries v2 batches only (one per partition), and the first that
# may carry zstd (KIP-110).
PRODUCE_V2_BATCHES_VERSION = 3
PRODUCE_ZSTD_VERSION = 7
_MAGIC_POSITION = 16
_ATTRIBUTES_POSITION = 21
# A varint takes at most 5 bytes, a varlong 10 (Kafka's ByteUtils); a longer one is malformed.
_VARLONG_BYTES_MAX = 10


def _invalid_record(message: str) -> KafkaProtocolError:
    return KafkaProtocolError(ErrorCode.INVALID_RECORD, message)


def check_produce_records(api_version: int, records) -> None:
    """Raises what Kafka's ``ProduceRequest.validateRecords`` raises for one partition's records
    in a Produce of ``api_version``; returns when they may go on to the log."""
    if api_version < PRODUCE_V2_BATCHES_VERSION:
        return
    view = as_byte_view(records)
    size = len(view)
    first_end = _batch_end(view, 0)
    if first_end is None:
        raise _invalid_record(f"Produce requests with version {api_version} must have at least one record batch")
    if first_end <= _MAGIC_POSITION:
        return  # too short to name its magic: CORRUPT_MESSAGE, from the log
    magic = view[_MAGIC_POSITION]
    if magic > MAGIC_V2:
        return  # no magic Kafka knows: CORRUPT_MESSAGE, from the log
    if magic != MAGIC_V2:
        raise _invalid_record(f"Produce requests with version {api_version} are only allowed to contain "
                              f"record batches with magic version {MAGIC_V2}")
    if first_end - LOG_OVERHEAD_BYTES < BATCH_LENGTH_MIN_BYTES:
        return  # no whole v2 header: CORRUPT_MESSAGE, from the log
    codec = int.from_bytes(view[_ATTRIBUTES_POSITION:_ATTRIBUTES_POSITION + 2], "big") & COMPRESSION_CODEC_MASK
    if api_version < PRODUCE_ZSTD_VERSION and codec == ZSTD_CODEC:
        raise KafkaProtocolError(ErrorCode.UNSUPPORTED_COMPRESSION_TYPE, (
            f"Produce requests with version {api_version} are not allowed to use ZStandard compression"))
    if first_end < size and _batch_end(view, first_end) is not None:
        raise _invalid_record(f"Produce requests with version {api_version} are only allowed to contain "
                              f"exactly one record batch")


def _batch_end(view: memoryview, position: int) -> int | None:
    """Where the batch at ``position`` ends, or None when ``view`` does not hold it whole (Kafka's
    batch iterator then finds no batch there)."""
    if len(view) - position < LOG_OVERHEAD_BYTES:
        return None
    batch_length = int.from_bytes(view[position + 8:position + LOG_OVERHEAD_BYTES], "big", signed=True)
    end = position + LOG_OVERHEAD_BYTES + batch_length
    return end if batch_length >= 0 and end <= len(view) else None


def check_client_batches(view: memoryview, headers: tuple[BatchHeader, ...], *, compacted: bool) -> None:
    """Raises INVALID_RECORD for the first of ``headers`` (parsed from ``view``, CRCs checked)
    that Kafka's LogValidator refuses from a client."""
    for index, header in enumerate(headers):
        if header.producer_id >= 0 and header.base_sequence < 0:
            raise _invalid_record(f"Invalid sequence number {header.base_sequence} in record batch with "
                                  f"producerId {header.producer_id} (batch {index})")
        if header.attributes & CONTROL_FLAG:
            raise _invalid_record(f"Clients are not allowed to write control records (batch {index})")
        if compacted:
            keyless = _keyless_record(_records_of(view, header), header.records_count)
            if keyless is not None:
                raise _invalid_record(f"Compacted topic cannot accept message without key "
                                      f"(batch {index}, record {keyless})")


def _records_of(view: memoryview, header: BatchHeader) -> memoryview | bytes:
    """The batch's records as written: its body, decompressed with the batch's codec."""
    body = view[header.position + HEADER_SIZE_BYTES:header.end_position]
    codec = header.attributes & COMPRESSION_CODEC_MASK
    if codec == 0:
        return body
    try:
        return decompress_records(codec, body)
    except CodecError as exc:
        raise KafkaProtocolError(ErrorCode.CORRUPT_MESSAGE,
                                 f"batch at position {header.position} does not decompress: {exc}") from None


def _keyless_record(records, records_count: int) -> int | None:
    """The index of the first record without a key (a null key; an empty one is a key), or None.

    A v2 record is its length (a varint counting what follows), attributes (one byte), timestamp
    and offset deltas (varints), then the key's length (a varint, -1 for null) and the key. Each
    record is skipped by its length, so a record costs four varint reads whatever it holds. The
    loop is bounded by ``records_count``; a record set that does not hold exactly that many
    records is INVALID_RECORD, as Kafka's record iterator finds it.
    """
    size, position = len(records), 0
    for index in range(records_count):
        length, position = read_varint(records, position)
        end = position + length
        if length < 1 or end > size:
            raise _invalid_record(f"record {index} of length {length} does not fit its batch")
        position += 1  # attributes
        _, position = read_varint(records, position)  # timestamp delta
        _, position = read_varint(records, position)  # offset delta
        key_length, position = read_varint(records, position)
        if position > end:
            raise _invalid_record(f"record {index} ends inside its header")
        if key_length < 0:
            return index
        position = end
    if position != size:
        raise _invalid_record(f"{size - position} bytes follow the batch's {records_count} records")
    return None


def read_varint(data, position: int) -> tuple[int, int]:
    """Kafka's zigzag varint (or varlong) at ``position``: (value, position after it)."""
    raw = shift = 0
    for offset in range(_VARLONG_BYTES_MAX):
        if position + offset >= len(data):
            break
        byte = data[position + offset]
        raw |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return (raw >> 1) ^ -(raw & 1), position + offset + 1
        shift += 7
    raise _invalid_record(f"malformed varint at byte {position} of a batch's records")
