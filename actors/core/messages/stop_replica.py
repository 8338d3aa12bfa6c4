"""StopReplica (API key 5): the controller tells a broker to stop replicating partitions.

Sent when a replica moves off a broker, when a topic is deleted (``delete_partitions`` true, so
the broker also deletes the logs) and to a broker shutting down. The request is fenced by
``controller_epoch`` (``STALE_CONTROLLER_EPOCH``) and ``broker_epoch`` (``STALE_BROKER_EPOCH``).
"""
from __future__ import annotations

from typing import ClassVar

from actors.core.errors import ErrorCode
from actors.core.messages._base import message


@message
class StopReplicaTopic:
    name: str
    partition_indexes: tuple[int, ...]


@message
class StopReplicaRequest:
    API_KEY: ClassVar[int] = 5
    controller_id: int
    controller_epoch: int
    broker_epoch: int  # the receiving broker's epoch, as the controller knows it
    topics: tuple[StopReplicaTopic, ...]
    delete_partitions: bool = False


@message
class StopReplicaPartitionError:
    topic_name: str
    partition_index: int
    error_code: ErrorCode = ErrorCode.NONE


@message
class StopReplicaResponse:
    error_code: ErrorCode = ErrorCode.NONE
    partition_errors: tuple[StopReplicaPartitionError, ...] = ()
