"""Proves that a producer's sends share their batch's outcome yet each learns its own offset, and that
a request large enough to travel as a uint8 array is appended whole, by running the real producer
without Ray against a real ReplicaManager core (the in-process broker of test_client_history)."""
from __future__ import annotations

import numpy as np
import pytest

from actors.core.errors import ErrorCode
from actors.core.log.record_batch import parse_batches
from orchestration.clients.producer_batch import ZERO_COPY_THRESHOLD_BYTES
from orchestration.errors import KafkaError
from tests.unit.test_client_history import (  # noqa: F401 (close_producers: an autouse fixture)
    TOPIC, WAIT_S, close_producers, leading_broker, log_end_offset, make_producer,
)


def test_each_send_of_one_batch_learns_its_own_offset_and_callbacks_get_the_send():
    broker = leading_broker()
    producer = make_producer(broker, None, **{"linger.ms": "60000"})  # one batch, sent by flush
    futures = [producer.send(TOPIC, value=f"v{i}".encode(), partition=0) for i in range(5)]
    called = []
    futures[3].add_done_callback(called.append)
    assert not any(future.done() for future in futures)
    producer.flush(timeout=WAIT_S)
    assert [future.result(timeout=WAIT_S).offset for future in futures] == [0, 1, 2, 3, 4]
    assert all(future.exception() is None and not future.cancel() for future in futures)
    assert called == [futures[3]]
    later = []
    futures[0].add_done_callback(later.append)  # added after completion: called at once
    assert later == [futures[0]]


def test_a_refused_batch_fails_every_send_in_it_with_the_error():
    broker = leading_broker()
    broker.produce_script.append(ErrorCode.INVALID_REQUIRED_ACKS)  # not retriable
    producer = make_producer(broker, None, retries="0", **{"linger.ms": "60000"})
    futures = [producer.send(TOPIC, value=b"v", partition=0) for _ in range(3)]
    producer.flush(timeout=WAIT_S)
    for future in futures:
        assert isinstance(future.exception(timeout=WAIT_S), KafkaError)
        with pytest.raises(KafkaError):
            future.result(timeout=WAIT_S)


def test_a_request_over_the_zero_copy_threshold_travels_as_a_uint8_array_and_is_appended_whole():
    broker = leading_broker()
    producer = make_producer(broker, None, **{"batch.size": str(4 * ZERO_COPY_THRESHOLD_BYTES),
                                              "linger.ms": "60000"})
    value = b"x" * 1024
    count = 2 * ZERO_COPY_THRESHOLD_BYTES // len(value)
    futures = [producer.send(TOPIC, value=value, partition=0) for _ in range(count)]
    producer.flush(timeout=WAIT_S)
    assert [future.result(timeout=WAIT_S).offset for future in futures] == list(range(count))
    (request,) = broker.produce_requests
    records = request.topic_data[0].partition_data[0].records
    assert isinstance(records, np.ndarray) and records.dtype == np.uint8
    assert sum(header.records_count for header in parse_batches(records)) == count
    assert log_end_offset(broker) == count


def test_every_send_callback_runs_once_even_one_that_raises_and_those_added_while_the_batch_completes():
    """The batch hands its sends' callbacks over under its lock: each runs exactly once, whether it
    was added before the batch completed, while it completed (from another thread), or after; a
    callback that raises is logged and the others still run."""
    import threading

    broker = leading_broker()
    producer = make_producer(broker, None, **{"linger.ms": "0"})
    for round_number in range(20):
        futures = [producer.send(TOPIC, value=b"v", partition=0) for _ in range(200)]
        calls = []
        futures[0].add_done_callback(lambda future: 1 / 0)
        adder = threading.Thread(target=lambda futures=futures, calls=calls: [
            f.add_done_callback(calls.append) for f in futures])
        adder.start()
        producer.flush(timeout=WAIT_S)
        adder.join(timeout=WAIT_S)
        assert not adder.is_alive()
        assert sorted(map(id, calls)) == sorted(map(id, futures)), f"round {round_number}: a callback ran twice or never"
    assert all(f.exception() is None for f in futures)


def test_a_callback_added_after_the_send_completed_runs_at_once_and_one_that_raises_is_logged_not_raised():
    """As ``concurrent.futures.Future.add_done_callback``: on a completed send the callback runs in
    the caller's thread at once, and its exception is logged, never raised into the caller."""
    broker = leading_broker()
    producer = make_producer(broker, None, **{"linger.ms": "0"})
    future = producer.send(TOPIC, value=b"v", partition=0)
    assert future.result(timeout=WAIT_S).offset == 0
    ran = []
    future.add_done_callback(lambda f: 1 / 0)  # raised into the caller before the fix
    future.add_done_callback(ran.append)
    assert ran == [future]


def test_a_leader_with_one_ready_batch_gets_every_partition_it_leads_in_the_same_request():
    """Kafka's RecordAccumulator: once a leader has a batch ready (full, lingered, or flushed), a
    drain takes the head batch of every partition that leader leads, lingered or not, into one
    request, so a producer spread over many partitions sends one request per leader rather than
    one per partition."""
    broker = leading_broker(partitions=3)
    producer = make_producer(broker, None, partitions=3, **{"batch.size": "1024", "linger.ms": "60000"})
    waiting = [producer.send(TOPIC, value=b"small", partition=p) for p in (1, 2)]  # neither full nor lingered
    full = producer.send(TOPIC, value=b"x" * 2048, partition=0)  # over batch.size: ready at once
    assert full.result(timeout=WAIT_S).offset == 0
    first = broker.produce_requests[0]
    assert sorted(data.index for topic in first.topic_data for data in topic.partition_data) == [0, 1, 2]
    assert [future.result(timeout=WAIT_S).offset for future in waiting] == [0, 0]


def test_a_drain_past_max_request_size_leaves_the_rest_for_the_next_request_and_starts_there():
    """At most ``max.request.size`` goes in one drain for a leader (its first batch whatever its
    size); the partitions left out are drained first next time (Kafka's drainIndex), even when
    the partitions drained before have new batches by then, so none starves. The drains are
    stepped by hand under the producer's lock (nothing is due, so its sender stays idle) and
    their batches handed back before the producer flushes them."""
    broker = leading_broker(partitions=4)
    producer = make_producer(broker, None, partitions=4, **{"batch.size": "100000", "linger.ms": "60000",
                                                             "max.request.size": "5000"})
    futures = [producer.send(TOPIC, value=b"x" * 2000, partition=p) for p in range(4)]
    drained = []
    with producer._condition:
        producer._flushing += 1  # as flush does: every leader with data is ready
        first, _, _, _ = producer._drain_ready()
        futures += [producer.send(TOPIC, value=b"y" * 2000, partition=p) for p in (0, 1)]
        second, _, _, _ = producer._drain_ready()
        for ready in (first, second):
            drained.append(sorted(group[0].partition for _, group in ready))
            producer._requeue([batch for _, group in ready for batch in group])
        producer._flushing -= 1
    assert drained == [[0, 1], [2, 3]]
    producer.flush(timeout=WAIT_S)
    assert [future.result(timeout=WAIT_S).offset for future in futures] == [0, 0, 0, 0, 1, 1]
