"""Java's ``String.hashCode`` and Kafka's ``Utils.abs``, for placements that must match Kafka's.

Kafka picks a partition's replica fetcher by ``abs(31 * topic.hashCode() + partition) %
num.replica.fetchers`` and a group's ``__consumer_offsets`` partition by
``abs(groupId.hashCode()) % offsets.topic.num.partitions``.
"""
from __future__ import annotations


def _to_int32(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value >= (1 << 31) else value


def java_string_hash(text: str) -> int:
    """``String.hashCode``: sum of UTF-16 code units times 31^(n-1-i), as a signed 32-bit int."""
    result = 0
    for unit in text.encode("utf-16-be").hex(" ", 2).split(" ") if text else ():
        result = (31 * result + int(unit, 16)) & 0xFFFFFFFF
    return _to_int32(result)


def kafka_abs(value: int) -> int:
    """Kafka's ``Utils.abs``: ``Integer.MIN_VALUE`` maps to 0 instead of overflowing."""
    return 0 if value == -(1 << 31) else abs(value)


def fetcher_id_for(topic: str, partition: int, num_fetchers: int) -> int:
    assert num_fetchers > 0
    return kafka_abs(_to_int32(31 * java_string_hash(topic) + partition)) % num_fetchers
