"""The replica fetcher actor: the Ray home of a ``FetcherDriver`` (actors/drivers/fetcher.py), one
per (follower broker, leader broker, fetcher id), owned by the follower broker.

The driver's "leader" is the leader broker's actor, looked up by name (and again after Ray says it
died: a leader started again under that name is a new actor), through the network-fault seam
between the two brokers; its "local" is the owning broker's actor. A large answer's records come
from the leader as one object (``SharedRecords`` slices of it, actors/shared_records.py), which
this actor hands to its broker without reading it. The broker numbers its add/remove calls, since
Ray does not promise to run an async actor's calls in the order they were sent; they are applied
strictly in that order. An idle fetcher (no partitions left) is told to follow nothing and kept by its
broker for the leader's next partitions (``follow_nothing``), where Kafka stops the thread.

Its Fetches go over the leader's fetch channel (TCP, actors/broker_channel.py), whose address
and secret it asks the leader's actor for through Ray: the answer's records come as arrays of
their own rather than in shared memory, and the appends that carry them go to its own broker over
the broker's local channel (a Unix socket). Calls go through Ray instead where a channel cannot be
reached (for ``CHANNEL_RETRY_S`` after that; for the leader's, twice as long each time it is out
of reach again, up to ``FETCH_CHANNEL_RETRY_MAX_S``; a channel that failed midway is asked for
again at once, since the leader may be a new incarnation), or where an append's records are in
shared memory (a leader that answered through Ray); ``describe`` counts the calls of each carrier.

``describe`` also says, per topic, when this fetcher first asked the leader for it and when the
last append that carried its records returned (monotonic seconds, comparable between processes on
one machine), and how many Fetches and such appends it made: what a catch-up is timed by, from
outside (benchmarks/throughput.py), with no sampling error.
"""
from __future__ import annotations

import asyncio
import time

import ray
from loguru import logger
from ray.exceptions import ActorDiedError

from actors.core.config import KafkaConfig
from actors.core.messages.fetch import FetchRequest
from actors.core.fetcher.fetcher import FetcherCore
from actors.core.fetcher.follower_messages import FollowerAppendRequest, FollowerTruncateRequest
from actors.drivers.fetcher import FetcherDriver
from actors.ray_seams import RayClock, RayEventLog, RayMessenger, monotonic_ms, tick_forever
from actors.shell_support import OrderedInbox
from actors.fault_network import broker_node, shell_fault_network
from actors.hop_trace import hop, enabled as hop_trace_enabled
from actors.broker_channel import ChannelClient, ChannelUnavailable
from actors.shared_records import SharedRecords
from actors.process_memory import keep_freed_memory

TICK_INTERVAL_S = 0.05
CHANNEL_RETRY_S = 1.0  # after a channel could not be reached, Ray calls only for this long
# The leader's fetch channel, out of reach again and again (a firewall between the hosts, whose
# connection attempts time out): Ray calls for twice as long each time, up to this.
FETCH_CHANNEL_RETRY_MAX_S = 60.0


class ReplicaFetcherActor:
    def __init__(self, *, broker_id: int, leader_id: int, fetcher_id: int, leader_actor_name: str,
                 namespace: str, config: dict[str, str], broker,
                 local_channel: tuple[tuple, bytes] | None = None) -> None:
        # A new buffer reuses the pages of one freed (actors/process_memory.py); describe() says what was set.
        self._freed_memory_kept = keep_freed_memory(config)
        self.broker_id, self.leader_id, self.fetcher_id = broker_id, leader_id, fetcher_id
        self._leader_actor_name = leader_actor_name
        self._namespace = namespace
        self._broker = broker
        self._channel = None if local_channel is None else ChannelClient(*local_channel)
        self._channel_retry_at = 0.0
        self._local_calls = {"channel": 0, "ray": 0}
        self._leader = None
        # The leader's fetch channel: asked for when there is none, not asked again before the retry time.
        self._fetch_channel_enabled = KafkaConfig(config).get_bool("raykafka.replica.fetch.channel.enable")
        self._leader_channel: ChannelClient | None = None
        self._leader_channel_retry_at = 0.0
        self._leader_channel_unreachable = 0  # times in a row it could not be reached
        self._leader_calls = {"channel": 0, "ray": 0}
        # Fetches cross the network between this broker and the leader's: network faults apply there.
        self._network = shell_fault_network(broker_node(broker_id), namespace)
        core = FetcherCore(broker_id=broker_id, leader_id=leader_id, fetcher_id=fetcher_id,
                           config=KafkaConfig(config), now_ms=monotonic_ms())
        self._driver = FetcherDriver(core, RayMessenger(f"fetcher {broker_id}->{leader_id}", self._invoke),
                                     RayClock(lambda: self._driver.on_wakeup(), "fetcher"), RayEventLog())
        self._inbox = OrderedInbox()  # the broker numbers its calls; apply them in that order
        # topic -> [first Fetch naming it sent, last append carrying its records answered (monotonic
        # s), Fetches naming it, appends carrying its records].
        self._topic_times: dict[str, list] = {}
        # Ray runs an async actor's constructor inside its event loop.
        self._ticker = asyncio.get_running_loop().create_task(
            tick_forever(TICK_INTERVAL_S, self._driver.on_wakeup, f"fetcher {broker_id}->{leader_id}"))

    async def _invoke(self, destination: str, request, timeout_s: float):
        traced = hop_trace_enabled() and f"fetcher-{self.broker_id} {type(request).__name__}"
        if traced:
            hop(traced + " sent")
        response = await self._send(destination, request, timeout_s)
        if traced:
            hop(traced + " answered")
        return response

    async def _send(self, destination: str, request, timeout_s: float):
        if destination == "local":
            response = await self._call_broker(request)
            if isinstance(request, FollowerAppendRequest):
                self._note_appended(request)
            return response
        if isinstance(request, FetchRequest):
            self._note_fetch(request)
        if self._leader is None:
            self._leader = ray.get_actor(self._leader_actor_name, namespace=self._namespace)
        leader, node = self._leader, broker_node(self.leader_id)
        try:
            if isinstance(request, FetchRequest) and self._fetch_channel_enabled:
                sent, response = await self._fetch_over_channel(leader, node, request, timeout_s)
                if sent:
                    return response
            self._leader_calls["ray"] += 1
            return await self._network.call(node, lambda: leader.handle.remote(request), timeout_s)
        except ActorDiedError:
            self._leader = None
            raise

    async def _fetch_over_channel(self, leader, node: str, request: FetchRequest,
                                  timeout_s: float) -> tuple[bool, object]:
        """(True, the answer) of a Fetch sent over the leader's fetch channel; (False, None) when
        there is no channel to use, or it could not be reached (nothing was sent: the caller sends
        it through Ray). A call that failed midway raises, as a Ray call would."""
        channel = await self._leader_fetch_channel(leader, node, timeout_s)
        if channel is None:
            return False, None
        try:
            response = await self._network.call(node, lambda: channel.call(request), timeout_s)
        except ChannelUnavailable as exc:
            self._leader_channel_unreachable += 1
            retry_in_s = min(FETCH_CHANNEL_RETRY_MAX_S, CHANNEL_RETRY_S * 2 ** (self._leader_channel_unreachable - 1))
            logger.info("fetcher {}->{}: the leader's fetch channel is out of reach ({}); Ray calls for {} s",
                        self.broker_id, self.leader_id, exc, retry_in_s)
            self._forget_leader_channel(retry_in_s=retry_in_s)
            return False, None
        except BaseException:
            # Failed or cut midway (the leader may have died, or been replaced): the next Fetch
            # asks the leader's actor for its channel again.
            self._forget_leader_channel(retry_in_s=0.0)
            raise
        self._leader_calls["channel"] += 1
        self._leader_channel_unreachable = 0
        return True, response

    async def _leader_fetch_channel(self, leader, node: str, timeout_s: float) -> ChannelClient | None:
        """The client of the leader's fetch channel: its address asked of the leader's actor (through
        Ray and the network's faults) when there is none; None while it has none, or is not asked."""
        if self._leader_channel is None and time.monotonic() >= self._leader_channel_retry_at:
            address = await self._network.call(node, lambda: leader.fetch_channel.remote(), timeout_s)
            if address is None:  # this leader takes Fetches through Ray only (asked again after a while)
                self._leader_channel_retry_at = time.monotonic() + FETCH_CHANNEL_RETRY_MAX_S
            else:
                self._leader_channel = ChannelClient(*address)
        return self._leader_channel

    def _forget_leader_channel(self, *, retry_in_s: float) -> None:
        if self._leader_channel is not None:
            self._leader_channel.close()
        self._leader_channel, self._leader = None, None
        self._leader_channel_retry_at = time.monotonic() + retry_in_s

    async def _call_broker(self, request):
        """One call to this fetcher's own broker: over the local channel when its records are
        inline, else (or while the channel is out of reach) a Ray call."""
        if self._channel is not None and _inline(request) and time.monotonic() >= self._channel_retry_at:
            try:
                response = await self._channel.call(request)
                self._local_calls["channel"] += 1
                return response
            except ChannelUnavailable as exc:  # nothing was sent: send it through Ray instead
                logger.info("fetcher {}->{}: local channel out of reach ({}); Ray calls for {} s", self.broker_id,
                            self.leader_id, exc, CHANNEL_RETRY_S)
                self._channel_retry_at = time.monotonic() + CHANNEL_RETRY_S
        self._local_calls["ray"] += 1
        return await self._broker.handle.remote(request)

    def _note_fetch(self, request: FetchRequest) -> None:
        now_s = time.monotonic()
        for fetched in request.topics:
            self._topic_times.setdefault(fetched.topic, [now_s, None, 0, 0])[2] += 1

    def _note_appended(self, request: FollowerAppendRequest) -> None:
        now_s = time.monotonic()
        for topic in {p.topic for p in request.partitions if _carries_records(p.records)}:
            times = self._topic_times.setdefault(topic, [None, None, 0, 0])
            times[1] = now_s
            times[3] += 1

    # ------------------------------------------------------------------ from the owning broker
    async def add_partitions(self, sequence: int, states: list) -> None:
        self._in_order(sequence, ("add", states))

    async def remove_partitions(self, sequence: int, topic_partitions: list) -> None:
        self._in_order(sequence, ("remove", topic_partitions))

    async def follow_nothing(self, sequence: int) -> None:
        """Gone idle: drop every partition still followed (the broker keeps this actor for the
        leader's next partitions instead of stopping it; actors/broker.py ``_Messenger.stop``)."""
        self._in_order(sequence, ("remove", None))

    def _in_order(self, sequence: int, call: tuple) -> None:
        for kind, payload in self._inbox.offer(sequence, call):
            if kind == "add":
                self._driver.add_partitions(payload)
            else:
                self._driver.remove_partitions(list(self._driver.core.partitions) if payload is None else payload)
                followed = {topic for topic, _ in self._driver.core.partitions}
                self._topic_times = {t: times for t, times in self._topic_times.items() if t in followed}

    async def ping(self) -> dict:
        return {"broker_id": self.broker_id, "leader_id": self.leader_id, "fetcher_id": self.fetcher_id,
                "partitions": len(self._driver.core.partitions)}

    async def describe(self) -> dict:
        return self._driver.describe() | {
            "local_calls": dict(self._local_calls), "leader_calls": dict(self._leader_calls),
            "freed_memory_kept": self._freed_memory_kept, "topic_times": {
            topic: {"first_fetch_s": first, "last_records_append_s": last, "fetches": fetches, "appends": appends}
            for topic, (first, last, fetches, appends) in self._topic_times.items()}}


def _inline(request) -> bool:
    """Whether ``request`` can go over the local channel: a truncation, or an append whose
    records are all bytes (none in Ray's shared memory)."""
    if isinstance(request, FollowerTruncateRequest):
        return True
    return isinstance(request, FollowerAppendRequest) and not any(
        isinstance(p.records, SharedRecords) for p in request.partitions)


def _carries_records(records) -> bool:
    """Whether an append's payload holds batches (a ``SharedRecords`` slice's length is its size)."""
    return records is not None and len(records) > 0


ReplicaFetcherRemote = ray.remote(ReplicaFetcherActor)
