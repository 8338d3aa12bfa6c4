"""The wire listener's Fetch translation keeps KIP-227's session fields from v7 on (the Java client
uses sessions) and treats older versions, and librdkafka's id 0 / epoch -1, as sessionless fetches."""
from __future__ import annotations

import datetime

import kio.schema.fetch.v4.request as v4
import kio.schema.fetch.v7.request as v7
import kio.schema.fetch.v7.response as v7_response

from actors.core.messages.fetch import FetchResponse, ForgottenTopic
from actors.wire.apis import CODECS, WireContext


def _v7(session_id: int, session_epoch: int, forgotten=()):
    return v7.FetchRequest(
        replica_id=5, max_wait=datetime.timedelta(milliseconds=100), min_bytes=1, max_bytes=1 << 20,
        isolation_level=0, session_id=session_id, session_epoch=session_epoch,
        topics=(v7.FetchTopic(topic="t", partitions=(v7.FetchPartition(
            partition=0, fetch_offset=3, log_start_offset=-1, partition_max_bytes=1024),)),),
        forgotten_topics_data=tuple(v7.ForgottenTopic(topic=t, partitions=tuple(ps)) for t, ps in forgotten))


def test_a_v7_fetch_keeps_its_session_fields_and_forgotten_partitions():
    request = CODECS[1].to_core(_v7(1234, 5, [("t", (1, 2))]), 7, WireContext())
    assert (request.session_id, request.session_epoch, request.replica_id) == (1234, 5, -1)
    assert request.forgotten_topics_data == (ForgottenTopic(topic="t", partitions=(1, 2)),)


def test_librdkafkas_session_id_zero_epoch_minus_one_stays_a_sessionless_fetch():
    request = CODECS[1].to_core(_v7(0, -1), 7, WireContext())
    assert (request.session_id, request.session_epoch, request.forgotten_topics_data) == (0, -1, ())


def test_a_fetch_older_than_v7_is_sessionless():
    body = v4.FetchRequest(replica_id=-1, max_wait=datetime.timedelta(milliseconds=100), min_bytes=1,
                           max_bytes=1 << 20, isolation_level=0, topics=(v4.FetchTopic(topic="t", partitions=(
                               v4.FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=1024),)),))
    request = CODECS[1].to_core(body, 4, WireContext())
    assert (request.session_id, request.session_epoch) == (0, -1)


def test_the_answer_carries_the_session_id_and_a_session_error():
    answer = CODECS[1].to_kio(FetchResponse(responses=(), session_id=77, error_code=71), 7, None)
    assert isinstance(answer, v7_response.FetchResponse)
    assert answer.session_id == 77 and int(answer.error_code) == 71
