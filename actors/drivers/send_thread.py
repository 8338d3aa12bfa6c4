"""The controller request-send thread's driver: a ``RequestSendThreadCore`` and its effects.

Theory of operation. The controller hands each batch of control requests for this thread's broker
to ``enqueue`` (in the controller's order: the messenger keeps one caller's order). The core's
``Send("broker", request)`` becomes a call to the broker whose answer, or the ``ErrorCode`` of a
failed call, goes back into the core; its ``Send("controller", event)`` (a response, a resync
wanted, the broker gone) is told to the controller, which expects no answer. ``on_broker_died``
is the host's word that the broker's process is gone for good.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from actors.core.controller.channel_queue import ChannelQueueStatus
from actors.core.controller.send_thread import ControlBatch, RequestSendThreadCore
from actors.core.effects import Send
from actors.drivers.base import Driver
from actors.drivers.seams import Clock, EventLog, Messenger

# How long the broker may take to answer one control request before the send counts as failed:
# Kafka's default of controller.socket.timeout.ms, which the controller passes on.
SEND_THREAD_CALL_TIMEOUT_MS = 30_000


class RequestSendThreadDriver(Driver):
    def __init__(self, core: RequestSendThreadCore, messenger: Messenger, clock: Clock, log: EventLog,
                 socket_timeout_ms: int = SEND_THREAD_CALL_TIMEOUT_MS) -> None:
        super().__init__(f"send thread for broker {core.broker_id}", messenger, clock, log)
        assert socket_timeout_ms > 0, socket_timeout_ms
        self.core = core
        self.socket_timeout_ms = socket_timeout_ms

    def enqueue(self, requests: Iterable[Any], full_state: bool = False) -> int:
        """Queue one batch; returns the number of requests waiting after (Kafka's QueueSize)."""
        self.apply(self.core.enqueue(requests, self.now_ms(), full_state=full_state))
        return self.core.queue.queue_size

    def on_event(self, batch: ControlBatch) -> None:
        assert isinstance(batch, ControlBatch), f"{self.name} takes no {batch!r}"
        self.enqueue(batch.requests, full_state=batch.full_state)

    def on_broker_died(self) -> None:
        self.apply(self.core.on_broker_died(self.now_ms()))

    def on_wakeup(self) -> None:
        self.apply(self.core.tick(self.now_ms()))

    def status(self) -> ChannelQueueStatus:
        return self.core.status(self.now_ms())

    def apply_own(self, effect: Any) -> None:
        assert isinstance(effect, Send), f"{self.name} cannot apply {effect!r}"
        if effect.destination == "controller":
            self.messenger.tell("controller", effect.message)
            return
        assert effect.destination == "broker", effect
        request = effect.message
        self.messenger.call("broker", request, timeout_ms=self.socket_timeout_ms,
                            on_reply=lambda response: self.apply(self.core.on_broker_response(
                                request, response, self.now_ms())))
