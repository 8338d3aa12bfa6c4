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
