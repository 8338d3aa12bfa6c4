"""Keyed records land on the partition Kafka's Java producer would pick (murmur2 values from
Kafka's own UtilsTest), and keyless records stick to one partition until its batch is done."""
from __future__ import annotations

import pytest
from kafka.partitioner.default import murmur2

from orchestration.clients.partitioner import StickyPartitioner, partition_for_key

KAFKA_MURMUR2 = [
    (b"21", -973932308),
    (b"foobar", -790332482),
    (b"a-little-bit-long-string", -985981536),
    (b"a-little-bit-longer-string", -1486304829),
    (b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971),
    (b"abc", 479470107),
]


@pytest.mark.parametrize("key,expected", KAFKA_MURMUR2)
def test_murmur2_matches_kafka(key, expected):
    signed = murmur2(key)
    signed = signed - (1 << 32) if signed >= (1 << 31) else signed
    assert signed == expected


@pytest.mark.parametrize("key,expected", KAFKA_MURMUR2)
def test_partition_is_positive_murmur2_modulo_partitions(key, expected):
    assert partition_for_key(key, 7) == (expected & 0x7FFFFFFF) % 7


def test_keyless_records_stick_until_the_batch_is_done_then_move():
    partitioner = StickyPartitioner(seed=3)
    first = partitioner.partition("t", None, 4)
    assert all(partitioner.partition("t", None, 4) == first for _ in range(10))
    partitioner.on_new_batch("t", first, 4)
    assert partitioner.partition("t", None, 4) != first
