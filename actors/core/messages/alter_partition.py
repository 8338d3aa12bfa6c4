"""AlterPartition (API key 56): a partition leader asks the controller to change its ISR.

The leader proposes ``new_isr`` (KIP-497) instead of writing it to ZooKeeper itself, and keeps
using the old ISR for the high watermark until the controller answers. The controller accepts
only if ``leader_epoch`` and ``partition_epoch`` match its own state (else ``FENCED_LEADER_EPOCH``
or ``INVALID_UPDATE_VERSION``) and ``broker_epoch`` is the leader's current one (else
``STALE_BROKER_EPOCH``); it answers with the partition state it now holds, whose
``partition_epoch`` the leader must use in its next proposal.
"""
from __future__ import annotations

from typing import ClassVar

from actors.core.errors import ErrorCode
from actors.core.messages._base import NO_EPOCH, NO_LEADER, message


@message
class AlterPartitionPartitionData:
    partition_index: int
    leader_epoch: int
    new_isr: tuple[int, ...]  # must contain the leader; a subset of the partition's replicas
    partition_epoch: int  # the partition epoch the leader last saw; the controller's must match


@message
class AlterPartitionTopicData:
    topic_name: str
    partitions: tuple[AlterPartitionPartitionData, ...]


@message
class AlterPartitionRequest:
    API_KEY: ClassVar[int] = 56
    broker_id: int
    broker_epoch: int
    topics: tuple[AlterPartitionTopicData, ...]


@message
class AlterPartitionResponsePartitionData:
    partition_index: int
    error_code: ErrorCode = ErrorCode.NONE
    leader_id: int = NO_LEADER
    leader_epoch: int = NO_EPOCH
    isr: tuple[int, ...] = ()
    partition_epoch: int = -1


@message
class AlterPartitionResponseTopicData:
    topic_name: str
    partitions: tuple[AlterPartitionResponsePartitionData, ...]


@message
class AlterPartitionResponse:
    error_code: ErrorCode = ErrorCode.NONE
    topics: tuple[AlterPartitionResponseTopicData, ...] = ()
    throttle_time_ms: int = 0
