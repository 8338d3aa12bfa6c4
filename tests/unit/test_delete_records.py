"""Proves DeleteRecords on the pure replica manager answers as Kafka 2.4's leader does: it moves the
log start offset (the high watermark for -1, never above it), refuses unknown, led-elsewhere,
internal and compacted partitions with Kafka's codes, and waits in the purgatory until every
in-sync follower's fetch reports the new start, or times out; driven step by step with a fake
clock and in-memory storage."""
from __future__ import annotations

import datetime

import pytest
from kio.index import load_request_schema

from actors.core.errors import ErrorCode
from actors.core.messages.delete_records import (
    DeleteRecordsPartition, DeleteRecordsPartitionResult, DeleteRecordsRequest, DeleteRecordsResponse,
    DeleteRecordsTopic, DeleteRecordsTopicResult,
)
from actors.wire.apis import CODECS
from actors.wire.frames import decode_request, encode_response
from actors.wire.versions import SUPPORTED_VERSIONS
from orchestration.commands.records import parse_offset_json
from actors.core.topics import OFFSETS_TOPIC
from tests.support.core_driver import CoreDriver, fetch_result, make_batch
from tests.unit.test_wire_frames import CONTEXT, read_response, request_frame


def delete_records(driver: CoreDriver, offsets: dict, timeout_ms: int = 30_000) -> int:
    topics: dict[str, list] = {}
    for (topic, partition), offset in offsets.items():
        topics.setdefault(topic, []).append(DeleteRecordsPartition(partition_index=partition, offset=offset))
    return driver.call("handle_delete_records", DeleteRecordsRequest(timeout_ms=timeout_ms, topics=tuple(
        DeleteRecordsTopic(name=name, partitions=tuple(parts)) for name, parts in topics.items())))


def answers(driver: CoreDriver, request_id: int) -> dict:
    response = driver.answers[request_id]
    return {(t.name, p.partition_index): (p.error_code, p.low_watermark) for t in response.topics for p in t.partitions}


def leader_with(records: int, *, replicas=(0,), config=None) -> CoreDriver:
    driver = CoreDriver(broker_id=0)
    driver.become("t", 0, leader=0, replicas=replicas, isr=replicas, config=config)
    for index in range(records):
        driver.produce("t", 0, make_batch([b"%d" % index]))
    for follower in replicas[1:]:
        driver.fetch("t", 0, records, replica_id=follower, log_start_offset=0)  # the HW reaches the end
    return driver


def test_a_leader_alone_moves_its_log_start_and_answers_at_once():
    driver = leader_with(5)
    assert answers(driver, delete_records(driver, {("t", 0): 3})) == {("t", 0): (ErrorCode.NONE, 3)}
    assert driver.list_offset("t", 0, -2).offset == 3
    assert fetch_result(driver.answers[driver.fetch("t", 0, 2)]).error_code == ErrorCode.OFFSET_OUT_OF_RANGE
    assert fetch_result(driver.answers[driver.fetch("t", 0, 3)]).log_start_offset == 3


def test_minus_one_means_the_high_watermark():
    driver = leader_with(5, replicas=(0, 1))
    driver.produce("t", 0, make_batch([b"uncommitted"]))  # offset 5, above the HW
    request_id = delete_records(driver, {("t", 0): -1})
    driver.fetch("t", 0, 5, replica_id=1, log_start_offset=5)
    assert answers(driver, request_id) == {("t", 0): (ErrorCode.NONE, 5)}


# (case, offsets asked, expected answer per partition)
REFUSALS = [
    ("above the high watermark", {("t", 0): 6}, (ErrorCode.OFFSET_OUT_OF_RANGE, -1)),
    ("negative", {("t", 0): -2}, (ErrorCode.OFFSET_OUT_OF_RANGE, -1)),
    ("unknown topic", {("nope", 0): 1}, (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1)),
    ("internal topic", {(OFFSETS_TOPIC, 0): 1}, (ErrorCode.INVALID_TOPIC_EXCEPTION, -1)),
]


@pytest.mark.parametrize("case,offsets,expected", REFUSALS, ids=[r[0] for r in REFUSALS])
def test_refusals_get_kafkas_codes_and_leave_the_log_alone(case, offsets, expected):
    driver = leader_with(5)
    assert list(answers(driver, delete_records(driver, offsets)).values()) == [expected]
    assert driver.manager.partitions[("t", 0)].log_start_offset == 0


def test_a_partition_led_elsewhere_is_not_leader_and_a_compacted_one_a_policy_violation():
    driver = CoreDriver(broker_id=0)
    driver.become("f", 0, leader=1, replicas=(1, 0), isr=(1, 0))
    driver.become("c", 0, leader=0, config={"cleanup.policy": "compact"})
    assert answers(driver, delete_records(driver, {("f", 0): 0, ("c", 0): 0})) == {
        ("f", 0): (ErrorCode.NOT_LEADER_OR_FOLLOWER, -1), ("c", 0): (ErrorCode.POLICY_VIOLATION, -1)}


def test_the_answer_waits_until_every_in_sync_follower_reports_the_new_start():
    driver = leader_with(5, replicas=(0, 1, 2))
    request_id = delete_records(driver, {("t", 0): 4})
    assert request_id not in driver.answers and driver.manager.partitions[("t", 0)].log_start_offset == 4
    driver.fetch("t", 0, 5, replica_id=1, log_start_offset=4)
    assert request_id not in driver.answers, "follower 2 has not moved its start yet"
    data = fetch_result(driver.answers[driver.fetch("t", 0, 5, replica_id=2, log_start_offset=0)])
    assert data.log_start_offset == 4 and request_id not in driver.answers  # the leader's start travels
    driver.fetch("t", 0, 5, replica_id=2, log_start_offset=4)
    assert answers(driver, request_id) == {("t", 0): (ErrorCode.NONE, 4)}


def test_an_unanswered_deletion_times_out_per_the_request():
    driver = leader_with(5, replicas=(0, 1))
    request_id = delete_records(driver, {("t", 0): 2}, timeout_ms=1_000)
    driver.advance(999)
    assert request_id not in driver.answers
    driver.advance(1)
    assert answers(driver, request_id) == {("t", 0): (ErrorCode.REQUEST_TIMED_OUT, -1)}
    assert driver.manager.partitions[("t", 0)].log_start_offset == 2, "the leader's own start stays moved"


def test_a_leader_that_loses_leadership_while_waiting_answers_not_leader():
    driver = leader_with(5, replicas=(0, 1))
    request_id = delete_records(driver, {("t", 0): 2})
    driver.become("t", 0, leader=1, replicas=(0, 1), isr=(0, 1), leader_epoch=1)
    assert answers(driver, request_id) == {("t", 0): (ErrorCode.NOT_LEADER_OR_FOLLOWER, -1)}


@pytest.mark.parametrize("version", [0, 1, 2])
def test_delete_records_is_served_on_the_wire_at_kafka_24s_versions(version):
    assert SUPPORTED_VERSIONS[21] == (0, 2)  # Kafka 2.4's 0-1, and v2, the same fields flexible
    schema = load_request_schema(21, version)
    module = __import__(schema.__module__, fromlist=["*"])
    body = schema(timeout=datetime.timedelta(milliseconds=1500), topics=(module.DeleteRecordsTopic(
        name="t", partitions=(module.DeleteRecordsPartition(partition_index=2, offset=-1),)),))
    request = CODECS[21].to_core(decode_request(request_frame(21, version, body)).body, version, CONTEXT)
    assert request == DeleteRecordsRequest(timeout_ms=1500, topics=(DeleteRecordsTopic(
        name="t", partitions=(DeleteRecordsPartition(partition_index=2, offset=-1),)),))
    response = DeleteRecordsResponse(topics=(DeleteRecordsTopicResult(name="t", partitions=(
        DeleteRecordsPartitionResult(partition_index=2, low_watermark=9, error_code=ErrorCode.OFFSET_OUT_OF_RANGE),)),))
    _, answer = read_response(21, version, encode_response(1, CODECS[21].to_kio(response, version, None)))
    (partition,) = answer.topics[0].partitions
    assert (partition.partition_index, partition.low_watermark, partition.error_code) == (2, 9, 1)


def test_the_cli_reads_kafkas_offset_json_format():
    text = '{"partitions": [{"topic": "t", "partition": 0, "offset": 5}, {"topic": "t", "partition": 1, "offset": -1}], "version": 1}'
    assert parse_offset_json(text) == {("t", 0): 5, ("t", 1): -1}
    assert parse_offset_json('{"partitions": []}') == {}
    for bad in ('{"partitions": [{"topic": "t", "partition": 0, "offset": 1}, {"topic": "t", "partition": 0, "offset": 2}]}',
                '{"partitions": [], "version": 2}', '{"partitions": [{"topic": "t", "offset": 1}]}',
                '{"partitions": [{"topic": "t", "partition": "0", "offset": 1}]}', "not json", "[]"):
        with pytest.raises(ValueError):
            parse_offset_json(bad)
