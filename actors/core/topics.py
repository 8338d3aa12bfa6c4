"""Topic names every room of the core shares: Kafka's ``org.apache.kafka.common.internals.Topic``.

Theory of operation. The broker answers Metadata with ``is_internal`` for the internal topics and
refuses a client's Produce to them; the replica manager tells the group coordinator when it gains
or loses a partition of the offsets topic; the controller and the broker's topic auto-creation
check a new name with ``validate_topic_name``; the group coordinator writes its state to the
offsets topic. Each reads the names and the rule from here, so they cannot drift apart.
"""
from __future__ import annotations

from actors.core.errors import ErrorCode, KafkaProtocolError

OFFSETS_TOPIC = "__consumer_offsets"  # Kafka's GROUP_METADATA_TOPIC_NAME
INTERNAL_TOPICS = frozenset({OFFSETS_TOPIC})
TOPIC_NAME_LENGTH_MAX = 249
_LEGAL_CHARACTERS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")


def validate_topic_name(name: object) -> None:
    """Kafka's ``Topic.validate``: 1-249 characters of ``[a-zA-Z0-9._-]``, not '.' or '..'."""
    if not isinstance(name, str) or not name:
        raise KafkaProtocolError(ErrorCode.INVALID_TOPIC_EXCEPTION, "topic name is empty")
    if name in (".", ".."):
        raise KafkaProtocolError(ErrorCode.INVALID_TOPIC_EXCEPTION, f"topic name cannot be {name!r}")
    if len(name) > TOPIC_NAME_LENGTH_MAX:
        raise KafkaProtocolError(ErrorCode.INVALID_TOPIC_EXCEPTION,
                                 f"topic name is longer than {TOPIC_NAME_LENGTH_MAX} characters")
    illegal = sorted(set(name) - _LEGAL_CHARACTERS)
    if illegal:
        raise KafkaProtocolError(ErrorCode.INVALID_TOPIC_EXCEPTION,
                                 f"topic name {name!r} has illegal characters {''.join(illegal)!r}")


__all__ = ["INTERNAL_TOPICS", "OFFSETS_TOPIC", "TOPIC_NAME_LENGTH_MAX", "validate_topic_name"]
