"""BrokerRegistration (API key 62): a starting broker registers with the controller (KIP-631).

It stands in for ZooKeeper's ephemeral broker znode: the controller answers with a fresh
``broker_epoch``, which every later control request to this broker and every AlterPartition
and heartbeat from it must carry. ``incarnation_id`` is unique per broker process, so a restart
under the same ``broker_id`` is told apart from a retried registration
(``DUPLICATE_BROKER_REGISTRATION`` if another live incarnation holds the id). Adapted from
Kafka: instead of listeners, ``host`` carries the broker actor's name in the Ray namespace.
``log_dirs`` holds the broker's log directory ids (KIP-858; one directory per broker here): a
broker that registers with a directory id other than its last one lost its data.
"""
from __future__ import annotations

from typing import ClassVar

from actors.core.errors import ErrorCode
from actors.core.messages._base import message


@message
class BrokerEndpoint:
    """One of a broker's Kafka listeners, as ``advertised.listeners`` names it: what stock Kafka
    clients connect to (raykafka's own clients reach the broker actor through Ray instead)."""
    name: str  # the listener name, e.g. "PLAINTEXT"
    host: str
    port: int  # 1..65535
    security_protocol: str = "PLAINTEXT"


@message
class BrokerRegistrationRequest:
    API_KEY: ClassVar[int] = 62
    broker_id: int
    cluster_id: str  # a mismatch is INCONSISTENT_CLUSTER_ID
    incarnation_id: str  # a UUID string, new for every broker process
    host: str  # the broker actor's name in the cluster's Ray namespace
    rack: str | None = None
    log_dirs: tuple[str, ...] = ()  # directory ids from meta.properties
    listeners: tuple[BrokerEndpoint, ...] = ()  # the broker's advertised Kafka listeners


@message
class BrokerRegistrationResponse:
    error_code: ErrorCode = ErrorCode.NONE
    broker_epoch: int = -1  # -1 unless error_code is NONE
    throttle_time_ms: int = 0
