"""ElectLeaders (API key 43): ask the controller to run preferred (or unclean) leader elections.

A client sends it to any broker, which forwards it to the controller
(``actors/core/broker/controller_forwarding.py``); ``forward_id`` is raykafka's own field, the
broker's number for the forwarded request (0 in a client's)."""
from __future__ import annotations

from typing import ClassVar

from actors.core.errors import ErrorCode
from actors.core.messages._base import message

PREFERRED_ELECTION = 0
UNCLEAN_ELECTION = 1


@message
class TopicPartitions:
    topic: str
    partitions: tuple[int, ...]


@message
class ElectLeadersRequest:
    API_KEY: ClassVar[int] = 43
    election_type: int = PREFERRED_ELECTION
    topic_partitions: tuple[TopicPartitions, ...] | None = None  # None: every partition
    timeout_ms: int = 60000
    forward_id: int = 0


@message
class PartitionResult:
    partition_id: int
    error_code: ErrorCode = ErrorCode.NONE
    error_message: str | None = None


@message
class ReplicaElectionResult:
    topic: str
    partition_result: tuple[PartitionResult, ...]


@message
class ElectLeadersResponse:
    replica_election_results: tuple[ReplicaElectionResult, ...]
    error_code: ErrorCode = ErrorCode.NONE
    throttle_time_ms: int = 0
