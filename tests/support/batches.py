"""Record batches as a Kafka client would build them, with the header fields a validation test sets."""
from __future__ import annotations

import struct

from aiokafka.record.default_records import DefaultRecordBatchBuilder
from crc32c import crc32c

NONE, GZIP, SNAPPY, LZ4, ZSTD = range(5)  # the codec ids of a v2 batch's attributes
TIMESTAMP_MS = 1_700_000_000_000


def client_batch(values=(b"v",), keys=None, *, codec: int = NONE, producer_id: int = -1, base_sequence: int = -1,
                 control: bool = False, magic: int | None = None) -> bytes:
    """One v2 batch of ``values``, keyed ``k0, k1, ...`` unless ``keys`` says otherwise (None for
    a keyless record). ``control`` sets the control flag with a CRC that matches it; ``magic``
    overwrites the magic byte (the CRC does not cover it)."""
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=codec, is_transactional=0, producer_id=producer_id,
                                        producer_epoch=0 if producer_id >= 0 else -1, base_sequence=base_sequence,
                                        batch_size=1 << 20)
    for index, value in enumerate(values):
        key = keys[index] if keys is not None else b"k%d" % index
        assert builder.append(index, TIMESTAMP_MS, key, value, []) is not None
    data = bytearray(builder.build())
    if control:
        (attributes,) = struct.unpack_from(">h", data, 21)
        struct.pack_into(">h", data, 21, attributes | 0x20)
        struct.pack_into(">I", data, 17, crc32c(bytes(data[21:])))
    if magic is not None:
        data[16] = magic
    return bytes(data)
