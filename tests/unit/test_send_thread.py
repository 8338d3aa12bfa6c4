"""Proves the request-send thread's core behaves as Kafka's RequestSendThread over our bounded
queue: one request in flight, in order; a failed send retried after the 100 ms backoff and never
before; each answer handed to the controller; an overflow asking for one resync (none for the
resync itself); and Ray's death signal reported with the thread's broker epoch; driven step by step."""
from __future__ import annotations

from actors.core.controller.send_thread import (
    QUEUE_SIZE_METRIC, RETRY_BACKOFF_MS, BrokerUnreachable, ControlResponse, RequestSendThreadCore, ResyncBroker,
)
from actors.core.effects import ArmTimer, Metric, Send
from actors.core.errors import ErrorCode
from tests.unit.test_channel_queue import control_request

BROKER_ID, BROKER_EPOCH = 1, 7


def sends(effects: list, destination: str) -> list:
    return [e.message for e in effects if isinstance(e, Send) and e.destination == destination]


def test_one_request_in_flight_in_order_and_each_answer_goes_to_the_controller():
    core = RequestSendThreadCore(broker_id=BROKER_ID, broker_epoch=BROKER_EPOCH, queue_size_max=10)
    first, second = control_request(0), control_request(1)
    effects = core.enqueue([first, second], 0)
    assert sends(effects, "broker") == [first]
    assert [e.value for e in effects if isinstance(e, Metric) and e.name == QUEUE_SIZE_METRIC][-1] == 1
    assert sends(core.tick(5), "broker") == [], "nothing more is sent while a request is in flight"
    effects = core.on_broker_response(first, "answer", 10)
    assert sends(effects, "controller") == [ControlResponse(broker_id=BROKER_ID, request=first, response="answer")]
    assert sends(effects, "broker") == [second]
    assert core.sent == 1


def test_a_failed_send_is_retried_after_the_backoff_and_not_before():
    core = RequestSendThreadCore(broker_id=BROKER_ID, broker_epoch=BROKER_EPOCH, queue_size_max=10)
    request = control_request(0)
    core.enqueue([request], 0)
    effects = core.on_broker_response(request, ErrorCode.NETWORK_EXCEPTION, 50)
    assert effects == [ArmTimer(deadline_ms=50 + RETRY_BACKOFF_MS)]
    assert sends(core.tick(50 + RETRY_BACKOFF_MS - 1), "broker") == []
    assert sends(core.enqueue([control_request(1)], 60), "broker") == [], "the retry waits for its backoff"
    assert sends(core.tick(50 + RETRY_BACKOFF_MS), "broker") == [request], "the same request, again"
    assert core.queue.queue_size == 1


def test_an_overflow_asks_for_one_resync_and_the_resync_asks_for_none():
    core = RequestSendThreadCore(broker_id=BROKER_ID, broker_epoch=BROKER_EPOCH, queue_size_max=4)
    core.enqueue([control_request(0)], 0)  # in flight
    core.enqueue([control_request(i) for i in range(1, 5)], 0)  # four waiting: the limit
    effects = core.enqueue([control_request(5)], 1)
    assert sends(effects, "controller") == [ResyncBroker(broker_id=BROKER_ID)]
    assert core.queue.queue_size == 1 and core.queue.in_flight.request == control_request(0)
    effects = core.enqueue([control_request(i) for i in range(6, 10)], 2, full_state=True)
    assert sends(effects, "controller") == [], "the resync supersedes what it dropped"


def test_the_death_of_the_broker_is_reported_with_the_thread_broker_epoch():
    core = RequestSendThreadCore(broker_id=BROKER_ID, broker_epoch=BROKER_EPOCH, queue_size_max=4)
    assert sends(core.on_broker_died(0), "controller") == [BrokerUnreachable(broker_id=BROKER_ID,
                                                                             broker_epoch=BROKER_EPOCH)]
