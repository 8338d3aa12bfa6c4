"""The group coordinator actor: the Ray home of a ``GroupCoordinatorDriver``
(actors/drivers/group_coordinator.py), one per broker, named so that clients reach it from a
FindCoordinator answer.

Its groups are those of the ``__consumer_offsets`` partitions its broker leads; the loads, the
fencing of leadership changes and the fate it shares with its broker are the driver's link
(actors/core/group/broker_link.py). Here is only Ray's part: the broker looked up by its actor
name and called through ``coordinator_request``, Ray's word that the broker is gone
(``ActorDiedError``, or no actor by that name) handed to the link as BROKER_NOT_AVAILABLE, a
periodic tick, and the client APIs as actor methods. Created with ``max_restarts=-1``: after a
kill, Ray runs the constructor again, whose first look at the broker adopts its leaderships.
"""
from __future__ import annotations

import asyncio
import os
import random
import uuid

import ray

from actors.broker import broker_actor_name as actor_name_of_broker
from actors.core.effects import CoordinatorLeadershipChange
from actors.core.errors import ErrorCode
from actors.core.group.broker_link import BrokerLink
from actors.core.group.coordinator import GroupCoordinatorCore
from actors.drivers.group_coordinator import GroupCoordinatorDriver
from actors.group_lag import export_lag_forever
from actors.ray_seams import RayClock, RayEventLog, RayMessenger, monotonic_ms, tick_forever
from actors.codecs.record_batches import KafkaRecordCodec

TICK_INTERVAL_S = 0.1


class GroupCoordinatorActor:
    def __init__(self, *, broker_id: int, namespace: str, broker_actor_name: str,
                 config: dict[str, str] | None = None) -> None:
        self.broker_id = broker_id
        self.namespace = namespace
        self.incarnation_id = uuid.uuid4().hex  # new for every process start: tells a restart apart
        self._broker_actor_name = broker_actor_name
        core = GroupCoordinatorCore(broker_id=broker_id, now_ms=monotonic_ms(), config=dict(config or {}),
                                    member_id_random=random.Random())
        self._driver = GroupCoordinatorDriver(
            BrokerLink(core, KafkaRecordCodec()), RayMessenger(f"group coordinator {broker_id}", self._invoke),
            RayClock(lambda: self._driver.on_wakeup(), f"group coordinator {broker_id}"), RayEventLog())
        # Ray runs an async actor's constructor inside its event loop, so tasks can start here.
        self._ticker = asyncio.get_running_loop().create_task(
            tick_forever(TICK_INTERVAL_S, self._driver.on_wakeup, f"group coordinator {broker_id}"))
        self._driver.start()
        # Burrow-style consumer-group lag gauges (actors/group_lag.py).
        self._lag = asyncio.get_running_loop().create_task(export_lag_forever(
            broker_id=broker_id, namespace=namespace, groups=lambda: core.groups, broker_name=actor_name_of_broker,
            event_log=RayEventLog()))

    async def _invoke(self, destination: str, request, timeout_s: float):
        assert destination == "broker", destination
        try:
            broker = ray.get_actor(self._broker_actor_name, namespace=self.namespace)
            return await broker.coordinator_request.remote(request)
        except (ray.exceptions.ActorDiedError, ValueError):
            return ErrorCode.BROKER_NOT_AVAILABLE  # gone for good, or not there (yet)

    # ------------------------------------------------------------- from this coordinator's broker
    async def on_leadership_change(self, partition: int, leader_epoch: int, is_leader: bool) -> None:
        """The broker started or stopped leading an offsets partition (Kafka's onElection/onResignation)."""
        self._driver.on_event(CoordinatorLeadershipChange(partition=partition, leader_epoch=leader_epoch,
                                                          is_leader=is_leader))

    async def on_metadata_update(self, update) -> None:
        """The broker's metadata cache changed: the partitions that exist now, and those deleted."""
        self._driver.on_event(update)

    # -------------------------------------------------------------------------- Kafka APIs
    async def handle(self, request):
        """Every request the group coordinator serves (actors/core/apis.py), dispatched by its type."""
        answer = asyncio.get_running_loop().create_future()
        self._driver.handle(request, lambda response: answer.done() or answer.set_result(response))
        return await answer

    async def ping(self) -> dict:
        return {"broker_id": self.broker_id, "incarnation_id": self.incarnation_id, "pid": os.getpid(),
                **self._driver.describe()}


GroupCoordinatorRemote = ray.remote(GroupCoordinatorActor)
