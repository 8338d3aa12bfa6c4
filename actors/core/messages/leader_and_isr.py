"""LeaderAndIsr (API key 4): the controller tells a broker which replicas it leads or follows.

A broker applies a partition state only if its ``leader_epoch`` is newer than the one it holds;
the whole request is refused with ``STALE_CONTROLLER_EPOCH`` if ``controller_epoch`` is older
than the newest the broker has seen, and with ``STALE_BROKER_EPOCH`` if ``broker_epoch`` names
an earlier incarnation of the receiving broker. Followers find their leaders by
``live_leaders``: ``host_name`` carries the leader broker actor's name and ``port`` is 0.
"""
from __future__ import annotations

from typing import ClassVar

from actors.core.errors import ErrorCode
from actors.core.messages._base import message


@message
class LeaderAndIsrPartitionState:
    partition_index: int
    controller_epoch: int  # the epoch of the controller that last changed this partition's state
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]  # a subset of replicas; contains leader unless leader is NO_LEADER
    partition_epoch: int  # Kafka's zk_version: bumped on every leader or ISR change
    replicas: tuple[int, ...]
    adding_replicas: tuple[int, ...] = ()
    removing_replicas: tuple[int, ...] = ()
    is_new: bool = False  # True when the replica is being created, so no log may exist yet


@message
class LeaderAndIsrTopicState:
    topic_name: str
    partition_states: tuple[LeaderAndIsrPartitionState, ...]
    # The topic's configuration overrides as (key, value) pairs. Not in Kafka's schema: a Kafka
    # broker reads them from ZooKeeper's /config/topics; raykafka brokers have no ZooKeeper, so the
    # controller sends them along with the partitions that need them.
    topic_config: tuple[tuple[str, str], ...] = ()


@message
class LeaderAndIsrLiveLeader:
    broker_id: int
    host_name: str  # the broker actor's name in the cluster's Ray namespace
    port: int = 0


@message
class LeaderAndIsrRequest:
    API_KEY: ClassVar[int] = 4
    controller_id: int
    controller_epoch: int
    broker_epoch: int  # the receiving broker's epoch, as the controller knows it
    topic_states: tuple[LeaderAndIsrTopicState, ...]
    live_leaders: tuple[LeaderAndIsrLiveLeader, ...] = ()


@message
class LeaderAndIsrPartitionError:
    topic_name: str
    partition_index: int
    error_code: ErrorCode = ErrorCode.NONE


@message
class LeaderAndIsrResponse:
    error_code: ErrorCode = ErrorCode.NONE
    partition_errors: tuple[LeaderAndIsrPartitionError, ...] = ()
