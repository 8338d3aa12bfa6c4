"""DescribeLogDirs answers as Kafka 2.4's broker does: its one log directory with, per hosted
partition asked for, the log's size in bytes, offset lag max(HW - LEO, 0) and is_future false,
KAFKA_STORAGE_ERROR once the directory failed, and the request and answer on Kafka's wire at
v1-4 (v4 with the volume's total and usable bytes); driven through the pure replica manager (in-memory storage) and the codec."""
from __future__ import annotations

import pytest
from kio.index import load_request_schema

from actors.core.broker.log_dirs import describe_log_dirs
from actors.core.effects import Respond
from actors.core.errors import ErrorCode
from actors.core.messages.describe_log_dirs import DescribableLogDirTopic, DescribeLogDirsRequest
from actors.wire.versions import SUPPORTED_VERSIONS
from tests.support.core_driver import CoreDriver, make_batch, produce_result
from tests.unit.test_wire_admin_apis import _answer, _through_the_wire

LOG_DIR = "/data/raykafka/broker-0"


def _describe(driver: CoreDriver, request: DescribeLogDirsRequest):
    (answer,) = describe_log_dirs(driver.manager, LOG_DIR, 1, request)
    assert isinstance(answer, Respond)
    return answer.response


def _sizes(response) -> dict:
    (result,) = response.results
    return {(t.name, p.partition_index): (p.partition_size, p.offset_lag, p.is_future_key)
            for t in result.topics for p in t.partitions}


@pytest.fixture
def driver() -> CoreDriver:
    driver = CoreDriver()
    driver.become("t", 0, leader=0)
    driver.become("t", 1, leader=0)
    driver.become("u", 0, leader=0)
    batch = make_batch([b"a", b"b", b"c"])
    assert produce_result(driver.answers[driver.produce("t", 0, batch)]).error_code == ErrorCode.NONE
    return driver


def test_every_hosted_partition_with_its_log_size(driver):
    response = _describe(driver, DescribeLogDirsRequest())
    (result,) = response.results
    assert (result.log_dir, result.error_code) == (LOG_DIR, ErrorCode.NONE)
    sizes = _sizes(response)
    assert set(sizes) == {("t", 0), ("t", 1), ("u", 0)}
    assert sizes[("t", 0)] == (driver.manager.partitions[("t", 0)].log.size_in_bytes, 0, False)
    assert sizes[("t", 0)][0] > 0 and sizes[("t", 1)] == (0, 0, False)


def test_only_the_partitions_asked_for_that_are_hosted_here(driver):
    request = DescribeLogDirsRequest(topics=(DescribableLogDirTopic(topic="t", partitions=(1, 7)),
                                             DescribableLogDirTopic(topic="nope", partitions=(0,))))
    assert set(_sizes(_describe(driver, request))) == {("t", 1)}


def test_a_failed_directory_is_kafka_storage_error(driver):
    driver.manager.log_dir_failure_channel.mark_offline("disk gone")
    (result,) = _describe(driver, DescribeLogDirsRequest()).results
    assert (result.log_dir, result.error_code, result.topics) == (LOG_DIR, ErrorCode.KAFKA_STORAGE_ERROR, ())


@pytest.mark.parametrize("version", [1, 2, 3, 4])
def test_describe_log_dirs_is_served_on_the_wire(driver, version):
    # Kafka 4 dropped v0; v2 is the first flexible version, v3 adds the top-level error code, v4
    # the volume's total and usable bytes.
    assert SUPPORTED_VERSIONS[35] == (1, 4)
    driver.manager.storage.volume_bytes = lambda: (1_000_000, 400_000)
    schema = load_request_schema(35, version)
    module = __import__(schema.__module__, fromlist=["*"])
    request = _through_the_wire(35, version, schema(topics=(module.DescribableLogDirTopic(topic="t", partitions=(0,)),)))
    assert request == DescribeLogDirsRequest(topics=(DescribableLogDirTopic(topic="t", partitions=(0,)),))
    assert _through_the_wire(35, version, schema(topics=None)) == DescribeLogDirsRequest(topics=None)
    answer = _answer(35, version, _describe(driver, request))
    (result,) = answer.results
    assert (result.log_dir, result.error_code) == (LOG_DIR, 0)
    assert [(t.name, p.partition_index, p.partition_size > 0, p.offset_lag, p.is_future_key)
            for t in result.topics for p in t.partitions] == [("t", 0, True, 0, False)]
    if version >= 3:
        assert answer.error_code == 0
    if version >= 4:
        assert (result.total_bytes, result.usable_bytes) == (1_000_000, 400_000)


def test_a_failed_directory_has_no_volume_sizes_and_a_file_storage_measures_its_volume(driver, tmp_path):
    import shutil
    from actors.file_storage import FileStorage
    driver.manager.log_dir_failure_channel.mark_offline("disk gone")
    (result,) = _answer(35, 4, _describe(driver, DescribeLogDirsRequest())).results
    assert (result.error_code, result.total_bytes, result.usable_bytes) == (ErrorCode.KAFKA_STORAGE_ERROR, -1, -1)
    total, usable = FileStorage(str(tmp_path)).volume_bytes()
    assert total == shutil.disk_usage(tmp_path).total and 0 <= usable <= total
