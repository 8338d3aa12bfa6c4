"""Everything a broker process runs, as one sans-I/O core: its replica manager, its lifecycle and
its view of the cluster.

The broker driver (actors/drivers/broker.py) steps this object only. It routes data and control requests to the
``ReplicaManager`` and the controller conversation (registration, heartbeats, controlled
shutdown) to the ``BrokerLifecycle``, and keeps the one fact they share in step: the broker epoch
the controller gave this incarnation, which fences control requests meant for an earlier one.

Until this incarnation knows its broker epoch it cannot tell a request meant for it from one meant
for the process before it (a send thread of the old incarnation may still deliver after a
restart). So control requests that arrive before registration completes are parked and applied,
in arrival order, as soon as the epoch is known. The parking lot holds at most
``PARKED_CONTROL_REQUESTS_MAX``; past that a request is applied at once, unfenced by broker epoch
(still fenced by controller and leader epochs), and the controller's resync after registration
puts the broker right.

The broker answers Metadata (Kafka's ``KafkaApis.handleTopicMetadataRequest``) from its
``MetadataCache``, creating an unknown topic on the way when it may (``TopicAutoCreation``). The
cache is fed by UpdateMetadata once the replica manager accepted it (an older controller's is
refused there, by controller epoch); the replica manager reads it back only through
``partition_leader``.

The broker also keeps its group coordinator's view of the cluster's partitions current, as Kafka's
``KafkaApis.handleUpdateMetadataRequest`` hands the partitions an UpdateMetadata deleted to its
``GroupCoordinator``: an accepted UpdateMetadata that changed the set of partitions in the metadata
cache, or deleted any, yields a ``CoordinatorMetadataUpdate``; ``coordinator_metadata`` answers a
coordinator that (re)starts and asks.
"""
from __future__ import annotations

import zlib
from collections.abc import Callable
from typing import Any

from actors.core.config import KafkaConfig
from actors.core.effects import CoordinatorMetadataUpdate, Effect, LogEvent, Respond
from actors.core.errors import ErrorCode
from actors.core.messages.describe_cluster import DescribeClusterRequest, describe_cluster
from actors.core.group.messages import InternalProduceRequest
from actors.core.log.compression import CompressionCodecs
from actors.core.log.meta_properties import load_or_create_directory_id
from actors.core.log.storage import Storage
from actors.core.messages.allocate_producer_ids import AllocateProducerIdsRequest
from actors.core.messages.alter_partition import AlterPartitionRequest
from actors.core.messages.create_topics import CreateTopicsRequest
from actors.core.messages.delete_topics import DeleteTopicsRequest
from actors.core.messages.alter_configs import AlterConfigsRequest
from actors.core.messages.create_partitions import CreatePartitionsRequest
from actors.core.messages import create_partitions as create_partitions_messages
from actors.core.messages.elect_leaders import ElectLeadersRequest, ElectLeadersResponse
from actors.core.messages.partition_reassignments import (
    AlterPartitionReassignmentsRequest, AlterPartitionReassignmentsResponse, ListPartitionReassignmentsRequest,
    ListPartitionReassignmentsResponse,
)
from actors.core.messages.incremental_alter_configs import IncrementalAlterConfigsRequest
from actors.core.messages.metadata import MetadataRequest
from actors.core.messages.update_metadata import UpdateMetadataRequest
from actors.core.broker.auto_create import TopicAutoCreation
from actors.core.broker.broker_lifecycle import BrokerLifecycle
from actors.core.broker.config_forwarding import ConfigForwarder
from actors.core.broker.controller_forwarding import ControllerForwarder
from actors.core.broker.find_coordinator import CoordinatorFinder
from actors.core.broker.log_dirs import describe_log_dirs
from actors.core.messages.describe_log_dirs import DescribeLogDirsRequest
from actors.core.broker.metadata_cache import LEADER_DURING_DELETE, MetadataCache
from actors.core.replica.log_reads import BatchDigest, read_log, replica_digest
from actors.core.broker.producer_id_manager import ProducerIdManager
from actors.core.replica.replica_manager import ReplicaManager
from actors.core.broker.topic_operations import TopicOperations
from actors.core.topics import OFFSETS_TOPIC


PARKED_CONTROL_REQUESTS_MAX = 10_000


class BrokerCore:
    def __init__(self, *, broker_id: int, storage: Storage, config: KafkaConfig, host: str,
                 incarnation_id: str, cluster_id: str, now_ms: int,
                 coordinator_host: Callable[[int], str] = lambda broker_id: f"group-coordinator-{broker_id}",
                 listeners: tuple = (), codecs: CompressionCodecs | None = None,
                 wall_clock_offset_ms: int = 0, log_dir: str = "") -> None:
        self.broker_id = broker_id
        self.log_dir = log_dir  # the log directory's absolute path, as DescribeLogDirs names it
        self.metadata_cache = MetadataCache(cluster_id)  # Metadata and DescribeCluster name the cluster
        self.topic_auto_creation = TopicAutoCreation(broker_id, config)  # Metadata's auto.create.topics.enable
        # Fetch session ids differ from those of this broker's earlier processes (see fetch_session.py).
        self.replica_manager = ReplicaManager(broker_id=broker_id, storage=storage, config=config,
                                              now_ms=now_ms, fetch_session_seed=zlib.crc32(incarnation_id.encode()),
                                              codecs=codecs, partition_leader=self.metadata_cache.partition_leader,
                                              wall_clock_offset_ms=wall_clock_offset_ms)
        self.directory_id = load_or_create_directory_id(storage, broker_id, incarnation_id)
        self.lifecycle = BrokerLifecycle(broker_id=broker_id, host=host, incarnation_id=incarnation_id,
                                         cluster_id=cluster_id, config=config, now_ms=now_ms,
                                         directory_id=self.directory_id, listeners=listeners)
        self._parked: list[tuple[Callable, int, Any]] = []
        self.coordinator_finder = CoordinatorFinder(broker_id, config, self.metadata_cache, coordinator_host)
        self.producer_ids = ProducerIdManager(broker_id)
        self.config_forwarder = ConfigForwarder(broker_id)
        self.controller_forwarder = ControllerForwarder()
        self.topic_operations = TopicOperations(broker_id, self.metadata_cache)
        # The version of the coordinator's view last handed out: (broker epoch, cache partitions
        # version) at the time the set of partitions last changed.
        self._coordinator_view_version = (-1, 0)

    # --------------------------------------------------------------------------- the lifecycle
    def start(self, now_ms: int) -> list[Effect]:
        return self.lifecycle.start(now_ms)

    def on_controller_response(self, request: Any, response: Any, now_ms: int) -> list[Effect]:
        """The controller's answer to a request this broker sent (an ErrorCode if unreachable)."""
        if isinstance(request, AlterPartitionRequest):
            return self.replica_manager.on_alter_partition_response(request, response, now_ms)
        if isinstance(request, (CreateTopicsRequest, DeleteTopicsRequest)) and request.forward_id:
            return self.topic_operations.on_controller_response(request, response, now_ms)
        if isinstance(request, CreateTopicsRequest):
            # The offsets topic's creation is the coordinator finder's; an auto-created topic's
            # answer needs nothing (the Metadata that asked was answered LEADER_NOT_AVAILABLE).
            if request.topics[0].name == OFFSETS_TOPIC:
                return self.coordinator_finder.on_create_topics_response(response)
            return []
        if isinstance(request, AllocateProducerIdsRequest):
            return self.producer_ids.on_allocate_response(response)
        if isinstance(request, (IncrementalAlterConfigsRequest, AlterConfigsRequest)):
            return self.config_forwarder.on_controller_response(request, response)
        if isinstance(request, (ElectLeadersRequest, CreatePartitionsRequest, AlterPartitionReassignmentsRequest,
                                ListPartitionReassignmentsRequest)):
            return self.controller_forwarder.on_controller_response(request, response)
        effects = self.lifecycle.on_controller_response(request, response, now_ms)
        self.replica_manager.broker_epoch = self.lifecycle.broker_epoch
        if self.lifecycle.broker_epoch >= 0 and self._parked:
            parked, self._parked = self._parked, []
            for handler, request_id, parked_request in parked:
                effects += handler(request_id, parked_request, now_ms)
        return effects

    def _control(self, handler: Callable, request_id: int, request: Any, now_ms: int) -> list[Effect]:
        if self.lifecycle.broker_epoch >= 0:
            return handler(request_id, request, now_ms)
        if len(self._parked) < PARKED_CONTROL_REQUESTS_MAX:
            self._parked.append((handler, request_id, request))
            return []
        return [LogEvent(level="warning", message=f"broker {self.broker_id} has {len(self._parked)} control "
                                                  f"requests parked before registration; applying one unfenced")
                ] + handler(request_id, request, now_ms)

    def begin_controlled_shutdown(self, request_id: int, request: Any, now_ms: int) -> list[Effect]:
        return self.lifecycle.begin_controlled_shutdown(request_id, now_ms)

    def tick(self, now_ms: int) -> list[Effect]:
        return self.replica_manager.tick(now_ms) + self.lifecycle.tick(now_ms) + self.topic_operations.tick(now_ms)

    def on_storage_done(self, work_id: int, error: str | None, now_ms: int) -> list[Effect]:
        """The driver finished a ``StorageWork`` this core returned (``error``: why it failed)."""
        return self.replica_manager.on_storage_done(work_id, error, now_ms)

    @property
    def storage(self) -> Storage:
        return self.replica_manager.storage

    def shutdown(self) -> list[Effect]:
        """A clean shutdown's last work (``ReplicaManager.shutdown``); nothing is stepped after it."""
        return self.replica_manager.shutdown()

    # ------------------------------------------------------------------------------ requests
    def handle_internal_produce(self, request_id: int, request: InternalProduceRequest, now_ms: int) -> list[Effect]:
        """A produce from this broker's own group coordinator, the one writer of internal topics."""
        return self.replica_manager.handle_produce(request_id, request.produce, now_ms, internal_topics_allowed=True)

    def cached_topics(self) -> frozenset[str]:
        return frozenset(self.metadata_cache.topics)

    def handle_init_producer_id(self, request_id: int, request, now_ms: int) -> list[Effect]:
        return self.producer_ids.handle_init_producer_id(request_id, request, self.lifecycle.broker_epoch)

    def handle_incremental_alter_configs(self, request_id: int, request, now_ms: int) -> list[Effect]:
        """Checked here, forwarded to the controller, which stores it and tells every broker."""
        return self.config_forwarder.handle_incremental_alter_configs(request_id, request, self.cached_topics())

    def handle_alter_configs(self, request_id: int, request, now_ms: int) -> list[Effect]:
        """The whole-set form, checked and forwarded as IncrementalAlterConfigs is."""
        return self.handle_incremental_alter_configs(request_id, request, now_ms)

    def handle_elect_leaders(self, request_id: int, request: ElectLeadersRequest, now_ms: int) -> list[Effect]:
        """Forwarded to the controller, which elects and answers at once."""
        return self.controller_forwarder.forward(request_id, request, lambda response: ElectLeadersResponse(
            replica_election_results=(), error_code=response) if isinstance(response, ErrorCode) else response)

    def handle_alter_partition_reassignments(self, request_id: int, request: AlterPartitionReassignmentsRequest,
                                             now_ms: int) -> list[Effect]:
        """Forwarded to the controller, which starts each move and answers at once (the tools'
        --verify then polls ListPartitionReassignments and Metadata until the moves are done)."""
        return self.controller_forwarder.forward(request_id, request, lambda response: AlterPartitionReassignmentsResponse(
            responses=(), error_code=response) if isinstance(response, ErrorCode) else response)

    def handle_list_partition_reassignments(self, request_id: int, request: ListPartitionReassignmentsRequest,
                                            now_ms: int) -> list[Effect]:
        """Forwarded to the controller, which alone knows the reassignments in progress."""
        return self.controller_forwarder.forward(request_id, request, lambda response: ListPartitionReassignmentsResponse(
            topics=(), error_code=response) if isinstance(response, ErrorCode) else response)

    def handle_create_partitions(self, request_id: int, request: CreatePartitionsRequest,
                                 now_ms: int) -> list[Effect]:
        """Forwarded to the controller, which answers once every live broker knows the new partitions."""
        return self.controller_forwarder.forward(request_id, request, lambda response: create_partitions_messages.refused(
            request, response) if isinstance(response, ErrorCode) else response)

    def handle_describe_log_dirs(self, request_id: int, request: DescribeLogDirsRequest,
                                 now_ms: int) -> list[Effect]:
        """This broker's log directory and the size and lag of each partition logged there."""
        return describe_log_dirs(self.replica_manager, self.log_dir, request_id, request)

    def handle_metadata(self, request_id: int, request: MetadataRequest, now_ms: int) -> list[Effect]:
        """Kafka's ``KafkaApis.handleTopicMetadataRequest``: the metadata cache's answer, with topics
        auto-created where the request and ``auto.create.topics.enable`` allow."""
        response, effects = self.topic_auto_creation.apply(
            request, self.metadata_cache.handle_metadata(request), len(self.metadata_cache.brokers), now_ms)
        return effects + [Respond(request_id=request_id, response=response)]

    def handle_describe_cluster(self, request_id: int, request: DescribeClusterRequest, now_ms: int) -> list[Effect]:
        """Kafka's ``handleDescribeCluster``: see actors/core/messages/describe_cluster.py."""
        return [Respond(request_id=request_id, response=describe_cluster(self.metadata_cache.handle_metadata(
            MetadataRequest(topics=(), listener_name=request.listener_name)), request))]

    def handle_leader_and_isr(self, request_id: int, request, now_ms: int) -> list[Effect]:
        return self._control(self.replica_manager.handle_leader_and_isr, request_id, request, now_ms)

    def handle_update_metadata(self, request_id: int, request, now_ms: int) -> list[Effect]:
        return self._control(self._update_metadata, request_id, request, now_ms)

    def _update_metadata(self, request_id: int, request: UpdateMetadataRequest, now_ms: int) -> list[Effect]:
        cache = self.metadata_cache
        version_before = cache.partitions_version
        effects = self.replica_manager.handle_update_metadata(request_id, request, now_ms)
        accepted = any(isinstance(e, Respond) and e.request_id == request_id and e.response.error_code == ErrorCode.NONE
                       for e in effects)
        if accepted:
            cache.update(request)
        # Every partition state marked for deletion counts, known here or not, as in Kafka.
        deleted = tuple((topic.topic_name, state.partition_index) for topic in request.topic_states
                        for state in topic.partition_states if state.leader == LEADER_DURING_DELETE)
        if accepted and (deleted or cache.partitions_version != version_before):
            if cache.partitions_version != version_before:
                self._coordinator_view_version = (self.lifecycle.broker_epoch, cache.partitions_version)
            effects.append(self.coordinator_metadata(deleted))
        if accepted:
            effects += self.topic_operations.on_metadata_updated((t.topic_name for t in request.topic_states), now_ms)
        return effects

    def coordinator_metadata(self, deleted: tuple[tuple[str, int], ...] = ()) -> CoordinatorMetadataUpdate:
        """The group coordinator's view of the partitions: what the metadata cache holds now."""
        return CoordinatorMetadataUpdate(version=self._coordinator_view_version,
                                         partitions=self.metadata_cache.topic_partitions(),
                                         deleted_partitions=deleted)

    def handle_stop_replica(self, request_id: int, request, now_ms: int) -> list[Effect]:
        return self._control(self.replica_manager.handle_stop_replica, request_id, request, now_ms)

    # ------------------------------------------------------------------------------ queries
    @property
    def incarnation_id(self) -> str:
        return self.lifecycle.incarnation_id

    def fetch_states_for(self, key: tuple[int, int]) -> list:
        """Where a replacement fetcher for (leader id, fetcher id) starts: each partition's log end."""
        return self.replica_manager.fetch_states_for(key)

    def fetcher_partitions(self, key: tuple[int, int]) -> list[tuple[str, int]]:
        return sorted(self.replica_manager.fetcher_manager.partitions_of(key))

    def offsets_partitions_led(self) -> list[tuple[int, int]]:
        """(partition, leader epoch) of each __consumer_offsets partition this broker leads."""
        return sorted((p.partition, p.leader_epoch) for (topic, _), p in self.replica_manager.partitions.items()
                      if topic == OFFSETS_TOPIC and p.is_leader)

    def read_log(self, topic: str, partition: int, offset: int, max_bytes: int) -> tuple[bytes, int, int]:
        """Whole batches from ``offset`` (see ``log_reads.read_log``): (records, next offset, log end offset)."""
        return read_log(self.replica_manager.partitions.get((topic, partition)), offset, max_bytes)

    def replica_digest(self, topic: str, partition: int, end_offset: int, start_offset: int = 0) -> list[BatchDigest]:
        return replica_digest(self.replica_manager.partitions.get((topic, partition)), end_offset, start_offset)

    def describe_partitions(self) -> list[dict]:
        """Each hosted replica as this broker sees it."""
        return [{
            "topic": p.topic, "partition": p.partition, "leader": p.leader_id,
            "leader_epoch": p.leader_epoch, "replicas": list(p.replicas), "isr": list(p.isr),
            "high_watermark": p.high_watermark, "log_end_offset": p.log_end_offset,
            "log_start_offset": p.log_start_offset, "is_leader": p.is_leader,
        } for p in self.replica_manager.partitions.values()]

    @property
    def controller_epoch(self) -> int:
        """The newest controller epoch a control request came with (-1 before the first)."""
        return self.replica_manager.controller_epoch

    def describe_broker(self) -> dict:
        return {"broker_id": self.broker_id, "state": self.lifecycle.state.name,
                "broker_epoch": self.lifecycle.broker_epoch, "controller_epoch": self.replica_manager.controller_epoch,
                "recovered_partitions": len(self.replica_manager.recovered_partitions)}
