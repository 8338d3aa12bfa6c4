"""The idempotent producer (KIP-98) against a real broker core in this process: it asks for a
producer id, stamps each batch with its id and the partition's next sequence, and so a retry of a
request whose first attempt did land is answered with the original offset instead of being
written twice; it is on by default only where Kafka 3.x turns it on, asks for a new id after a
batch fails for good, pipelines up to five batches per partition as Kafka 3.x does, and sends
retried batches alone and in sequence order, each once every earlier batch is done, so a failure
in the middle of five in flight loses, duplicates and reorders nothing."""
from __future__ import annotations

import time

import pytest
from ray.exceptions import RayActorError

from actors.core.errors import ErrorCode
from actors.core.messages.produce import PartitionProduceResponse, ProduceResponse, TopicProduceResponse
from actors.core.log.record_batch import parse_batches
from actors.codecs.record_batches import read_records
from orchestration.errors import KafkaError
from tests.support.core_driver import fetch_request
from tests.unit.test_client_history import (
    NEVER, TOPIC, WAIT_S, completions, events, history, leading_broker, log_end_offset, make_producer, send_and_wait,
)

__all__ = ["history"]  # the fixture, used by name


def stamps(broker) -> list[tuple[int, int, int]]:
    """(producer id, epoch, base sequence) of every batch of every Produce request the broker saw."""
    found = []
    for request in broker.produce_requests:
        for topic in request.topic_data:
            for data in topic.partition_data:
                found += [(h.producer_id, h.producer_epoch, h.base_sequence) for h in parse_batches(data.records)]
    return found


def test_a_retried_request_whose_first_attempt_landed_is_written_once(history):
    broker = leading_broker()
    broker.produce_script = [("ran", RayActorError())]  # appended, but the answer was lost
    producer = make_producer(broker, history, acks="all")
    future = send_and_wait(producer, b"v")
    assert future.result().offset == 0
    assert log_end_offset(broker) == 1, "the retry was answered with the original offset, not appended"
    assert completions(history) == [("ok", {"topic": TOPIC, "partition": 0, "offset": 0, "value": "v"})]
    assert stamps(broker) == [(1000, 0, 0), (1000, 0, 0)]


def test_without_idempotence_the_same_retry_writes_twice(history):
    broker = leading_broker()
    broker.produce_script = [("ran", RayActorError())]
    producer = make_producer(broker, history, acks="all", **{"enable.idempotence": "false"})
    send_and_wait(producer, b"v")
    assert log_end_offset(broker) == 2
    assert stamps(broker) == [(-1, -1, -1), (-1, -1, -1)]


def test_sequences_grow_by_each_batchs_record_count_per_partition():
    broker = leading_broker(partitions=2)
    producer = make_producer(broker, None, partitions=2, acks="all", **{"linger.ms": "50"})
    for value in (b"a", b"b", b"c"):
        producer.send(TOPIC, value=value, partition=0)
    producer.flush(timeout=WAIT_S)
    send_and_wait(producer, b"d", partition=0)
    send_and_wait(producer, b"e", partition=1)
    assert stamps(broker) == [(1000, 0, 0), (1000, 0, 3), (1000, 0, 0)]


@pytest.mark.parametrize(("config", "enabled"), [
    ({"acks": "all"}, True),
    ({"acks": "1"}, False),
    ({"acks": "all", "retries": "0"}, False),
    ({"acks": "all", "max.in.flight.requests.per.connection": "6"}, False),
    ({"acks": "all", "enable.idempotence": "false"}, False),
])
def test_idempotence_is_on_by_default_only_where_kafka_turns_it_on(config, enabled):
    broker = leading_broker()
    send_and_wait(make_producer(broker, None, **config), b"v")
    assert stamps(broker)[0][0] == (1000 if enabled else -1)


@pytest.mark.parametrize("config", [{"acks": "1"}, {"acks": "all", "retries": "0"},
                                    {"acks": "all", "max.in.flight.requests.per.connection": "6"}])
def test_asking_for_idempotence_with_settings_that_forbid_it_is_a_config_error(config):
    with pytest.raises(KafkaError) as caught:
        make_producer(leading_broker(), None, **config, **{"enable.idempotence": "true"})
    assert caught.value.error_code == ErrorCode.INVALID_CONFIG


def test_a_retriable_init_producer_id_answer_is_asked_again():
    broker = leading_broker()
    broker.init_producer_id_script = [ErrorCode.COORDINATOR_LOAD_IN_PROGRESS] * 2
    send_and_wait(make_producer(broker, None, acks="all"), b"v")
    assert stamps(broker) == [(1000, 0, 0)] and broker.init_producer_id_script == []


def test_a_fatal_init_producer_id_answer_fails_the_queued_sends(history):
    broker = leading_broker()
    broker.init_producer_id_script = [ErrorCode.CLUSTER_AUTHORIZATION_FAILED]
    future = send_and_wait(make_producer(broker, history, acks="all"), b"v")
    assert future.exception().error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    assert broker.produce_requests == [] and completions(history)[0][0] == "fail"


def test_a_batch_that_fails_for_good_after_it_was_stamped_means_a_new_producer_id():
    broker = leading_broker()
    broker.produce_script = [ErrorCode.MESSAGE_TOO_LARGE]  # refused for good, after stamping
    producer = make_producer(broker, None, acks="all")
    assert send_and_wait(producer, b"lost").exception().error_code == ErrorCode.MESSAGE_TOO_LARGE
    assert send_and_wait(producer, b"next").result().offset == 0
    # Sequence 0 of producer 1000 may be in some log: the next batch never reuses it.
    assert stamps(broker) == [(1000, 0, 0), (1001, 0, 0)]


def test_a_partition_pipelines_its_batches_and_a_retry_waits_for_every_earlier_batch(history):
    """The second batch goes out while the first is unanswered; the leader has no state for the
    producer yet, so it answers UNKNOWN_PRODUCER_ID (Kafka 2.4's answer to a first sequence other
    than 0), which for a batch that is not the partition's first incomplete one means "an earlier
    batch has not landed": it is retried, after the first batch's own retry is acknowledged."""
    broker = leading_broker()
    broker.produce_script = [NEVER]
    producer = make_producer(broker, history, acks="all", **{"request.timeout.ms": "2000", "linger.ms": "0"})
    first = producer.send(TOPIC, value=b"first", partition=0)
    wait_for_requests(broker, 1)
    second = producer.send(TOPIC, value=b"second", partition=0)
    wait_for_requests(broker, 2)
    producer.flush(timeout=WAIT_S)
    assert [first.result().offset, second.result().offset] == [0, 1]
    assert stamps(broker) == [(1000, 0, 0), (1000, 0, 1), (1000, 0, 0), (1000, 0, 1)]
    assert [e["type"] for e in events(history) if e["type"] != "invoke"] == ["ok", "ok"]


def batches_per_request(broker) -> list[int]:
    return [sum(len(parse_batches(data.records)) for topic in request.topic_data for data in topic.partition_data)
            for request in broker.produce_requests]


def wait_for_batches(broker, count: int) -> None:
    deadline = time.monotonic() + WAIT_S
    while sum(batches_per_request(broker)) < count:
        assert time.monotonic() < deadline, f"the producer sent {sum(batches_per_request(broker))} of {count} batches"
        time.sleep(0.005)


def follow(broker) -> None:
    """Follower 1 fetches at the leader's log end: the high watermark reaches it, and the acks=all
    requests parked for it are answered."""
    with broker.lock:
        broker.handle.remote(fetch_request(TOPIC, 0, log_end_offset(broker), replica_id=1))


def follow_until_done(broker, futures) -> None:
    deadline = time.monotonic() + WAIT_S
    while not all(f.done() for f in futures):
        assert time.monotonic() < deadline, f"{sum(not f.done() for f in futures)} sends still unanswered"
        follow(broker)
        time.sleep(0.005)


def wait_for_requests(broker, count: int) -> None:
    deadline = time.monotonic() + WAIT_S
    while len(broker.produce_requests) < count:
        assert time.monotonic() < deadline, f"the producer sent {len(broker.produce_requests)} of {count} requests"
        time.sleep(0.005)


def test_a_retried_batch_travels_alone_so_batches_queued_behind_it_are_not_dropped(history):
    """The leader answers a request whose first batch it already has with that batch's offsets and
    writes nothing (Kafka's rule, which assumes one batch per partition per request). A retry that
    carried the batches queued behind it too would have them acknowledged and never written."""
    broker = leading_broker()
    broker.produce_script = [("ran", RayActorError())]  # "first" appended, the answer lost
    producer = make_producer(broker, history, acks="all", **{"retry.backoff.ms": "1000", "linger.ms": "0"})
    first = producer.send(TOPIC, value=b"first", partition=0)
    wait_for_requests(broker, 1)
    second = producer.send(TOPIC, value=b"second", partition=0)  # queued before the retry is due
    producer.flush(timeout=WAIT_S)
    assert [first.result().offset, second.result().offset] == [0, 1]
    assert log_end_offset(broker) == 2, "the batch behind the retried one was acknowledged but not written"
    assert stamps(broker) == [(1000, 0, 0), (1000, 0, 0), (1000, 0, 1)]
    assert batches_per_request(broker) == [1, 1, 1]


def test_a_partition_has_at_most_five_stamped_batches_incomplete(history):
    """Five is the leader's window of remembered batches per producer: a retry of any incomplete
    batch is still recognised as a duplicate. A follower that does not fetch holds every acks=all
    request in the purgatory, so the producer stops at five batches until some are acknowledged."""
    broker = leading_broker(replicas=(0, 1), isr=(0, 1))
    producer = make_producer(broker, history, acks="all", **{"linger.ms": "0", "batch.size": "1"})
    futures = [producer.send(TOPIC, value=f"v{i}".encode(), partition=0) for i in range(8)]
    wait_for_batches(broker, 5)
    assert sum(batches_per_request(broker)) == 5 and not any(f.done() for f in futures)
    follow_until_done(broker, futures)
    assert [f.result().offset for f in futures] == list(range(8))
    assert sum(batches_per_request(broker)) == 8


def log_values(broker) -> list[bytes]:
    answer = broker.driver.ask("handle_fetch", fetch_request(TOPIC, 0, 0, replica_id=1))
    return [record.value for record in read_records(TOPIC, 0, answer.responses[0].partitions[0].records, 0)]


def outcomes(history) -> dict[str, str]:
    """Each send's outcome in the history, by value (sends complete in any order)."""
    return {e["value"] if isinstance(e["value"], str) else e["value"]["value"]: e["type"]
            for e in events(history) if e["type"] != "invoke"}


def five_in_flight(broker, history, held: tuple[int, ...], **config):
    """Five sends to partition 0, each its own acks=all request, all in flight at once: follower 1
    does not fetch yet, so the leader holds them in the purgatory, and the requests at the indexes
    ``held`` do not reach it at all until the test answers them (``answer_held``)."""
    broker.produce_script = [NEVER if i in held else None for i in range(5)]
    producer = make_producer(broker, history, acks="all", **{"linger.ms": "0", "batch.size": "1", **config})
    futures = []
    for i, value in enumerate((b"a", b"b", b"c", b"d", b"e")):
        futures.append(producer.send(TOPIC, value=value, partition=0))
        wait_for_requests(broker, i + 1)
    assert stamps(broker) == [(1000, 0, sequence) for sequence in range(5)], "five requests in flight"
    broker.held_requests = [broker.produce_requests[i] for i in held]
    return futures


def answer_held(broker, index: int, outcome) -> None:
    """Answer the ``index``-th held request: with an error code the leader refused it before the
    append; with ``("ran", exception)`` the leader ran it and the call then failed in Ray."""
    future, request = broker.unanswered[index], broker.held_requests[index]
    with broker.lock:
        if isinstance(outcome, tuple):
            answered = broker._call("handle_produce", request)
            if outcome[1] is None:
                answered.add_done_callback(lambda done: future.set_result(done.result()))
            else:
                future.set_exception(outcome[1])
        else:
            future.set_result(ProduceResponse(responses=(TopicProduceResponse(name=TOPIC, partition_responses=(
                PartitionProduceResponse(index=0, error_code=outcome),)),)))


def finish(broker, futures) -> None:
    follow_until_done(broker, futures)


def test_a_retriable_failure_in_the_middle_of_five_in_flight_keeps_the_order(history):
    """The third request is refused before the append (NOT_ENOUGH_REPLICAS) after the leader
    answered the fourth and fifth OUT_OF_ORDER_SEQUENCE_NUMBER (it has not seen the third). All three are sent again in
    sequence order, one at a time and each alone: nothing lost, nothing twice, nothing reordered."""
    broker = leading_broker(replicas=(0, 1), isr=(0, 1))
    futures = five_in_flight(broker, history, held=(2, 3, 4))
    answer_held(broker, 1, ("ran", None))  # the leader has sequence 1 last: OUT_OF_ORDER
    answer_held(broker, 2, ("ran", None))
    answer_held(broker, 0, ErrorCode.NOT_ENOUGH_REPLICAS)
    finish(broker, futures)
    assert [f.result().offset for f in futures] == [0, 1, 2, 3, 4]
    assert log_values(broker) == [b"a", b"b", b"c", b"d", b"e"]
    assert stamps(broker)[5:] == [(1000, 0, 2), (1000, 0, 3), (1000, 0, 4)]
    assert batches_per_request(broker) == [1] * 8
    assert [e["type"] for e in events(history) if e["type"] != "invoke"] == ["ok"] * 5


def test_a_lost_answer_in_the_middle_of_five_in_flight_is_answered_as_a_duplicate(history):
    """The third request is appended and its answer lost, after the fourth and fifth were
    appended behind it. The third's retry is answered with its original offset: every
    acknowledgement stands, and the log holds each record once."""
    broker = leading_broker(replicas=(0, 1), isr=(0, 1))
    futures = five_in_flight(broker, history, held=(2, 3, 4))
    for index in range(3):  # the leader runs them in order; only the third's answer is lost
        answer_held(broker, index, ("ran", RayActorError()) if index == 0 else ("ran", None))
    finish(broker, futures)
    assert [f.result().offset for f in futures] == [0, 1, 2, 3, 4]
    assert log_values(broker) == [b"a", b"b", b"c", b"d", b"e"]
    assert stamps(broker)[5:] == [(1000, 0, 2)]


def test_a_failure_for_good_in_the_middle_restamps_the_later_batches_under_a_new_producer_id(history):
    """The third batch is refused for good: sequence 2 of producer 1000 is a gap the leader will
    never fill, so the fourth and fifth (OUT_OF_ORDER, no attempt appended them) are stamped again
    under a new producer id, sent after the first two are acknowledged, in order."""
    broker = leading_broker(replicas=(0, 1), isr=(0, 1))
    futures = five_in_flight(broker, history, held=(2, 3, 4))
    answer_held(broker, 1, ("ran", None))  # the leader has sequence 1 last: OUT_OF_ORDER
    answer_held(broker, 2, ("ran", None))
    answer_held(broker, 0, ErrorCode.MESSAGE_TOO_LARGE)
    finish(broker, futures)
    assert futures[2].exception().error_code == ErrorCode.MESSAGE_TOO_LARGE
    assert [futures[i].result().offset for i in (0, 1, 3, 4)] == [0, 1, 2, 3]
    assert log_values(broker) == [b"a", b"b", b"d", b"e"]
    assert stamps(broker)[5:] == [(1001, 0, 0), (1001, 0, 1)]
    assert outcomes(history) == {"a": "ok", "b": "ok", "c": "fail", "d": "ok", "e": "ok"}


def test_a_batch_past_a_gap_that_may_be_in_the_log_fails_rather_than_risk_a_duplicate(history):
    """As before, but the fourth request's call failed in Ray: it may be in the log (here the
    leader refused it, out of order, but the producer cannot know), so stamping it again could
    write it twice. It fails, indeterminately; the fifth is stamped again."""
    broker = leading_broker(replicas=(0, 1), isr=(0, 1))
    futures = five_in_flight(broker, history, held=(2, 3, 4))
    answer_held(broker, 1, ("ran", RayActorError()))
    answer_held(broker, 2, ("ran", None))
    answer_held(broker, 0, ErrorCode.MESSAGE_TOO_LARGE)
    finish(broker, futures)
    assert futures[3].exception().error_code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert [futures[i].result().offset for i in (0, 1, 4)] == [0, 1, 2]
    assert log_values(broker) == [b"a", b"b", b"e"]
    assert stamps(broker)[5:] == [(1001, 0, 0)]
    assert outcomes(history) == {"a": "ok", "b": "ok", "c": "fail", "d": "info", "e": "ok"}


# ------------------------------------------------------------------ batches over max.message.bytes
def consumed_values(broker) -> list[bytes]:
    """The partition's values as a consumer reads them (the leader has no follower 1 here)."""
    answer = broker.driver.ask("handle_fetch", fetch_request(TOPIC, 0, 0))
    return [record.value for record in read_records(TOPIC, 0, answer.responses[0].partitions[0].records, 0)]


SPLIT_CONFIGS = [pytest.param({"acks": "all"}, id="idempotent"),
                 pytest.param({"acks": "all", "enable.idempotence": "false"}, id="not-idempotent"),
                 pytest.param({"acks": "1"}, id="acks-1")]


@pytest.mark.parametrize("config", SPLIT_CONFIGS)
def test_a_batch_over_the_topics_max_message_bytes_is_split_and_every_record_delivered_in_order(history, config):
    """Kafka's Sender: MESSAGE_TOO_LARGE for a batch of more than one record splits it into smaller
    batches that go back to the front of the partition's queue, in order; each send completes once,
    with the offset its record was written at."""
    broker = leading_broker(config={"max.message.bytes": "700"})
    producer = make_producer(broker, history, **config, **{"linger.ms": "60000"})  # one batch, sent by flush
    values = [f"v{i:03d}".encode() + b"x" * 96 for i in range(40)]  # about 4 KiB together
    futures = [producer.send(TOPIC, value=value, partition=0) for value in values]
    producer.flush(timeout=WAIT_S)
    assert [future.result(timeout=0).offset for future in futures] == list(range(len(values)))
    assert consumed_values(broker) == values, "every record once, in send order"
    sizes = [header.size_in_bytes for request in broker.produce_requests for topic in request.topic_data
             for data in topic.partition_data for header in parse_batches(data.records)]
    assert sizes[0] > 700 and min(sizes) < 350, "the refused batch, then pieces of at most half its size"
    assert sorted(outcomes(history).values()) == ["ok"] * len(values)
    if config.get("enable.idempotence") != "false" and config["acks"] == "all":
        sequences = sorted(sequence for _, _, sequence in stamps(broker)[1:])
        assert {producer_id for producer_id, _, _ in stamps(broker)} == {1000}, "no reset: nothing failed"
        assert sequences[0] == 0, "the pieces carry the refused batch's sequences"


@pytest.mark.parametrize("config", SPLIT_CONFIGS)
def test_pipelined_batches_over_max_message_bytes_are_split_without_loss_duplicate_or_reorder(config):
    """Several batches of the partition in flight when the first is refused as too large: the ones
    after it are refused (out of sequence, or too large themselves) and retried after its pieces."""
    broker = leading_broker(config={"max.message.bytes": "700"})
    producer = make_producer(broker, None, **config, **{"batch.size": "3000", "linger.ms": "0"})
    values = [f"v{i:03d}".encode() + b"x" * 96 for i in range(150)]
    futures = [producer.send(TOPIC, value=value, partition=0) for value in values]
    producer.flush(timeout=WAIT_S)
    assert [future.result(timeout=0).offset for future in futures] == list(range(len(values)))
    assert consumed_values(broker) == values


@pytest.mark.parametrize("config", SPLIT_CONFIGS)
def test_a_single_record_over_max_message_bytes_still_fails_with_message_too_large(config):
    broker = leading_broker(config={"max.message.bytes": "700"})
    producer = make_producer(broker, None, **config, **{"linger.ms": "60000"})
    small = [producer.send(TOPIC, value=f"s{i}".encode(), partition=0) for i in range(3)]
    large = producer.send(TOPIC, value=b"L" * 1000, partition=0)
    after = producer.send(TOPIC, value=b"after", partition=0)
    producer.flush(timeout=WAIT_S)
    with pytest.raises(KafkaError) as caught:
        large.result(timeout=0)
    assert caught.value.error_code == ErrorCode.MESSAGE_TOO_LARGE
    assert "MESSAGE_TOO_LARGE" in str(caught.value)
    assert [future.result(timeout=0).offset for future in small + [after]] == [0, 1, 2, 3]
    assert consumed_values(broker) == [b"s0", b"s1", b"s2", b"after"]
