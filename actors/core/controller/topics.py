"""Topic validation and Kafka's rack-unaware replica assignment (``AdminUtils.assignReplicasToBrokers``).

Kafka spreads leaders round-robin over the brokers from a start index, and places each
partition's followers at a shift from its leader that grows by one every time the round-robin
wraps, so that replicas of consecutive partitions do not always land on the same broker pairs.
The start index and initial shift are random in Kafka; here the caller passes them in (the
controller draws them from its seeded random source), so tests can pin them.
"""
from __future__ import annotations

from actors.core.errors import ErrorCode, KafkaProtocolError

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


def assign_replicas_to_brokers(*, num_partitions: int, replication_factor: int, brokers: list[int],
                               start_index: int = 0, next_replica_shift: int = 0) -> dict[int, list[int]]:
    """Partition index -> replica list, leader first. Raises Kafka's errors for impossible asks."""
    if not isinstance(num_partitions, int) or num_partitions <= 0:
        raise KafkaProtocolError(ErrorCode.INVALID_PARTITIONS, "number of partitions must be larger than 0")
    if not isinstance(replication_factor, int) or replication_factor <= 0:
        raise KafkaProtocolError(ErrorCode.INVALID_REPLICATION_FACTOR,
                                 "replication factor must be larger than 0")
    if replication_factor > len(brokers):
        raise KafkaProtocolError(ErrorCode.INVALID_REPLICATION_FACTOR,
                                 f"replication factor: {replication_factor} larger than available "
                                 f"brokers: {len(brokers)}")
    ordered = sorted(brokers)
    count = len(ordered)
    start_index %= count
    shift = next_replica_shift % count
    assignment: dict[int, list[int]] = {}
    for partition in range(num_partitions):
        if partition > 0 and (partition + start_index) % count == 0:
            shift += 1
        first_index = (partition + start_index) % count
        replicas = [ordered[first_index]]
        for j in range(replication_factor - 1):
            replicas.append(ordered[_replica_index(first_index, shift, j, count)])
        assignment[partition] = replicas
    return assignment


def _replica_index(first_index: int, shift: int, replica: int, count: int) -> int:
    step = 1 + (shift + replica) % (count - 1)
    return (first_index + step) % count
