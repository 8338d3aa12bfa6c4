"""The consumer protocol's bytes: what a consumer puts in JoinGroup's protocol metadata and what
the leader puts in SyncGroup's assignments (Kafka's ``ConsumerProtocol``, byte for byte).

The coordinator treats both as opaque; only consumers read them. Layout (Kafka 2.4, all
big-endian; ``string`` is an int16 length then UTF-8, ``bytes`` an int32 length (-1 for null) then
the bytes, ``array`` an int32 count then the elements):

- Subscription: ``version int16`` (1), ``topics array<string>``, ``user_data bytes``, and from
  version 1 ``owned_partitions array<(topic string, partitions array<int32>)>`` (KIP-429).
- Assignment: ``version int16`` (1), ``assigned_partitions array<(topic string, partitions
  array<int32>)>``, ``user_data bytes``.

Version 0 (without owned partitions) is read as well. As in Kafka, a reader accepts a higher
version than it knows and ignores the fields it does not know (forward compatibility).
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from actors.core.group.wire import Reader, SchemaError, Writer

TopicPartition = tuple[str, int]

CONSUMER_PROTOCOL_TYPE = "consumer"
CONSUMER_PROTOCOL_VERSION = 1  # Kafka 2.4's ConsumerProtocol.CONSUMER_PROTOCOL_V1


@dataclass(frozen=True, slots=True, kw_only=True)
class Subscription:
    """One member's subscription: topics sorted and distinct, owned partitions sorted and distinct."""

    topics: tuple[str, ...]
    user_data: bytes | None = None
    owned_partitions: tuple[TopicPartition, ...] = ()

    @staticmethod
    def of(topics: Iterable[str], user_data: bytes | None = None,
           owned_partitions: Iterable[TopicPartition] = ()) -> Subscription:
        return Subscription(topics=tuple(sorted(set(topics))), user_data=user_data,
                            owned_partitions=tuple(sorted(set(owned_partitions))))


@dataclass(frozen=True, slots=True, kw_only=True)
class Assignment:
    partitions: tuple[TopicPartition, ...]  # sorted by (topic, partition)
    user_data: bytes | None = None


def write_topic_partitions(writer: Writer, partitions: Iterable[TopicPartition]) -> None:
    """``array<(topic, array<int32>)>`` grouped by topic, topics and partitions in sorted order."""
    by_topic: dict[str, list[int]] = {}
    for topic, partition in sorted(set(partitions)):
        by_topic.setdefault(topic, []).append(partition)
    writer.array_length(len(by_topic))
    for topic, indexes in by_topic.items():
        writer.string(topic).array_length(len(indexes))
        for index in indexes:
            writer.int32(index)


def read_topic_partitions(reader: Reader) -> tuple[TopicPartition, ...]:
    partitions = []
    for _ in range(reader.array_length()):
        topic = reader.string()
        partitions += [(topic, reader.int32()) for _ in range(reader.array_length())]
    return tuple(sorted(set(partitions)))


def _read_version(reader: Reader) -> int:
    version = reader.int16()
    if version < 0:
        raise SchemaError(f"consumer protocol version {version}")
    return version


def encode_subscription(subscription: Subscription, version: int = CONSUMER_PROTOCOL_VERSION) -> bytes:
    assert version in (0, 1), f"cannot write consumer protocol version {version}"
    writer = Writer().int16(version).array_length(len(subscription.topics))
    for topic in subscription.topics:
        writer.string(topic)
    writer.bytes(subscription.user_data)
    if version >= 1:
        write_topic_partitions(writer, subscription.owned_partitions)
    return writer.build()


def decode_subscription(data: bytes) -> Subscription:
    """Raises ``SchemaError`` if ``data`` is not a subscription."""
    reader = Reader(data)
    version = _read_version(reader)
    topics = [reader.string() for _ in range(reader.array_length())]
    user_data = reader.bytes()
    owned = read_topic_partitions(reader) if version >= 1 else ()
    return Subscription(topics=tuple(sorted(set(topics))), user_data=user_data, owned_partitions=owned)


def encode_assignment(assignment: Assignment, version: int = CONSUMER_PROTOCOL_VERSION) -> bytes:
    assert version in (0, 1), f"cannot write consumer protocol version {version}"
    writer = Writer().int16(version)
    write_topic_partitions(writer, assignment.partitions)
    return writer.bytes(assignment.user_data).build()


def decode_assignment(data: bytes) -> Assignment:
    """Raises ``SchemaError`` on undecodable input, except that an empty byte string (what the
    coordinator hands a member the leader left out) reads as an empty assignment, where Kafka's
    consumer would fail to parse it."""
    if not data:
        return Assignment(partitions=())
    reader = Reader(data)
    _read_version(reader)
    partitions = read_topic_partitions(reader)
    return Assignment(partitions=partitions, user_data=reader.bytes())
