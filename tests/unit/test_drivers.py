"""Proves the drivers interpret effects as the Ray actors and the simulator both rely on, over a
recording messenger: a broker starts a fetcher once, tells it changes in order, stops it when
told and restarts a dead one from where its logs end; a failed controller call reaches the broker
core as NETWORK_EXCEPTION; the controller hands each step's sends to one broker's send thread as
one batch, in order with channel changes, drops them without a send thread, and marks a resync;
and a send thread waits for its broker's answer controller.socket.timeout.ms, which the controller
reads (refusing a bad value) and hands each thread it starts."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from actors.core.config import KafkaConfig
from actors.core.controller.controller import CONTROLLER_DEFAULTS
from actors.core.controller.send_thread import ControlBatch, RequestSendThreadCore
from actors.core.effects import (
    AddBrokerChannel, AddPartitionsToFetcher, LogEvent, RemoveBrokerChannel, RemovePartitionsFromFetcher, Send,
)
from actors.core.errors import ErrorCode, KafkaProtocolError
from actors.drivers.broker import BrokerDriver
from actors.drivers.controller import ControllerDriver
from actors.drivers.send_thread import RequestSendThreadDriver
from tests.unit.test_channel_queue import control_request


class Recorder:
    """Messenger, clock and log in one: every seam call in order."""

    def __init__(self) -> None:
        self.calls: list[tuple] = []
        self.replies: list = []
        self.timeouts_ms: list[int] = []  # each call's timeout_ms, in order
        self.started: dict[str, dict] = {}  # destination -> the arguments it was last started with

    def call(self, destination, request, *, timeout_ms, on_reply):
        self.calls.append(("call", destination, request))
        self.replies.append(on_reply)
        self.timeouts_ms.append(timeout_ms)

    def tell(self, destination, event):
        self.calls.append(("tell", destination, event))

    def start(self, destination, **arguments):
        self.calls.append(("start", destination))
        self.started[destination] = arguments

    def stop(self, destination, *, idle=False):
        self.calls.append(("stop", destination) + (("idle",) if idle else ()))

    def pack(self, records, *, for_replica):
        return records

    def pack_together(self, payloads):
        return list(payloads)

    def now_ms(self):
        return 0

    def wake_at(self, deadline_ms):
        self.calls.append(("wake_at", deadline_ms))

    def log(self, level, message):
        self.calls.append(("log", level))

    def metric(self, name, value, tags):
        pass


def broker_driver(states=("state",)) -> tuple[BrokerDriver, Recorder, list]:
    seen: list = []
    core = SimpleNamespace(broker_id=0, fetch_states_for=lambda key: list(states),
                           on_controller_response=lambda request, response, now_ms: seen.append(response) or [])
    recorder = Recorder()
    return BrokerDriver(core, recorder, recorder, recorder), recorder, seen


def test_a_broker_starts_a_fetcher_once_and_tells_it_changes_in_order():
    driver, recorder, _ = broker_driver()
    add = AddPartitionsToFetcher(leader_id=1, fetcher_id=0, partitions=("a",))
    remove = RemovePartitionsFromFetcher(leader_id=1, fetcher_id=0, partitions=(("t", 0),))
    stop = RemovePartitionsFromFetcher(leader_id=1, fetcher_id=0, partitions=(), stop_fetcher=True)
    driver.apply([add, add, remove, stop, remove])
    # An idle fetcher's stop says so: the Ray host may keep the actor for the leader's next partitions.
    assert recorder.calls == [("start", "fetcher:1:0"), ("tell", "fetcher:1:0", add), ("tell", "fetcher:1:0", add),
                              ("tell", "fetcher:1:0", remove), ("stop", "fetcher:1:0", "idle")]


def test_a_dead_fetcher_is_restarted_from_the_broker_logs_or_forgotten_when_it_has_nothing_left():
    driver, recorder, _ = broker_driver()
    driver.apply([AddPartitionsToFetcher(leader_id=1, fetcher_id=0, partitions=("a",))])
    recorder.calls.clear()
    driver.on_fetcher_died((1, 0))
    assert recorder.calls == [("start", "fetcher:1:0"), ("tell", "fetcher:1:0", AddPartitionsToFetcher(
        leader_id=1, fetcher_id=0, partitions=("state",)))]
    empty, recorder, _ = broker_driver(states=())
    empty.apply([AddPartitionsToFetcher(leader_id=1, fetcher_id=0, partitions=("a",))])
    empty.on_fetcher_died((1, 0))
    assert empty.fetchers == set()


def test_any_failed_controller_call_reaches_the_broker_core_as_network_exception():
    driver, recorder, seen = broker_driver()
    driver.apply([Send(destination="controller", message="heartbeat")])
    recorder.replies[0](ErrorCode.REQUEST_TIMED_OUT)
    assert seen == [ErrorCode.NETWORK_EXCEPTION]


def controller_driver() -> tuple[ControllerDriver, Recorder]:
    brokers = {b: SimpleNamespace(host=f"broker-{b}") for b in (1, 2)}
    core = SimpleNamespace(config=SimpleNamespace(get_int=lambda key, minimum: 10),
                           context=SimpleNamespace(brokers=brokers),
                           resync_broker=lambda broker_id, now_ms: [Send(destination=f"broker:{broker_id}",
                                                                         message="full")])
    recorder = Recorder()
    return ControllerDriver(core, recorder, recorder, recorder), recorder


def test_the_controller_batches_one_step_per_broker_in_order_with_channel_changes():
    driver, recorder = controller_driver()
    driver.apply([AddBrokerChannel(broker_id=1, broker_epoch=5), Send(destination="broker:1", message="a"),
                  Send(destination="broker:2", message="lost"), Send(destination="broker:1", message="b"),
                  RemoveBrokerChannel(broker_id=1), LogEvent(level="info", message="x")])
    assert recorder.calls == [
        ("start", "send-thread:1"), ("tell", "send-thread:1", ControlBatch(requests=("a", "b"), full_state=False)),
        ("log", "debug"),  # broker 2 has no send thread: its request is dropped
        ("stop", "send-thread:1"), ("log", "info")]


def test_a_resync_batch_is_marked_as_the_broker_full_state():
    driver, recorder = controller_driver()
    driver.apply([AddBrokerChannel(broker_id=2, broker_epoch=1)])
    driver.resync(2)
    assert recorder.calls[-1] == ("tell", "send-thread:2", ControlBatch(requests=("full",), full_state=True))


def controller_driver_with(config: dict) -> tuple[ControllerDriver, Recorder]:
    """A controller driver over a core stand-in with a real configuration (the controller's defaults)."""
    core = SimpleNamespace(config=KafkaConfig(config).with_overrides(
                               {k: v for k, v in CONTROLLER_DEFAULTS.items() if k not in config}),
                           context=SimpleNamespace(brokers={1: SimpleNamespace(host="broker-1")}))
    recorder = Recorder()
    return ControllerDriver(core, recorder, recorder, recorder), recorder


@pytest.mark.parametrize("config, expected_ms", [({}, 30000), ({"controller.socket.timeout.ms": "5000"}, 5000)])
def test_each_send_thread_waits_controller_socket_timeout_ms_for_its_broker(config, expected_ms):
    driver, recorder = controller_driver_with(config)
    driver.apply([AddBrokerChannel(broker_id=1, broker_epoch=5)])
    started = recorder.started["send-thread:1"]
    assert started["socket_timeout_ms"] == expected_ms, started

    core = RequestSendThreadCore(broker_id=1, broker_epoch=5, queue_size_max=10)
    thread = RequestSendThreadDriver(core, recorder, recorder, recorder, socket_timeout_ms=started["socket_timeout_ms"])
    thread.enqueue([control_request(0)])
    assert recorder.calls[-1][:2] == ("call", "broker") and recorder.timeouts_ms == [expected_ms]


@pytest.mark.parametrize("value, reason", [("0", "is below 1"), ("-1", "is below 1"), ("soon", "is not an integer")])
def test_a_bad_controller_socket_timeout_ms_stops_the_controller_from_starting(value, reason):
    with pytest.raises(KafkaProtocolError) as refused:
        controller_driver_with({"controller.socket.timeout.ms": value})
    assert refused.value.error_code == ErrorCode.INVALID_CONFIG
    assert refused.value.message == f"controller.socket.timeout.ms={value!r} {reason}", refused.value.message
