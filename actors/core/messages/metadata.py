"""Metadata (API key 3): brokers, topics, partition leaders and ISRs, from a broker's cache.

raykafka brokers are Ray actors, not sockets: ``host`` carries the broker actor's name in the
cluster's Ray namespace and ``port`` is 0. Clients route by ``node_id`` and look the actor up by
that name.
"""
from __future__ import annotations

from typing import ClassVar

from actors.core.errors import ErrorCode
from actors.core.messages._base import NO_EPOCH, NO_LEADER, message


@message
class MetadataRequest:
    API_KEY: ClassVar[int] = 3
    topics: tuple[str, ...] | None = None  # None asks for every topic
    allow_auto_topic_creation: bool = False
    # The Kafka listener the request came in on: brokers are then described by their endpoint on
    # that listener (and those without one are left out), as Kafka answers. None describes them
    # by actor name, for raykafka's own clients.
    listener_name: str | None = None
    # The version a Kafka client sent: v0 lists only the live replicas and ISR members and says
    # REPLICA_NOT_AVAILABLE when some are not (Kafka's errorUnavailableEndpoints); later versions
    # list them all. None (raykafka's own clients) answers as the later versions.
    request_api_version: int | None = None


@message
class MetadataResponseBroker:
    node_id: int
    host: str
    port: int = 0
    rack: str | None = None


@message
class MetadataResponsePartition:
    partition_index: int
    error_code: ErrorCode = ErrorCode.NONE
    leader_id: int = NO_LEADER
    leader_epoch: int = NO_EPOCH
    replica_nodes: tuple[int, ...] = ()
    isr_nodes: tuple[int, ...] = ()
    offline_replicas: tuple[int, ...] = ()


@message
class MetadataResponseTopic:
    name: str
    error_code: ErrorCode = ErrorCode.NONE
    is_internal: bool = False
    partitions: tuple[MetadataResponsePartition, ...] = ()


@message
class MetadataResponse:
    brokers: tuple[MetadataResponseBroker, ...]
    topics: tuple[MetadataResponseTopic, ...]
    cluster_id: str | None = None
    controller_id: int = -1
    throttle_time_ms: int = 0
