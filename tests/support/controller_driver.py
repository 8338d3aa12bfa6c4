"""Drive a pure ControllerCore step by step, as the controller shell and its send threads would.

The driver owns a fake clock, a seeded ``random.Random`` and an ``InMemoryKeyValueStore``. It
applies every effect the core returns: responses are kept by request id, Sends are kept per broker
in the order a send thread would deliver them, channels are added and removed, and the StopReplica
requests it has not delivered yet can be handed back to the core as answers (successful by default),
which is what drives a topic deletion to completion. The UpdateMetadata requests it has not delivered
are answered (successfully) when a CreateTopics or DeleteTopics asked through ``ask`` is still
unanswered: the controller holds those answers until every live broker applied the change.
"""
from __future__ import annotations

import itertools
import random
from collections import defaultdict

from actors.core.config import KafkaConfig
from actors.core.controller.controller import ControllerCore
from actors.core.controller.metadata_store import InMemoryKeyValueStore, MetadataStore
from actors.core.effects import (
    AddBrokerChannel, ArmTimer, LogEvent, Metric, RemoveBrokerChannel, Respond, Send,
)
from actors.core.errors import ErrorCode
from actors.core.messages.alter_partition import (
    AlterPartitionPartitionData, AlterPartitionRequest, AlterPartitionTopicData,
)
from actors.core.messages.broker_heartbeat import BrokerHeartbeatRequest
from actors.core.messages.broker_registration import BrokerRegistrationRequest
from actors.core.messages.controlled_shutdown import ControlledShutdownRequest
from actors.core.messages.create_topics import (
    CreatableReplicaAssignment, CreatableTopic, CreateableTopicConfig, CreateTopicsRequest,
)
from actors.core.messages.delete_topics import DeleteTopicsRequest
from actors.core.messages.elect_leaders import ElectLeadersRequest, TopicPartitions
from actors.core.messages.leader_and_isr import LeaderAndIsrRequest
from actors.core.messages.stop_replica import StopReplicaPartitionError, StopReplicaRequest, StopReplicaResponse
from actors.core.messages.update_metadata import UpdateMetadataRequest, UpdateMetadataResponse

CLUSTER_ID = "test-cluster"


def broker_host(broker_id: int) -> str:
    return f"broker-{broker_id}"


class ControllerDriver:
    """One ControllerCore with a fake clock; ``responses`` maps request id -> response."""

    def __init__(self, *, config: dict | None = None, seed: int = 0, kv: InMemoryKeyValueStore | None = None,
                 now_ms: int = 0, random_source=None, start: bool = True) -> None:
        self.kv = kv if kv is not None else InMemoryKeyValueStore()
        self.config = dict(config or {})
        self.now_ms = now_ms
        self.random = random_source if random_source is not None else random.Random(seed)
        # Each controller has its own MetadataStore (it holds that controller's epoch) over the
        # one shared key-value store, as each controller actor has its own client of Ray's store.
        self.core = ControllerCore(store=MetadataStore(self.kv), config=KafkaConfig(self.config),
                                   now_ms=now_ms, random_source=self.random)
        self.responses: dict[int, object] = {}
        self.sent: list[tuple[int, object]] = []  # every (broker id, request), in emission order
        self.sends: dict[int, list[object]] = defaultdict(list)  # broker id -> requests, in order
        self.undelivered_stop_replicas: list[tuple[int, StopReplicaRequest]] = []
        self.undelivered_update_metadata: list[tuple[int, UpdateMetadataRequest]] = []
        self.channels: dict[int, int] = {}  # broker id -> broker epoch of its send thread
        self.channels_added: list[tuple[int, int]] = []
        self.channels_removed: list[int] = []
        self.channel_events: list[tuple[str, int]] = []  # ("add" | "remove", broker id), in order
        self.logs: list[LogEvent] = []
        self.metrics: list[Metric] = []  # every Metric effect, in order
        self.timers: list[int] = []
        self.broker_epochs: dict[int, int] = {}  # as the brokers learnt them from registration
        self.incarnations: dict[int, str] = {}
        self._request_ids = itertools.count(1)
        self._incarnation_ids = itertools.count(1)
        if start:
            self.apply(self.core.start(now_ms))

    # -------------------------------------------------------------------------------- effects
    def apply(self, effects: list) -> list:
        for effect in effects:
            if isinstance(effect, Respond):
                assert effect.request_id not in self.responses, f"request {effect.request_id} answered twice"
                self.responses[effect.request_id] = effect.response
            elif isinstance(effect, Send):
                role, _, broker_id = effect.destination.partition(":")
                assert role == "broker", f"unexpected destination {effect.destination}"
                broker_id = int(broker_id)
                assert broker_id in self.channels, f"Send to broker {broker_id} without a channel: {effect}"
                self.sent.append((broker_id, effect.message))
                self.sends[broker_id].append(effect.message)
                if isinstance(effect.message, StopReplicaRequest):
                    self.undelivered_stop_replicas.append((broker_id, effect.message))
                if isinstance(effect.message, UpdateMetadataRequest):
                    self.undelivered_update_metadata.append((broker_id, effect.message))
            elif isinstance(effect, AddBrokerChannel):
                self.channels[effect.broker_id] = effect.broker_epoch
                self.channels_added.append((effect.broker_id, effect.broker_epoch))
                self.channel_events.append(("add", effect.broker_id))
            elif isinstance(effect, RemoveBrokerChannel):
                self.channels.pop(effect.broker_id, None)
                self.channels_removed.append(effect.broker_id)
                self.channel_events.append(("remove", effect.broker_id))
                # A send thread that is stopped takes its queue with it.
                self.undelivered_stop_replicas = [(b, r) for b, r in self.undelivered_stop_replicas
                                                  if b != effect.broker_id]
                self.undelivered_update_metadata = [(b, r) for b, r in self.undelivered_update_metadata
                                                    if b != effect.broker_id]
            elif isinstance(effect, ArmTimer):
                self.timers.append(effect.deadline_ms)
            elif isinstance(effect, LogEvent):
                self.logs.append(effect)
            elif isinstance(effect, Metric):
                self.metrics.append(effect)
            else:
                raise AssertionError(f"unexpected effect {effect!r}")
        return effects

    def clear_sends(self) -> None:
        """Forget what was sent so far (undelivered StopReplicas stay undelivered)."""
        self.sent.clear()
        self.sends.clear()

    def requests_to(self, broker_id: int, kind: type | None = None) -> list:
        return [r for r in self.sends.get(broker_id, []) if kind is None or isinstance(r, kind)]

    def kinds_to(self, broker_id: int) -> list[str]:
        """The request types sent to ``broker_id``, in order: 'LeaderAndIsr', 'UpdateMetadata', 'StopReplica'."""
        return [type(r).__name__.removesuffix("Request") for r in self.sends.get(broker_id, [])]

    # ------------------------------------------------------------------------------- requests
    def call(self, handler_name: str, request) -> int:
        request_id = next(self._request_ids)
        self.apply(getattr(self.core, handler_name)(request_id, request, self.now_ms))
        return request_id

    def ask(self, handler_name: str, request):
        request_id = self.call(handler_name, request)
        if request_id not in self.responses and handler_name in ("handle_create_topics", "handle_delete_topics",
                                                                  "handle_create_partitions"):
            self.acknowledge_update_metadata()
        assert request_id in self.responses, f"{handler_name} was not answered"
        return self.responses[request_id]

    def acknowledge_update_metadata(self) -> None:
        """Every UpdateMetadata sent and not yet answered, answered by its broker without error, in order."""
        while self.undelivered_update_metadata:
            broker_id, request = self.undelivered_update_metadata.pop(0)
            self.apply(self.core.on_control_response(broker_id, request, UpdateMetadataResponse(), self.now_ms))

    def register(self, broker_id: int, *, new_incarnation: bool = False, directory: str | None = None):
        """Register ``broker_id``; the same process (incarnation) unless ``new_incarnation``;
        ``directory`` is its log directory id (none reported when None)."""
        if new_incarnation or broker_id not in self.incarnations:
            self.incarnations[broker_id] = f"incarnation-{broker_id}-{next(self._incarnation_ids)}"
        response = self.ask("handle_broker_registration", BrokerRegistrationRequest(
            broker_id=broker_id, cluster_id=CLUSTER_ID, incarnation_id=self.incarnations[broker_id],
            host=broker_host(broker_id), log_dirs=() if directory is None else (directory,)))
        if response.error_code == ErrorCode.NONE:
            self.broker_epochs[broker_id] = response.broker_epoch
        return response

    def register_brokers(self, *broker_ids: int) -> None:
        for broker_id in broker_ids:
            assert self.register(broker_id).error_code == ErrorCode.NONE

    def heartbeat(self, broker_id: int, broker_epoch: int | None = None):
        epoch = self.broker_epochs[broker_id] if broker_epoch is None else broker_epoch
        return self.ask("handle_broker_heartbeat", BrokerHeartbeatRequest(
            broker_id=broker_id, broker_epoch=epoch, current_metadata_offset=0))

    def create_topic(self, name: str, *, assignment: dict[int, list[int]] | None = None,
                     num_partitions: int = -1, replication_factor: int = -1,
                     configs: dict[str, str] | None = None, validate_only: bool = False):
        """One topic's CreatableTopicResult."""
        topic = CreatableTopic(
            name=name, num_partitions=num_partitions, replication_factor=replication_factor,
            assignments=tuple(CreatableReplicaAssignment(partition_index=p, broker_ids=tuple(r))
                              for p, r in (assignment or {}).items()),
            configs=tuple(CreateableTopicConfig(name=k, value=v) for k, v in (configs or {}).items()))
        response = self.ask("handle_create_topics", CreateTopicsRequest(topics=(topic,),
                                                                        validate_only=validate_only))
        (result,) = response.topics
        return result

    def delete_topics(self, *names: str):
        return self.ask("handle_delete_topics", DeleteTopicsRequest(topic_names=tuple(names)))

    def controlled_shutdown(self, broker_id: int, broker_epoch: int | None = None):
        epoch = self.broker_epochs.get(broker_id, -1) if broker_epoch is None else broker_epoch
        return self.ask("handle_controlled_shutdown",
                        ControlledShutdownRequest(broker_id=broker_id, broker_epoch=epoch))

    def alter_partition(self, topic: str, partition: int, new_isr, *, broker_id: int | None = None,
                        broker_epoch: int | None = None, leader_epoch: int | None = None,
                        partition_epoch: int | None = None):
        """An AlterPartition from the current leader with its current epochs, unless overridden."""
        state = self.partition(topic, partition)
        broker_id = state["leader"] if broker_id is None else broker_id
        return self.ask("handle_alter_partition", AlterPartitionRequest(
            broker_id=broker_id,
            broker_epoch=self.broker_epochs.get(broker_id, -1) if broker_epoch is None else broker_epoch,
            topics=(AlterPartitionTopicData(topic_name=topic, partitions=(AlterPartitionPartitionData(
                partition_index=partition,
                leader_epoch=state["leader_epoch"] if leader_epoch is None else leader_epoch,
                new_isr=tuple(new_isr),
                partition_epoch=state["partition_epoch"] if partition_epoch is None else partition_epoch),)),)))

    def elect_preferred(self, partitions: dict[str, list[int]] | None = None):
        """ElectLeaders (preferred) -> {(topic, partition): error code}."""
        request = ElectLeadersRequest(topic_partitions=None if partitions is None else tuple(
            TopicPartitions(topic=t, partitions=tuple(ps)) for t, ps in partitions.items()))
        response = self.ask("handle_elect_leaders", request)
        assert response.error_code == ErrorCode.NONE, response
        return {(r.topic, p.partition_id): p.error_code
                for r in response.replica_election_results for p in r.partition_result}

    # --------------------------------------------------------------------- time and failures
    def advance(self, ms: int) -> list:
        self.now_ms += ms
        return self.apply(self.core.tick(self.now_ms))

    def advance_to(self, now_ms: int) -> list:
        return self.advance(now_ms - self.now_ms)

    def broker_unreachable(self, broker_id: int, broker_epoch: int | None = None) -> list:
        epoch = self.broker_epochs[broker_id] if broker_epoch is None else broker_epoch
        return self.apply(self.core.on_broker_unreachable(broker_id, epoch, self.now_ms))

    def resync(self, broker_id: int) -> list:
        return self.apply(self.core.resync_broker(broker_id, self.now_ms))

    def respond(self, broker_id: int, request, response) -> list:
        return self.apply(self.core.on_control_response(broker_id, request, response, self.now_ms))

    def deliver_stop_replicas(self, broker_ids=None, *, error_code: ErrorCode = ErrorCode.NONE) -> int:
        """Answer the undelivered StopReplica requests (of ``broker_ids``, default all), in order."""
        delivered = 0
        while True:
            pending = [(b, r) for b, r in self.undelivered_stop_replicas
                       if broker_ids is None or b in broker_ids]
            if not pending:
                return delivered
            broker_id, request = pending[0]
            self.undelivered_stop_replicas.remove((broker_id, request))
            self.respond(broker_id, request, StopReplicaResponse(partition_errors=tuple(
                StopReplicaPartitionError(topic_name=t.name, partition_index=p, error_code=error_code)
                for t in request.topics for p in t.partition_indexes)))
            delivered += 1

    def lose_undelivered(self, broker_id: int) -> None:
        """A send thread died with these requests queued: they never reach the broker."""
        self.undelivered_stop_replicas = [(b, r) for b, r in self.undelivered_stop_replicas if b != broker_id]

    def new_controller(self, **overrides) -> "ControllerDriver":
        """A second controller over the same store and clock (Kafka's controller failover)."""
        options = dict(config=self.config, kv=self.kv, now_ms=self.now_ms, seed=1)
        options.update(overrides)
        successor = ControllerDriver(**options)
        successor.broker_epochs = dict(self.broker_epochs)
        successor.incarnations = dict(self.incarnations)
        return successor

    # ---------------------------------------------------------------------------- observation
    def partition(self, topic: str, partition: int) -> dict:
        described = self.core.describe_topic(topic)
        assert described is not None, f"no topic {topic}"
        return described[partition]

    def leader(self, topic: str, partition: int = 0) -> int:
        return self.partition(topic, partition)["leader"]

    def isr(self, topic: str, partition: int = 0) -> list[int]:
        return self.partition(topic, partition)["isr"]

    def leader_epoch(self, topic: str, partition: int = 0) -> int:
        return self.partition(topic, partition)["leader_epoch"]

    def stored(self) -> MetadataStore:
        """A read-only view of the store (reads are not fenced)."""
        return MetadataStore(self.kv)

    def snapshot(self) -> dict[str, bytes]:
        return dict(self.kv.data)


def leader_and_isr_states(request: LeaderAndIsrRequest) -> dict[tuple[str, int], object]:
    """(topic, partition) -> LeaderAndIsrPartitionState of one request."""
    return {(t.topic_name, s.partition_index): s for t in request.topic_states for s in t.partition_states}


def update_metadata_states(request: UpdateMetadataRequest) -> dict[tuple[str, int], object]:
    return {(t.topic_name, s.partition_index): s for t in request.topic_states for s in t.partition_states}


def stop_replica_partitions(request: StopReplicaRequest) -> set[tuple[str, int]]:
    return {(t.name, p) for t in request.topics for p in t.partition_indexes}
