"""The consumer's record reader (aiokafka's C decoder behind raykafka's header parser) returns
exactly what kafka-python's pure-Python reader returns for the same buffers: keys, values, headers,
timestamps, offsets and leader epochs, from any fetch offset, over bytes or a uint8 array, with a
batch torn off at the end left out; checked on seeded random batches, no Ray."""
from __future__ import annotations

import random

import numpy as np
import pytest
from kafka.record.memory_records import MemoryRecords

from actors.core.log.record_batch import parse_batches, stamp_batch
from actors.codecs.record_batches import BatchBuilder, ConsumerRecord, read_records


def reference_records(topic: str, partition: int, buffer, from_offset: int) -> list[ConsumerRecord]:
    """kafka-python's reader, as raykafka's consumer used it before."""
    if not isinstance(buffer, (bytes, bytearray)):
        buffer = memoryview(buffer).cast("B")
    batches, records = MemoryRecords(buffer), []
    while batches.has_next():
        batch = batches.next_batch()
        if batch.base_offset + batch.last_offset_delta < from_offset:
            continue
        records.extend(ConsumerRecord(topic, partition, r.offset, r.timestamp, r.key, r.value, tuple(r.headers),
                                      batch.leader_epoch) for r in batch if r.offset >= from_offset)
    return records


def random_log(rng: random.Random) -> tuple[bytes, int]:
    """A few stamped batches of random records; returns (bytes, the offset after them)."""
    buffer, base_offset = bytearray(), 0
    for _ in range(rng.randint(1, 5)):
        builder, count = BatchBuilder(batch_size=1 << 20), rng.randint(1, 20)
        for _ in range(count):
            key = None if rng.random() < 0.3 else rng.randbytes(rng.randint(0, 10))
            value = None if rng.random() < 0.1 else rng.randbytes(rng.randint(0, 300))
            headers = [(f"h{j}", None if rng.random() < 0.2 else rng.randbytes(3)) for j in range(rng.randint(0, 2))]
            assert builder.try_append(key, value, rng.randint(0, 2 ** 40), headers)
        batch = bytearray(builder.build())
        stamp_batch(batch, parse_batches(batch)[0], base_offset=base_offset,
                    partition_leader_epoch=rng.randint(0, 5))
        buffer += batch
        base_offset += count
    return bytes(buffer), base_offset


@pytest.mark.parametrize("seed", range(40))
def test_records_read_as_kafka_python_reads_them(seed):
    rng = random.Random(seed)
    log, end_offset = random_log(rng)
    # Whole buffers mostly, sometimes one cut anywhere (a torn last batch, or a torn header).
    buffer = log if rng.random() < 0.6 else log[:rng.randint(0, len(log))]
    from_offset = rng.randint(0, end_offset)
    for form in (buffer, np.frombuffer(buffer, dtype=np.uint8)):
        assert read_records("t", 3, form, from_offset) == reference_records("t", 3, form, from_offset)


def test_a_control_batch_holds_no_records_for_the_application():
    builder = BatchBuilder(batch_size=1 << 20)
    assert builder.try_append(None, b"marker", 0, None)
    control = bytearray(builder.build())
    control[22] |= 0x20  # attributes (bytes 21-22), the control bit; the reader does not check CRCs
    builder = BatchBuilder(batch_size=1 << 20)
    assert builder.try_append(None, b"data", 0, None)
    data = bytearray(builder.build())
    stamp_batch(data, parse_batches(data)[0], base_offset=1, partition_leader_epoch=0)
    assert [r.value for r in read_records("t", 0, bytes(control + data), 0)] == [b"data"]


def test_nothing_is_read_from_an_empty_or_missing_payload():
    assert read_records("t", 0, b"", 0) == []
    assert read_records("t", 0, None, 0) == []
