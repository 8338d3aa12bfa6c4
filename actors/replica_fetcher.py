"""The replica fetcher actor: a thin async Ray shell around ``FetcherCore``, one per
(follower broker, leader broker, fetcher id), owned by the follower broker.

It turns the core's ``Send(destination="leader")`` into calls on the leader broker's actor (Fetch,
OffsetForLeaderEpoch, ListOffsets) and ``Send(destination="local")`` into calls on its own broker
(truncate, append), feeding each answer, or the error code of a failed call, back into the core.
The core keeps one request in flight, as a fetcher thread does. Large record payloads come from the
leader as object refs, which this actor hands to its broker without reading them.

The broker numbers its add/remove calls, since Ray does not promise to run an async actor's calls
in the order they were sent; they are applied strictly in that order.
"""
from __future__ import annotations

import asyncio

import ray
from loguru import logger
from ray.exceptions import ActorDiedError

from actors.core.config import KafkaConfig
from actors.core.effects import ArmTimer, LogEvent, Send
from actors.core.errors import ErrorCode
from actors.core.messages.fetch import FetchRequest
from actors.core.messages.list_offsets import ListOffsetsRequest
from actors.core.messages.offset_for_leader_epoch import OffsetForLeaderEpochRequest
from actors.core.replica.fetcher import FetcherCore
from actors.core.replica.follower_messages import FollowerAppendRequest, FollowerTruncateRequest
from actors.shell_support import OrderedInbox, monotonic_ms
from actors.transport import broker_node, shell_transport

LEADER_METHODS = {
    FetchRequest: "handle_fetch",
    OffsetForLeaderEpochRequest: "handle_offset_for_leader_epoch",
    ListOffsetsRequest: "handle_list_offsets",
}
LOCAL_METHODS = {
    FollowerTruncateRequest: "handle_follower_truncate",
    FollowerAppendRequest: "handle_follower_append",
}
CALL_TIMEOUT_S = 30.0
TICK_INTERVAL_S = 0.05


class ReplicaFetcherActor:
    def __init__(self, *, broker_id: int, leader_id: int, fetcher_id: int, leader_actor_name: str,
                 namespace: str, config: dict[str, str], broker) -> None:
        self.broker_id = broker_id
        self.leader_id = leader_id
        self.fetcher_id = fetcher_id
        self._leader_actor_name = leader_actor_name
        self._namespace = namespace
        self._broker = broker
        self._leader = None
        # Fetches cross the network between this broker and the leader's: network faults apply there.
        self._transport = shell_transport(broker_node(broker_id), namespace)
        self._core = FetcherCore(broker_id=broker_id, leader_id=leader_id, fetcher_id=fetcher_id,
                                 config=KafkaConfig(config), now_ms=monotonic_ms())
        self._inbox = OrderedInbox()  # the broker numbers its calls; apply them in that order
        self._wakeup = asyncio.Event()
        self._calls: set[asyncio.Task] = set()
        self._appended_bytes = 0
        # Ray runs an async actor's constructor inside its event loop.
        self._driver = asyncio.get_running_loop().create_task(self._drive())

    # ------------------------------------------------------------------ from the owning broker
    async def add_partitions(self, sequence: int, states: list) -> None:
        self._in_order(sequence, ("add", states))

    async def remove_partitions(self, sequence: int, topic_partitions: list) -> None:
        self._in_order(sequence, ("remove", topic_partitions))

    def _in_order(self, sequence: int, call: tuple) -> None:
        for kind, payload in self._inbox.offer(sequence, call):
            if kind == "add":
                self._apply(self._core.add_partitions(payload, monotonic_ms()))
            else:
                self._apply(self._core.remove_partitions(payload, monotonic_ms()))

    async def ping(self) -> dict:
        return {"broker_id": self.broker_id, "leader_id": self.leader_id, "fetcher_id": self.fetcher_id,
                "partitions": len(self._core.partitions)}

    async def describe(self) -> dict:
        return {"partitions": {f"{t}-{p}": {"fetch_offset": s.fetch_offset, "state": s.state.name,
                                            "latest_epoch": s.latest_epoch}
                               for (t, p), s in self._core.partitions.items()}}

    # ---------------------------------------------------------------------------- the shell
    async def _drive(self) -> None:
        while True:
            try:
                await asyncio.wait_for(self._wakeup.wait(), TICK_INTERVAL_S)
            except asyncio.TimeoutError:
                pass
            self._wakeup.clear()
            try:
                self._apply(self._core.tick(monotonic_ms()))
            except Exception:
                logger.exception("fetcher {}->{} tick failed", self.broker_id, self.leader_id)

    def _apply(self, effects: list) -> None:
        for effect in effects:
            if isinstance(effect, Send):
                task = asyncio.get_running_loop().create_task(self._call(effect.destination, effect.message))
                self._calls.add(task)
                task.add_done_callback(self._calls.discard)
            elif isinstance(effect, ArmTimer):
                delay_s = max(0.0, (effect.deadline_ms - monotonic_ms()) / 1000)
                asyncio.get_running_loop().call_later(delay_s, self._wakeup.set)
            elif isinstance(effect, LogEvent):
                logger.log(effect.level.upper(), effect.message)
            else:
                raise AssertionError(f"fetcher shell cannot apply {effect!r}")

    async def _call(self, destination: str, request) -> None:
        try:
            if destination == "leader":
                leader, method = await self._leader_handle(), LEADER_METHODS[type(request)]
                response = await self._transport.call(
                    broker_node(self.leader_id), lambda: getattr(leader, method).remote(request), CALL_TIMEOUT_S)
            else:
                assert destination == "local", destination
                method = LOCAL_METHODS[type(request)]
                response = await asyncio.wait_for(getattr(self._broker, method).remote(request), CALL_TIMEOUT_S)
        except Exception as exc:
            if isinstance(exc, ActorDiedError) and destination == "leader":
                self._leader = None  # a leader started again under the same name is a new actor
            response = ErrorCode.REQUEST_TIMED_OUT if isinstance(exc, asyncio.TimeoutError) \
                else ErrorCode.NETWORK_EXCEPTION
        now_ms = monotonic_ms()
        if destination == "leader":
            self._apply(self._core.on_leader_response(request, response, now_ms))
        else:
            self._apply(self._core.on_local_response(request, response, now_ms))
        self._wakeup.set()

    async def _leader_handle(self):
        if self._leader is None:
            self._leader = ray.get_actor(self._leader_actor_name, namespace=self._namespace)
        return self._leader


ReplicaFetcherRemote = ray.remote(ReplicaFetcherActor)
