"""AlterPartitionReassignments (API key 45) and ListPartitionReassignments (API key 46), KIP-455.

An admin client asks the controller to move a partition's replicas to ``replicas`` (or, with
``replicas`` None, to cancel a reassignment in progress), and lists the reassignments in progress
with the replicas being added and removed. Per-partition errors follow Kafka's controller:
``UNKNOWN_TOPIC_OR_PARTITION`` for a partition it does not know, ``INVALID_REPLICA_ASSIGNMENT``
for an empty list, a broker named twice or a broker that is not registered,
``NO_REASSIGNMENT_IN_PROGRESS`` for a cancellation with nothing to cancel, and, when v1's
``allow_replication_factor_change`` is false (KIP-860), ``INVALID_REPLICATION_FACTOR`` for a target
of another size than the partition's replicas. A stock client sends either to any broker, which
forwards it to the controller (``forward_id``, raykafka's own field, as ElectLeaders).
"""
from __future__ import annotations

from typing import ClassVar

from actors.core.errors import ErrorCode
from actors.core.messages._base import message


@message
class ReassignablePartition:
    partition_index: int
    replicas: tuple[int, ...] | None = None  # None cancels the partition's reassignment


@message
class ReassignableTopic:
    name: str
    partitions: tuple[ReassignablePartition, ...]


@message
class AlterPartitionReassignmentsRequest:
    API_KEY: ClassVar[int] = 45
    topics: tuple[ReassignableTopic, ...]
    timeout_ms: int = 60000
    allow_replication_factor_change: bool = True  # v1 (KIP-860); v0 allows it
    forward_id: int = 0


@message
class ReassignablePartitionResponse:
    partition_index: int
    error_code: ErrorCode = ErrorCode.NONE
    error_message: str | None = None


@message
class ReassignableTopicResponse:
    name: str
    partitions: tuple[ReassignablePartitionResponse, ...]


@message
class AlterPartitionReassignmentsResponse:
    responses: tuple[ReassignableTopicResponse, ...]
    error_code: ErrorCode = ErrorCode.NONE
    error_message: str | None = None
    throttle_time_ms: int = 0
    allow_replication_factor_change: bool = True  # v1 echoes the request's


@message
class ListPartitionReassignmentsTopics:
    name: str
    partition_indexes: tuple[int, ...]


@message
class ListPartitionReassignmentsRequest:
    API_KEY: ClassVar[int] = 46
    topics: tuple[ListPartitionReassignmentsTopics, ...] | None = None  # None: every reassignment
    timeout_ms: int = 60000
    forward_id: int = 0


@message
class OngoingPartitionReassignment:
    partition_index: int
    replicas: tuple[int, ...]
    adding_replicas: tuple[int, ...]
    removing_replicas: tuple[int, ...]


@message
class OngoingTopicReassignment:
    name: str
    partitions: tuple[OngoingPartitionReassignment, ...]


@message
class ListPartitionReassignmentsResponse:
    topics: tuple[OngoingTopicReassignment, ...]
    error_code: ErrorCode = ErrorCode.NONE
    error_message: str | None = None
    throttle_time_ms: int = 0
