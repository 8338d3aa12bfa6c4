"""Proves that producers and consumers record their own Jepsen history (a send is ok, fail or info
exactly as its attempts allow; a poll carries its records and the positions before it), by running
real clients without Ray against a real ReplicaManager core behind an in-process broker whose
calls answer with Futures, some of them scripted (canned errors, lost answers, calls that never
answer)."""
from __future__ import annotations

import threading
import time
from concurrent.futures import Future

import pytest
from ray.exceptions import RayActorError, RayTaskError

from actors.core.apis import api_of
from actors.core.errors import ErrorCode, KafkaProtocolError
from actors.core.messages.allocate_producer_ids import AllocateProducerIdsResponse
from actors.core.messages.init_producer_id import InitProducerIdResponse
from actors.core.broker.producer_id_manager import ProducerIdManager
from actors.core.messages.produce import (
    PartitionProduceData, PartitionProduceResponse, ProduceRequest, ProduceResponse, TopicProduceData,
    TopicProduceResponse,
)
from orchestration.chaos.checker import check
from orchestration.clients.consumer import Consumer
from orchestration.errors import KafkaError
from orchestration.history import HistoryWriter, read_history
from orchestration.clients.producer import NO_ACKNOWLEDGEMENT, Producer
from tests.support.core_driver import CoreDriver, make_batch
from tests.unit.test_consumer_group_client import CoreCoordinator, FakeChannel, heartbeat, membership, poll_until

TOPIC = "t"
WAIT_S = 10  # every wait in this file is bounded by this
NEVER = "never"  # a scripted produce call that is never answered (a paused or cut-off broker)


class _Method:
    def __init__(self, call) -> None:
        self.remote = call


class CoreBroker:
    """Broker 0 in this process: a real ReplicaManager core (``driver``) whose answers resolve
    Futures, as Ray's ``ObjectRef.future()`` would. ``produce_script`` holds what the next
    Produce calls meet instead of the core, in turn: an ``ErrorCode`` or a partition response
    (a canned answer), ``NEVER``, an exception (the call failed in Ray without running), or
    ``("ran", exception)`` (the core ran the call and the answer was lost). ``lock`` is held
    while the core steps, so a test can change the core between two of the producer's calls."""

    def __init__(self, driver: CoreDriver) -> None:
        self.driver = driver
        self.lock = threading.RLock()
        self.produce_script: list = []
        self.produce_requests: list = []
        self.unanswered: list[Future] = []
        self._parked: dict[int, Future] = {}
        # The broker actor's one ``handle``: a Produce goes through ``produce_script``; the rest to the core.
        self.handle = _Method(lambda request: self._produce(request) if isinstance(request, ProduceRequest)
                              else self._call(f"handle_{api_of(request).name}", request))
        # Producer ids as a broker hands them out, from a block the controller gave it.
        self.producer_ids = ProducerIdManager(broker_id=0)
        self.producer_ids.on_allocate_response(AllocateProducerIdsResponse(producer_id_start=1000,
                                                                           producer_id_len=1000))
        self.init_producer_id_script: list = []  # ErrorCodes the next InitProducerId calls meet

    def _produce(self, request) -> Future:
        with self.lock:
            self.produce_requests.append(request)
            scripted = self.produce_script.pop(0) if self.produce_script else None
            if scripted is None:
                return self._call("handle_produce", request)
            future: Future = Future()
            if scripted == NEVER:
                self.unanswered.append(future)
            elif isinstance(scripted, tuple):
                self._call("handle_produce", request)
                future.set_exception(scripted[1])
            elif isinstance(scripted, BaseException):
                future.set_exception(scripted)
            else:
                answer = (scripted if isinstance(scripted, PartitionProduceResponse)
                          else PartitionProduceResponse(index=0, error_code=scripted))
                future.set_result(ProduceResponse(responses=(TopicProduceResponse(
                    name=request.topic_data[0].name, partition_responses=(answer,)),)))
            return future

    def _call(self, method: str, request) -> Future:
        with self.lock:
            future: Future = Future()
            request_id = self.driver.call(method, request)
            self._parked[request_id] = future
            self._resolve()
            return future

    def advance(self, ms: int) -> None:
        """Move the core's clock on; parked requests whose time is up are answered."""
        with self.lock:
            self.driver.advance(ms)
            self._resolve()

    def ask(self, method: str, request):
        with self.lock:
            if method == "handle_init_producer_id":
                if self.init_producer_id_script:
                    return InitProducerIdResponse(error_code=self.init_producer_id_script.pop(0))
                (answer,) = self.producer_ids.handle_init_producer_id(0, request, broker_epoch=1)
                return answer.response
            return self.driver.ask(method, request)

    def _resolve(self) -> None:
        for request_id in [r for r in self._parked if r in self.driver.answers]:
            self._parked.pop(request_id).set_result(self.driver.answers[request_id])


class FakeDirectory:
    """Metadata naming broker 0 the leader of every partition of ``partitions``."""

    namespace = "unit-test"

    def __init__(self, broker: CoreBroker, partitions: dict[str, int]) -> None:
        self._broker = broker
        self.partitions = dict(partitions)
        self.metadata_refreshes = 0

    def broker(self, broker_id: int) -> CoreBroker:
        assert broker_id == 0
        return self._broker

    def call(self, broker_id: int, request, timeout_ms: int | None = None):
        method = f"handle_{api_of(request).name}"
        return self.broker(broker_id).ask(method, request)

    def refresh_metadata(self) -> None:
        self.metadata_refreshes += 1

    def forget(self, broker_id: int) -> None:
        pass

    def known_broker_ids(self) -> list[int]:
        return [0]

    def partitions_for(self, topic: str, *, refresh_if_missing: bool = True) -> dict[int, tuple[int, int]]:
        if topic not in self.partitions:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, topic)
        return {p: (0, 0) for p in range(self.partitions[topic])}

    def leader_for(self, topic: str, partition: int) -> tuple[int, int]:
        if partition not in self.partitions_for(topic):
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"{topic}-{partition}")
        return 0, 0


def leading_broker(partitions: int = 1, *, replicas=(0,), isr=(0,), config: dict | None = None) -> CoreBroker:
    driver = CoreDriver(broker_id=0)
    for partition in range(partitions):
        driver.become(TOPIC, partition, leader=0, replicas=replicas, isr=isr, config=config)
    return CoreBroker(driver)


@pytest.fixture
def history(tmp_path):
    with HistoryWriter(tmp_path / "history.jsonl") as writer:
        yield writer


_OPEN_PRODUCERS: list[Producer] = []


@pytest.fixture(autouse=True)
def close_producers():
    """Every producer a test makes is closed after it, so no sender thread outlives its test."""
    yield
    while _OPEN_PRODUCERS:
        _OPEN_PRODUCERS.pop().close(timeout=WAIT_S)


def events(history: HistoryWriter, f: str = "send") -> list[dict]:
    return [e for e in read_history(history.path) if e["f"] == f]


def completions(history: HistoryWriter) -> list[tuple[str, dict]]:
    return [(e["type"], e["value"]) for e in events(history) if e["type"] != "invoke"]


def make_producer(broker: CoreBroker, history: HistoryWriter | None, partitions: int = 1, *,
                  directory: FakeDirectory | None = None, process: str | None = "p", **config) -> Producer:
    settings = {"retry.backoff.ms": "1", **config}
    producer = Producer(directory or FakeDirectory(broker, {TOPIC: partitions}), settings, history=history,
                        process=process)
    _OPEN_PRODUCERS.append(producer)
    return producer


def send_and_wait(producer: Producer, value: bytes, partition: int | None = 0) -> Future:
    future = producer.send(TOPIC, value=value, partition=partition)
    producer.flush(timeout=WAIT_S)
    return future


def log_end_offset(broker: CoreBroker, partition: int = 0) -> int:
    return broker.driver.manager.partitions[(TOPIC, partition)].log.log_end_offset


# ----------------------------------------------------------------------------------- producer
def test_an_acknowledged_send_records_invoke_then_ok_at_the_acknowledged_offset(history):
    broker = leading_broker()
    broker.ask("handle_produce", _produce_request(make_batch([b"x", b"y"])))  # offsets 0 and 1 are taken
    producer = make_producer(broker, history)
    sent = [producer.send(TOPIC, value=f"v{i}".encode(), partition=None) for i in range(3)]
    producer.flush(timeout=WAIT_S)

    assert [future.result(timeout=0).offset for future in sent] == [2, 3, 4]
    recorded = events(history)
    # The sender may ship v0 before v1 is sent (linger.ms=0), so invokes and oks may interleave;
    # what must hold is the order within each kind, and each send's invoke before its ok.
    assert {e["process"] for e in recorded} == {"p"} and len(recorded) == 6
    invokes = [e["value"] for e in recorded if e["type"] == "invoke"]
    oks = [e["value"] for e in recorded if e["type"] == "ok"]
    assert invokes == [{"topic": TOPIC, "partition": None, "value": f"v{i}"} for i in range(3)]
    assert oks == [{"topic": TOPIC, "partition": 0, "offset": offset, "value": f"v{i}"}
                   for i, offset in enumerate([2, 3, 4])]
    for i in range(3):
        position = {e["type"]: n for n, e in enumerate(recorded) if e["value"]["value"] == f"v{i}"}
        assert position["invoke"] < position["ok"], recorded


def test_not_enough_replicas_on_every_attempt_is_a_fail(history):
    broker = leading_broker(replicas=(0, 1, 2), isr=(0,), config={"min.insync.replicas": "2"})
    producer = make_producer(broker, history, acks="all", retries="2")
    future = send_and_wait(producer, b"v")

    with pytest.raises(KafkaError) as raised:
        future.result(timeout=0)
    assert raised.value.error_code == ErrorCode.NOT_ENOUGH_REPLICAS
    assert len(broker.produce_requests) == 3, "the first attempt and two retries"
    assert completions(history) == [("fail", {"value": "v", "error": "NOT_ENOUGH_REPLICAS"})]
    assert log_end_offset(broker) == 0, "fail means the record is nowhere"


def test_a_timed_out_attempt_keeps_the_send_indeterminate_when_the_retry_is_refused(history):
    """acks=all waits for a follower that never fetches: the leader appended, then answered
    REQUEST_TIMED_OUT; it lost its leadership before the retry, which is refused
    NOT_LEADER_OR_FOLLOWER. The final error alone would say fail, but the record is in the log."""
    broker = leading_broker(replicas=(0, 1), isr=(0, 1))
    producer = make_producer(broker, history, acks="all", retries="1")
    future = producer.send(TOPIC, value=b"v", partition=0)
    _wait_until(lambda: len(broker.produce_requests) == 1)
    with broker.lock:  # the retry cannot reach the core before it stops leading
        broker.advance(30_001)  # past the request's timeout_ms: the purgatory answers
        broker.driver.become(TOPIC, 0, leader=1, replicas=(0, 1), isr=(0, 1), leader_epoch=1)
    producer.flush(timeout=WAIT_S)

    with pytest.raises(KafkaError) as raised:
        future.result(timeout=0)
    assert raised.value.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert len(broker.produce_requests) == 2
    assert completions(history) == [("info", {"value": "v", "error": "NOT_LEADER_OR_FOLLOWER"})]
    assert log_end_offset(broker) == 1, "the first attempt's record is in the old leader's log"


def test_not_leader_answered_after_the_append_is_indeterminate(history):
    """The leader appended an acks=all write and lost its leadership while waiting for the
    follower: it answers NOT_LEADER_OR_FOLLOWER with the append's base offset."""
    broker = leading_broker(replicas=(0, 1), isr=(0, 1))
    producer = make_producer(broker, history, acks="all", retries="0")
    future = producer.send(TOPIC, value=b"v", partition=0)
    _wait_until(lambda: len(broker.produce_requests) == 1)
    with broker.lock:
        broker.driver.become(TOPIC, 0, leader=1, replicas=(0, 1), isr=(0, 1), leader_epoch=1)
        broker.advance(1)  # the purgatory sees the lost leadership
    producer.flush(timeout=WAIT_S)

    with pytest.raises(KafkaError):
        future.result(timeout=0)
    assert completions(history) == [("info", {"value": "v", "error": "NOT_LEADER_OR_FOLLOWER"})]


@pytest.mark.parametrize("answer, expected", [
    # Refused before the append: the attempt wrote nothing.
    (ErrorCode.NOT_LEADER_OR_FOLLOWER, ("fail", "NOT_LEADER_OR_FOLLOWER")),
    (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ("fail", "UNKNOWN_TOPIC_OR_PARTITION")),
    (ErrorCode.NOT_ENOUGH_REPLICAS, ("fail", "NOT_ENOUGH_REPLICAS")),
    (ErrorCode.MESSAGE_TOO_LARGE, ("fail", "MESSAGE_TOO_LARGE")),
    (ErrorCode.CORRUPT_MESSAGE, ("fail", "CORRUPT_MESSAGE")),
    (ErrorCode.INVALID_REQUIRED_ACKS, ("fail", "INVALID_REQUIRED_ACKS")),
    (ErrorCode.FENCED_LEADER_EPOCH, ("fail", "FENCED_LEADER_EPOCH")),
    (ErrorCode.LEADER_NOT_AVAILABLE, ("fail", "LEADER_NOT_AVAILABLE")),
    # Appended, or perhaps appended: the outcome is unknown.
    (ErrorCode.REQUEST_TIMED_OUT, ("info", "REQUEST_TIMED_OUT")),
    (ErrorCode.NETWORK_EXCEPTION, ("info", "NETWORK_EXCEPTION")),
    (ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND, ("info", "NOT_ENOUGH_REPLICAS_AFTER_APPEND")),
    (ErrorCode.UNKNOWN_SERVER_ERROR, ("info", "UNKNOWN_SERVER_ERROR")),
    (ErrorCode.KAFKA_STORAGE_ERROR, ("info", "KAFKA_STORAGE_ERROR")),
    (PartitionProduceResponse(index=0, error_code=ErrorCode.NOT_LEADER_OR_FOLLOWER, base_offset=5),
     ("info", "NOT_LEADER_OR_FOLLOWER")),
    # The call failed in Ray: it may have run.
    (RayActorError(), ("info", "NETWORK_EXCEPTION")),
    (("ran", RayActorError()), ("info", "NETWORK_EXCEPTION")),
    (RuntimeError("the broker's handler raised"), ("info", "UNKNOWN_SERVER_ERROR")),
    # The broker raised an error of its own (Ray wraps it): a request it refused wrote nothing,
    # and a failure inside its handler may have written part of it.
    (RayTaskError("handle_produce", "...", KafkaProtocolError(ErrorCode.INVALID_REQUEST, "not a ProduceRequest"))
     .as_instanceof_cause(), ("fail", "INVALID_REQUEST")),
    (RayTaskError("handle_produce", "...", RuntimeError("a bug")).as_instanceof_cause(),
     ("info", "UNKNOWN_SERVER_ERROR")),
], ids=lambda case: _case_id(case))
def test_a_single_attempt_is_classified_by_what_its_outcome_proves(history, answer, expected):
    broker = leading_broker()
    broker.produce_script.append(answer)
    producer = make_producer(broker, history, retries="0")
    future = send_and_wait(producer, b"v")

    with pytest.raises(KafkaError):
        future.result(timeout=0)
    assert len(broker.produce_requests) == 1
    assert [(kind, value["error"]) for kind, value in completions(history)] == [expected]


def test_a_refusal_after_an_unknown_outcome_stays_indeterminate_and_refusals_alone_fail(history):
    broker = leading_broker()
    broker.produce_script.extend([ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.NOT_ENOUGH_REPLICAS])
    refused = make_producer(broker, history, retries="1")
    assert completions_of(refused, history, b"refused") == ("fail", "NOT_ENOUGH_REPLICAS")

    broker.produce_script.extend([ErrorCode.NETWORK_EXCEPTION, ErrorCode.NOT_LEADER_OR_FOLLOWER,
                                  ErrorCode.NOT_ENOUGH_REPLICAS])
    unknown = make_producer(broker, history, retries="2")
    assert completions_of(unknown, history, b"unknown") == ("info", "NOT_ENOUGH_REPLICAS")


def completions_of(producer: Producer, history: HistoryWriter, value: bytes) -> tuple[str, str]:
    send_and_wait(producer, value)
    (kind, recorded), = [(k, v) for k, v in completions(history) if v["value"] == value.decode()]
    return kind, recorded["error"]


def test_a_call_that_never_answers_times_out_after_request_timeout_ms_and_is_indeterminate(history):
    broker = leading_broker()
    broker.produce_script.append(NEVER)
    directory = FakeDirectory(broker, {TOPIC: 1})
    producer = make_producer(broker, history, directory=directory, retries="0", **{"request.timeout.ms": "200"})
    started = time.monotonic()
    future = producer.send(TOPIC, value=b"v", partition=0)
    producer.flush(timeout=WAIT_S)  # returns: the abandoned request no longer holds it

    with pytest.raises(KafkaError) as raised:
        future.result(timeout=0)
    assert raised.value.error_code == ErrorCode.REQUEST_TIMED_OUT
    assert time.monotonic() - started >= 0.2, "not before request.timeout.ms"
    assert broker.unanswered[0].cancelled(), "the abandoned call is cancelled"
    assert directory.metadata_refreshes == 1, "the leader may have moved: metadata is asked again"
    assert completions(history) == [("info", {"value": "v", "error": "REQUEST_TIMED_OUT"})]


def test_a_retry_after_a_timed_out_call_can_succeed_and_is_ok(history):
    broker = leading_broker()
    broker.produce_script.append(NEVER)
    producer = make_producer(broker, history, **{"request.timeout.ms": "100"})
    future = send_and_wait(producer, b"v")

    assert future.result(timeout=0).offset == 0
    assert len(broker.produce_requests) == 2
    assert completions(history) == [("ok", {"topic": TOPIC, "partition": 0, "offset": 0, "value": "v"})]


def test_calls_that_never_answer_end_at_delivery_timeout_ms(history):
    broker = leading_broker()
    broker.produce_script.extend([NEVER] * 100)
    producer = make_producer(broker, history, **{"request.timeout.ms": "50", "delivery.timeout.ms": "1000"})
    future = send_and_wait(producer, b"v")

    with pytest.raises(KafkaError) as raised:
        future.result(timeout=0)
    assert raised.value.error_code == ErrorCode.REQUEST_TIMED_OUT
    assert 2 <= len(broker.produce_requests) < 100
    assert completions(history) == [("info", {"value": "v", "error": "REQUEST_TIMED_OUT"})]


def test_a_batch_that_never_finds_a_leader_expires_as_a_fail(history):
    broker = leading_broker()
    directory = FakeDirectory(broker, {TOPIC: 1})
    directory.leader_for = lambda topic, partition: (-1, 0)
    producer = make_producer(broker, history, directory=directory, process=None,
                             **{"delivery.timeout.ms": "200", "retry.backoff.ms": "10"})
    future = producer.send(TOPIC, value=b"v", partition=0)
    producer.flush(timeout=WAIT_S)

    with pytest.raises(KafkaError) as raised:
        future.result(timeout=0)
    assert raised.value.error_code == ErrorCode.REQUEST_TIMED_OUT
    assert not broker.produce_requests
    assert completions(history) == [("fail", {"value": "v", "error": "REQUEST_TIMED_OUT"})]
    assert events(history)[0]["process"].startswith("producer-"), "a default process name"


def test_a_send_refused_before_anything_was_sent_is_a_fail(history):
    producer = make_producer(leading_broker(), history)
    future = producer.send(TOPIC, value=b"v", partition=7)
    with pytest.raises(TypeError):
        producer.send(TOPIC, value="not bytes", partition=0)

    with pytest.raises(KafkaError):
        future.result(timeout=0)
    assert [e["type"] for e in events(history)] == ["invoke", "fail", "invoke", "fail"]
    assert completions(history) == [("fail", {"value": "v", "error": "UNKNOWN_TOPIC_OR_PARTITION"}),
                                    ("fail", {"value": "not bytes", "error": "TypeError"})]


def test_acks_0_records_an_indeterminate_send(history):
    broker = leading_broker()
    producer = make_producer(broker, history, acks="0")
    send_and_wait(producer, b"v").result(timeout=0)

    assert completions(history) == [("info", {"value": "v", "error": NO_ACKNOWLEDGEMENT})]
    assert log_end_offset(broker) == 1


def test_a_producer_without_a_history_sends_as_before():
    producer = make_producer(leading_broker(), None)
    assert send_and_wait(producer, b"v").result(timeout=0).offset == 0


# ----------------------------------------------------------------------------------- consumer
def make_consumer(broker: CoreBroker, history: HistoryWriter, partitions: int = 1, *, channel=None,
                  directory: FakeDirectory | None = None, process: str | None = "c", **config) -> Consumer:
    settings = {"fetch.max.wait.ms": "0", "retry.backoff.ms": "1", "auto.offset.reset": "earliest", **config}
    return Consumer(directory or FakeDirectory(broker, {TOPIC: partitions}), settings, coordinator_channel=channel,
                    heartbeat_thread=False, history=history, process=process)


def poll_records(consumer: Consumer, rounds: int = 20) -> list:
    for _ in range(rounds):
        records = consumer.poll(timeout_ms=10)
        if records:
            return records
    raise AssertionError("no records")


def test_assign_mode_polls_record_their_records_and_the_positions_before(history):
    broker = leading_broker(partitions=2)
    broker.ask("handle_produce", _produce_request(make_batch([b"a0", b"a1", b"a2", b"a3"])))
    broker.ask("handle_produce", _produce_request(make_batch([b"b0"]), partition=1))
    consumer = make_consumer(broker, history, partitions=2, **{"max.poll.records": "2"})
    consumer.assign([(TOPIC, 0), (TOPIC, 1)])
    consumer.seek((TOPIC, 0), 4)
    consumer.seek((TOPIC, 1), 1)  # t-1 is read to its end: its position stays 1
    assert consumer.poll(timeout_ms=10) == []  # at the end of both: nothing to record

    consumer.seek((TOPIC, 0), 0)
    first = poll_records(consumer)
    second = poll_records(consumer)
    consumer.seek((TOPIC, 0), 1)
    third = poll_records(consumer)

    polls = events(history, "poll")
    assert [(e["process"], e["type"]) for e in polls] == [("c", "ok")] * 3, "only polls with records"
    assert [p["value"]["records"] for p in polls] == [
        [[TOPIC, r.partition, r.offset, r.value.decode()] for r in batch] for batch in (first, second, third)]
    assert [r.offset for r in first + second] == [0, 1, 2, 3] and third[0].offset == 1
    assert [p["value"]["positions_before"] for p in polls] == [
        {"t-0": 0, "t-1": 1}, {"t-0": 2, "t-1": 1}, {"t-0": 1, "t-1": 1}]


def test_positions_before_leave_out_partitions_without_a_known_position(history):
    broker = leading_broker(partitions=2)
    broker.ask("handle_produce", _produce_request(make_batch([b"a0"])))
    directory = FakeDirectory(broker, {TOPIC: 2})
    directory.leader_for = lambda topic, partition: (0, 0) if partition == 0 else (-1, 0)  # t-1 has no leader
    consumer = make_consumer(broker, history, directory=directory)
    consumer.assign([(TOPIC, 0), (TOPIC, 1)])  # t-1's position stays unknown: no leader to ask

    records = poll_records(consumer)
    assert [r.value for r in records] == [b"a0"]
    assert events(history, "poll")[0]["value"]["positions_before"] == {"t-0": 0}


def test_group_mode_polls_are_recorded_and_a_successor_starts_at_the_committed_offset(history):
    broker = leading_broker()
    broker.ask("handle_produce", _produce_request(make_batch([b"v0", b"v1", b"v2"])))
    channel = FakeChannel({"coordinator-1": CoreCoordinator(1)})
    group = {"group.id": "g", "enable.auto.commit": "false", "max.poll.records": "2"}
    first = make_consumer(broker, history, channel=channel, **group, **{"client.id": "a"})
    first.subscribe([TOPIC])
    assert [r.offset for r in poll_records(first)] == [0, 1]
    first.commit()
    first.close()
    successor = make_consumer(broker, history, channel=channel, process=None, **group, **{"client.id": "a"})
    successor.subscribe([TOPIC])
    assert [r.offset for r in poll_records(successor)] == [2]

    polls = events(history, "poll")
    assert [(p["process"], p["value"]["positions_before"]) for p in polls] == [("c", {"t-0": 0}),
                                                                               (successor.process, {"t-0": 2})]
    assert successor.process not in ("c", "a"), "a configured client.id gets a number: processes stay unique"
    assert polls[1]["value"]["records"] == [[TOPIC, 0, 2, "v2"]]


def test_after_a_rebalance_positions_before_name_only_the_partitions_still_owned(history):
    broker = leading_broker(partitions=2)
    broker.ask("handle_produce", _produce_request(make_batch([b"a0", b"a1", b"a2", b"a3"])))
    broker.ask("handle_produce", _produce_request(make_batch([b"b0", b"b1"]), partition=1))
    channel = FakeChannel({"coordinator-1": CoreCoordinator(1)})
    group = {"group.id": "g", "max.poll.records": "2"}
    a = make_consumer(broker, history, partitions=2, channel=channel, process="a", **group, **{"client.id": "a"})
    b = make_consumer(broker, history, partitions=2, channel=channel, process="b", **group, **{"client.id": "b"})
    a.subscribe([TOPIC])
    assert [r.value for r in poll_records(a)] == [b"a0", b"a1"]
    b.subscribe([TOPIC])
    b.poll(timeout_ms=0)  # b's JoinGroup waits for a to rejoin
    heartbeat(a)  # REBALANCE_IN_PROGRESS: a's next poll rejoins
    poll_until([a, b], lambda: membership(a).is_stable() and membership(b).is_stable())
    assert (a.assignment(), b.assignment()) == ({(TOPIC, 0)}, {(TOPIC, 1)})
    for _ in range(20):  # bounded: both read what is left
        a.poll(timeout_ms=10)
        b.poll(timeout_ms=10)

    polls = [(e["process"], e["value"]["positions_before"], e["value"]["records"]) for e in events(history, "poll")]
    # The auto-commit before the rebalance stored a's progress: a goes on at 2, b starts t-1 at 0.
    # Each consumer's polls in order (a's resumed position is validated first, KIP-320, so which
    # of a and b reads first after the rebalance is not fixed).
    assert sorted(polls, key=lambda poll: poll[0]) == [("a", {"t-0": 0, "t-1": 0}, [[TOPIC, 0, 0, "a0"], [TOPIC, 0, 1, "a1"]]),
                     ("a", {"t-0": 2}, [[TOPIC, 0, 2, "a2"], [TOPIC, 0, 3, "a3"]]),
                     ("b", {"t-1": 0}, [[TOPIC, 1, 0, "b0"], [TOPIC, 1, 1, "b1"]])]


def test_what_the_clients_record_together_passes_the_checker(history):
    broker = leading_broker(partitions=2)
    producer = make_producer(broker, history, partitions=2)
    for i in range(10):
        producer.send(TOPIC, value=f"v{i}".encode(), partition=i % 2)
    producer.flush(timeout=WAIT_S)
    consumer = make_consumer(broker, history, partitions=2, **{"max.poll.records": "3"})
    consumer.assign([(TOPIC, 0), (TOPIC, 1)])
    read = []
    for _ in range(50):  # bounded
        read.extend(consumer.poll(timeout_ms=10))
        if len(read) == 10:
            break

    report = check(list(read_history(history.path)), unseen_is_anomaly=True)
    assert len(read) == 10 and report.valid, report.table()


# ------------------------------------------------------------------------------------ helpers
def _case_id(case) -> str:
    if isinstance(case, ErrorCode):
        return case.name
    if isinstance(case, PartitionProduceResponse):
        return f"{case.error_code.name}-at-offset-{case.base_offset}"
    if isinstance(case, tuple) and case[0] == "ran":
        return f"ran-then-{type(case[1]).__name__}"
    if isinstance(case, BaseException):
        return type(case).__name__
    return "-".join(case)


def _produce_request(records: bytes, partition: int = 0) -> ProduceRequest:
    return ProduceRequest(acks=1, timeout_ms=1000, topic_data=(TopicProduceData(
        name=TOPIC, partition_data=(PartitionProduceData(index=partition, records=records),)),))


def _wait_until(condition) -> None:
    deadline = time.monotonic() + WAIT_S
    while not condition():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.005)


def test_keyless_records_move_to_another_partition_with_each_new_batch(history):
    """KIP-480's sticky partitioner: once a partition's batch has been sent, the next keyless
    record opens its batch elsewhere, so a steady trickle of sends spreads over the partitions."""
    broker = leading_broker(partitions=3)
    producer = make_producer(broker, history, partitions=3)
    partitions = [send_and_wait(producer, f"v{i}".encode(), partition=None).result(timeout=WAIT_S).partition
                  for i in range(12)]
    assert all(a != b for a, b in zip(partitions, partitions[1:])), partitions
    assert set(partitions) == {0, 1, 2}


class GoneBrokerDirectory(FakeDirectory):
    """Broker 0's actor is gone for the first ``gone_calls`` lookups (killed, not yet replaced)."""

    def __init__(self, broker: CoreBroker, partitions: dict[str, int], gone_calls: int) -> None:
        super().__init__(broker, partitions)
        self.gone_calls = gone_calls

    def broker(self, broker_id: int) -> CoreBroker:
        if self.gone_calls > 0:
            self.gone_calls -= 1
            raise KafkaError(ErrorCode.BROKER_NOT_AVAILABLE, f"no broker {broker_id}")
        return super().broker(broker_id)


@pytest.mark.parametrize("retries", ["0", "2147483647"])
def test_a_batch_for_a_leader_with_no_actor_waits_for_one_and_is_not_an_attempt(history, retries):
    """Kafka's producer drains no batch for a node it cannot connect to: the batch waits (up to
    delivery.timeout.ms) while metadata is refreshed, so ``retries`` does not count it. A leader
    whose actor is gone is that node: the send goes out once there is an actor to send it to."""
    broker = leading_broker()
    directory = GoneBrokerDirectory(broker, {TOPIC: 1}, gone_calls=3)
    producer = make_producer(broker, history, directory=directory, acks="all", retries=retries,
                             **{"enable.idempotence": "false"})
    future = send_and_wait(producer, b"v")
    assert future.exception() is None and future.result().offset == 0
    assert completions(history) == [("ok", {"topic": TOPIC, "partition": 0, "offset": 0, "value": "v"})]
    assert len(broker.produce_requests) == 1
