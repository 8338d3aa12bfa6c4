"""The pure replica manager serves Produce, Fetch, ListOffsets and control requests with Kafka's
answers; each case drives the core step by step with a fake clock and in-memory storage, no Ray."""
from __future__ import annotations

import pytest

from actors.core.effects import Respond
from actors.core.errors import ErrorCode
from actors.core.log.storage import InMemoryStorage
from actors.core.messages.list_offsets import (
    EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, ListOffsetsPartition, ListOffsetsRequest, ListOffsetsTopic,
)
from actors.core.messages.produce import PartitionProduceData, ProduceRequest, TopicProduceData
from actors.core.topics import OFFSETS_TOPIC
from actors.core.messages.metadata import MetadataRequest
from actors.codecs.record_batches import read_records
from tests.support.core_driver import CoreDriver, fetch_result, make_batch, produce_result


@pytest.fixture
def leader():
    driver = CoreDriver(broker_id=0)
    driver.become("t", 0, leader=0)
    return driver


def log_end_offset(driver, topic="t", partition=0):
    return driver.manager.partitions[(topic, partition)].log_end_offset


def test_produce_assigns_consecutive_offsets_and_fetch_reads_them_back(leader):
    first = produce_result(leader.answers[leader.produce("t", 0, make_batch([b"a", b"b", b"c"]))])
    second = produce_result(leader.answers[leader.produce("t", 0, make_batch([b"d"]))])
    assert (first.error_code, first.base_offset) == (ErrorCode.NONE, 0)
    assert (second.error_code, second.base_offset) == (ErrorCode.NONE, 3)
    data = fetch_result(leader.answers[leader.fetch("t", 0, 0)])
    assert data.error_code == ErrorCode.NONE and data.high_watermark == 4
    assert [r.value for r in read_records("t", 0, data.records, 0)] == [b"a", b"b", b"c", b"d"]


def test_fetch_inside_a_batch_returns_the_whole_batch(leader):
    leader.produce("t", 0, make_batch([b"a", b"b", b"c"]))
    data = fetch_result(leader.answers[leader.fetch("t", 0, 1)])
    records = read_records("t", 0, data.records, 0)
    assert [r.offset for r in records] == [0, 1, 2]  # the client skips what it did not ask for
    assert [r.offset for r in read_records("t", 0, data.records, 1)] == [1, 2]


# (case, how to make the request, expected error)
BAD_PRODUCES = [
    ("unknown topic", lambda d: d.produce("nope", 0, make_batch([b"x"])), ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
    ("unknown partition", lambda d: d.produce("t", 7, make_batch([b"x"])), ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
    ("bad acks", lambda d: d.produce("t", 0, make_batch([b"x"]), acks=2), ErrorCode.INVALID_REQUIRED_ACKS),
    ("bad crc", lambda d: d.produce("t", 0, _flip_last_byte(make_batch([b"x"]))), ErrorCode.CORRUPT_MESSAGE),
    ("garbage", lambda d: d.produce("t", 0, b"\x00" * 10), ErrorCode.CORRUPT_MESSAGE),
    ("empty", lambda d: d.produce("t", 0, b""), ErrorCode.CORRUPT_MESSAGE),
    ("records None", lambda d: d.produce("t", 0, None), ErrorCode.CORRUPT_MESSAGE),
    ("records a str", lambda d: d.produce("t", 0, "a record"), ErrorCode.CORRUPT_MESSAGE),
]


def _flip_last_byte(batch: bytes) -> bytes:
    return batch[:-1] + bytes([batch[-1] ^ 0xFF])


@pytest.mark.parametrize("case,make_request,expected", BAD_PRODUCES, ids=[c[0] for c in BAD_PRODUCES])
def test_bad_produce_gets_kafkas_error_and_leaves_the_log_unchanged(leader, case, make_request, expected):
    leader.produce("t", 0, make_batch([b"kept"]))
    answer = produce_result(leader.answers[make_request(leader)])
    assert answer.error_code == expected
    assert log_end_offset(leader) == 1
    # The broker still serves afterwards.
    assert produce_result(leader.answers[leader.produce("t", 0, make_batch([b"next"]))]).base_offset == 1


def test_batch_over_max_message_bytes_is_refused_whole():
    driver = CoreDriver()
    driver.become("small", 0, leader=0, config={"max.message.bytes": "200"})
    answer = produce_result(driver.answers[driver.produce("small", 0, make_batch([b"x" * 500]))])
    assert answer.error_code == ErrorCode.MESSAGE_TOO_LARGE
    assert log_end_offset(driver, "small") == 0


def test_produce_to_a_follower_is_not_leader():
    driver = CoreDriver(broker_id=0)
    driver.become("t", 0, leader=1, replicas=(1, 0), isr=(1, 0))
    answer = produce_result(driver.answers[driver.produce("t", 0, make_batch([b"x"]))])
    assert answer.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert log_end_offset(driver) == 0


@pytest.mark.parametrize("offset", [-1, 5, 1000])
def test_fetch_outside_the_log_is_offset_out_of_range(leader, offset):
    leader.produce("t", 0, make_batch([b"a", b"b"]))
    data = fetch_result(leader.answers[leader.fetch("t", 0, offset)])
    assert data.error_code == ErrorCode.OFFSET_OUT_OF_RANGE
    assert (data.log_start_offset, data.high_watermark) == (0, 2)


@pytest.mark.parametrize("epoch,expected", [(-1, ErrorCode.NONE), (2, ErrorCode.NONE),
                                            (1, ErrorCode.FENCED_LEADER_EPOCH),
                                            (3, ErrorCode.UNKNOWN_LEADER_EPOCH)])
def test_fetch_is_fenced_by_current_leader_epoch(epoch, expected):
    driver = CoreDriver()
    driver.become("t", 0, leader=0, leader_epoch=2)
    assert fetch_result(driver.answers[driver.fetch("t", 0, 0, current_leader_epoch=epoch)]).error_code == expected


def test_long_poll_fetch_waits_for_data_then_completes_on_produce(leader):
    fetch_id = leader.fetch("t", 0, 0, max_wait_ms=500, min_bytes=1)
    assert fetch_id not in leader.answers and leader.timers == [500]
    leader.now_ms = 100
    leader.produce("t", 0, make_batch([b"late"]))
    data = fetch_result(leader.answers[fetch_id])
    assert [r.value for r in read_records("t", 0, data.records, 0)] == [b"late"]


def test_long_poll_fetch_answers_empty_at_its_deadline(leader):
    fetch_id = leader.fetch("t", 0, 0, max_wait_ms=500, min_bytes=1)
    leader.advance(499)
    assert fetch_id not in leader.answers
    leader.advance(1)
    data = fetch_result(leader.answers[fetch_id])
    assert data.error_code == ErrorCode.NONE and len(data.records) == 0


def test_fetch_min_bytes_holds_until_enough_arrives(leader):
    one = make_batch([b"x" * 100])
    fetch_id = leader.fetch("t", 0, 0, max_wait_ms=1000, min_bytes=len(one) * 2)
    leader.produce("t", 0, one)
    assert fetch_id not in leader.answers
    leader.produce("t", 0, make_batch([b"y" * 100]))
    assert len(fetch_result(leader.answers[fetch_id]).records) >= 2 * len(one)


def test_full_fetch_purgatory_answers_at_once():
    driver = CoreDriver(config={"raykafka.purgatory.max.size": "1"})
    driver.become("t", 0, leader=0)
    parked = driver.fetch("t", 0, 0, max_wait_ms=500)
    immediate = driver.fetch("t", 0, 0, max_wait_ms=500)
    assert parked not in driver.answers and immediate in driver.answers


def test_fetch_respects_max_bytes_but_returns_at_least_one_batch(leader):
    big = make_batch([b"z" * 3000])
    leader.produce("t", 0, big)
    leader.produce("t", 0, make_batch([b"small"]))
    data = fetch_result(leader.answers[leader.fetch("t", 0, 0, max_bytes=100, partition_max_bytes=100)])
    assert len(data.records) == len(big)


def test_list_offsets_earliest_and_latest(leader):
    leader.produce("t", 0, make_batch([b"a", b"b", b"c"]))
    assert leader.list_offset("t", 0, EARLIEST_TIMESTAMP).offset == 0
    assert leader.list_offset("t", 0, LATEST_TIMESTAMP).offset == 3
    assert leader.list_offset("nope", 0, LATEST_TIMESTAMP).error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_metadata_reports_leaders_and_unknown_topics(leader):
    response = leader.ask("handle_metadata", MetadataRequest(topics=("t", "missing")))
    by_name = {t.name: t for t in response.topics}
    assert by_name["t"].partitions[0].leader_id == 0
    assert by_name["missing"].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_stale_controller_epoch_and_stale_leader_epoch_are_refused():
    driver = CoreDriver()
    driver.become("t", 0, leader=0, leader_epoch=3, controller_epoch=5)
    stale_controller = driver.become("t", 0, leader=0, leader_epoch=9, controller_epoch=4)
    assert stale_controller.error_code == ErrorCode.STALE_CONTROLLER_EPOCH
    same_epoch = driver.become("t", 0, leader=0, leader_epoch=3, controller_epoch=5)
    assert same_epoch.partition_errors[0].error_code == ErrorCode.STALE_CONTROLLER_EPOCH
    assert driver.manager.partitions[("t", 0)].leader_epoch == 3


def test_acks_all_waits_for_the_follower_then_answers():
    driver = CoreDriver(broker_id=0)
    driver.become("t", 0, leader=0, replicas=(0, 1), isr=(0, 1))
    produce_id = driver.produce("t", 0, make_batch([b"a", b"b"]), acks=-1)
    assert produce_id not in driver.answers
    driver.fetch("t", 0, 0, replica_id=1)   # the follower reads the records ...
    assert produce_id not in driver.answers
    driver.fetch("t", 0, 2, replica_id=1)   # ... and its next fetch offset acknowledges them
    answer = produce_result(driver.answers[produce_id])
    assert (answer.error_code, answer.base_offset) == (ErrorCode.NONE, 0)
    assert driver.manager.partitions[("t", 0)].high_watermark == 2


def test_acks_all_times_out_when_the_follower_never_fetches():
    driver = CoreDriver(broker_id=0)
    driver.become("t", 0, leader=0, replicas=(0, 1), isr=(0, 1))
    produce_id = driver.produce("t", 0, make_batch([b"a"]), acks=-1, timeout_ms=1000)
    driver.advance(1000)
    assert produce_result(driver.answers[produce_id]).error_code == ErrorCode.REQUEST_TIMED_OUT


def test_acks_all_below_min_insync_replicas_is_refused_and_nothing_appended():
    driver = CoreDriver(broker_id=0)
    driver.become("t", 0, leader=0, replicas=(0, 1), isr=(0,), config={"min.insync.replicas": "2"})
    answer = produce_result(driver.answers[driver.produce("t", 0, make_batch([b"a"]), acks=-1)])
    assert answer.error_code == ErrorCode.NOT_ENOUGH_REPLICAS
    assert log_end_offset(driver) == 0


def test_consumer_reads_only_up_to_the_high_watermark():
    driver = CoreDriver(broker_id=0)
    driver.become("t", 0, leader=0, replicas=(0, 1), isr=(0, 1))
    driver.produce("t", 0, make_batch([b"a"]), acks=1)
    assert len(fetch_result(driver.answers[driver.fetch("t", 0, 0)]).records) == 0
    driver.fetch("t", 0, 1, replica_id=1)
    assert len(fetch_result(driver.answers[driver.fetch("t", 0, 0)]).records) > 0


def test_losing_leadership_answers_parked_produce_not_leader():
    driver = CoreDriver(broker_id=0)
    driver.become("t", 0, leader=0, replicas=(0, 1), isr=(0, 1))
    produce_id = driver.produce("t", 0, make_batch([b"a"]), acks=-1)
    driver.become("t", 0, leader=1, replicas=(0, 1), isr=(1,), leader_epoch=1)
    assert produce_result(driver.answers[produce_id]).error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER


def test_restart_recovers_logs_and_high_watermarks_from_storage():
    storage = InMemoryStorage()
    first = CoreDriver(storage=storage)
    first.become("t", 0, leader=0)
    first.produce("t", 0, make_batch([b"a", b"b"]))
    first.shutdown()
    second = CoreDriver(storage=storage)
    assert second.manager.recovered_partitions == [("t", 0)]
    partition = second.manager.partitions[("t", 0)]
    assert (partition.log_end_offset, partition.high_watermark) == (2, 2)
    second.become("t", 0, leader=0, leader_epoch=1)
    data = fetch_result(second.answers[second.fetch("t", 0, 0)])
    assert [r.value for r in read_records("t", 0, data.records, 0)] == [b"a", b"b"]


def test_stop_replica_with_delete_removes_the_log():
    from actors.core.messages.stop_replica import StopReplicaRequest, StopReplicaTopic
    driver = CoreDriver()
    driver.become("t", 0, leader=0)
    driver.produce("t", 0, make_batch([b"a"]))
    driver.ask("handle_stop_replica", StopReplicaRequest(
        controller_id=-1, controller_epoch=1, broker_epoch=-1, delete_partitions=True,
        topics=(StopReplicaTopic(name="t", partition_indexes=(0,)),)))
    assert ("t", 0) not in driver.manager.partitions
    assert "t-0" not in driver.storage.list_dir("")


def test_a_restarted_broker_applies_the_topic_config_that_leader_and_isr_carries():
    storage = InMemoryStorage()
    first = CoreDriver(storage=storage)
    first.become("small", 0, leader=0, config={"max.message.bytes": "200"})
    first.shutdown()
    second = CoreDriver(storage=storage)  # recovered with the broker's defaults ...
    second.become("small", 0, leader=0, leader_epoch=1, config={"max.message.bytes": "200"})
    answer = produce_result(second.answers[second.produce("small", 0, make_batch([b"x" * 500]))])
    assert answer.error_code == ErrorCode.MESSAGE_TOO_LARGE  # ... until the topic's config arrives


# --------------------------------------------------------- bad input (the failover matrix's row)
def test_a_client_produce_to_an_internal_topic_is_invalid_topic_but_the_group_coordinator_may_append():
    driver = CoreDriver()
    driver.become(OFFSETS_TOPIC, 0, leader=0)
    request = ProduceRequest(acks=1, timeout_ms=1000, topic_data=(TopicProduceData(name=OFFSETS_TOPIC, partition_data=(
        PartitionProduceData(index=0, records=make_batch([b"value"], keys=[b"not a group key"])),)),))
    refused = produce_result(driver.ask("handle_produce", request))
    assert refused.error_code == ErrorCode.INVALID_TOPIC_EXCEPTION
    assert log_end_offset(driver, OFFSETS_TOPIC) == 0
    effects = driver.manager.handle_produce(99, request, driver.now_ms, internal_topics_allowed=True)
    (answer,) = [e.response for e in effects if isinstance(e, Respond)]
    assert produce_result(answer).error_code == ErrorCode.NONE and log_end_offset(driver, OFFSETS_TOPIC) == 1


def test_list_offsets_naming_a_partition_twice_answers_both_entries_invalid_request(leader):
    asked = ListOffsetsPartition(partition_index=0, timestamp=LATEST_TIMESTAMP)
    response = leader.ask("handle_list_offsets", ListOffsetsRequest(topics=(
        ListOffsetsTopic(name="t", partitions=(asked, asked)),)))
    assert [p.error_code for p in response.topics[0].partitions] == [ErrorCode.INVALID_REQUEST] * 2


def test_a_fetch_from_a_broker_that_is_no_replica_gets_no_records_and_acknowledges_nothing():
    driver = CoreDriver(broker_id=0)
    driver.become("t", 0, leader=0, replicas=(0, 1), isr=(0, 1))
    driver.produce("t", 0, make_batch([b"uncommitted"]))  # the HW waits for replica 1
    data = fetch_result(driver.answers[driver.fetch("t", 0, 0, replica_id=7)])
    assert (data.error_code, len(data.records), data.high_watermark) == (ErrorCode.NONE, 0, 0)
    driver.fetch("t", 0, 1, replica_id=7)
    assert driver.manager.partitions[("t", 0)].high_watermark == 0
    follower = fetch_result(driver.answers[driver.fetch("t", 0, 0, replica_id=1)])
    assert len(follower.records) > 0, "a replica still gets what it must replicate"


def test_a_stale_leader_and_isr_applies_neither_its_partition_state_nor_its_topic_config():
    driver = CoreDriver()
    driver.become("t", 0, leader=0, leader_epoch=3)
    stale = driver.become("t", 0, leader=0, leader_epoch=3, config={"max.message.bytes": "100",
                                                                     "min.insync.replicas": "4"})
    assert stale.partition_errors[0].error_code == ErrorCode.STALE_CONTROLLER_EPOCH
    partition = driver.manager.partitions[("t", 0)]
    assert (partition.leader_epoch, partition.min_insync_replicas) == (3, 1)
    answer = produce_result(driver.answers[driver.produce("t", 0, make_batch([b"x" * 300]), acks=-1)])
    assert answer.error_code == ErrorCode.NONE, "the stale config (max.message.bytes=100) was applied"
    # A state with no epoch at all for a partition this broker never hosted opens no log.
    refused = driver.become("new", 0, leader=0, leader_epoch=-1)
    assert refused.partition_errors[0].error_code == ErrorCode.STALE_CONTROLLER_EPOCH
    assert ("new", 0) not in driver.manager.partitions and driver.storage.list_dir("") == ["t-0"]


def _timed_batch(first_timestamp_ms: int, count: int, compression_type: int = 0) -> bytes:
    from kafka.record.default_records import DefaultRecordBatchBuilder
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=compression_type, is_transactional=False,
                                        producer_id=-1, producer_epoch=-1, base_sequence=-1, batch_size=1 << 30)
    for index in range(count):
        assert builder.append(index, timestamp=first_timestamp_ms + 10 * index, key=None, value=b"x" * 200,
                              headers=[]) is not None
    return bytes(builder.build())


def test_list_offsets_by_timestamp_answers_the_first_record_at_or_after_it(leader):
    leader.produce("t", 0, _timed_batch(1000, 3))  # offsets 0..2 at 1000, 1010, 1020
    leader.produce("t", 0, _timed_batch(2000, 3))  # offsets 3..5 at 2000, 2010, 2020
    cases = {0: (0, 1000), 1000: (0, 1000), 1001: (1, 1010), 1020: (2, 1020), 1500: (3, 2000), 2015: (5, 2020),
             2021: (-1, -1)}
    for timestamp, expected in cases.items():
        answer = leader.list_offset("t", 0, timestamp)
        assert (answer.error_code, answer.offset, answer.timestamp) == (ErrorCode.NONE, *expected), timestamp


def test_list_offsets_by_timestamp_in_a_compressed_batch_answers_the_exact_record(leader):
    leader.produce("t", 0, _timed_batch(1000, 3))
    batch = _timed_batch(2000, 4, compression_type=1)  # gzip, offsets 3..6
    assert batch[21 + 1] & 0x07 == 1, "the batch is compressed"
    leader.produce("t", 0, batch)
    answer = leader.list_offset("t", 0, 2015)
    assert (answer.offset, answer.timestamp) == (5, 2020), "the record itself, not its batch start"


def test_list_offsets_by_timestamp_over_records_that_do_not_parse_answers_the_batch_start(leader):
    import struct

    import crc32c
    batch = bytearray(_timed_batch(1000, 3))
    batch[61:] = b"\xff" * (len(batch) - 61)  # records that are no varints at all, under a valid CRC
    struct.pack_into(">I", batch, 17, crc32c.crc32c(bytes(batch[21:])))
    assert produce_result(leader.answers[leader.produce("t", 0, bytes(batch))]).error_code == ErrorCode.NONE
    answer = leader.list_offset("t", 0, 1015)
    assert (answer.error_code, answer.offset) == (ErrorCode.NONE, 0)
