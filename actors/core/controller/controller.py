"""The controller: decides partition leadership and tells brokers, as Kafka 2.4's ``KafkaController``.

Theory of operation. One ``ControllerCore`` is active per cluster. It claims a controller epoch
from the metadata store when it starts (the first controller gets 1, each later one an epoch no
other controller got, as Kafka's do) and stamps it on every request it sends, so brokers ignore a
paused controller that wakes up after a newer one took over. Inputs are events, each handled to
completion:

- broker lifecycle: registration (a new broker epoch; a broker that comes back with a new
  incarnation is handled as a failure followed by a startup, Kafka's "bounced broker"; another
  cluster's broker, or a late registration of a process already replaced, is refused), heartbeats,
  heartbeat expiry after ``broker.session.timeout.ms``, Ray reporting the broker's actor dead, and
  controlled shutdown;
- admin requests: CreateTopics, DeleteTopics, ElectLeaders (preferred or unclean), the periodic
  preferred-leader rebalance when ``auto.leader.rebalance.enable``, IncrementalAlterConfigs
  forwarded by a broker (topic_config_changes.py) and Alter/ListPartitionReassignments
  (reassignment.py, whose phase B also runs after every accepted ISR change);
- AlterPartition from partition leaders (ISR changes, checked against ``partition_epoch``);
- responses to its own control requests, which the send threads hand back.

Each event changes the context (persisted to the store first), adds LeaderAndIsr, UpdateMetadata
and StopReplica requests to a ``ControllerBrokerRequestBatch``, and turns the batch into ``Send``
effects, one per (broker, request), which the shell's channel manager queues per broker in order.

Outputs: ``Respond``, ``Send`` (destination ``broker:<id>``), ``AddBrokerChannel`` /
``RemoveBrokerChannel``, ``ArmTimer``, ``LogEvent``. A store write that finds a newer controller
epoch makes this controller resign: from then on it sends nothing and answers ``NOT_CONTROLLER``.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol

from actors.core import metrics
from actors.core.config import KafkaConfig
from actors.core.controller import (controlled_shutdown, elect_leaders, elections, isr_changes, lost_disks,
                                    topic_config_changes)
from actors.core.controller.broker_requests import BrokerRequests, broker_destination
from actors.core.controller.context import BrokerInfo, ControllerContext
from actors.core.controller.deletion import TopicDeletion
from actors.core.controller.metadata_propagation import MetadataPropagation, refusal
from actors.core.controller.metadata_store import MetadataStore
from actors.core.controller.partition_creation import create_partitions
from actors.core.controller.producer_id_control import allocate_producer_ids
from actors.core.controller.reassignment import PartitionReassignments
from actors.core.controller.state import PartitionState, ReplicaState
from actors.core.controller.topics import create_topics
from actors.core.effects import AddBrokerChannel, ArmTimer, Effect, LogEvent, RemoveBrokerChannel, Respond
from actors.core.errors import ErrorCode, KafkaProtocolError
from actors.core.messages.allocate_producer_ids import AllocateProducerIdsResponse
from actors.core.messages.alter_partition import AlterPartitionRequest, AlterPartitionResponse
from actors.core.messages.broker_heartbeat import BrokerHeartbeatRequest, BrokerHeartbeatResponse
from actors.core.messages.broker_registration import BrokerRegistrationRequest, BrokerRegistrationResponse
from actors.core.messages.controlled_shutdown import ControlledShutdownRequest, ControlledShutdownResponse
from actors.core.messages import create_partitions as create_partitions_messages
from actors.core.messages.create_partitions import CreatePartitionsRequest
from actors.core.messages.create_topics import CreateTopicsRequest
from actors.core.messages.delete_topics import DeleteTopicsRequest
from actors.core.messages.elect_leaders import ElectLeadersRequest, ElectLeadersResponse
from actors.core.messages.partition_reassignments import (
    AlterPartitionReassignmentsResponse, ListPartitionReassignmentsResponse,
)

# The controller is its own actor, not a broker, so like a KRaft controller it has a node id of
# its own, outside the range brokers use.
CONTROLLER_NODE_ID = 3000

# How many incarnations of one broker id the controller remembers (see ``_register``). A
# registration from a process older than that is taken for a new one (a bounce), as before.
INCARNATIONS_KEPT_MAX = 16

CONTROLLER_DEFAULTS = {
    # KRaft's defaults for the same ideas (Kafka 2.4 used ZooKeeper's session timeout instead).
    "broker.session.timeout.ms": "9000",
    "broker.heartbeat.interval.ms": "2000",
    "auto.leader.rebalance.enable": "true",
    "leader.imbalance.check.interval.seconds": "300",
    "leader.imbalance.per.broker.percentage": "10",
    "unclean.leader.election.enable": "false",
    "num.partitions": "1",
    "default.replication.factor": "1",
    # Kafka's per-broker request queue is unbounded; ours holds at most this many waiting requests
    # and at the limit drops them for a resync of the broker (see channel_queue.py).
    "raykafka.controller.queue.size.max": "10000",
    # Kafka's: how long a send thread waits for its broker to answer one control request before
    # the send counts as failed and is retried.
    "controller.socket.timeout.ms": "30000",
}


class RandomSource(Protocol):
    def randrange(self, stop: int) -> int: ...


class ControllerCore:
    def __init__(self, *, store: MetadataStore, config: KafkaConfig, now_ms: int,
                 random_source: RandomSource, controller_id: int = CONTROLLER_NODE_ID) -> None:
        self.config = config.with_overrides({k: v for k, v in CONTROLLER_DEFAULTS.items() if k not in config})
        self.controller_id = controller_id
        self.random_source = random_source
        self.store = store
        self.controller_epoch = store.claim_controller_epoch()
        self.context = ControllerContext(store)
        self.context.load(now_ms)
        # The request batch bound to the context, shared with the handlers in elect_leaders.py,
        # isr_changes.py, controlled_shutdown.py and deletion.py; ``batch`` is its batch.
        self.requests = BrokerRequests(context=self.context, controller_id=controller_id,
                                       controller_epoch=self.controller_epoch)
        self.batch = self.requests.batch
        self.deletion = TopicDeletion(self.requests)
        self.reassignments = PartitionReassignments(self.requests)
        self.propagation = MetadataPropagation(self.context)  # admin answers held until every broker knows
        self.active = True
        self.session_timeout_ms = self.config.get_int("broker.session.timeout.ms", 1)
        self.rebalance_interval_ms = self.config.get_int("leader.imbalance.check.interval.seconds", 1) * 1000
        self._next_rebalance_ms = now_ms + self.rebalance_interval_ms
        # Per broker id, the incarnations (processes) that registered, oldest first, at most
        # INCARNATIONS_KEPT_MAX. A registration from any but the newest is a superseded process's,
        # delivered late. Kept in memory only: a new controller knows just the current ones.
        self._incarnations: dict[int, list[str]] = {b: [info.incarnation_id]
                                                    for b, info in self.context.brokers.items()}

    # ------------------------------------------------------------------------------ plumbing
    _gauges_set: tuple | None = None  # (active, controller epoch, offline partitions) last exported

    def _guarded(self, request_id: int | None, error_response, step) -> list[Effect]:
        """Run one event, then set the controller's gauges. A newer controller seen in the store
        makes this one resign."""
        effects = self._guarded_step(request_id, error_response, step)
        gauges = (self.active, self.controller_epoch,
                  self.context.partition_states.count(PartitionState.OFFLINE_PARTITION))
        if gauges != self._gauges_set:  # only a change: most events (heartbeats) change none of them
            self._gauges_set = gauges
            effects += metrics.controller_gauges(active=gauges[0], controller_epoch=gauges[1],
                                                 offline_partitions=gauges[2])
        return effects

    def _guarded_step(self, request_id: int | None, error_response, step) -> list[Effect]:
        if not self.active:
            return self._not_controller(request_id, error_response)
        try:
            return step()
        except KafkaProtocolError as exc:
            if exc.error_code != ErrorCode.STALE_CONTROLLER_EPOCH:
                raise
            self.batch.clear()
            self.active = False
            effects = [LogEvent(level="warning", message=f"controller epoch {self.controller_epoch} "
                                                         f"resigns: {exc}")]
            effects += [RemoveBrokerChannel(broker_id=b) for b in sorted(self.context.brokers)]
            effects += self.propagation.release_all()  # what it created or queued stays so
            return effects + self._not_controller(request_id, error_response)

    @staticmethod
    def _not_controller(request_id: int | None, error_response) -> list[Effect]:
        if request_id is None:
            return []
        return [Respond(request_id=request_id, response=error_response(ErrorCode.NOT_CONTROLLER))]

    def _log(self, message: str, level: str = "info") -> LogEvent:
        return LogEvent(level=level, message=f"[controller epoch {self.controller_epoch}] {message}")

    # ----------------------------------------------------------------------------- failover
    def start(self, now_ms: int) -> list[Effect]:
        """Kafka's ``onControllerFailover``: channels to every broker, full state to everyone."""
        return self._guarded(None, None, lambda: self._start(now_ms))

    def _start(self, now_ms: int) -> list[Effect]:
        context = self.context
        effects: list[Effect] = [self._log(f"active with {len(context.brokers)} registered brokers and "
                                           f"{len(context.topics)} topics")]
        effects += [AddBrokerChannel(broker_id=b, broker_epoch=info.broker_epoch)
                    for b, info in sorted(context.brokers.items())]
        live = context.live_or_shutting_down_broker_ids
        for topic_partition in context.all_partitions():
            leadership = context.leadership.get(topic_partition)
            if leadership is None:
                state = PartitionState.NEW_PARTITION
            elif leadership.leader in live:
                state = PartitionState.ONLINE_PARTITION
            else:
                state = PartitionState.OFFLINE_PARTITION
            context.partition_states.initialize(topic_partition, state)
            for replica in context.replicas(topic_partition):
                replica_state = ReplicaState.ONLINE_REPLICA if replica in live else ReplicaState.OFFLINE_REPLICA
                context.replica_states.initialize((topic_partition, replica), replica_state)
        self.batch.new_batch()
        self.batch.add_update_metadata_request_for_brokers(live, context.all_partitions())
        for topic_partition in context.all_partitions():
            self.requests.add_leader_and_isr(topic_partition, context.replicas(topic_partition))
        effects += self.requests.flush()
        effects += self._elect_offline_partitions()
        effects += self.deletion.resume()
        return effects + self.reassignments.resume()

    # ---------------------------------------------------------------------- broker lifecycle
    def handle_broker_registration(self, request_id: int, request: BrokerRegistrationRequest,
                                   now_ms: int) -> list[Effect]:
        def error(code: ErrorCode) -> BrokerRegistrationResponse:
            return BrokerRegistrationResponse(error_code=code, broker_epoch=-1)
        return self._guarded(request_id, error, lambda: self._register(request_id, request, now_ms))

    def _register(self, request_id: int, request: BrokerRegistrationRequest, now_ms: int) -> list[Effect]:
        effects: list[Effect] = []
        # Kafka 2.4's brokers compare their cluster id with ZooKeeper's /cluster/id, which the first
        # broker writes; here the controller does, and the first registration sets it.
        cluster_id = self.store.cluster_id()
        if cluster_id is None:
            self.store.put_cluster_id(request.cluster_id)
        elif cluster_id != request.cluster_id:
            return [Respond(request_id=request_id, response=BrokerRegistrationResponse(
                error_code=ErrorCode.INCONSISTENT_CLUSTER_ID))]
        existing = self.context.brokers.get(request.broker_id)
        if existing is not None and existing.incarnation_id == request.incarnation_id:
            # A retried registration of the same process: answer with the epoch it already has.
            existing.last_heartbeat_ms = now_ms
            return [Respond(request_id=request_id, response=BrokerRegistrationResponse(
                broker_epoch=existing.broker_epoch))]
        seen = self._incarnations.setdefault(request.broker_id, [])
        if request.incarnation_id in seen[:-1]:
            # A process that a newer one of the same broker id has replaced: its registration was
            # delayed (Ray orders no calls across processes). Taking it would fence the live one.
            return [Respond(request_id=request_id, response=BrokerRegistrationResponse(
                error_code=ErrorCode.DUPLICATE_BROKER_REGISTRATION))]
        if request.incarnation_id not in seen:
            seen.append(request.incarnation_id)
            del seen[:-INCARNATIONS_KEPT_MAX]
        if existing is not None:
            effects.append(self._log(f"broker {request.broker_id} bounced (new incarnation)"))
            effects += self._on_broker_failure([request.broker_id])
        lost_data = lost_disks.directory_changed(self.context, request.broker_id, request.log_dirs)
        info = BrokerInfo(request.broker_id, self.store.next_broker_epoch(), request.host,
                          request.incarnation_id, last_heartbeat_ms=now_ms, listeners=tuple(request.listeners))
        self.context.put_broker(info)
        effects.append(Respond(request_id=request_id, response=BrokerRegistrationResponse(
            broker_epoch=info.broker_epoch)))
        effects.append(AddBrokerChannel(broker_id=info.broker_id, broker_epoch=info.broker_epoch))
        effects.append(self._log(f"broker {info.broker_id} registered with epoch {info.broker_epoch}"))
        if lost_data:  # before the startup's elections, which must not count it as in sync
            effects += self._on_lost_disk(info.broker_id)
        effects += self._on_broker_startup([info.broker_id])
        return effects

    def handle_broker_heartbeat(self, request_id: int, request: BrokerHeartbeatRequest,
                                now_ms: int) -> list[Effect]:
        def answer(code: ErrorCode, **fields) -> BrokerHeartbeatResponse:
            return BrokerHeartbeatResponse(error_code=code, **fields)
        if not self.active:
            return self._not_controller(request_id, answer)
        info = self.context.brokers.get(request.broker_id)
        if info is None:
            return [Respond(request_id=request_id, response=answer(ErrorCode.BROKER_ID_NOT_REGISTERED,
                                                                   is_fenced=True))]
        if request.broker_epoch != info.broker_epoch:
            return [Respond(request_id=request_id, response=answer(ErrorCode.STALE_BROKER_EPOCH,
                                                                   is_fenced=True))]
        info.last_heartbeat_ms = now_ms
        return [Respond(request_id=request_id, response=answer(
            ErrorCode.NONE, is_caught_up=True, is_fenced=False, should_shut_down=False))]

    def handle_allocate_producer_ids(self, request_id: int, request, now_ms: int) -> list[Effect]:
        return self._guarded(request_id, lambda code: AllocateProducerIdsResponse(error_code=code),
                             lambda: allocate_producer_ids(self.context, self.store, request_id, request))

    def on_broker_unreachable(self, broker_id: int, broker_epoch: int, now_ms: int) -> list[Effect]:
        """Ray reported the broker's actor dead (not restarting): fence it now."""
        info = self.context.brokers.get(broker_id)
        if info is None or info.broker_epoch != broker_epoch:
            return []
        return self._guarded(None, None, lambda: [self._log(f"broker {broker_id} is dead (Ray)")]
                             + self._on_broker_failure([broker_id]))

    def _on_broker_startup(self, broker_ids: list[int]) -> list[Effect]:
        """Kafka's ``onBrokerStartup``: the new live broker list to the brokers already up, full
        metadata to the starting ones, their replicas online, offline partitions elected.

        The brokers already up get no partition states: nothing about the partitions changed, and
        at thousands of partitions a full UpdateMetadata to every broker on every registration is
        most of the controller's work (Kafka 2.4 sends them the broker list only)."""
        context = self.context
        starting = set(broker_ids)
        self.batch.new_batch()
        self.batch.add_update_metadata_request_for_brokers(
            sorted(context.live_or_shutting_down_broker_ids - starting))
        effects = self.requests.flush()
        self.batch.new_batch()
        self.batch.add_update_metadata_request_for_brokers(broker_ids, context.all_partitions())
        effects += self.requests.flush()
        self.batch.new_batch()
        for broker_id in broker_ids:
            for topic_partition in context.partitions_on_broker(broker_id):
                if topic_partition[0] in context.topics_to_delete:
                    continue
                replica = (topic_partition, broker_id)
                if replica not in context.replica_states:
                    context.replica_states.initialize(replica, ReplicaState.OFFLINE_REPLICA)
                if context.replica_states.transition(replica, ReplicaState.ONLINE_REPLICA):
                    self.requests.add_leader_and_isr(topic_partition, [broker_id])
        effects += self.requests.flush()
        effects += self._elect_offline_partitions()
        effects += self.deletion.resume()
        return effects

    def _on_lost_disk(self, broker_id: int) -> list[Effect]:
        self.batch.new_batch()
        changed = lost_disks.remove_from_every_isr(self.context, broker_id, self.controller_epoch,
                                                   self.requests.add_leader_and_isr)
        return [self._log(f"broker {broker_id} registered with a new log directory: it lost its data, so it "
                          f"leaves the ISR of {len(changed)} partition(s) {sorted(changed)[:10]}", "warning"),
                *self.requests.flush()]

    def _on_broker_failure(self, broker_ids: Iterable[int]) -> list[Effect]:
        """Kafka's ``onBrokerFailure``: new leaders for what they led, then out of every ISR."""
        context = self.context
        dead = [b for b in broker_ids if b in context.brokers]
        effects: list[Effect] = []
        for broker_id in dead:
            context.remove_broker(broker_id)
            effects.append(RemoveBrokerChannel(broker_id=broker_id))
        if not dead:
            return effects
        for topic_partition in context.all_partitions():
            leadership = context.leadership.get(topic_partition)
            if leadership is not None and leadership.leader in dead:
                context.partition_states.transition(topic_partition, PartitionState.OFFLINE_PARTITION)
        effects += self._elect_offline_partitions()
        self.batch.new_batch()
        for broker_id in dead:
            for topic_partition in context.partitions_on_broker(broker_id):
                self.requests.replica_offline(topic_partition, broker_id)
        self.batch.add_update_metadata_request_for_brokers(context.live_or_shutting_down_broker_ids)
        effects += self.requests.flush()
        effects += self.deletion.on_brokers_dead(dead)
        return effects

    # ------------------------------------------------------------------------------ elections
    def _unclean_enabled(self, topic: str) -> bool:
        topic_config = self.context.topics[topic].config
        value = topic_config.get("unclean.leader.election.enable",
                                 self.config.get_str("unclean.leader.election.enable"))
        return str(value).lower() == "true"

    def _elect_offline_partitions(self) -> list[Effect]:
        """Kafka's ``triggerOnlinePartitionStateChange``: elect for every new or offline partition."""
        context = self.context
        effects: list[Effect] = []
        self.batch.new_batch()
        live = context.live_broker_ids
        for topic_partition in context.partition_states.partitions_in(
                PartitionState.NEW_PARTITION, PartitionState.OFFLINE_PARTITION):
            if topic_partition[0] in context.topics_to_delete:
                continue
            replicas = context.replicas(topic_partition)
            current = context.leadership.get(topic_partition)
            if current is None:
                initial = elections.initial_leader_and_isr(assignment=replicas, live_replicas=live,
                                                           controller_epoch=self.controller_epoch)
                if initial is None:
                    continue
                context.set_leadership(topic_partition, initial)
                context.partition_states.transition(topic_partition, PartitionState.ONLINE_PARTITION)
                self.requests.add_leader_and_isr(topic_partition, replicas, is_new=True)
                continue
            result = elections.elect_for_offline_partition(
                leader_and_isr=current, assignment=replicas, live_replicas=live,
                unclean_leader_election_enabled=self._unclean_enabled(topic_partition[0]),
                controller_epoch=self.controller_epoch)
            if result.leader_and_isr is None:
                continue  # stays offline until an eligible replica returns
            effects += metrics.leader_elections(1, unclean=1 if result.unclean else 0)
            if result.unclean:
                effects.append(self._log(f"unclean election: broker {result.leader} leads "
                                         f"{topic_partition[0]}-{topic_partition[1]}; records it "
                                         f"never had are lost", level="warning"))
            context.set_leadership(topic_partition, result.leader_and_isr)
            context.partition_states.transition(topic_partition, PartitionState.ONLINE_PARTITION)
            self.requests.add_leader_and_isr(topic_partition, result.live_replicas_to_notify)
        return effects + self.requests.flush()

    def handle_elect_leaders(self, request_id: int, request: ElectLeadersRequest, now_ms: int) -> list[Effect]:
        def error(code: ErrorCode) -> ElectLeadersResponse:
            return ElectLeadersResponse(replica_election_results=(), error_code=code)
        return self._guarded(request_id, error, lambda: elect_leaders.handle_elect_leaders(self.requests, request_id, request))

    def handle_incremental_alter_configs(self, request_id: int, request, now_ms: int) -> list[Effect]:
        def error(code: ErrorCode):
            return topic_config_changes.refused(request, code)
        return self._guarded(request_id, error, lambda: topic_config_changes.handle_incremental_alter_configs(
            self.requests, request_id, request, controller_epoch=self.controller_epoch,
            unclean_default=self.config.get_bool("unclean.leader.election.enable"),
            elect_offline_partitions=self._elect_offline_partitions, broker_overrides=self.config.overrides()))

    def handle_alter_configs(self, request_id: int, request, now_ms: int) -> list[Effect]:
        """The whole-set form: the request's configs replace the topic's overrides."""
        return self.handle_incremental_alter_configs(request_id, request, now_ms)

    def describe_topic_config(self, name: str) -> dict | None:
        return topic_config_changes.describe_topic_config(self.context, name, self.config)

    # ----------------------------------------------------------------------- controlled shutdown
    def handle_controlled_shutdown(self, request_id: int, request: ControlledShutdownRequest,
                                   now_ms: int) -> list[Effect]:
        def error(code: ErrorCode) -> ControlledShutdownResponse:
            return ControlledShutdownResponse(error_code=code, remaining_partitions=())
        return self._guarded(request_id, error,
                             lambda: controlled_shutdown.handle_controlled_shutdown(self.requests, request_id, request, error))

    # ---------------------------------------------------------------------------- ISR changes
    def handle_alter_partition(self, request_id: int, request: AlterPartitionRequest, now_ms: int) -> list[Effect]:
        def error(code: ErrorCode) -> AlterPartitionResponse:
            return AlterPartitionResponse(error_code=code, topics=())
        # An ISR change may put a reassignment's target replicas all in sync: its phase B runs then.
        return self._guarded(request_id, error, lambda: isr_changes.handle_alter_partition(
            self.requests, request_id, request, error) + self.reassignments.complete_finished())

    def handle_alter_partition_reassignments(self, request_id: int, request, now_ms: int) -> list[Effect]:
        def error(code: ErrorCode) -> AlterPartitionReassignmentsResponse:
            return AlterPartitionReassignmentsResponse(responses=(), error_code=code)
        return self._guarded(request_id, error, lambda: self.reassignments.handle_alter_partition_reassignments(
            request_id, request))

    def handle_list_partition_reassignments(self, request_id: int, request, now_ms: int) -> list[Effect]:
        def error(code: ErrorCode) -> ListPartitionReassignmentsResponse:
            return ListPartitionReassignmentsResponse(topics=(), error_code=code)
        return self._guarded(request_id, error, lambda: self.reassignments.handle_list_partition_reassignments(
            request_id, request))

    # -------------------------------------------------------------------------------- topics
    def handle_create_topics(self, request_id: int, request: CreateTopicsRequest, now_ms: int) -> list[Effect]:
        return self._guarded(request_id, refusal(request), lambda: self.propagation.hold(create_topics(
            self.requests, request_id, request, defaults=self.config, random_source=self.random_source,
            elect_offline_partitions=self._elect_offline_partitions, log=self._log), request_id, request, now_ms))

    def handle_create_partitions(self, request_id: int, request: CreatePartitionsRequest,
                                 now_ms: int) -> list[Effect]:
        """New partitions, answered once every live broker knows their leaders (as CreateTopics)."""
        def step() -> list[Effect]:
            reassigning = {tp[0] for tp in self.reassignments.ongoing}
            effects, added = create_partitions(self.requests, request_id, request, reassigning_topics=reassigning,
                                               elect_offline_partitions=self._elect_offline_partitions, log=self._log)
            return self.propagation.hold(effects, request_id, request, now_ms, added)
        return self._guarded(request_id, lambda code: create_partitions_messages.refused(request, code), step)

    def handle_delete_topics(self, request_id: int, request: DeleteTopicsRequest, now_ms: int) -> list[Effect]:
        partitions = self.propagation.partitions_of(request.topic_names)  # before a finished deletion forgets them
        return self._guarded(request_id, refusal(request), lambda: self.propagation.hold(
            self.deletion.handle_delete_topics(request_id, request), request_id, request, now_ms, partitions))

    # ------------------------------------------------------------------- responses and timers
    def on_control_response(self, broker_id: int, request: Any, response: Any, now_ms: int) -> list[Effect]:
        """A send thread delivered ``request`` to ``broker_id`` and got ``response``."""
        def step() -> list[Effect]:
            code = getattr(response, "error_code", ErrorCode.NONE)
            if code == ErrorCode.STALE_CONTROLLER_EPOCH:
                self.store.check_still_controller()  # raises, and so resigns, if a newer one exists
            effects = self.deletion.on_stop_replica_response(broker_id, request, response)
            effects += self.propagation.on_control_response(broker_id, request, response)
            if code not in (ErrorCode.NONE, ErrorCode.STALE_CONTROLLER_EPOCH):
                effects.append(self._log(f"broker {broker_id} answered {type(request).__name__} "
                                         f"with {ErrorCode(code).name}", level="warning"))
            return effects
        return self._guarded(None, None, step)

    def resync_broker(self, broker_id: int, now_ms: int) -> list[Effect]:
        """A new send thread for ``broker_id``, or one whose queue dropped requests at its limit:
        send the broker its full state again, which supersedes anything lost; epochs make it harmless."""
        def step() -> list[Effect]:
            if broker_id not in self.context.brokers:
                return []
            self.batch.new_batch()
            self.batch.add_update_metadata_request_for_brokers([broker_id], self.context.all_partitions())
            for topic_partition in self.context.partitions_on_broker(broker_id):
                # A replica being deleted must not be restarted; its lost StopReplica is repeated.
                if topic_partition[0] not in self.context.topics_to_delete:
                    self.requests.add_leader_and_isr(topic_partition, [broker_id])
            self.deletion.resend_stop_replicas(broker_id)
            return self.requests.flush()
        return self._guarded(None, None, step)

    def tick(self, now_ms: int) -> list[Effect]:
        def step() -> list[Effect]:
            expired = [b for b, info in sorted(self.context.brokers.items())
                       if now_ms - info.last_heartbeat_ms > self.session_timeout_ms]
            effects: list[Effect] = []
            if expired:
                effects.append(self._log(f"brokers {expired} missed heartbeats for "
                                         f"{self.session_timeout_ms} ms: fenced", level="warning"))
                effects += self._on_broker_failure(expired)
            if now_ms >= self._next_rebalance_ms:
                self._next_rebalance_ms = now_ms + self.rebalance_interval_ms
                if self.config.get_bool("auto.leader.rebalance.enable"):
                    effects += self._rebalance_preferred_leaders()
            effects += self.propagation.tick(now_ms)
            effects.append(ArmTimer(deadline_ms=now_ms + min(self.session_timeout_ms // 3 or 1, 1000)))
            return effects
        return self._guarded(None, None, step)

    def _rebalance_preferred_leaders(self) -> list[Effect]:
        """Kafka's ``checkAndTriggerAutoLeaderRebalance``: per broker, above the imbalance ratio?"""
        self.batch.new_batch()
        moved = elect_leaders.rebalance_preferred_leaders(
            self.requests, self.config.get_int("leader.imbalance.per.broker.percentage") / 100)
        effects = self.requests.flush()
        if moved:
            effects.append(self._log(f"auto leader rebalance moved {moved} leaderships to preferred replicas"))
        return effects

    # ---------------------------------------------------------------------------- observation
    def describe_topic(self, name: str) -> list[dict] | None:
        return self.context.describe_topic(name)

    def describe_cluster(self) -> dict:
        return {
            "controller_epoch": self.controller_epoch, "active": self.active,
            "brokers": {b: {"broker_epoch": i.broker_epoch, "host": i.host, "shutting_down": i.shutting_down,
                            "listeners": {e.name: f"{e.host}:{e.port}" for e in i.listeners}}
                        for b, i in sorted(self.context.brokers.items())},
            "topics": sorted(self.context.topics),
            "topics_being_deleted": sorted(self.context.topics_to_delete),
        }


__all__ = ["CONTROLLER_NODE_ID", "ControllerCore", "broker_destination"]
