"""Kafka's default partitioner: murmur2 of the key, or sticky batches for records without one.

A keyed record goes to ``toPositive(murmur2(key)) % partitions``, so the same key lands on the
same partition as with Kafka's Java producer. A record without a key sticks to one partition
until that partition's batch is sent, then moves on (KIP-480's sticky partitioner).
"""
from __future__ import annotations

import random

from kafka.partitioner.default import murmur2


def partition_for_key(key: bytes, num_partitions: int) -> int:
    assert num_partitions > 0
    return (murmur2(key) & 0x7FFFFFFF) % num_partitions


class StickyPartitioner:
    def __init__(self, seed: int | None = None) -> None:
        self._random = random.Random(seed)
        self._sticky: dict[str, int] = {}

    def partition(self, topic: str, key: bytes | None, num_partitions: int) -> int:
        if key is not None:
            return partition_for_key(key, num_partitions)
        current = self._sticky.get(topic)
        if current is None or current >= num_partitions:
            current = self._random.randrange(num_partitions)
            self._sticky[topic] = current
        return current

    def on_new_batch(self, topic: str, previous: int, num_partitions: int) -> None:
        """The sticky partition's batch was completed: pick another partition for keyless records."""
        if self._sticky.get(topic) == previous and num_partitions > 1:
            choice = self._random.randrange(num_partitions - 1)
            self._sticky[topic] = choice if choice < previous else choice + 1
