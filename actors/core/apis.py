"""The one table of the APIs raykafka serves: what a request is, who serves it, and which code runs.

Theory of operation. Each ``Api`` names one API: Kafka's API key (its request type's
``API_KEY``; None for raykafka's own requests between its actors, such as a fetcher's append to its
broker), the name Kafka's metrics
give it (``RequestMetrics``' ``request`` tag), the request type it is parsed as, the versions the
wire listeners serve (None: not served to stock clients), and, per actor kind that serves it, the
handler: a plain function ``(core, request id, request, now ms) -> effects`` on that kind's core
(``BrokerCore``, ``ControllerCore``, ``GroupCoordinatorCore``), written as a reference to the method
that does the work, so a reader goes from here to the code in one hop.

Everything reads this table: the wire listener (API key -> request type -> the kind to ask), the
drivers (``Driver.handle`` dispatches by ``type(request)``; a type the driver's kind does not
serve is refused with ``INVALID_REQUEST`` before any core sees it, as a request that does not
parse is), the Ray shells (one ``handle(request)`` method per kind), the simulator and the
clients. Adding an API is one entry here plus its handler (and, when its wire conversion is not by
field name, a codec in ``actors/wire/apis.py``).

The same request type may be served by more than one kind (CreateTopics: the broker forwards a
client's to the controller, which serves it); the first kind listed is the one the wire and the
clients ask. The APIs the listener answers alone (ApiVersions, the SASL pair, DescribeConfigs)
are listed with ``LISTENER`` and no request type, so that their versions live here too.
"""
from __future__ import annotations

import enum
import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from actors.core.broker.broker_core import BrokerCore
from actors.core.controller.controller import ControllerCore
from actors.core.effects import Effect
from actors.core.fetcher.follower_messages import FollowerAppendRequest, FollowerTruncateRequest
from actors.core.group.coordinator import GroupCoordinatorCore
from actors.core.group.messages import DeleteGroupsRequest, InternalProduceRequest
from actors.core.messages.allocate_producer_ids import AllocateProducerIdsRequest
from actors.core.messages.alter_configs import AlterConfigsRequest
from actors.core.messages.alter_partition import AlterPartitionRequest
from actors.core.messages.broker_heartbeat import BrokerHeartbeatRequest
from actors.core.messages.broker_registration import BrokerRegistrationRequest
from actors.core.messages.controlled_shutdown import ControlledShutdownRequest
from actors.core.messages.create_partitions import CreatePartitionsRequest
from actors.core.messages.create_topics import CreateTopicsRequest
from actors.core.messages.delete_records import DeleteRecordsRequest
from actors.core.messages.delete_topics import DeleteTopicsRequest
from actors.core.messages.describe_cluster import DescribeClusterRequest
from actors.core.messages.describe_groups import DescribeGroupsRequest
from actors.core.messages.describe_log_dirs import DescribeLogDirsRequest
from actors.core.messages.elect_leaders import ElectLeadersRequest
from actors.core.messages.fetch import FetchRequest
from actors.core.messages.find_coordinator import FindCoordinatorRequest
from actors.core.messages.heartbeat import HeartbeatRequest
from actors.core.messages.incremental_alter_configs import IncrementalAlterConfigsRequest
from actors.core.messages.init_producer_id import InitProducerIdRequest
from actors.core.messages.join_group import JoinGroupRequest
from actors.core.messages.leader_and_isr import LeaderAndIsrRequest
from actors.core.messages.leave_group import LeaveGroupRequest
from actors.core.messages.list_groups import ListGroupsRequest
from actors.core.messages.list_offsets import ListOffsetsRequest
from actors.core.messages.metadata import MetadataRequest
from actors.core.messages.offset_commit import OffsetCommitRequest
from actors.core.messages.offset_delete import OffsetDeleteRequest
from actors.core.messages.offset_fetch import OffsetFetchRequest
from actors.core.messages.offset_for_leader_epoch import OffsetForLeaderEpochRequest
from actors.core.messages.partition_reassignments import (
    AlterPartitionReassignmentsRequest, ListPartitionReassignmentsRequest,
)
from actors.core.messages.produce import ProduceRequest
from actors.core.messages.stop_replica import StopReplicaRequest
from actors.core.messages.sync_group import SyncGroupRequest
from actors.core.messages.update_metadata import UpdateMetadataRequest
from actors.core.replica.replica_manager import ReplicaManager


class ActorKind(enum.Enum):
    BROKER = "broker"
    CONTROLLER = "controller"
    GROUP_COORDINATOR = "group coordinator"
    LISTENER = "listener"  # answered by the wire listener itself, no core involved


BROKER, CONTROLLER, GROUP_COORDINATOR, LISTENER = (
    ActorKind.BROKER, ActorKind.CONTROLLER, ActorKind.GROUP_COORDINATOR, ActorKind.LISTENER)

# (core, request id, request, now ms) -> the core's effects.
Handler = Callable[[Any, int, Any, int], list[Effect]]


@dataclass(frozen=True)
class Api:
    name: str  # Kafka's metric name for it, snake case (``produce``, ``join_group``)
    key: int | None  # Kafka's API key; None for raykafka's own requests between its actors
    request_type: type | None  # None only for what the listener answers alone
    versions: tuple[int, int] | None = None  # (min, max) served on the wire; None: not on the wire
    handlers: Mapping[ActorKind, Handler] = field(default_factory=dict)

    @property
    def kind(self) -> ActorKind:
        """The kind that the wire and the clients ask (the first listed)."""
        return next(iter(self.handlers), LISTENER)


def _replica(method: Callable[..., list[Effect]]) -> Handler:
    """A ``ReplicaManager`` method as a handler on the broker's core."""
    @functools.wraps(method)  # named as the method, which ``__wrapped__`` leads to
    def handler(core: BrokerCore, request_id: int, request: Any, now_ms: int) -> list[Effect]:
        return method(core.replica_manager, request_id, request, now_ms)
    return handler


def _api(name: str, request_type: type, versions: tuple[int, int] | None = None, **handlers: Handler) -> Api:
    """An API served by the kinds named in ``handlers``; its key is the request type's ``API_KEY``
    (Kafka's ApiKeys), none for raykafka's own requests between its actors."""
    kinds = {"broker": BROKER, "controller": CONTROLLER, "group_coordinator": GROUP_COORDINATOR}
    return Api(name=name, key=getattr(request_type, "API_KEY", None), request_type=request_type, versions=versions,
               handlers=MappingProxyType({kinds[kind]: handler for kind, handler in handlers.items()}))


def _listener_api(name: str, key: int, versions: tuple[int, int]) -> Api:
    """An API the wire listener answers alone, with no request type and no core."""
    return Api(name=name, key=key, request_type=None, versions=versions)


# The versions: see actors/wire/versions.py for why each range is what it is.
APIS: tuple[Api, ...] = (
    # ------------------------------------------------------------------ a client's data APIs
    # Produce v3 is the first carrying v2 record batches.
    _api("produce", ProduceRequest, (3, 12), broker=_replica(ReplicaManager.handle_produce)),
    _api("fetch", FetchRequest, (4, 12), broker=_replica(ReplicaManager.handle_fetch)),
    _api("list_offsets", ListOffsetsRequest, (1, 6), broker=_replica(ReplicaManager.handle_list_offsets)),
    # Kafka 2.4 serves 0-1 (v1 only adds throttling semantics); the leader of each partition answers.
    _api("delete_records", DeleteRecordsRequest, (0, 2), broker=_replica(ReplicaManager.handle_delete_records)),
    _api("metadata", MetadataRequest, (0, 9), broker=BrokerCore.handle_metadata),
    # Flexible only; the brokers on the request's listener and a broker standing in for the controller.
    _api("describe_cluster", DescribeClusterRequest, (0, 2), broker=BrokerCore.handle_describe_cluster),
    _api("find_coordinator", FindCoordinatorRequest, (0, 5),
         broker=lambda core, *step: core.coordinator_finder.handle_find_coordinator(*step)),
    # Idempotent producers; a transactional id is refused.
    _api("init_producer_id", InitProducerIdRequest, (0, 5), broker=BrokerCore.handle_init_producer_id),
    _api("offset_for_leader_epoch", OffsetForLeaderEpochRequest, (2, 4),
         broker=_replica(ReplicaManager.handle_offset_for_leader_epoch)),
    # Each broker answers for its own log directory; v2 is flexible, and kio has no v0 (Kafka 4 dropped it).
    _api("describe_log_dirs", DescribeLogDirsRequest, (1, 4), broker=BrokerCore.handle_describe_log_dirs),
    # ----------------------------------------------------------------------- admin APIs
    # The broker forwards them to the controller and answers once its own metadata agrees.
    _api("create_topics", CreateTopicsRequest, (2, 6),
         broker=lambda core, *step: core.topic_operations.handle_create_topics(*step),
         controller=ControllerCore.handle_create_topics),
    _api("delete_topics", DeleteTopicsRequest, (1, 5),
         broker=lambda core, *step: core.topic_operations.handle_delete_topics(*step),
         controller=ControllerCore.handle_delete_topics),
    # Forwarded to the controller, which continues the topic's assignment or takes the given one; v2 is flexible.
    _api("create_partitions", CreatePartitionsRequest, (0, 3), broker=BrokerCore.handle_create_partitions,
         controller=ControllerCore.handle_create_partitions),
    # Topic resources, and broker resources' dynamic keys (stored and reported: actors/core/broker_configs.py).
    _api("incremental_alter_configs", IncrementalAlterConfigsRequest, (0, 1),
         broker=BrokerCore.handle_incremental_alter_configs,
         controller=ControllerCore.handle_incremental_alter_configs),
    # The whole-set form: the request's configs replace the topic's overrides.
    _api("alter_configs", AlterConfigsRequest, (0, 2), broker=BrokerCore.handle_alter_configs,
         controller=ControllerCore.handle_alter_configs),
    # Preferred and unclean (v1's election_type; v0 is preferred only).
    _api("elect_leaders", ElectLeadersRequest, (0, 2), broker=BrokerCore.handle_elect_leaders,
         controller=ControllerCore.handle_elect_leaders),
    # KIP-455, forwarded to the controller as ElectLeaders is; flexible only (v1: KIP-860's
    # allow_replication_factor_change).
    _api("alter_partition_reassignments", AlterPartitionReassignmentsRequest, (0, 1),
         broker=BrokerCore.handle_alter_partition_reassignments,
         controller=ControllerCore.handle_alter_partition_reassignments),
    _api("list_partition_reassignments", ListPartitionReassignmentsRequest, (0, 0),
         broker=BrokerCore.handle_list_partition_reassignments,
         controller=ControllerCore.handle_list_partition_reassignments),
    # ----------------------------------------------------------------------- group APIs
    _api("offset_commit", OffsetCommitRequest, (2, 9), group_coordinator=GroupCoordinatorCore.handle_offset_commit),
    _api("offset_fetch", OffsetFetchRequest, (1, 7), group_coordinator=GroupCoordinatorCore.handle_offset_fetch),
    _api("join_group", JoinGroupRequest, (0, 9), group_coordinator=GroupCoordinatorCore.handle_join_group),
    _api("heartbeat", HeartbeatRequest, (0, 4), group_coordinator=GroupCoordinatorCore.handle_heartbeat),
    _api("leave_group", LeaveGroupRequest, (0, 5), group_coordinator=GroupCoordinatorCore.handle_leave_group),
    _api("sync_group", SyncGroupRequest, (0, 5), group_coordinator=GroupCoordinatorCore.handle_sync_group),
    _api("describe_groups", DescribeGroupsRequest, (0, 5),
         group_coordinator=GroupCoordinatorCore.handle_describe_groups),
    _api("list_groups", ListGroupsRequest, (0, 4), group_coordinator=GroupCoordinatorCore.handle_list_groups),
    # Each group's coordinator answers for it (NOT_COORDINATOR for a group it does not own).
    _api("delete_groups", DeleteGroupsRequest, (0, 2), group_coordinator=GroupCoordinatorCore.handle_delete_groups),
    # KIP-496 (Kafka 2.4): a group's offsets of topics it does not consume; v0 only.
    _api("offset_delete", OffsetDeleteRequest, (0, 0), group_coordinator=GroupCoordinatorCore.handle_offset_delete),
    # ------------------------------------------------------------- the controller's requests
    # Parked until the broker has registered (``BrokerCore._control``).
    _api("leader_and_isr", LeaderAndIsrRequest, broker=BrokerCore.handle_leader_and_isr),
    _api("stop_replica", StopReplicaRequest, broker=BrokerCore.handle_stop_replica),
    _api("update_metadata", UpdateMetadataRequest, broker=BrokerCore.handle_update_metadata),
    # ---------------------------------------------------------------- brokers' requests to the controller
    _api("controlled_shutdown", ControlledShutdownRequest, controller=ControllerCore.handle_controlled_shutdown),
    _api("alter_partition", AlterPartitionRequest, controller=ControllerCore.handle_alter_partition),
    _api("broker_registration", BrokerRegistrationRequest, controller=ControllerCore.handle_broker_registration),
    _api("broker_heartbeat", BrokerHeartbeatRequest, controller=ControllerCore.handle_broker_heartbeat),
    _api("allocate_producer_ids", AllocateProducerIdsRequest,
         controller=ControllerCore.handle_allocate_producer_ids),
    # ---------------------------------------------------------------- raykafka's own requests
    # A follower's fetcher hands its broker what the leader answered, or a truncation.
    _api("follower_append", FollowerAppendRequest, broker=_replica(ReplicaManager.handle_follower_append)),
    _api("follower_truncate", FollowerTruncateRequest,
         broker=_replica(ReplicaManager.handle_follower_truncate)),
    # The group coordinator's appends to __consumer_offsets: its own type, so that a client's
    # ProduceRequest can never write an internal topic (INVALID_TOPIC_EXCEPTION).
    _api("internal_produce", InternalProduceRequest, broker=BrokerCore.handle_internal_produce),
    # ------------------------------------------------------- answered by the listener alone
    # SaslHandshake and SaslAuthenticate answer ILLEGAL_SASL_STATE: listeners are PLAINTEXT.
    _listener_api("sasl_handshake", 17, (0, 1)),
    # Clients send it first (KIP-511).
    _listener_api("api_versions", 18, (0, 4)),
    _listener_api("describe_configs", 32, (1, 4)),  # read-only
    _listener_api("sasl_authenticate", 36, (0, 2)),
)

BY_KEY: Mapping[int, Api] = MappingProxyType({api.key: api for api in APIS if api.key is not None})
BY_REQUEST_TYPE: Mapping[type, Api] = MappingProxyType(
    {api.request_type: api for api in APIS if api.request_type is not None})
# API key -> (min version, max version): what ApiVersions advertises and the listeners serve.
WIRE_VERSIONS: Mapping[int, tuple[int, int]] = MappingProxyType(
    {api.key: api.versions for api in APIS if api.key is not None and api.versions is not None})
assert len(BY_KEY) == sum(api.key is not None for api in APIS), "an API key appears twice"
assert len(BY_REQUEST_TYPE) == sum(api.request_type is not None for api in APIS), "a request type appears twice"


def api_of(request: Any) -> Api | None:
    """The API a request of this type belongs to, or None for no API's request."""
    return BY_REQUEST_TYPE.get(type(request))


def handler_for(kind: ActorKind, request: Any) -> tuple[Api, Handler] | None:
    """The API and the ``kind`` core's handler for ``request``; None when that kind serves no such request."""
    api = BY_REQUEST_TYPE.get(type(request))
    if api is None or kind not in api.handlers:
        return None
    return api, api.handlers[kind]

