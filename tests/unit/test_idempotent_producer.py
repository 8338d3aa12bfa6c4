"""The idempotent producer (KIP-98) against a real broker core in this process: it asks for a
producer id, stamps each batch with its id and the partition's next sequence, and so a retry of a
request whose first attempt did land is answered with the original offset instead of being
written twice; it is on by default only where Kafka 3.x turns it on, asks for a new id after a
batch fails for good, keeps at most one request in flight per partition, and sends a retried batch alone."""
from __future__ import annotations

import time

import pytest
from ray.exceptions import RayActorError

from actors.core.errors import ErrorCode
from actors.core.log.record_batch import parse_batches
from orchestration.errors import KafkaError
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


def test_a_partition_has_one_request_in_flight_and_its_queued_batches_follow_the_retry(history):
    broker = leading_broker()
    broker.produce_script = [NEVER]
    producer = make_producer(broker, history, acks="all", **{"request.timeout.ms": "300", "linger.ms": "0"})
    first = producer.send(TOPIC, value=b"first", partition=0)
    deadline = time.monotonic() + WAIT_S
    while not broker.produce_requests:
        assert time.monotonic() < deadline, "the first request was never sent"
        time.sleep(0.005)
    second = producer.send(TOPIC, value=b"second", partition=0)
    producer.flush(timeout=WAIT_S)
    assert [first.result().offset, second.result().offset] == [0, 1]
    # While the first request went unanswered nothing else was sent for the partition; its retry
    # went alone (see the next test), then the queued batch, in sequence order.
    assert len(broker.produce_requests) == 3
    assert stamps(broker) == [(1000, 0, 0), (1000, 0, 0), (1000, 0, 1)]
    assert [e["type"] for e in events(history) if e["type"] != "invoke"] == ["ok", "ok"]


def batches_per_request(broker) -> list[int]:
    return [sum(len(parse_batches(data.records)) for topic in request.topic_data for data in topic.partition_data)
            for request in broker.produce_requests]


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


def test_fresh_batches_travel_together_at_most_five_to_a_request(history):
    """Five is the leader's window of remembered batches per producer: a retry of any batch of a
    request that carried at most five is still recognised as a duplicate."""
    broker = leading_broker()
    broker.produce_script = [NEVER]
    producer = make_producer(broker, history, acks="all", **{"request.timeout.ms": "300", "linger.ms": "0",
                                                             "batch.size": "1"})
    futures = [producer.send(TOPIC, value=b"first", partition=0)]
    wait_for_requests(broker, 1)
    futures += [producer.send(TOPIC, value=f"v{i}".encode(), partition=0) for i in range(8)]
    producer.flush(timeout=WAIT_S)
    assert [f.result().offset for f in futures] == list(range(9))
    assert log_end_offset(broker) == 9
    assert batches_per_request(broker) == [1, 1, 5, 3]
