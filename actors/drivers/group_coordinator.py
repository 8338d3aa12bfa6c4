"""The group coordinator's driver: a ``BrokerLink`` around a ``GroupCoordinatorCore``, for the Ray
shell and the simulator.

Theory of operation. Client requests (JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit,
OffsetFetch, DescribeGroups, ListGroups, DeleteGroups) reach the core through ``handle``; what the
broker tells the coordinator (a leadership change of an offsets partition, a new metadata view)
through ``on_event``. Every ``Send("broker", message)`` of the link is a call to this
coordinator's own broker, whose answer, or the ``ErrorCode`` of a failed call, goes back into the
link. ``start`` takes the first look at the broker (its incarnation, leaderships and view).
"""
from __future__ import annotations

from typing import Any

from actors.core.apis import GROUP_COORDINATOR, Handler
from actors.core.effects import CoordinatorLeadershipChange, Send
from actors.core.group.broker_link import BrokerLink
from actors.core.group.messages import InternalProduceRequest
from actors.drivers.base import Driver
from actors.drivers.seams import Clock, EventLog, Messenger

# How long the broker may take to answer a read or a look at its state; a write may take the
# produce timeout the core asked for and this much more.
BROKER_CALL_TIMEOUT_MS = 30_000
PRODUCE_CALL_MARGIN_MS = 5_000


class GroupCoordinatorDriver(Driver):
    kind = GROUP_COORDINATOR

    def __init__(self, link: BrokerLink, messenger: Messenger, clock: Clock, log: EventLog) -> None:
        super().__init__(f"group coordinator {link.core.broker_id}", messenger, clock, log)
        self.link = link
        self.core = link.core

    def start(self) -> None:
        self.apply(self.link.start(self.now_ms()))

    def step(self, handler: Handler, request_id: int, request: Any, now_ms: int) -> list:
        """The core's step, its sends to the broker passed through the link."""
        return self.link.step(handler(self.core, request_id, request, now_ms))

    def on_event(self, event: Any) -> None:
        now_ms = self.now_ms()
        if isinstance(event, CoordinatorLeadershipChange):
            self.apply(self.link.on_leadership_change(event.partition, event.leader_epoch, event.is_leader, now_ms))
        else:
            self.apply(self.link.on_metadata_update(event, now_ms))

    def on_wakeup(self) -> None:
        self.apply(self.link.tick(self.now_ms()))

    def apply_own(self, effect: Any) -> None:
        assert isinstance(effect, Send) and effect.destination == "broker", f"{self.name} cannot apply {effect!r}"
        request = effect.message
        timeout_ms = request.produce.timeout_ms + PRODUCE_CALL_MARGIN_MS \
            if isinstance(request, InternalProduceRequest) else BROKER_CALL_TIMEOUT_MS
        self.messenger.call("broker", request, timeout_ms=timeout_ms, on_reply=lambda response: self.apply(
            self.link.on_broker_response(request, response, self.now_ms())))

    def describe(self) -> dict:
        return {"groups": len(self.core.groups), "partitions": self.link.epochs.partitions(),
                "loads": dict(self.link.loads_begun), "watch_rounds": self.link.watch_rounds,
                "broker_incarnation": self.link.broker_incarnation,
                "appends_in_flight": self.core.manager.appends_in_flight()}
