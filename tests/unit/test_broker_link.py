"""Proves the group coordinator's link to its broker decides what its Ray actor used to: the load
of an offsets partition read in chunks until the log end (retried when a read fails, dropped when
leadership moved meanwhile), writes turned into acks=all internal produces whose answers reach the
core, and the fate-sharing table (same broker: nothing; a new incarnation: drop and adopt; gone:
drop), driven step by step over a fake broker."""
from __future__ import annotations

import pytest

from actors.core.effects import CoordinatorMetadataUpdate, Send
from actors.core.errors import ErrorCode
from actors.core.group.broker_link import BROKER_UNREACHABLE_MS, LOAD_RETRY_BACKOFF_MS, BrokerLink
from actors.core.group.coordinator import GroupCoordinatorCore
from actors.core.group.messages import (
    BrokerStateRequest, BrokerStateResponse, InternalProduceRequest, OffsetsLogAppendRequest, OffsetsLogReadRequest,
    OffsetsLogReadResponse,
)
from actors.core.messages.produce import PartitionProduceResponse, ProduceResponse, TopicProduceResponse


class ListCodec:
    """Records as a repr'd list: chunk ``b"[(k, v)]"`` holds the records at one offset each."""

    def encode(self, records, timestamp_ms):
        return repr(list(records)).encode()

    def decode(self, buffer, from_offset):
        return list(eval(buffer.decode())) if buffer else []  # noqa: S307 - test data only


def sends(effects):
    return [e.message for e in effects if isinstance(e, Send)]


def new_link() -> BrokerLink:
    core = GroupCoordinatorCore(broker_id=0, now_ms=0, config={"offsets.topic.num.partitions": "1"})
    return BrokerLink(core, ListCodec())


def adopt(link: BrokerLink, incarnation: str, led=((0, 5),), now_ms: int = 0) -> list:
    """Answer the watch, then its follow-up asking for leaderships; returns the effects of the adoption."""
    (watch,) = sends(link.start(now_ms))
    follow_up = sends(link.on_broker_response(watch, BrokerStateResponse(incarnation_id=incarnation), now_ms))
    assert follow_up == [BrokerStateRequest(include_leaderships=True)]
    return link.on_broker_response(follow_up[0], BrokerStateResponse(
        incarnation_id=incarnation, metadata=CoordinatorMetadataUpdate(version=(0, 1), partitions=()),
        offsets_partitions_led=tuple(led)), now_ms)


def test_a_load_reads_chunks_until_the_log_end_then_coordinates():
    link = new_link()
    (read,) = sends(adopt(link, "one"))
    assert read == OffsetsLogReadRequest(partition=0, offset=0, max_bytes=read.max_bytes)
    assert link.core.manager.loading_partitions
    (read2,) = sends(link.on_broker_response(read, OffsetsLogReadResponse(records=b"[]", next_offset=3,
                                                                        log_end_offset=6), 1))
    assert read2.offset == 3
    assert sends(link.on_broker_response(read2, OffsetsLogReadResponse(records=b"[]", next_offset=6,
                                                                       log_end_offset=6), 2)) == []
    assert not link.core.manager.loading_partitions and link.loads_begun == {0: 1}


def test_a_failed_read_is_retried_after_the_backoff():
    link = new_link()
    (read,) = sends(adopt(link, "one"))
    assert sends(link.on_broker_response(read, ErrorCode.REQUEST_TIMED_OUT, 10)) == []
    assert [m for m in sends(link.tick(10 + LOAD_RETRY_BACKOFF_MS - 1)) if isinstance(m, OffsetsLogReadRequest)] == []
    retried = [m for m in sends(link.tick(10 + LOAD_RETRY_BACKOFF_MS)) if isinstance(m, OffsetsLogReadRequest)]
    assert retried == [OffsetsLogReadRequest(partition=0, offset=0, max_bytes=read.max_bytes)]


def test_a_load_overtaken_by_a_resignation_is_dropped():
    link = new_link()
    (read,) = sends(adopt(link, "one"))
    link.on_leadership_change(0, 5, False, 1)
    assert sends(link.on_broker_response(read, OffsetsLogReadResponse(records=b"[]", next_offset=0,
                                                                       log_end_offset=0), 2)) == []
    assert not link.core.manager.loading_partitions and link.epochs.partitions() == [0]


@pytest.mark.parametrize("answer,at_ms,dropped", [
    ("same", 600, False),  # the broker we knew: nothing changes
    (ErrorCode.BROKER_NOT_AVAILABLE, 600, True),  # gone for good: drop at once
    (ErrorCode.REQUEST_TIMED_OUT, 600, False),  # slow: give it a while ...
    (ErrorCode.REQUEST_TIMED_OUT, 600 + BROKER_UNREACHABLE_MS, True),  # ... then count it gone
])
def test_the_fate_sharing_table(answer, at_ms, dropped):
    link = new_link()
    (read,) = sends(adopt(link, "one"))
    link.on_broker_response(read, OffsetsLogReadResponse(records=b"[]", next_offset=0, log_end_offset=0), 1)
    assert link.epochs.partitions() == [0]
    (watch,) = sends(link.tick(500))
    if answer == ErrorCode.REQUEST_TIMED_OUT and at_ms > 600:
        link.on_broker_response(watch, answer, 600)  # the first failure starts the grace period
        (watch,) = sends(link.tick(at_ms))
    response = BrokerStateResponse(incarnation_id="one") if answer == "same" else answer
    link.on_broker_response(watch, response, at_ms)
    assert (link.epochs.partitions() == []) == dropped
    assert (link.broker_incarnation is None) == dropped


def test_a_new_broker_incarnation_drops_the_groups_and_adopts_its_leaderships():
    link = new_link()
    (read,) = sends(adopt(link, "one"))
    link.on_broker_response(read, OffsetsLogReadResponse(records=b"[]", next_offset=0, log_end_offset=0), 1)
    (watch,) = sends(link.tick(500))
    (follow_up,) = sends(link.on_broker_response(watch, BrokerStateResponse(incarnation_id="two"), 500))
    effects = link.on_broker_response(follow_up, BrokerStateResponse(
        incarnation_id="two", metadata=CoordinatorMetadataUpdate(version=(1, 1), partitions=()),
        offsets_partitions_led=((0, 6),)), 501)
    assert link.broker_incarnation == "two" and link.loads_begun == {0: 2}
    assert [m for m in sends(effects) if isinstance(m, OffsetsLogReadRequest)] == [
        OffsetsLogReadRequest(partition=0, offset=0, max_bytes=read.max_bytes)]


def test_a_write_becomes_an_acks_all_internal_produce_and_its_answer_reaches_the_core():
    link = new_link()
    request = OffsetsLogAppendRequest(append_id=1, partition=0, records=((b"k", b"v"),), timestamp_ms=7)
    (produce,) = sends(link.step([Send(destination="offsets-log", message=request)]))
    assert isinstance(produce, InternalProduceRequest) and produce.produce.acks == -1
    assert produce.produce.topic_data[0].partition_data[0].records == repr([(b"k", b"v")]).encode()
    answered = []
    link.core.on_offsets_log_response = lambda req, resp, now_ms: answered.append((req, resp)) or []
    link.on_broker_response(produce, ProduceResponse(responses=(TopicProduceResponse(
        name="__consumer_offsets", partition_responses=(PartitionProduceResponse(index=0, base_offset=3),)),)), 5)
    assert answered[0][0] is request and answered[0][1].base_offset == 3
