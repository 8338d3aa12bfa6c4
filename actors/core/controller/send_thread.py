"""One controller request-send thread (Kafka 2.4's ``RequestSendThread``), as a pure state machine.

Theory of operation. The controller's channel manager keeps one of these per registered broker.
It owns that broker's ``ControllerChannelQueue`` (Kafka's queue of ``QueueItem``s, with this
project's limit and overflow policy, see channel_queue.py) and sends its requests one at a time,
in order:

- ``enqueue(requests, now_ms, full_state=...)``: one controller step's batch for this broker joins
  the queue. At the limit the queue drops its waiting backlog; unless the batch was the broker's
  full state (a resync), which supersedes what was dropped, the thread tells the controller
  ``ResyncBroker``. A warning says what was dropped.
- The head is taken and sent as ``Send("broker", request)``; while it is in flight nothing else is
  sent. Its answer comes back through ``on_broker_response``: a response completes the item, and
  the controller gets it as ``ControlResponse`` (the item's callback in Kafka); a failed call (an
  ``ErrorCode``: the broker unreachable, restarting or slow) is retried after
  ``RETRY_BACKOFF_MS``, as Kafka's thread backs off and tries again for as long as it takes.
  ``tick`` sends the retry when it is due.
- ``on_broker_died``: the host learned that the broker's process is gone for good (Ray's
  actor-death signal); the controller gets ``BrokerUnreachable`` with the broker epoch this thread
  serves, and decides (the request in flight is still retried: a restarted broker answers it).

Metrics, Kafka's: ``QUEUE_SIZE_METRIC`` (waiting requests, the in-flight one excluded) after every
change, and ``QUEUE_TIME_METRIC`` (enqueue to take, in ms) for every request taken.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from actors.core.controller.channel_queue import ChannelQueueStatus, ControllerChannelQueue
from actors.core.effects import ArmTimer, Effect, LogEvent, Metric, Send
from actors.core.errors import ErrorCode

# Kafka's RequestSendThread waits this long before it tries a failed send again.
RETRY_BACKOFF_MS = 100
QUEUE_SIZE_METRIC = "raykafka_controller_channel_queue_size"
QUEUE_TIME_METRIC = "raykafka_controller_channel_request_queue_time_ms"

event = dataclass(frozen=True, slots=True, kw_only=True)


@event
class ControlBatch:
    """What one controller step sends this thread's broker, in order; ``full_state`` marks a resync."""
    requests: tuple[Any, ...]
    full_state: bool = False


@event
class ControlResponse:
    """The broker answered a control request (the queue item's callback, in Kafka)."""
    broker_id: int
    request: Any
    response: Any


@event
class ResyncBroker:
    """The queue dropped requests at its limit: the controller must send the broker its full state."""
    broker_id: int


@event
class BrokerUnreachable:
    """The broker's process is gone for good, as its send thread learned."""
    broker_id: int
    broker_epoch: int


class RequestSendThreadCore:
    def __init__(self, *, broker_id: int, broker_epoch: int, queue_size_max: int) -> None:
        self.broker_id = broker_id
        self.broker_epoch = broker_epoch
        self.queue = ControllerChannelQueue(broker_id=broker_id, queue_size_max=queue_size_max)
        self._tags = (("broker_id", str(broker_id)),)
        # Invariant: True exactly while the queue's in-flight request has a send awaiting its answer.
        self._sending = False
        self._retry_at_ms = -1
        self.sent = 0

    # ------------------------------------------------------------------------------- inputs
    def enqueue(self, requests: Iterable[Any], now_ms: int, *, full_state: bool = False) -> list[Effect]:
        result = self.queue.enqueue(list(requests), now_ms, full_state=full_state)
        effects: list[Effect] = []
        if result.dropped:
            effects.append(LogEvent(level="warning", message=(
                f"send queue for broker {self.broker_id} full ({self.queue.queue_size_max} waiting at most): "
                f"dropped {result.dropped} waiting requests"
                f"{'; asking the controller for a resync' if result.resync_needed else ''}")))
        if result.resync_needed:
            effects.append(Send(destination="controller", message=ResyncBroker(broker_id=self.broker_id)))
        return effects + self._send_next(now_ms) + [self._queue_size()]

    def on_broker_response(self, request: Any, response: Any, now_ms: int) -> list[Effect]:
        """The answer to the request in flight, or the ``ErrorCode`` of a failed send."""
        in_flight = self.queue.in_flight
        assert self._sending and in_flight is not None and in_flight.request is request, \
            f"broker {self.broker_id}: an answer to a request not in flight"
        self._sending = False
        if isinstance(response, ErrorCode):
            self._retry_at_ms = now_ms + RETRY_BACKOFF_MS
            return [ArmTimer(deadline_ms=self._retry_at_ms)]
        item = self.queue.complete()
        self.sent += 1
        return [Send(destination="controller", message=ControlResponse(
            broker_id=self.broker_id, request=item.request, response=response))] + self._send_next(now_ms)

    def on_broker_died(self, now_ms: int) -> list[Effect]:
        return [Send(destination="controller", message=BrokerUnreachable(broker_id=self.broker_id,
                                                                         broker_epoch=self.broker_epoch))]

    def tick(self, now_ms: int) -> list[Effect]:
        return self._send_next(now_ms)

    # ------------------------------------------------------------------------------ queries
    def status(self, now_ms: int) -> ChannelQueueStatus:
        return self.queue.status(now_ms)

    # ------------------------------------------------------------------------------ sending
    def _send_next(self, now_ms: int) -> list[Effect]:
        if self._sending or now_ms < self._retry_at_ms:
            return []
        effects: list[Effect] = []
        item = self.queue.in_flight
        if item is None:
            item = self.queue.take(now_ms)
            if item is None:
                return []
            effects += [Metric(name=QUEUE_TIME_METRIC, value=self.queue.last_queue_time_ms, tags=self._tags),
                        self._queue_size()]
        self._sending = True
        return effects + [Send(destination="broker", message=item.request)]

    def _queue_size(self) -> Metric:
        return Metric(name=QUEUE_SIZE_METRIC, value=self.queue.queue_size, tags=self._tags)
