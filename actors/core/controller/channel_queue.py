"""One broker's queue of control requests, as Kafka 2.4's ControllerChannelManager keeps for each.

Theory of operation. The controller's channel manager keeps, per broker, a FIFO of ``QueueItem``s
(Kafka's: the API key, the request, the callback that takes the response, and the enqueue time)
that one request-send thread drains. The thread ``take``s the head, which leaves the queue and is
then *in flight*, exactly as Kafka's ``RequestSendThread`` takes it off its ``BlockingQueue``
before it sends; it retries that request until the broker answers, then ``complete``s it and
calls the item's callback with the response. At most one request is in flight. So:

- ``queue_size`` counts the waiting requests only, the in-flight one excluded: Kafka's
  ``QueueSize`` gauge is ``messageQueue.size``.
- A request's queue time runs from its enqueue to its take: Kafka's ``RequestRateAndQueueTimeMs``
  timer. ``last_queue_time_ms`` is that of the request taken most recently, and
  ``head_queue_time_ms`` how long the oldest waiting request has waited so far (it grows while
  the in-flight request is stuck on an unreachable broker, which the last queue time cannot show).

The limit. Kafka's queue is unbounded; this one holds at most ``queue_size_max`` waiting requests.
A batch of requests (what one controller step sends this broker, in order) that does not fit
makes the queue drop every *waiting* request, then take the batch into the emptied queue if it
fits there (otherwise it is dropped too), and say that the broker needs a full resync. That is
safe because control requests are state, not commands: a resync sends the broker the controller's
current UpdateMetadata, a LeaderAndIsr for each of its partitions and the StopReplica of each of
its replicas being deleted, which supersedes whatever was dropped (every request is fenced by
controller, broker and leader epochs, so the broker applies only what is newer). Dropping the
whole backlog, not just its oldest part, keeps a stalled broker from costing one resync per
batch. The in-flight request is never dropped: it may already have reached the broker, and the
send thread still owes the controller its answer.

A batch enqueued with ``full_state`` (the resync itself) supersedes every request before it, so
it never asks for another resync; and since ``queue_size_max`` is at least ``QUEUE_SIZE_MIN``,
the most requests one broker's resync holds, a resync always fits the emptied queue. A stalled
broker therefore costs at most one resync per overflowing batch, never a resync loop, and with a
limit well above a resync's size, overflows are rare.

Dropped items' callbacks are never called, as in Kafka when a broker's queue is cleared.
"""
from __future__ import annotations

import collections
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from actors.core.messages.leader_and_isr import LeaderAndIsrRequest
from actors.core.messages.stop_replica import StopReplicaRequest
from actors.core.messages.update_metadata import UpdateMetadataRequest

# The API keys a controller sends brokers (Kafka's RequestSendThread refuses any other).
CONTROL_REQUEST_TYPES = (LeaderAndIsrRequest, StopReplicaRequest, UpdateMetadataRequest)
CONTROL_API_KEYS = frozenset(request_type.API_KEY for request_type in CONTROL_REQUEST_TYPES)
QUEUE_SIZE_MAX_DEFAULT = 10_000
# The most requests one broker's resync holds: a LeaderAndIsr, an UpdateMetadata and two
# StopReplica (deleting and not deleting), as ``ControllerBrokerRequestBatch`` builds them.
QUEUE_SIZE_MIN = 4
NO_QUEUE_TIME = -1  # no request taken yet

Callback = Callable[[Any, Any], None]  # the shell calls it with (request, response)


@dataclass(frozen=True, slots=True)
class QueueItem:
    """One control request waiting for, or in, its send (Kafka's ``QueueItem``)."""
    api_key: int  # one of CONTROL_API_KEYS
    request: Any
    callback: Callback | None  # the shell's, called with the broker's answer; never by this core
    enqueue_time_ms: int


@dataclass(frozen=True, slots=True)
class EnqueueResult:
    accepted: int  # requests of the batch now waiting
    dropped: int  # requests dropped by this call: waiting ones, and the batch's if it did not fit
    resync_needed: bool  # the controller must send this broker its full state again


@dataclass(frozen=True, slots=True)
class ChannelQueueStatus:
    """What ``queue_sizes`` reports for one broker's channel."""
    broker_id: int
    queue_size: int  # waiting requests, the in-flight one excluded (Kafka's QueueSize)
    in_flight: bool
    head_queue_time_ms: int  # how long the oldest waiting request has waited; 0 when none waits
    last_queue_time_ms: int  # enqueue-to-take time of the last request taken; -1 before the first
    dropped_total: int  # requests dropped at the limit since this queue was made
    resyncs_requested: int


class ControllerChannelQueue:
    """The bounded FIFO of one broker's control requests with at most one in flight."""

    def __init__(self, *, broker_id: int, queue_size_max: int = QUEUE_SIZE_MAX_DEFAULT) -> None:
        assert queue_size_max >= QUEUE_SIZE_MIN, \
            f"queue_size_max {queue_size_max} must hold a resync ({QUEUE_SIZE_MIN} requests)"
        self.broker_id = broker_id
        self.queue_size_max = queue_size_max
        self._waiting: collections.deque[QueueItem] = collections.deque()
        self._in_flight: QueueItem | None = None
        self.last_queue_time_ms = NO_QUEUE_TIME
        self.dropped_total = 0
        self.resyncs_requested = 0

    @property
    def queue_size(self) -> int:
        return len(self._waiting)

    @property
    def in_flight(self) -> QueueItem | None:
        return self._in_flight

    def enqueue(self, requests: Iterable[Any], now_ms: int, *, callback: Callback | None = None,
                full_state: bool = False) -> EnqueueResult:
        """Queue one batch, in order, under the limit's policy (see the module's docstring)."""
        batch = [QueueItem(api_key=_control_api_key(request), request=request, callback=callback,
                           enqueue_time_ms=now_ms) for request in requests]
        if len(self._waiting) + len(batch) <= self.queue_size_max:
            self._waiting.extend(batch)
            return EnqueueResult(accepted=len(batch), dropped=0, resync_needed=False)
        dropped = len(self._waiting)
        self._waiting.clear()
        accepted = len(batch) <= self.queue_size_max
        if accepted:
            self._waiting.extend(batch)
        else:
            dropped += len(batch)
        self.dropped_total += dropped
        # A full-state batch that got in supersedes everything dropped before it.
        resync_needed = not (full_state and accepted)
        self.resyncs_requested += int(resync_needed)
        return EnqueueResult(accepted=len(batch) if accepted else 0, dropped=dropped, resync_needed=resync_needed)

    def take(self, now_ms: int) -> QueueItem | None:
        """The head leaves the queue and is in flight until ``complete``; None when nothing waits."""
        assert self._in_flight is None, f"broker {self.broker_id}: a request is already in flight"
        if not self._waiting:
            return None
        self._in_flight = self._waiting.popleft()
        self.last_queue_time_ms = max(0, now_ms - self._in_flight.enqueue_time_ms)
        return self._in_flight

    def complete(self) -> QueueItem:
        """The broker answered the in-flight request; the next may be taken."""
        item = self._in_flight
        assert item is not None, f"broker {self.broker_id}: no request in flight to complete"
        self._in_flight = None
        return item

    def head_queue_time_ms(self, now_ms: int) -> int:
        return max(0, now_ms - self._waiting[0].enqueue_time_ms) if self._waiting else 0

    def status(self, now_ms: int) -> ChannelQueueStatus:
        return ChannelQueueStatus(
            broker_id=self.broker_id, queue_size=self.queue_size, in_flight=self._in_flight is not None,
            head_queue_time_ms=self.head_queue_time_ms(now_ms), last_queue_time_ms=self.last_queue_time_ms,
            dropped_total=self.dropped_total, resyncs_requested=self.resyncs_requested)


def _control_api_key(request: Any) -> int:
    assert isinstance(request, CONTROL_REQUEST_TYPES), f"{type(request).__name__} is not a control request"
    return request.API_KEY


__all__ = ["CONTROL_API_KEYS", "ChannelQueueStatus", "ControllerChannelQueue", "EnqueueResult",
           "QUEUE_SIZE_MAX_DEFAULT", "QUEUE_SIZE_MIN", "QueueItem"]
