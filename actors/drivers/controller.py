"""The controller's driver: a ``ControllerCore`` and its channel manager, for the Ray shell and the simulator.

Theory of operation. Requests from brokers and admin clients reach the core through ``handle``;
the request-send threads' events (a broker's answer, a resync wanted, a broker gone) through
``on_event``. The core's effects:

- ``Send("broker:<id>", request)``: Kafka's ``ControllerBrokerRequestBatch`` sends. The sends of
  one step to one broker go to that broker's send thread as one batch (``ControlBatch``), in the
  core's order relative to the channel changes around them; a batch for a broker with no send
  thread is dropped, as Kafka's channel manager drops requests for a broker it does not know.
  ``resync`` marks the batch as the broker's full state, which lets the thread's queue drop what
  it supersedes.
- ``AddBrokerChannel`` / ``RemoveBrokerChannel``: start (replacing any old one) or stop the send
  thread for a broker (``send-thread:<id>``). A send thread that died is replaced by
  ``on_send_thread_died``, and its broker sent the current state again.
"""
from __future__ import annotations

import collections
from typing import Any

from actors.core.apis import CONTROLLER
from actors.core.controller.channel_queue import QUEUE_SIZE_MIN
from actors.core.controller.controller import ControllerCore
from actors.core.controller.send_thread import BrokerUnreachable, ControlBatch, ControlResponse, ResyncBroker
from actors.core.effects import AddBrokerChannel, RemoveBrokerChannel, Send
from actors.drivers.base import Driver
from actors.drivers.seams import Clock, EventLog, Messenger


def send_thread_name(broker_id: int) -> str:
    return f"send-thread:{broker_id}"


class ControllerDriver(Driver):
    kind = CONTROLLER

    def __init__(self, core: ControllerCore, messenger: Messenger, clock: Clock, log: EventLog) -> None:
        super().__init__("controller", messenger, clock, log)
        self.core = core
        # Read once here, so that an invalid value stops the controller from starting at all.
        self.queue_size_max = core.config.get_int("raykafka.controller.queue.size.max", QUEUE_SIZE_MIN)
        self.socket_timeout_ms = core.config.get_int("controller.socket.timeout.ms", 1)
        self.send_threads: dict[int, int] = {}  # broker id -> the broker epoch its send thread serves

    # ----------------------------------------------------------------------------- inputs
    def start(self) -> None:
        self.apply(self.core.start(self.now_ms()))

    def on_event(self, event: Any) -> None:
        now_ms = self.now_ms()
        if isinstance(event, ControlResponse):
            self.apply(self.core.on_control_response(event.broker_id, event.request, event.response, now_ms))
        elif isinstance(event, BrokerUnreachable):
            self.apply(self.core.on_broker_unreachable(event.broker_id, event.broker_epoch, now_ms))
        else:
            assert isinstance(event, ResyncBroker), f"the controller takes no {event!r}"
            self.resync(event.broker_id)

    def resync(self, broker_id: int) -> None:
        """Send ``broker_id`` the controller's full state (its send thread dropped requests, or is new)."""
        self.apply(self.core.resync_broker(broker_id, self.now_ms()), full_state_for=broker_id)

    def on_send_thread_died(self, broker_id: int) -> None:
        if broker_id not in self.send_threads:
            return
        self.log.log("warning", f"send thread for broker {broker_id} is gone; recreating it")
        self._add_send_thread(broker_id, self.send_threads[broker_id])
        self.resync(broker_id)

    def on_wakeup(self) -> None:
        self.apply(self.core.tick(self.now_ms()))

    # ---------------------------------------------------------------------------- effects
    def apply(self, effects: list, full_state_for: int | None = None) -> None:
        """Apply the core's effects; ``full_state_for`` names the broker whose resync they are."""
        batches: dict[int, list] = collections.defaultdict(list)
        for effect in effects:
            if isinstance(effect, Send):
                role, _, broker_id = effect.destination.partition(":")
                assert role == "broker", effect.destination
                batches[int(broker_id)].append(effect.message)
                continue
            self._flush(batches, full_state_for)  # keep sends and channel changes in the core's order
            if isinstance(effect, AddBrokerChannel):
                self._add_send_thread(effect.broker_id, effect.broker_epoch)
            elif isinstance(effect, RemoveBrokerChannel):
                if self.send_threads.pop(effect.broker_id, None) is not None:
                    self.messenger.stop(send_thread_name(effect.broker_id))
            elif not self.apply_common(effect):
                self.apply_own(effect)
        self._flush(batches, full_state_for)

    def _add_send_thread(self, broker_id: int, broker_epoch: int) -> None:
        if self.send_threads.pop(broker_id, None) is not None:
            self.messenger.stop(send_thread_name(broker_id))
        self.send_threads[broker_id] = broker_epoch
        self.messenger.start(send_thread_name(broker_id), broker_id=broker_id, broker_epoch=broker_epoch,
                             broker_host=self.core.context.brokers[broker_id].host,
                             queue_size_max=self.queue_size_max, socket_timeout_ms=self.socket_timeout_ms)

    def _flush(self, batches: dict[int, list], full_state_for: int | None) -> None:
        for broker_id, requests in batches.items():
            if broker_id not in self.send_threads:
                self.log.log("debug", f"controller: no channel to broker {broker_id}; dropping "
                                      f"{', '.join(type(r).__name__ for r in requests)}")
                continue
            self.messenger.tell(send_thread_name(broker_id), ControlBatch(
                requests=tuple(requests), full_state=broker_id == full_state_for))
        batches.clear()
