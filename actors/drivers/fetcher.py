"""The replica fetcher's driver: a ``FetcherCore`` and its effects, for the Ray shell and the simulator.

Theory of operation. The owning broker hands partitions over with ``add_partitions`` and takes
them back with ``remove_partitions`` (its calls arrive in the order it made them: the messenger
keeps one caller's order). The core's ``Send(destination="leader")`` (Fetch, OffsetForLeaderEpoch,
ListOffsets) becomes a call to the leader broker, ``Send(destination="local")`` (truncate, append)
one to the fetcher's own broker; each answer, or the ``ErrorCode`` of a failed call, goes back into
the core with the request it answers. The core keeps one request in flight, as a fetcher thread
does, and its ``tick`` fails a request the messenger left unanswered too long.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from actors.core.effects import Send
from actors.core.fetcher.fetcher import FetcherCore
from actors.drivers.base import Driver
from actors.drivers.seams import Clock, EventLog, Messenger

# How long one call to the leader or to the local broker may take before it counts as failed.
FETCHER_CALL_TIMEOUT_MS = 30_000
DESTINATIONS = ("leader", "local")


class FetcherDriver(Driver):
    def __init__(self, core: FetcherCore, messenger: Messenger, clock: Clock, log: EventLog) -> None:
        super().__init__(f"fetcher {core.broker_id}->{core.leader_id}#{core.fetcher_id}", messenger, clock, log)
        self.core = core

    def add_partitions(self, states: Iterable[Any]) -> None:
        self.apply(self.core.add_partitions(list(states), self.now_ms()))

    def remove_partitions(self, topic_partitions: Iterable[tuple[str, int]]) -> None:
        self.apply(self.core.remove_partitions(list(topic_partitions), self.now_ms()))

    def on_wakeup(self) -> None:
        self.apply(self.core.tick(self.now_ms()))

    def apply_own(self, effect: Any) -> None:
        assert isinstance(effect, Send) and effect.destination in DESTINATIONS, f"{self.name} cannot apply {effect!r}"
        destination, request = effect.destination, effect.message
        self.messenger.call(destination, request, timeout_ms=FETCHER_CALL_TIMEOUT_MS,
                            on_reply=lambda response: self._on_reply(destination, request, response))

    def _on_reply(self, destination: str, request: Any, response: Any) -> None:
        answer = self.core.on_leader_response if destination == "leader" else self.core.on_local_response
        self.apply(answer(request, response, self.now_ms()))

    def describe(self) -> dict:
        return {"partitions": {f"{t}-{p}": {"fetch_offset": s.fetch_offset, "state": s.state.name,
                                            "latest_epoch": s.latest_epoch}
                               for (t, p), s in self.core.partitions.items()}}
