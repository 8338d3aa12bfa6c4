"""Proves that fetch requests and answers of the usual shape pickle flat (no nested message class
or ErrorCode named in the pickle, records out of band) and come back equal, and that any other
shape pickles as sent, so that the broker's request check still sees and refuses it."""
from __future__ import annotations

import pickle

import numpy
import pytest

from actors.core.errors import ErrorCode
from actors.core.messages.fetch import (
    EpochEndOffset,
    FetchableTopicResponse,
    FetchPartition,
    FetchPartitionData,
    FetchRequest,
    FetchResponse,
    FetchTopic,
    ForgottenTopic,
    LeaderIdAndEpoch,
)
from actors.core.messages.validation import request_schema_error

NESTED_NAMES = (b"FetchTopic", b"FetchPartition", b"ForgottenTopic", b"FetchableTopicResponse",
                b"FetchPartitionData", b"EpochEndOffset", b"LeaderIdAndEpoch", b"ErrorCode")


def _request(**changes) -> FetchRequest:
    fields = dict(max_wait_ms=500, min_bytes=1, max_bytes=1 << 20, replica_id=2, session_id=7, session_epoch=3,
                  topics=(FetchTopic(topic="t", partitions=(
                      FetchPartition(partition=0, fetch_offset=5, partition_max_bytes=1 << 20),
                      FetchPartition(partition=1, fetch_offset=9, partition_max_bytes=100, current_leader_epoch=4,
                                     last_fetched_epoch=3, log_start_offset=2))),
                      FetchTopic(topic="u", partitions=())),
                  forgotten_topics_data=(ForgottenTopic(topic="v", partitions=(1, 2)),), rack_id="r1")
    return FetchRequest(**(fields | changes))


def _response(records, **changes) -> FetchResponse:
    fields = dict(session_id=7, throttle_time_ms=3, responses=(FetchableTopicResponse(topic="t", partitions=(
        FetchPartitionData(partition_index=0, high_watermark=10, last_stable_offset=10, log_start_offset=0,
                           records=records),
        FetchPartitionData(partition_index=1, error_code=ErrorCode.FENCED_LEADER_EPOCH,
                           diverging_epoch=EpochEndOffset(epoch=2, end_offset=8),
                           current_leader=LeaderIdAndEpoch(leader_id=1, leader_epoch=4), preferred_read_replica=2),
    )),))
    return FetchResponse(**(fields | changes))


@pytest.mark.parametrize("message", [_request(), _response(b"abc"), _response(b"", error_code=ErrorCode.UNKNOWN_SERVER_ERROR)],
                         ids=["request", "response", "response with an error"])
def test_a_usual_fetch_message_pickles_flat_and_comes_back_equal(message):
    data = pickle.dumps(message, protocol=5)
    assert not [name for name in NESTED_NAMES if name in data], "a nested class is pickled by name"
    assert pickle.loads(data) == message


def test_records_as_a_numpy_array_travel_out_of_band():
    records = numpy.arange(256 * 1024, dtype=numpy.uint32).view(numpy.uint8)
    buffers = []
    data = pickle.dumps(_response(records), protocol=5, buffer_callback=buffers.append)
    assert len(buffers) == 1 and len(data) < 1000
    restored = pickle.loads(data, buffers=buffers).responses[0].partitions[0].records
    assert isinstance(restored, numpy.ndarray) and restored.tobytes() == records.tobytes()


@pytest.mark.parametrize("message", [
    _request(topics=[FetchTopic(topic="t", partitions=(FetchPartition(partition=0, fetch_offset=0,
                                                                      partition_max_bytes=1),))]),
    _request(topics=(FetchTopic(topic="t", partitions=("not a partition",)),)),
    _request(forgotten_topics_data=(ForgottenTopic(topic="v", partitions=[1]),)),
    _response(b"", error_code=0),
    _response(b"", responses=(FetchableTopicResponse(topic="t", partitions=[]),)),
], ids=["list of topics", "not a partition", "forgotten list", "plain int error", "list of partitions"])
def test_any_other_shape_pickles_as_sent(message):
    restored = pickle.loads(pickle.dumps(message, protocol=5))
    assert restored == message
    assert repr(restored) == repr(message)  # the same types all the way down, a list still a list


def test_a_malformed_request_still_reaches_the_check_and_is_refused():
    sent = _request(topics=(FetchTopic(topic="t", partitions=("not a partition",)),))
    assert request_schema_error(pickle.loads(pickle.dumps(sent)), FetchRequest) is not None
