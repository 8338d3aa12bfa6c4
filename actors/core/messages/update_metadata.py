"""UpdateMetadata (API key 6): the controller refreshes every broker's metadata cache.

Brokers answer Metadata and FindCoordinator requests from this cache, so it carries every
partition's leader and ISR and every live broker. ``host`` carries the broker actor's name in
the cluster's Ray namespace and ``port`` is 0. The request is fenced by ``controller_epoch``
(``STALE_CONTROLLER_EPOCH``) and ``broker_epoch`` (``STALE_BROKER_EPOCH``).
"""
from __future__ import annotations

from typing import ClassVar

from actors.core.errors import ErrorCode
from actors.core.messages._base import message
from actors.core.messages.broker_registration import BrokerEndpoint


@message
class UpdateMetadataPartitionState:
    partition_index: int
    controller_epoch: int
    leader: int  # NO_LEADER while the partition is offline
    leader_epoch: int
    isr: tuple[int, ...]
    partition_epoch: int  # Kafka's zk_version: bumped on every leader or ISR change
    replicas: tuple[int, ...]
    offline_replicas: tuple[int, ...] = ()  # the replicas whose brokers are down; within replicas


@message
class UpdateMetadataTopicState:
    topic_name: str
    partition_states: tuple[UpdateMetadataPartitionState, ...]
    # The topic's whole set of configuration overrides as (key, value) pairs, or None when not
    # sent. Not in Kafka's schema: a Kafka broker learns a config change from ZooKeeper's
    # /config/changes notifications; raykafka brokers have no ZooKeeper, so the controller's
    # UpdateMetadata is the notification, and a broker applies it to its live partitions.
    topic_config: tuple[tuple[str, str], ...] | None = None


@message
class UpdateMetadataBroker:
    id: int
    host: str  # the broker actor's name in the cluster's Ray namespace
    port: int = 0
    rack: str | None = None
    endpoints: tuple[BrokerEndpoint, ...] = ()  # the broker's Kafka listeners, from its registration


@message
class UpdateMetadataRequest:
    API_KEY: ClassVar[int] = 6
    controller_id: int
    controller_epoch: int
    broker_epoch: int  # the receiving broker's epoch, as the controller knows it
    topic_states: tuple[UpdateMetadataTopicState, ...]
    live_brokers: tuple[UpdateMetadataBroker, ...]


@message
class UpdateMetadataResponse:
    error_code: ErrorCode = ErrorCode.NONE
