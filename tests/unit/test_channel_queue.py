"""Proves a broker's control-request queue behaves as Kafka's ControllerChannelManager queue with
our stated limit: FIFO with one request in flight, QueueSize counting waiting requests only, queue
time from enqueue to take, and at the limit the waiting backlog dropped for a resync while the
in-flight request is kept, driven through tables of enqueue/take/complete steps."""
from __future__ import annotations

import itertools

import pytest

from actors.core.controller.channel_queue import (
    QUEUE_SIZE_MIN, ControllerChannelQueue, QueueItem,
)
from actors.core.messages.leader_and_isr import LeaderAndIsrRequest
from actors.core.messages.stop_replica import StopReplicaRequest
from actors.core.messages.update_metadata import UpdateMetadataRequest

BROKER_ID = 1
KINDS = (LeaderAndIsrRequest, UpdateMetadataRequest, StopReplicaRequest)


def control_request(number: int):
    """A control request identified by ``number`` (carried as its broker epoch), of rotating kind."""
    kind = KINDS[number % len(KINDS)]
    fields = dict(controller_id=3000, controller_epoch=1, broker_epoch=number)
    if kind is StopReplicaRequest:
        return kind(topics=(), **fields)
    if kind is UpdateMetadataRequest:
        return kind(topic_states=(), live_brokers=(), **fields)
    return kind(topic_states=(), **fields)


def number(item: QueueItem | None) -> int | None:
    return None if item is None else item.request.broker_epoch


def run(queue_size_max: int, steps: list[tuple]) -> tuple[ControllerChannelQueue, list]:
    """Apply ``steps`` at 10 ms apart; return the queue and what each step returned.

    Steps: ("enqueue", n) or ("enqueue", n, "full") queues n new requests (numbered 1, 2, ...);
    ("take",) takes the head (returns its number); ("complete",) completes the one in flight."""
    queue = ControllerChannelQueue(broker_id=BROKER_ID, queue_size_max=queue_size_max)
    numbers = itertools.count(1)
    outcomes = []
    for index, step in enumerate(steps):
        now_ms = index * 10
        if step[0] == "enqueue":
            requests = [control_request(next(numbers)) for _ in range(step[1])]
            result = queue.enqueue(requests, now_ms, full_state="full" in step)
            outcomes.append((result.accepted, result.dropped, result.resync_needed))
        elif step[0] == "take":
            outcomes.append(number(queue.take(now_ms)))
        else:
            assert step == ("complete",), step
            outcomes.append(number(queue.complete()))
    return queue, outcomes


def waiting(queue: ControllerChannelQueue) -> list[int]:
    return [number(item) for item in queue._waiting]


# name, queue_size_max, steps, outcome of each step, waiting after, in flight after, dropped total
CASES = [
    ("fifo with one in flight", 8,
     [("enqueue", 3), ("take",), ("complete",), ("take",)],
     [(3, 0, False), 1, 1, 2], [3], 2, 0),
    ("exactly at the limit fits", 4,
     [("enqueue", 2), ("enqueue", 2)],
     [(2, 0, False), (2, 0, False)], [1, 2, 3, 4], None, 0),
    ("overflow drops the waiting backlog, keeps the new batch, asks for a resync", 4,
     [("enqueue", 3), ("enqueue", 2)],
     [(3, 0, False), (2, 3, True)], [4, 5], None, 3),
    ("overflow never drops the request in flight", 4,
     [("enqueue", 4), ("take",), ("enqueue", 2), ("enqueue", 2)],
     [(4, 0, False), 1, (2, 3, True), (2, 0, False)], [5, 6, 7, 8], 1, 3),
    ("the in-flight request completes after overflows, then the newest batch goes out", 4,
     [("enqueue", 4), ("take",), ("enqueue", 3), ("enqueue", 2), ("complete",), ("take",)],
     [(4, 0, False), 1, (3, 3, True), (2, 3, True), 1, 8], [9], 8, 6),
    ("a batch larger than the queue is dropped with the backlog", 4,
     [("enqueue", 1), ("enqueue", 5)],
     [(1, 0, False), (0, 6, True)], [], None, 6),
    ("a full-state batch that gets in supersedes the dropped backlog: no further resync", 4,
     [("enqueue", 4), ("enqueue", 2, "full")],
     [(4, 0, False), (2, 4, False)], [5, 6], None, 4),
    ("a full-state batch that fits drops nothing", 4,
     [("enqueue", 1), ("enqueue", 3, "full")],
     [(1, 0, False), (3, 0, False)], [1, 2, 3, 4], None, 0),
    ("take on an empty queue", 4,
     [("take",), ("enqueue", 1), ("take",)],
     [None, (1, 0, False), 1], [], 1, 0),
]


@pytest.mark.parametrize("name, queue_size_max, steps, outcomes, waiting_after, in_flight_after, dropped",
                         CASES, ids=[case[0] for case in CASES])
def test_queue_steps(name, queue_size_max, steps, outcomes, waiting_after, in_flight_after, dropped):
    queue, seen = run(queue_size_max, steps)
    assert seen == outcomes
    assert waiting(queue) == waiting_after
    assert queue.queue_size == len(waiting_after), "QueueSize counts waiting requests only"
    assert number(queue.in_flight) == in_flight_after
    assert queue.dropped_total == dropped
    assert queue.resyncs_requested == sum(1 for o in outcomes if isinstance(o, tuple) and o[2])


def test_a_stalled_broker_never_sets_off_a_resync_loop_and_keeps_its_request_in_flight():
    # The smallest queue, so that every resync overflows it too: the controller answers each
    # request for a resync with a full-state batch, as the shells do.
    queue = ControllerChannelQueue(broker_id=BROKER_ID, queue_size_max=QUEUE_SIZE_MIN)
    numbers = itertools.count(1)
    queue.enqueue([control_request(next(numbers))], 0)
    stuck = queue.take(0)  # the broker never answers this one
    resyncs = 0
    for now_ms in range(1, 101):
        result = queue.enqueue([control_request(next(numbers)) for _ in range(2)], now_ms)
        while result.resync_needed:
            resyncs += 1
            assert resyncs <= now_ms, f"{resyncs} resyncs after {now_ms} batches: a resync loop"
            result = queue.enqueue([control_request(next(numbers)) for _ in range(QUEUE_SIZE_MIN)], now_ms,
                                   full_state=True)
            assert result.accepted == QUEUE_SIZE_MIN, "a resync always fits the queue"
        assert queue.queue_size <= QUEUE_SIZE_MIN
    assert queue.in_flight is stuck
    assert resyncs > 0


@pytest.mark.parametrize("enqueued_at_ms, taken_at_ms, now_ms, last_ms, head_ms", [
    (0, 0, 0, 0, 0),
    (100, 350, 400, 250, 300),
    (100, 100, 1100, 0, 1000),
])
def test_queue_time_runs_from_enqueue_to_take(enqueued_at_ms, taken_at_ms, now_ms, last_ms, head_ms):
    queue = ControllerChannelQueue(broker_id=BROKER_ID, queue_size_max=8)
    queue.enqueue([control_request(1), control_request(2)], enqueued_at_ms)
    queue.take(taken_at_ms)
    status = queue.status(now_ms)
    assert (status.last_queue_time_ms, status.head_queue_time_ms) == (last_ms, head_ms)
    assert (status.queue_size, status.in_flight, status.broker_id) == (1, True, BROKER_ID)


def test_before_any_take_there_is_no_last_queue_time_and_an_empty_queue_has_no_head_age():
    status = ControllerChannelQueue(broker_id=BROKER_ID, queue_size_max=8).status(1000)
    assert (status.last_queue_time_ms, status.head_queue_time_ms, status.queue_size, status.in_flight) == \
        (-1, 0, 0, False)


def test_queue_items_carry_kafkas_api_key_callback_and_enqueue_time():
    def callback(request, response):
        return None
    queue = ControllerChannelQueue(broker_id=BROKER_ID, queue_size_max=8)
    queue.enqueue([control_request(n) for n in (1, 2, 3)], 42, callback=callback)
    items = [queue.take(50) for _ in range(1)] + list(queue._waiting)
    assert [item.api_key for item in items] == [type(item.request).API_KEY for item in items]
    assert {item.api_key for item in items} == {4, 5, 6}
    assert all(item.callback is callback and item.enqueue_time_ms == 42 for item in items)


def test_a_queue_too_small_for_a_resync_and_a_non_control_request_are_refused():
    with pytest.raises(AssertionError):
        ControllerChannelQueue(broker_id=BROKER_ID, queue_size_max=QUEUE_SIZE_MIN - 1)
    queue = ControllerChannelQueue(broker_id=BROKER_ID, queue_size_max=8)
    with pytest.raises(AssertionError):
        queue.enqueue(["not a request"], 0)
    with pytest.raises(AssertionError):
        queue.complete()
    queue.enqueue([control_request(1), control_request(2)], 0)
    queue.take(0)
    with pytest.raises(AssertionError):
        queue.take(0)
