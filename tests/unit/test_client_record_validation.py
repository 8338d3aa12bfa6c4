"""Proves the leader refuses what Kafka's LogValidator and ProduceRequest.validateRecords refuse
(control batches from a client, a negative base sequence with a producer id, more than one batch
or a non-v2 batch per partition on Produce v3+, zstd below Produce v7, keyless records on a
compacted topic) with Kafka's error code, leaving the log byte for byte as it was while the
request's other partitions are appended, and that a Fetch below v10 gets UNSUPPORTED_COMPRESSION_TYPE
for a partition serving zstd: table-driven through the pure broker core, no Ray."""
from __future__ import annotations

import pytest

from actors.core.errors import ErrorCode
from actors.core.log.log_validator import check_produce_records
from actors.core.log.record_batch import holds_zstd_batch
from actors.core.messages.produce import PartitionProduceData, ProduceRequest, TopicProduceData
from actors.core.replica.fetch import refuse_zstd
from actors.codecs.record_batches import read_records
from tests.support.batches import GZIP, LZ4, SNAPPY, ZSTD, client_batch as batch
from tests.support.core_driver import CoreDriver, fetch_result


def leader(config=None) -> CoreDriver:
    driver = CoreDriver(broker_id=0)
    for partition in (0, 1):
        driver.become("t", partition, leader=0, config=config)
    return driver


def produce(driver, records_by_partition: dict, version):
    request = ProduceRequest(acks=1, timeout_ms=1000, request_api_version=version, topic_data=(TopicProduceData(
        name="t", partition_data=tuple(PartitionProduceData(index=p, records=r)
                                       for p, r in records_by_partition.items())),))
    response = driver.answers[driver.call("handle_produce", request)]
    return {p.index: p for p in response.responses[0].partition_responses}


def log_bytes(driver, partition=0) -> tuple[int, bytes]:
    log = driver.manager.partitions[("t", partition)].log
    data = fetch_result(driver.answers[driver.fetch("t", partition, 0)]).records if log.log_end_offset else b""
    return log.log_end_offset, bytes(data)


COMPACT = {"cleanup.policy": "compact"}

# (case, topic config, Produce version (None: raykafka's own client over Ray), records, error)
REFUSED = [
    ("a control batch from a client", None, 8, batch(control=True), ErrorCode.INVALID_RECORD),
    ("a control batch over Ray", None, None, batch(control=True), ErrorCode.INVALID_RECORD),
    ("a producer id with base sequence -1", None, 8, batch(producer_id=7, base_sequence=-1), ErrorCode.INVALID_RECORD),
    ("a producer id with base sequence -5", None, None, batch(producer_id=7, base_sequence=-5),
     ErrorCode.INVALID_RECORD),
    ("two batches on Produce v3", None, 3, batch() + batch(), ErrorCode.INVALID_RECORD),
    ("two batches on Produce v8", None, 8, batch() + batch(), ErrorCode.INVALID_RECORD),
    ("a magic 1 batch on Produce v3", None, 3, batch(magic=1), ErrorCode.INVALID_RECORD),
    ("no batch at all on Produce v8", None, 8, b"", ErrorCode.INVALID_RECORD),
    ("zstd on Produce v3", None, 3, batch(codec=ZSTD), ErrorCode.UNSUPPORTED_COMPRESSION_TYPE),
    ("zstd on Produce v6", None, 6, batch(codec=ZSTD), ErrorCode.UNSUPPORTED_COMPRESSION_TYPE),
    ("a keyless record on a compacted topic", COMPACT, 8, batch([b"a"], [None]), ErrorCode.INVALID_RECORD),
    ("one keyless record among keyed ones", COMPACT, 8, batch([b"a", b"b", b"c"], [b"1", None, b"3"]),
     ErrorCode.INVALID_RECORD),
    ("a keyless record over Ray", COMPACT, None, batch([b"a"], [None]), ErrorCode.INVALID_RECORD),
    ("a keyless record under compact,delete", {"cleanup.policy": "compact,delete"}, 8, batch([b"a"], [None]),
     ErrorCode.INVALID_RECORD),
    *[(f"a keyless record in a {name} batch on a compacted topic", COMPACT, 8,
       batch([b"a" * 100, b"b"], [b"1", None], codec=codec), ErrorCode.INVALID_RECORD)
      for name, codec in (("gzip", GZIP), ("snappy", SNAPPY), ("lz4", LZ4), ("zstd", ZSTD))],
]

# (case, topic config, Produce version, records, records appended)
ACCEPTED = [
    ("one plain batch on Produce v3", None, 3, batch(), 1),
    ("zstd on Produce v7", None, 7, batch(codec=ZSTD), 1),
    ("two batches over Ray", None, None, batch() + batch(), 2),
    ("keyless records on a delete topic", None, 8, batch([b"a", b"b"], [None, None]), 2),
    ("keyed records on a compacted topic", COMPACT, 8, batch([b"a", b"b"], [b"1", b"2"]), 2),
    ("an empty key on a compacted topic", COMPACT, 8, batch([b"a"], [b""]), 1),
    ("a tombstone (a key, no value) on a compacted topic", COMPACT, 8, batch([None], [b"1"]), 1),
    *[(f"keyed records in a {name} batch on a compacted topic", COMPACT, 8,
       batch([b"a" * 100, b"b"], [b"1", b"2"], codec=codec), 2)
      for name, codec in (("gzip", GZIP), ("snappy", SNAPPY), ("lz4", LZ4), ("zstd", ZSTD))],
]


@pytest.mark.parametrize("case, config, version, records, error", REFUSED, ids=[c[0] for c in REFUSED])
def test_refused_records_get_kafkas_error_and_leave_the_log_unchanged(case, config, version, records, error):
    driver = leader(config)
    produce(driver, {0: batch([b"before"], [b"k"])}, version)
    before = log_bytes(driver)
    answers = produce(driver, {0: records, 1: batch([b"other"], [b"k"])}, version)
    assert answers[0].error_code == error, answers[0].error_message
    assert log_bytes(driver) == before, "a refused append leaves the log byte for byte as it was"
    assert (answers[1].error_code, answers[1].base_offset) == (ErrorCode.NONE, 0), \
        "the request's other partition is judged on its own, as Kafka does"
    assert driver.manager.partitions[("t", 0)].log_end_offset == 1
    produce(driver, {0: batch([b"after"], [b"k"])}, version)
    assert driver.manager.partitions[("t", 0)].log_end_offset == 2, "the partition still takes good batches"


@pytest.mark.parametrize("case, config, version, records, appended", ACCEPTED, ids=[c[0] for c in ACCEPTED])
def test_valid_records_are_appended(case, config, version, records, appended):
    driver = leader(config)
    answers = produce(driver, {0: records}, version)
    assert answers[0].error_code == ErrorCode.NONE, answers[0].error_message
    assert driver.manager.partitions[("t", 0)].log_end_offset == appended


# (case, records) that the version check leaves to the log, which answers CORRUPT_MESSAGE
LEFT_TO_THE_LOG = [
    ("a batch of 17 bytes", (5).to_bytes(12, "big") + b"\x00\x00\x00\x00\x02"),
    ("a batch too short to name its magic", (2).to_bytes(12, "big") + b"\x00\x00"),
    ("magic 3", batch(magic=3)),
    ("a v2 batch shorter than its header", batch()[:12 + 40].replace(batch()[8:12], (40).to_bytes(4, "big"), 1)),
    ("a torn second batch", batch() + batch()[:30]),
    ("trailing bytes", batch() + b"\x00" * 5),
]


@pytest.mark.parametrize("case, records", LEFT_TO_THE_LOG, ids=[c[0] for c in LEFT_TO_THE_LOG])
def test_malformed_record_sets_get_corrupt_message_on_every_version(case, records):
    for version in (3, 6, 8):
        driver = leader()
        answers = produce(driver, {0: records}, version)
        assert answers[0].error_code == ErrorCode.CORRUPT_MESSAGE, (version, answers[0].error_message)
        assert driver.manager.partitions[("t", 0)].log_end_offset == 0


def test_the_version_checks_read_only_the_first_header():
    # A second batch is found by its length field alone: what follows need not even be a batch
    # the log would accept, the version check refuses the request first.
    assert check_produce_records(8, batch()) is None
    assert check_produce_records(2, batch() + batch()) is None, "before v3 Kafka checks nothing here"
    torn = batch() + batch()[:30]
    assert check_produce_records(8, torn) is None, "a torn tail is the log's CORRUPT_MESSAGE, not a second batch"


def test_holds_zstd_batch_reads_the_codec_bits_of_every_batch():
    assert not holds_zstd_batch(b"")
    assert not holds_zstd_batch(batch() + batch(codec=GZIP) + batch(codec=LZ4))
    assert holds_zstd_batch(batch(codec=ZSTD))
    assert holds_zstd_batch(batch() + batch(codec=GZIP) + batch(codec=ZSTD)), "a later batch counts too"


def test_a_fetch_below_v10_gets_unsupported_compression_type_for_a_partition_serving_zstd():
    driver = leader()
    produce(driver, {0: batch([b"plain"])}, 8)
    produce(driver, {0: batch([b"zstd"], codec=ZSTD), 1: batch([b"gzip"], codec=GZIP)}, 8)
    for offset in (0, 1):  # the zstd batch alone, or after a plain one in the same read
        response = driver.answers[driver.fetch("t", 0, offset)]
        old = fetch_result(refuse_zstd(response))
        assert (old.error_code, len(old.records), old.high_watermark) == (
            ErrorCode.UNSUPPORTED_COMPRESSION_TYPE, 0, -1), "no zstd reaches a client below Fetch v10"
        assert fetch_result(response).error_code == ErrorCode.NONE, "v10 and later are served as read"
    other = driver.answers[driver.fetch("t", 1, 0)]
    assert refuse_zstd(other) is other, "a partition with no zstd batch is served as read"
    assert [r.value for r in read_records("t", 1, fetch_result(other).records, 0)] == [b"gzip"]
