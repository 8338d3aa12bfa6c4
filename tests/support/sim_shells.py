"""The simulator's shells: how each node applies its core's effects, mirrored from the Ray shells.

Theory of operation. ``Shells`` is the machinery under ``tests.support.sim.Simulation``: it holds
the nodes (controller, brokers, their fetchers, the controller's per-broker channels, the client)
and turns each core's effects into messages on the ``Network``, as the Ray shells turn them into
actor calls (actors/broker.py, actors/replica_fetcher.py, actors/controller.py,
actors/request_send_thread.py):

- broker: ``Respond`` answers the call it owes; ``Send`` to the controller is a call whose answer
  (or NETWORK_EXCEPTION after the shell's 5 s timeout) goes to ``on_controller_response``;
  ``AddPartitionsToFetcher`` creates the fetcher node if needed and sends it the partitions;
  ``RemovePartitionsFromFetcher`` sends the removal, or kills the fetcher at once (``stop_fetcher``).
- fetcher: ``Send`` to "leader" is a call to the leader broker by name (whichever incarnation is
  up), to "local" a call to its own broker incarnation; answers go to ``on_leader_response`` /
  ``on_local_response``.
- controller: the ``Send``s of one controller step to ``broker:<id>`` join that broker's channel
  queue as one batch (dropped if there is no channel, as the shell does); the queue is the send
  thread's own pure ``ControllerChannelQueue``, with its limit and overflow policy, and a
  resync it asks for is a controller event whose batch is marked as the broker's full state; a
  channel sends one request at a time, in order, retrying a failed one every
  ``CHANNEL_RETRY_BACKOFF_MS`` until answered, and hands each answer back to the controller as an
  event; ``AddBrokerChannel`` / ``RemoveBrokerChannel`` replace or drop the channel with its queue.

A node that goes down (``_take_down``) loses its messages, the calls it made, and fails every
call made to it. Time passing fires call timeouts, then ticks (periodic and armed) in node-name
order.
"""
from __future__ import annotations

import collections
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from actors.core.controller.send_thread import (
    BrokerUnreachable, ControlResponse, RequestSendThreadCore, ResyncBroker,
)
from actors.core.controller.controller import ControllerCore
from actors.core.effects import (
    AddBrokerChannel, AddPartitionsToFetcher, ArmTimer, LogEvent, Metric, RemoveBrokerChannel,
    RemovePartitionsFromFetcher, Respond, Send,
)
from actors.core.errors import ErrorCode
from actors.core.messages import (
    AlterPartitionRequest, BrokerHeartbeatRequest, BrokerRegistrationRequest, ControlledShutdownRequest,
    CreateTopicsRequest, DeleteTopicsRequest, ElectLeadersRequest, FetchRequest, FindCoordinatorRequest,
    LeaderAndIsrRequest, ListOffsetsRequest, MetadataRequest, OffsetForLeaderEpochRequest, ProduceRequest,
    StopReplicaRequest, UpdateMetadataRequest,
)
from actors.core.replica.broker_core import BrokerCore
from actors.core.replica.fetcher import FetcherCore
from actors.core.replica.follower_messages import FollowerAppendRequest, FollowerTruncateRequest
from actors.drivers.fetcher import FetcherDriver
from actors.drivers.send_thread import RequestSendThreadDriver
from tests.support.sim_network import EVENT, REQUEST, RESPONSE, Message
from tests.support.sim_seams import SimClock, SimLog, SimTransport

TopicPartition = tuple[str, int]

CONTROLLER, CLIENT = "controller", "client"
CLUSTER_ID = "sim"

# The shells' own call timeouts (actors/broker.py, actors/replica_fetcher.py,
# actors/request_send_thread.py) and what a timed-out call turns into there.
BROKER_TO_CONTROLLER_TIMEOUT_MS = 5_000
FETCHER_REPLACEMENT_DELAY_MS = 1_000  # the broker shell checks its fetchers once a second

BROKER_HANDLERS = {
    FindCoordinatorRequest: "handle_find_coordinator", ProduceRequest: "handle_produce", FetchRequest: "handle_fetch", ListOffsetsRequest: "handle_list_offsets",
    MetadataRequest: "handle_metadata", OffsetForLeaderEpochRequest: "handle_offset_for_leader_epoch",
    FollowerTruncateRequest: "handle_follower_truncate", FollowerAppendRequest: "handle_follower_append",
    LeaderAndIsrRequest: "handle_leader_and_isr", UpdateMetadataRequest: "handle_update_metadata",
    StopReplicaRequest: "handle_stop_replica",
}
CONTROLLER_HANDLERS = {
    BrokerRegistrationRequest: "handle_broker_registration", BrokerHeartbeatRequest: "handle_broker_heartbeat",
    ControlledShutdownRequest: "handle_controlled_shutdown", AlterPartitionRequest: "handle_alter_partition",
    CreateTopicsRequest: "handle_create_topics", DeleteTopicsRequest: "handle_delete_topics",
    ElectLeadersRequest: "handle_elect_leaders",
}


@dataclass(eq=False)
class _Node:
    name: str
    incarnation: int
    timers: set = field(default_factory=set)  # armed deadlines (ms)
    obligations: dict = field(default_factory=dict)  # request id -> call id it must answer
    request_ids: itertools.count = field(default_factory=itertools.count)
    periodic: bool = True  # ticked every tick_interval_ms


@dataclass(eq=False)
class _BrokerNode(_Node):
    broker_id: int = -1
    core: BrokerCore | None = None
    fetchers: dict = field(default_factory=dict)  # (leader id, fetcher id) -> _FetcherNode
    replace_fetchers: dict = field(default_factory=dict)  # (leader id, fetcher id) -> due ms


@dataclass(eq=False)
class _FetcherNode(_Node):
    broker_id: int = -1
    key: tuple[int, int] = (-1, -1)
    broker_incarnation: int = -1
    driver: FetcherDriver | None = None

    @property
    def core(self) -> FetcherCore:
        return self.driver.core


@dataclass(eq=False)
class _ChannelNode(_Node):
    broker_id: int = -1
    broker_epoch: int = -1
    driver: RequestSendThreadDriver | None = None

    @property
    def queue(self):
        return self.driver.core.queue


@dataclass(eq=False)
class _ControllerNode(_Node):
    core: ControllerCore | None = None


@dataclass(frozen=True)
class Truncation:
    """A replica's log end offset moved down during one step (a follower truncating)."""

    at_ms: int
    broker_id: int
    topic_partition: TopicPartition
    from_offset: int
    to_offset: int
    leader_id: int  # the leader this replica followed at the time
    leader_epoch: int
    cause: str  # the message type that caused it



class Shells:
    """Node bookkeeping and effect routing; ``Simulation`` sets up the state it uses."""

    # ============================================================================ plumbing
    def _next_incarnation(self, name: str) -> int:
        self._incarnations[name] += 1
        return self._incarnations[name]

    def _latency(self) -> int:
        return self.rng.randint(*self.latency_ms)

    def record(self, what: str) -> None:
        self._record(what)

    def call(self, caller: _Node, destination: str, destination_incarnation: int | None, request: Any,
             on_reply: Callable[[Any], None], *, timeout_ms: int, timeout_error: ErrorCode) -> None:
        self._call(caller, destination, destination_incarnation, request, on_reply, timeout_ms=timeout_ms,
                   timeout_error=timeout_error)

    def post_event(self, source: _Node, destination: str, destination_incarnation: int | None, event: Any) -> None:
        self._post(source, destination, destination_incarnation, EVENT, event)

    def _seams(self, node: _Node, route) -> tuple[SimTransport, SimClock, SimLog]:
        return SimTransport(self, node, route), SimClock(self, node), SimLog(self, node)

    def _record(self, what: str) -> None:
        self.trace.append(f"[step {self.step_count} t={self.now_ms}ms] {what}")

    def _where(self) -> str:
        return f"seed={self.seed} step={self.step_count} t={self.now_ms}ms"

    def _post(self, source: _Node, destination: str, destination_incarnation: int | None, kind: str, payload: Any,
              call_id: int | None = None) -> None:
        message = self.network.post(source=source.name, source_incarnation=source.incarnation,
                                    destination=destination, destination_incarnation=destination_incarnation,
                                    kind=kind, payload=payload, now_ms=self.now_ms, latency_ms=self._latency(),
                                    call_id=call_id)
        if message is not None and message.held_by is not None:
            self._record(f"hold {message.describe()}")

    def _call(self, caller: _Node, destination: str, destination_incarnation: int | None, request: Any,
              on_reply: Callable[[Any], None], *, timeout_ms: int, timeout_error: ErrorCode) -> None:
        call = self.network.open_call(caller=caller.name, caller_incarnation=caller.incarnation, request=request,
                                      callee=destination, now_ms=self.now_ms, timeout_ms=timeout_ms,
                                      timeout_error=timeout_error, on_reply=on_reply)
        self._post(caller, destination, destination_incarnation, REQUEST, request, call_id=call.id)

    def _reply(self, source: _Node, call_id: int, response: Any) -> None:
        call = self.network.calls.get(call_id)
        if call is not None:  # else the caller gave up (timed out) or died: nobody awaits it
            self._post(source, call.caller, call.caller_incarnation, RESPONSE, response, call_id=call_id)

    def _alive(self, name: str, incarnation: int | None) -> _Node | None:
        node = self.nodes.get(name)
        if node is None or (incarnation is not None and node.incarnation != incarnation):
            return None
        return node

    def _deliver(self, message: Message) -> None:
        node = self._alive(message.destination, message.destination_incarnation)
        if message.kind == RESPONSE:
            call = self.network.calls.pop(message.call_id, None)
            if call is not None and node is not None:
                call.on_reply(message.payload)
            return
        if node is None:
            if message.kind == REQUEST:  # the callee is down: the caller's call fails
                down = _Node(name=message.destination, incarnation=-1)
                self._reply(down, message.call_id, ErrorCode.NETWORK_EXCEPTION)
            return
        if message.kind == EVENT:
            self._on_event(node, message.payload)
            return
        request_id = next(node.request_ids)
        node.obligations[request_id] = message.call_id
        if isinstance(node, _BrokerNode):
            handler = getattr(node.core, BROKER_HANDLERS[type(message.payload)])
            self._step_broker(node, type(message.payload).__name__,
                              lambda: handler(request_id, message.payload, self.now_ms))
        elif isinstance(node, _ControllerNode):
            handler = getattr(node.core, CONTROLLER_HANDLERS[type(message.payload)])
            self._apply_controller(node, handler(request_id, message.payload, self.now_ms))
        else:
            raise TypeError(f"{node.name} takes no requests: {message.describe()}")

    def _on_event(self, node: _Node, payload: Any) -> None:
        if isinstance(payload, ControlResponse):
            self._apply_controller(node, node.core.on_control_response(
                payload.broker_id, payload.request, payload.response, self.now_ms))
        elif isinstance(payload, BrokerUnreachable):
            self._apply_controller(node, node.core.on_broker_unreachable(
                payload.broker_id, payload.broker_epoch, self.now_ms))
        elif isinstance(payload, ResyncBroker):
            self._apply_controller(node, node.core.resync_broker(payload.broker_id, self.now_ms),
                                   full_state_for=payload.broker_id)
        else:
            kind, argument = payload
            if kind == "add_partitions":
                node.driver.add_partitions(argument)
            elif kind == "remove_partitions":
                node.driver.remove_partitions(argument)
            else:
                raise AssertionError(f"unknown event {kind}")

    def _respond(self, node: _Node, effect: Respond) -> None:
        call_id = node.obligations.pop(effect.request_id, None)
        if call_id is not None:
            self._reply(node, call_id, effect.response)

    def _common_effect(self, node: _Node, effect: Any) -> bool:
        if isinstance(effect, Respond):
            self._respond(node, effect)
        elif isinstance(effect, ArmTimer):
            node.timers.add(max(effect.deadline_ms, self.now_ms + 1))
        elif isinstance(effect, LogEvent):
            self.log_events.append((self.now_ms, node.name, effect.level, effect.message))
            if effect.level != "debug":
                self._record(f"{node.name}: {effect.message}")
        elif isinstance(effect, Metric):
            pass
        else:
            return False
        return True

    # ------------------------------------------------------------------------------ brokers
    def _brokers(self) -> list[_BrokerNode]:
        return [n for n in self.nodes.values() if isinstance(n, _BrokerNode)]

    def _start_broker(self, broker_id: int) -> None:
        name = f"broker:{broker_id}"
        assert name not in self.nodes, f"{name} is already up"
        incarnation = self._next_incarnation(name)
        node = _BrokerNode(name=name, incarnation=incarnation, broker_id=broker_id)
        node.core = BrokerCore(broker_id=broker_id, storage=self.storages[broker_id], config=self.kafka_config,
                               host=f"broker-{broker_id}", incarnation_id=f"broker-{broker_id}-{incarnation}",
                               cluster_id=CLUSTER_ID, now_ms=self.now_ms)
        self.nodes[name] = node
        self._step_broker(node, "start", lambda: node.core.start(self.now_ms))

    def _apply_broker(self, node: _BrokerNode, effects: list) -> None:
        for effect in effects:
            if self._common_effect(node, effect):
                continue
            if isinstance(effect, Send):
                assert effect.destination == CONTROLLER, effect
                request = effect.message
                self._call(node, CONTROLLER, None, request,
                           lambda response, n=node, r=request: self._step_broker(
                               n, type(r).__name__.replace("Request", "Response"),
                               lambda: n.core.on_controller_response(r, response, self.now_ms)),
                           timeout_ms=BROKER_TO_CONTROLLER_TIMEOUT_MS, timeout_error=ErrorCode.NETWORK_EXCEPTION)
            elif isinstance(effect, AddPartitionsToFetcher):
                key = (effect.leader_id, effect.fetcher_id)
                fetcher = node.fetchers.get(key) or self._start_fetcher(node, key)
                self._post(node, fetcher.name, fetcher.incarnation, EVENT, ("add_partitions", list(effect.partitions)))
            elif type(effect).__name__ == "CoordinatorLeadershipChange":
                # The simulation runs no group coordinator: note the hand-over and move on.
                self._record(f"{node.name}: {effect}")
            elif type(effect).__name__ == "CoordinatorMetadataUpdate":
                pass  # the simulation runs no group coordinator to hand the cluster's partitions to
            elif isinstance(effect, RemovePartitionsFromFetcher):
                key = (effect.leader_id, effect.fetcher_id)
                fetcher = node.fetchers.get(key)
                if fetcher is None:
                    continue
                if effect.stop_fetcher:  # the shell kills the actor right away
                    del node.fetchers[key]
                    self._take_down(fetcher)
                else:
                    self._post(node, fetcher.name, fetcher.incarnation, EVENT,
                               ("remove_partitions", list(effect.partitions)))
            else:
                raise TypeError(f"broker shell cannot apply {effect!r}")

    def _step_broker(self, node: _BrokerNode, cause: str, step: Callable[[], list]) -> None:
        """Step the broker's core and apply its effects, noting any log end offset that moved down."""
        before = {tp: p.log_end_offset for tp, p in node.core.replica_manager.partitions.items()}
        self._apply_broker(node, step())
        for tp, partition in node.core.replica_manager.partitions.items():
            if tp in before and partition.log_end_offset < before[tp]:
                self.truncations.append(Truncation(
                    at_ms=self.now_ms, broker_id=node.broker_id, topic_partition=tp, from_offset=before[tp],
                    to_offset=partition.log_end_offset, leader_id=partition.leader_id,
                    leader_epoch=partition.leader_epoch, cause=cause))

    # ----------------------------------------------------------------------------- fetchers
    def _start_fetcher(self, broker: _BrokerNode, key: tuple[int, int]) -> _FetcherNode:
        leader_id, fetcher_id = key
        name = f"fetcher:{broker.broker_id}:{leader_id}:{fetcher_id}"
        fetcher = _FetcherNode(name=name, incarnation=self._next_incarnation(name), broker_id=broker.broker_id,
                               key=key, broker_incarnation=broker.incarnation)
        routes = {"leader": (f"broker:{leader_id}", None),  # by name, as ray.get_actor
                  "local": (broker.name, broker.incarnation)}
        fetcher.driver = FetcherDriver(FetcherCore(broker_id=broker.broker_id, leader_id=leader_id,
                                                   fetcher_id=fetcher_id, config=self.kafka_config, now_ms=self.now_ms),
                                       *self._seams(fetcher, routes.__getitem__))
        broker.fetchers[key] = fetcher
        self.nodes[name] = fetcher
        return fetcher

    # --------------------------------------------------------------------------- controller
    def _apply_controller(self, node: _ControllerNode, effects: list, full_state_for: int | None = None) -> None:
        """Apply the controller's effects; ``full_state_for`` names the broker whose resync they are."""
        sends: dict[int, list] = collections.defaultdict(list)
        for effect in effects:
            if isinstance(effect, Send):
                role, _, broker_id = effect.destination.partition(":")
                assert role == "broker", effect
                sends[int(broker_id)].append(effect.message)
                continue
            self._flush_sends(sends, full_state_for)  # keep Sends and channel changes in order
            if self._common_effect(node, effect):
                continue
            if isinstance(effect, AddBrokerChannel):
                old = self.nodes.get(f"channel:{effect.broker_id}")
                if old is not None:
                    self._take_down(old)
                name = f"channel:{effect.broker_id}"
                channel = _ChannelNode(name=name, incarnation=self._next_incarnation(name), periodic=False,
                                       broker_id=effect.broker_id, broker_epoch=effect.broker_epoch)
                routes = {"broker": (f"broker:{effect.broker_id}", None), "controller": (CONTROLLER, None)}
                channel.driver = RequestSendThreadDriver(
                    RequestSendThreadCore(broker_id=effect.broker_id, broker_epoch=effect.broker_epoch,
                                          queue_size_max=self.channel_queue_size_max),
                    *self._seams(channel, routes.__getitem__))
                self.nodes[name] = channel
            elif isinstance(effect, RemoveBrokerChannel):
                old = self.nodes.get(f"channel:{effect.broker_id}")
                if old is not None:
                    self._take_down(old)
            else:
                raise TypeError(f"controller shell cannot apply {effect!r}")
        self._flush_sends(sends, full_state_for)

    @property
    def channel_queue_size_max(self) -> int:
        return self.nodes[CONTROLLER].core.config.get_int("raykafka.controller.queue.size.max", 1)

    def _flush_sends(self, sends: dict[int, list], full_state_for: int | None) -> None:
        for broker_id, requests in sends.items():
            channel = self.nodes.get(f"channel:{broker_id}")
            if channel is None:
                self._record(f"controller: no channel to broker {broker_id}; dropping "
                             f"{', '.join(type(r).__name__ for r in requests)}")
                continue
            channel.driver.enqueue(requests, full_state=broker_id == full_state_for)
        sends.clear()

    # ------------------------------------------------------------------------ node failure
    def _take_down(self, node: _Node) -> None:
        """The node is gone: its messages are lost and every call to it fails at the caller."""
        doomed = [node] + (list(node.fetchers.values()) if isinstance(node, _BrokerNode) else [])
        names = {(n.name, n.incarnation) for n in doomed}
        for gone in doomed:
            self.nodes.pop(gone.name, None)
        if isinstance(node, _BrokerNode):
            node.fetchers.clear()

        def addressed_to_doomed(m: Message) -> bool:
            return any(m.destination == name and m.destination_incarnation in (None, incarnation)
                       for name, incarnation in names)
        lost = self.network.remove_where(lambda m: (m.source, m.source_incarnation) in names or addressed_to_doomed(m))
        failed_calls = [m.call_id for m in lost if m.kind == REQUEST and addressed_to_doomed(m)]
        failed_calls += [call_id for gone in doomed for call_id in gone.obligations.values()]
        for call_id in list(self.network.calls):
            call = self.network.calls[call_id]
            if (call.caller, call.caller_incarnation) in names:
                del self.network.calls[call_id]
        for gone in doomed:
            gone.obligations.clear()
        for call_id in failed_calls:
            self._reply(node, call_id, ErrorCode.NETWORK_EXCEPTION)

    # ------------------------------------------------------------------------ time passing
    def _fire_timeouts(self) -> None:
        for call in [c for c in self.network.calls.values() if c.deadline_ms <= self.now_ms]:
            del self.network.calls[call.id]
            if self._alive(call.caller, call.caller_incarnation) is not None:
                self._record(f"call {call.id} {type(call.request).__name__} {call.caller} -> {call.callee} timed out")
                call.on_reply(call.timeout_error)

    def _fire_ticks(self) -> None:
        periodic = self.now_ms % self.tick_interval_ms == 0
        for name in sorted(self.nodes):
            node = self.nodes.get(name)
            if node is None:
                continue
            due = {t for t in node.timers if t <= self.now_ms}
            if not due and not (periodic and node.periodic):
                continue
            node.timers -= due
            if isinstance(node, _BrokerNode):
                self._tick_broker(node)
            elif isinstance(node, (_FetcherNode, _ChannelNode)):
                node.driver.on_wakeup()
            elif isinstance(node, _ControllerNode):
                self._apply_controller(node, node.core.tick(self.now_ms))

    def _tick_broker(self, node: _BrokerNode) -> None:
        for key, due_ms in list(node.replace_fetchers.items()):
            if due_ms <= self.now_ms:
                del node.replace_fetchers[key]
                states = node.core.replica_manager.fetch_states_for(key)
                if states and key not in node.fetchers:
                    fetcher = self._start_fetcher(node, key)
                    self._post(node, fetcher.name, fetcher.incarnation, EVENT, ("add_partitions", states))
        self._step_broker(node, "tick", lambda: node.core.tick(self.now_ms))
