"""Proves that a fetcher's append to its broker and the broker's answer pickle flat when of the
usual shape (no nested message class or ErrorCode named in the pickle, records out of band) and
come back equal, and that any other shape pickles as sent, so that the broker's request check
still sees and refuses it."""
from __future__ import annotations

import pickle

import numpy
import pytest

from actors.core.errors import ErrorCode
from actors.core.fetcher.follower_messages import (
    FollowerAppendPartition, FollowerAppendRequest, FollowerAppendResponse, FollowerPartitionState,
)
from actors.core.messages.validation import request_schema_error

NESTED_NAMES = (b"FollowerAppendPartition", b"FollowerPartitionState", b"ErrorCode")


def _append(records=b"abc", **changes) -> FollowerAppendRequest:
    first = FollowerAppendPartition(topic="t", partition=0, current_leader_epoch=3, fetch_offset=10, records=records,
                                    leader_high_watermark=12, leader_log_start_offset=2)
    second = FollowerAppendPartition(topic="u", partition=5, current_leader_epoch=1, fetch_offset=0, records=b"",
                                     leader_high_watermark=0)
    return FollowerAppendRequest(**({"partitions": (first, second)} | changes))


def _answer(**changes) -> FollowerAppendResponse:
    return FollowerAppendResponse(**({"partitions": (
        FollowerPartitionState(topic="t", partition=0, log_end_offset=13, latest_epoch=3, high_watermark=12,
                               log_start_offset=2),
        FollowerPartitionState(topic="u", partition=5, error_code=ErrorCode.FENCED_LEADER_EPOCH,
                               truncation_complete=False),
    )} | changes))


@pytest.mark.parametrize("message", [_append(), _answer(), FollowerAppendResponse(partitions=())],
                         ids=["append", "answer", "empty answer"])
def test_a_usual_append_or_answer_pickles_flat_and_comes_back_equal(message):
    data = pickle.dumps(message, protocol=5)
    assert not [name for name in NESTED_NAMES if name in data], "a nested class is pickled by name"
    restored = pickle.loads(data)
    assert restored == message and repr(restored) == repr(message)


def test_an_appends_records_as_a_numpy_array_travel_out_of_band():
    records = numpy.arange(256 * 1024, dtype=numpy.uint32).view(numpy.uint8)
    buffers = []
    data = pickle.dumps(_append(records), protocol=5, buffer_callback=buffers.append)
    assert len(buffers) == 1 and len(data) < 1000
    restored = pickle.loads(data, buffers=buffers).partitions[0].records
    assert isinstance(restored, numpy.ndarray) and restored.tobytes() == records.tobytes()


@pytest.mark.parametrize("message", [
    _append(partitions=[_append().partitions[0]]),
    _append(partitions=(_append().partitions[0], "not a partition")),
    _answer(partitions=(FollowerPartitionState(topic="t", partition=0, error_code=0),)),
], ids=["list of partitions", "not a partition", "plain int error"])
def test_any_other_shape_pickles_as_sent(message):
    restored = pickle.loads(pickle.dumps(message, protocol=5))
    assert restored == message
    assert repr(restored) == repr(message)  # the same types all the way down, a list still a list


def test_a_malformed_append_still_reaches_the_check_and_is_refused():
    sent = _append(partitions=(_append().partitions[0], "not a partition"))
    assert request_schema_error(pickle.loads(pickle.dumps(sent)), FollowerAppendRequest) is not None
