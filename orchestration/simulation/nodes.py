"""The simulator's nodes: the shipped drivers (actors/drivers/) over the simulated seams.

Theory of operation. ``Nodes``, under ``simulation.Simulation``, holds the nodes (controller, brokers,
fetchers, send threads, the client), each running its Ray actor's driver over a ``SimMessenger``,
``SimClock`` and ``SimLog`` (seams.py) instead of Ray. Only the hosting differs from the Ray shells:

- names: a broker's ``controller`` is the ``controller`` node, its ``fetcher:<leader>:<id>`` the
  node ``fetcher:<broker>:<leader>:<id>``; a fetcher's ``leader`` is ``broker:<leader>`` (by name,
  whichever incarnation is up, as ``ray.get_actor``), its ``local`` its own broker's incarnation;
  a send thread's ``broker`` is ``broker:<id>`` by name, its ``controller`` the controller node,
  and the controller's ``send-thread:<id>`` the node ``channel:<id>``. A broker's group
  coordinator is the node ``coordinator:<id>`` (with ``group_coordinators``; otherwise what the
  broker tells it is only noted in the trace), which calls ``broker:<id>`` by name; consumers in
  groups are simulated clients (orchestration/simulation/consumer.py). With ``log.cleaner.enable``
  a broker's log cleaner is the node ``cleaner:<id>`` (orchestration/simulation/log_cleaner.py),
  which calls its own broker's incarnation and goes down with it.
- a controller hands a batch to its send thread at once (a thread of the same process), while
  every other message crosses the simulated network.
- Ray's word that an actor died: a killed broker's send thread hears it when ``kill`` says so
  (``notify_controller``); a killed fetcher or log cleaner is replaced by its broker a second
  later, as the Ray broker's watch does; a group coordinator's call to a broker that is down fails with
  BROKER_NOT_AVAILABLE, as the Ray coordinator maps a dead or missing broker actor.

A node that goes down (``_take_down``) loses its messages, the calls it made, and fails every
call made to it (those in flight, those it has not answered, and those whose answer was still on
its way) with NETWORK_EXCEPTION at once, as Ray fails the calls to an actor that died. Time
passing fires call timeouts, then wake-ups (periodic and armed) in node-name order.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from actors.core.controller.controller import ControllerCore
from actors.core.controller.send_thread import RequestSendThreadCore
from actors.core.effects import AddPartitionsToFetcher, RemovePartitionsFromFetcher
from actors.core.errors import ErrorCode
from actors.core.group.broker_link import BrokerLink
from actors.core.group.coordinator import GroupCoordinatorCore
from actors.core.group.messages import BrokerStateRequest, InternalProduceRequest, OffsetsLogReadRequest
from actors.core.messages.join_group import JoinGroupRequest
from actors.core.broker.broker_core import BrokerCore
from actors.core.fetcher.fetcher import FetcherCore
from actors.drivers.broker import BrokerDriver
from actors.drivers.controller import ControllerDriver
from actors.drivers.fetcher import FetcherDriver
from actors.drivers.group_coordinator import GroupCoordinatorDriver
from actors.drivers.send_thread import RequestSendThreadDriver
from actors.codecs.compression import KafkaCompressionCodecs
from actors.codecs.record_batches import KafkaRecordCodec
from orchestration.simulation.consumer import GroupMember
from orchestration.simulation.log_cleaner import GrabFilthiestLog, LogCleaned, SimLogCleaner, serve_cleaner
from orchestration.simulation.network import EVENT, REQUEST, RESPONSE, Message, MessageFilter
from orchestration.simulation.seams import SimClock, SimLog, SimStorageWorker, SimMessenger
from orchestration.simulation.watched_maps import WatchedLeaderships, WatchedPartitions

TopicPartition = tuple[str, int]

CONTROLLER, CLIENT = "controller", "client"
CLUSTER_ID = "sim"
FETCHER_REPLACEMENT_DELAY_MS = 1_000  # the Ray broker checks its fetchers once a second
COORDINATOR_REQUESTS = (InternalProduceRequest, OffsetsLogReadRequest, BrokerStateRequest)
CLEANER_REQUESTS = (GrabFilthiestLog, LogCleaned)


@dataclass(eq=False)
class _Node:
    name: str
    incarnation: int
    timers: set = field(default_factory=set)  # armed deadlines (ms)
    obligations: set = field(default_factory=set)  # ids of the calls it was made and has not answered
    periodic: bool = True  # woken every tick_interval_ms
    driver: Any = None

    @property
    def core(self) -> Any:
        return self.driver.core


@dataclass(eq=False)
class _BrokerNode(_Node):
    broker_id: int = -1
    fetchers: dict = field(default_factory=dict)  # (leader id, fetcher id) -> _FetcherNode
    replace_fetchers: dict = field(default_factory=dict)  # (leader id, fetcher id) -> due ms
    storage_works: list = field(default_factory=list)  # (work, on_done) its SimStorageWorker holds
    storage_worker: Any = None
    cleaner: Any = None  # its _CleanerNode, with log.cleaner.enable
    replace_cleaner_at_ms: int | None = None  # a killed cleaner's replacement is due then


@dataclass(eq=False)
class _FetcherNode(_Node):
    broker_id: int = -1
    key: tuple[int, int] = (-1, -1)


@dataclass(eq=False)
class _CleanerNode(_Node):
    broker_id: int = -1


@dataclass(eq=False)
class _ChannelNode(_Node):
    broker_id: int = -1
    broker_epoch: int = -1

    @property
    def queue(self):
        return self.driver.core.queue


@dataclass(eq=False)
class _ControllerNode(_Node):
    pass


@dataclass(eq=False)
class _CoordinatorNode(_Node):
    broker_id: int = -1


@dataclass(eq=False)
class _ConsumerNode(_Node):
    @property
    def member(self) -> GroupMember:
        return self.driver


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


class _ControllerMessenger(SimMessenger):
    """The controller's send threads are threads of its process: a batch reaches one at once."""

    def tell(self, destination: str, event: Any) -> None:
        channel = self._sim.nodes.get("channel:" + destination.split(":")[1])
        assert channel is not None, f"no {destination} to tell {event!r}"
        channel.driver.on_event(event)


class _CoordinatorMessenger(SimMessenger):
    """A call to a broker that is down fails as Ray fails a call to an actor that died, or that is
    not there by its name: BROKER_NOT_AVAILABLE, the Ray coordinator host's word for it."""

    def call(self, destination: str, request: Any, *, timeout_ms: int, on_reply: Callable[[Any], None]) -> None:
        name, _ = self._route(destination)

        def reply(response: Any) -> None:
            down = response == ErrorCode.NETWORK_EXCEPTION and name not in self._sim.nodes
            on_reply(ErrorCode.BROKER_NOT_AVAILABLE if down else response)
        super().call(destination, request, timeout_ms=timeout_ms, on_reply=reply)


class Nodes:
    """Node bookkeeping and message routing; ``Simulation`` sets up the state it uses."""

    # ============================================================================ plumbing
    def _next_incarnation(self, name: str) -> int:
        self._incarnations[name] += 1
        return self._incarnations[name]

    def _latency(self) -> int:
        return self.rng.randint(*self.latency_ms)

    def record(self, what: str) -> None:
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
            self.record(f"hold {message.describe()}")

    def post_event(self, source: _Node, destination: str, destination_incarnation: int | None, event: Any) -> None:
        self._post(source, destination, destination_incarnation, EVENT, event)

    def call(self, caller: _Node, destination: str, destination_incarnation: int | None, request: Any,
             on_reply: Callable[[Any], None], *, timeout_ms: int, timeout_error: ErrorCode) -> None:
        call = self.network.open_call(caller=caller.name, caller_incarnation=caller.incarnation, request=request,
                                      callee=destination, now_ms=self.now_ms, timeout_ms=timeout_ms,
                                      timeout_error=timeout_error, on_reply=on_reply)
        self._post(caller, destination, destination_incarnation, REQUEST, request, call_id=call.id)

    def _reply(self, source: _Node, call_id: int, response: Any) -> None:
        call = self.network.calls.get(call_id)
        if call is not None:  # else the caller gave up (timed out) or died: nobody awaits it
            self._post(source, call.caller, call.caller_incarnation, RESPONSE, response, call_id=call_id)

    def _responder(self, node: _Node, call_id: int) -> Callable[[Any], None]:
        node.obligations.add(call_id)

        def respond(response: Any) -> None:
            if call_id in node.obligations:
                node.obligations.discard(call_id)
                self._reply(node, call_id, response)
        return respond

    def _alive(self, name: str, incarnation: int | None) -> _Node | None:
        node = self.nodes.get(name)
        if node is None or (incarnation is not None and node.incarnation != incarnation):
            return None
        return node

    def _seams(self, node: _Node, route: Callable[[str], tuple[str, int | None]], messenger=SimMessenger,
               **hooks) -> tuple[SimMessenger, SimClock, SimLog]:
        return messenger(self, node, route, **hooks), SimClock(self, node), SimLog(self, node)

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
        payload = message.payload
        if message.kind == EVENT:
            self._on_event(node, payload)
            return
        respond = self._responder(node, message.call_id)
        if isinstance(node, _BrokerNode) and isinstance(payload, CLEANER_REQUESTS):
            self._step_broker(node, type(payload).__name__, lambda: serve_cleaner(self, node, payload, respond))
        elif isinstance(node, _BrokerNode) and isinstance(payload, COORDINATOR_REQUESTS):
            self._step_broker(node, type(payload).__name__, lambda: node.driver.serve_coordinator(payload, respond))
        elif isinstance(node, _BrokerNode):
            self._step_broker(node, type(payload).__name__, lambda: node.driver.handle(payload, respond))
        elif isinstance(node, _ControllerNode):
            node.driver.handle(payload, respond)
        elif isinstance(node, _CoordinatorNode):
            if isinstance(payload, JoinGroupRequest):  # as the wire fills them from header and connection
                payload = replace(payload, client_id=message.source, client_host=message.source)
            node.driver.handle(payload, respond)
        else:
            raise TypeError(f"{node.name} takes no requests: {message.describe()}")

    def _on_event(self, node: _Node, event: Any) -> None:
        if isinstance(node, _FetcherNode):
            if isinstance(event, AddPartitionsToFetcher):
                node.driver.add_partitions(event.partitions)
            else:
                assert isinstance(event, RemovePartitionsFromFetcher), event
                node.driver.remove_partitions(event.partitions)
        else:
            node.driver.on_event(event)

    # ------------------------------------------------------------------------------ brokers
    def _brokers(self) -> list[_BrokerNode]:
        return [n for n in self.nodes.values() if isinstance(n, _BrokerNode)]

    def _start_broker(self, broker_id: int) -> None:
        name = f"broker:{broker_id}"
        assert name not in self.nodes, f"{name} is already up"
        incarnation = self._next_incarnation(name)
        node = _BrokerNode(name=name, incarnation=incarnation, broker_id=broker_id)
        self.storages[broker_id].clear()  # a storage fault belongs to the process it was injected in
        core = BrokerCore(broker_id=broker_id, storage=self.storages[broker_id], config=self.kafka_config,
                          host=f"broker-{broker_id}", incarnation_id=f"broker-{broker_id}-{incarnation}",
                          cluster_id=CLUSTER_ID, now_ms=self.now_ms, codecs=KafkaCompressionCodecs())
        core.replica_manager.partitions = WatchedPartitions(core.replica_manager.partitions)

        def route(destination: str) -> tuple[str, int | None] | None:
            if destination == "controller":
                return CONTROLLER, None
            if destination == "coordinator":  # without group coordinators, the trace notes what it is told
                return (f"coordinator:{broker_id}", None) if self.group_coordinators else None
            fetcher = self.nodes.get(f"fetcher:{broker_id}:{destination.split(':', 1)[1]}")
            return f"fetcher:{broker_id}:{destination.split(':', 1)[1]}", -1 if fetcher is None else fetcher.incarnation

        node.storage_worker = SimStorageWorker(self, node)
        node.driver = BrokerDriver(core, *self._seams(
            node, route, start=lambda destination, **args: self._start_fetcher(node, **args),
            stop=lambda destination: self._stop_fetcher(node, destination),
            around=lambda cause, step: self._step_broker(node, cause, step)), node.storage_worker,
            halt=lambda reason: None)  # the step's end takes the node down (_step_broker)
        self.nodes[name] = node
        self._step_broker(node, "start", node.driver.start)
        if self.kafka_config.get_bool("log.cleaner.enable") and self.nodes.get(name) is node:
            self._start_cleaner(node)

    def _step_broker(self, node: _BrokerNode, cause: str, step: Callable[[], Any]) -> None:
        """Step the broker's driver; then note any log end offset that moved down and check the
        invariants of the partitions the step reached (orchestration/simulation/watched_maps.py)."""
        partitions = node.core.replica_manager.partitions
        if partitions.armed:  # within a step of this broker already: that step's checks cover it
            step()
            return
        partitions.arm()
        try:
            step()
        finally:
            before = partitions.disarm()
        for tp, log_end_offset_before in before.items():
            partition = dict.get(partitions, tp)
            if partition is not None and log_end_offset_before is not None \
                    and partition.log_end_offset < log_end_offset_before:
                self.truncations.append(Truncation(
                    at_ms=self.now_ms, broker_id=node.broker_id, topic_partition=tp,
                    from_offset=log_end_offset_before, to_offset=partition.log_end_offset,
                    leader_id=partition.leader_id, leader_epoch=partition.leader_epoch, cause=cause))
        if node.driver.halted:  # its log directory failed: the process ends, Ray starts it again
            self._restart_halted(node)
        elif self.nodes.get(node.name) is node:
            self.check_partitions(node, before)

    def _restart_halted(self, node: _BrokerNode) -> None:
        """A broker that halted (its log directory failed) dies, and Ray starts it again at once:
        a new process, on a disk that works again (actors/core/log/storage_faults.py)."""
        if self.nodes.get(node.name) is not node:
            return
        self.record(f"broker {node.broker_id} halted: its log directory failed")
        self.kill(node.broker_id, notify_controller=True)  # Ray's death notice reaches its send thread
        self._start_broker(node.broker_id)

    # ----------------------------------------------------------------------------- fetchers
    def _start_fetcher(self, broker: _BrokerNode, *, leader_id: int, fetcher_id: int) -> None:
        key = (leader_id, fetcher_id)
        name = f"fetcher:{broker.broker_id}:{leader_id}:{fetcher_id}"
        if name in self.nodes:
            self._take_down(self.nodes[name])
        fetcher = _FetcherNode(name=name, incarnation=self._next_incarnation(name), broker_id=broker.broker_id,
                               key=key)
        routes = {"leader": (f"broker:{leader_id}", None), "local": (broker.name, broker.incarnation)}
        fetcher.driver = FetcherDriver(FetcherCore(broker_id=broker.broker_id, leader_id=leader_id,
                                                   fetcher_id=fetcher_id, config=self.kafka_config, now_ms=self.now_ms),
                                       *self._seams(fetcher, routes.__getitem__))
        broker.fetchers[key] = fetcher
        self.nodes[name] = fetcher

    def _stop_fetcher(self, broker: _BrokerNode, destination: str) -> None:
        _, leader_id, fetcher_id = destination.split(":")
        fetcher = broker.fetchers.pop((int(leader_id), int(fetcher_id)), None)
        if fetcher is not None:
            self._take_down(fetcher)

    # --------------------------------------------------------------------------- log cleaners
    def _start_cleaner(self, broker: _BrokerNode) -> None:
        name = f"cleaner:{broker.broker_id}"
        cleaner = _CleanerNode(name=name, incarnation=self._next_incarnation(name), periodic=False,
                               broker_id=broker.broker_id)
        cleaner.driver = SimLogCleaner(self, cleaner, broker, self.kafka_config)
        broker.cleaner = cleaner
        self.nodes[name] = cleaner
        cleaner.driver.start()

    def kill_cleaner(self, broker_id: int) -> None:
        """Kill the broker's log cleaner, in whatever phase of a round; its broker starts another
        a second later, as the Ray broker's watch does."""
        broker = self.nodes[f"broker:{broker_id}"]
        assert broker.cleaner is not None, f"broker {broker_id} runs no log cleaner"
        self.record(f"kill cleaner {broker_id} ({broker.cleaner.driver.phase})")
        self._take_down(broker.cleaner)
        broker.cleaner = None
        broker.replace_cleaner_at_ms = self.now_ms + FETCHER_REPLACEMENT_DELAY_MS
        broker.timers.add(broker.replace_cleaner_at_ms)

    def cleaner(self, broker_id: int) -> SimLogCleaner | None:
        """The broker's log cleaner driver (None while it or its broker is down)."""
        broker = self.nodes.get(f"broker:{broker_id}")
        return None if broker is None or broker.cleaner is None else broker.cleaner.driver

    # --------------------------------------------------------------------------- controller
    def _start_controller(self) -> None:
        node = _ControllerNode(name=CONTROLLER, incarnation=self._next_incarnation(CONTROLLER))
        core = ControllerCore(store=self.metadata_store, config=self.kafka_config, now_ms=self.now_ms,
                              random_source=self.controller_random)
        core.context.leadership = WatchedLeaderships(core.context.leadership)
        node.driver = ControllerDriver(core, *self._seams(
            node, None, messenger=_ControllerMessenger, start=self._start_channel, stop=self._stop_channel))
        self.nodes[CONTROLLER] = node

    def restart_controller(self) -> None:
        """Controller failover: the controller process and its send threads die, and a new
        controller over the same metadata store (a new controller epoch) takes over."""
        self.record("controller failover")
        for name in sorted(n for n in self.nodes if n.startswith("channel:")):
            self._take_down(self.nodes[name])
        self._take_down(self.nodes[CONTROLLER])
        self._start_controller()
        self.nodes[CONTROLLER].driver.start()

    def _start_channel(self, destination: str, *, broker_id: int, broker_epoch: int, broker_host: str,
                       queue_size_max: int, socket_timeout_ms: int) -> None:
        self._stop_channel(destination)
        name = f"channel:{broker_id}"
        channel = _ChannelNode(name=name, incarnation=self._next_incarnation(name), periodic=False,
                               broker_id=broker_id, broker_epoch=broker_epoch)
        routes = {"broker": (f"broker:{broker_id}", None), "controller": (CONTROLLER, None)}
        channel.driver = RequestSendThreadDriver(
            RequestSendThreadCore(broker_id=broker_id, broker_epoch=broker_epoch, queue_size_max=queue_size_max),
            *self._seams(channel, routes.__getitem__), socket_timeout_ms=socket_timeout_ms)
        self.nodes[name] = channel

    def _stop_channel(self, destination: str) -> None:
        old = self.nodes.get("channel:" + destination.split(":")[1])
        if old is not None:
            self._take_down(old)

    # --------------------------------------------------------------------- group coordinators
    def _start_coordinator(self, broker_id: int) -> None:
        name = f"coordinator:{broker_id}"
        assert name not in self.nodes, f"{name} is already up"
        node = _CoordinatorNode(name=name, incarnation=self._next_incarnation(name), broker_id=broker_id)
        core = GroupCoordinatorCore(broker_id=broker_id, now_ms=self.now_ms, config=self.config,
                                    member_id_random=self.member_id_random)
        routes = {"broker": (f"broker:{broker_id}", None)}  # by name: it outlives a broker's restart
        node.driver = GroupCoordinatorDriver(BrokerLink(core, KafkaRecordCodec()), *self._seams(
            node, routes.__getitem__, messenger=_CoordinatorMessenger))
        self.nodes[name] = node
        node.driver.start()

    def _start_consumer(self, name: str, group_id: str, topics: tuple[str, ...], **timeouts: int) -> GroupMember:
        node_name = f"consumer:{name}"
        assert node_name not in self.nodes, f"{node_name} is already up"
        node = _ConsumerNode(name=node_name, incarnation=self._next_incarnation(node_name), periodic=False)
        node.driver = GroupMember(self, node, group_id, tuple(topics), **timeouts)
        self.nodes[node_name] = node
        node.timers.add(self.now_ms + 1)
        return node.driver

    # ------------------------------------------------------------------------ node failure
    def _take_down(self, node: _Node) -> None:
        """The node is gone: its messages are lost and every call to it fails at the caller."""
        doomed = [node] + (list(node.fetchers.values()) if isinstance(node, _BrokerNode) else [])
        if isinstance(node, _BrokerNode) and node.cleaner is not None:  # a Ray actor's child dies with it
            doomed.append(node.cleaner)
        names = {(n.name, n.incarnation) for n in doomed}
        for gone in doomed:
            if self.nodes.get(gone.name) is gone:
                del self.nodes[gone.name]
        if isinstance(node, _BrokerNode):
            node.fetchers.clear()

        def addressed_to_doomed(m: Message) -> bool:
            return any(m.destination == name and m.destination_incarnation in (None, incarnation)
                       for name, incarnation in names)
        lost = self.network.remove_where(lambda m: (m.source, m.source_incarnation) in names or addressed_to_doomed(m))
        failed_calls = [m.call_id for m in lost if m.kind == REQUEST and addressed_to_doomed(m)]
        failed_calls += sorted(call_id for gone in doomed for call_id in gone.obligations)
        # An answer still on its way is lost with its sender, and its call fails now, as Ray fails
        # every call to an actor that died rather than leave the caller to its timeout.
        failed_calls += [m.call_id for m in lost
                         if m.kind == RESPONSE and (m.source, m.source_incarnation) in names]
        for call_id in list(self.network.calls):
            call = self.network.calls[call_id]
            if (call.caller, call.caller_incarnation) in names:
                del self.network.calls[call_id]
        for gone in doomed:
            gone.obligations.clear()
        for call_id in failed_calls:
            self._reply(node, call_id, ErrorCode.NETWORK_EXCEPTION)

    # ------------------------------------------------------------------------- message rules
    def hold(self, name: str, *, count: int | None = None, **message_filter) -> None:
        """Hold back messages matching the filter (see ``MessageFilter``) until release or drop."""
        self.network.add_rule(name, MessageFilter.from_spec(message_filter), action="hold", count=count)

    def drop_matching(self, name: str, *, count: int | None = None, **message_filter) -> None:
        """Lose matching messages as they are sent, until ``drop(name)`` removes the rule."""
        self.network.add_rule(name, MessageFilter.from_spec(message_filter), action="drop", count=count)

    def release(self, name: str) -> int:
        return len(self.network.release(name, self.now_ms))

    def drop(self, name: str) -> int:
        return len(self.network.drop_held(name))

    def held(self, name: str | None = None) -> list[Message]:
        return self.network.held(name)

    # ------------------------------------------------------------------------------ pausing
    def pause(self, broker_id: int) -> None:
        """Stop the broker's process (SIGSTOP): it and its fetchers neither run nor receive until
        ``resume``; what is sent to them waits, and their own calls time out only once resumed."""
        self.record(f"pause broker {broker_id}")
        self.network.paused |= {f"broker:{broker_id}", f"fetcher:{broker_id}"}

    def resume(self, broker_id: int) -> None:
        if f"broker:{broker_id}" in self.network.paused:
            self.record(f"resume broker {broker_id}")
        self.network.paused -= {f"broker:{broker_id}", f"fetcher:{broker_id}"}

    # ------------------------------------------------------------------------ time passing
    def _fire_timeouts(self) -> None:
        for call in self.network.timed_out_calls(self.now_ms):
            del self.network.calls[call.id]
            if self._alive(call.caller, call.caller_incarnation) is not None:
                self.record(f"call {call.id} {type(call.request).__name__} {call.caller} -> {call.callee} timed out")
                call.on_reply(call.timeout_error)

    def _fire_ticks(self) -> None:
        periodic = self.now_ms % self.tick_interval_ms == 0
        if self.network.paused:  # a paused node's due deadlines stay armed: look at every node
            names = self.nodes.sorted_names()
        else:
            due_names = self.nodes.pop_due_names(self.now_ms)
            names = self.nodes.sorted_names() if periodic else sorted(due_names)
        for name in names:
            node = self.nodes.get(name)
            if node is None or self.network.is_paused(name):
                continue
            due = {t for t in node.timers if t <= self.now_ms}
            if not due and not (periodic and node.periodic):
                continue
            node.timers -= due
            if isinstance(node, _BrokerNode):
                self._step_broker(node, "tick", lambda n=node: self._wake_broker(n))
            else:
                node.driver.on_wakeup()

    def _wake_broker(self, node: _BrokerNode) -> None:
        node.storage_worker.finish_due()
        for key, due_ms in list(node.replace_fetchers.items()):
            if due_ms <= self.now_ms:
                del node.replace_fetchers[key]
                node.driver.on_fetcher_died(key)
        if node.replace_cleaner_at_ms is not None and node.replace_cleaner_at_ms <= self.now_ms:
            node.replace_cleaner_at_ms = None
            self._start_cleaner(node)
        node.driver.on_wakeup()


__all__ = ["CLIENT", "CONTROLLER", "FETCHER_REPLACEMENT_DELAY_MS", "Nodes", "TopicPartition", "Truncation"]
