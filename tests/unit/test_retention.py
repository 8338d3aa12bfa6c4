"""Proves Kafka's log retention on the pure core: retention.ms, retention.bytes and the log start
offset delete whole segments from the oldest, never the active one nor past the high watermark;
segment.ms rolls by timestamp; the broker's log.retention.* defaults resolve as Kafka's; the
start offset is checkpointed and recovered, raised on a follower from the leader's, and a fetch
below it is OFFSET_OUT_OF_RANGE. Each case drives a Log or a ReplicaManager with a fake clock and
in-memory storage."""
from __future__ import annotations

import pytest

from actors.core.config import KafkaConfig
from actors.core.errors import ErrorCode
from actors.core.fetcher.follower_messages import FollowerAppendPartition, FollowerAppendRequest
from actors.core.log.log import Log
from actors.core.log.log_config import LogConfig, log_config_for
from actors.core.log.storage import InMemoryStorage
from actors.core.messages.list_offsets import EARLIEST_TIMESTAMP
from tests.support.core_driver import CoreDriver, fetch_result, make_batch

DIRECTORY = "t-0"
NOW_MS = 1_700_000_000_000
BATCH_BYTES = len(make_batch([b"v"], timestamp_ms=NOW_MS))


def filled_log(storage, timestamps_ms, **config) -> Log:
    """A log with one one-record batch per timestamp, two batches a segment."""
    log = Log.open(storage, DIRECTORY, LogConfig(segment_bytes=2 * BATCH_BYTES, **config))
    for timestamp_ms in timestamps_ms:
        log.append_as_leader(make_batch([b"v"], timestamp_ms=timestamp_ms), leader_epoch=0)
    return log


def bases(log: Log) -> list[int]:
    return [segment.base_offset for segment in log.segments]


def test_retention_ms_deletes_the_segments_older_than_it_and_moves_the_log_start():
    storage = InMemoryStorage()
    # Segments [0,1] [2,3] [4,5] [6]; the first two are 10 s old, the rest new.
    log = filled_log(storage, [NOW_MS - 10_000] * 4 + [NOW_MS] * 3, retention_ms=5_000)
    assert bases(log) == [0, 2, 4, 6]
    reasons = log.delete_old_segments(NOW_MS, high_watermark=log.log_end_offset)
    assert bases(log) == [4, 6] and log.log_start_offset == 4
    assert "retention time 5000ms breach" in reasons[0]
    assert not storage.exists(f"{DIRECTORY}/{0:020d}.log") and not storage.exists(f"{DIRECTORY}/{2:020d}.log")
    assert log.read(4, 1 << 20).first_offset == 4


def test_retention_never_deletes_the_active_segment_nor_past_the_high_watermark():
    storage = InMemoryStorage()
    log = filled_log(storage, [NOW_MS - 10_000] * 7, retention_ms=5_000)
    log.delete_old_segments(NOW_MS, high_watermark=3)  # only [0,1] lies wholly below offset 3
    assert bases(log) == [2, 4, 6] and log.log_start_offset == 2
    log.delete_old_segments(NOW_MS, high_watermark=log.log_end_offset)
    assert bases(log) == [6] and log.log_start_offset == 6, "the active segment stays, however old"
    assert log.log_end_offset == 7


def test_negative_retention_ms_keeps_everything():
    log = filled_log(InMemoryStorage(), [0] * 7, retention_ms=-1)
    assert log.delete_old_segments(NOW_MS, high_watermark=7) == [] and bases(log) == [0, 2, 4, 6]


def test_retention_bytes_deletes_the_oldest_segments_while_the_rest_is_still_over_it():
    log = filled_log(InMemoryStorage(), [NOW_MS] * 7, retention_bytes=3 * BATCH_BYTES, retention_ms=-1)
    assert log.size_in_bytes == 7 * BATCH_BYTES
    reasons = log.delete_old_segments(NOW_MS, high_watermark=7)
    # 7 batches, keep >= 3: deleting [0,1] and [2,3] leaves 3; deleting [4,5] too would leave 1.
    assert bases(log) == [4, 6] and log.size_in_bytes == 3 * BATCH_BYTES
    assert "retention size in bytes" in reasons[0]


def test_compact_policy_ignores_retention_but_not_the_log_start_offset():
    log = filled_log(InMemoryStorage(), [0] * 7)
    log.reconfigure(LogConfig(segment_bytes=2 * BATCH_BYTES, retention_ms=1, retention_bytes=0,
                              cleanup_policy="compact"))
    assert log.delete_old_segments(NOW_MS, high_watermark=7) == [] and bases(log) == [0, 2, 4, 6]


def test_segment_files_go_by_a_work_off_the_callers_thread_and_leftovers_go_on_open():
    storage = InMemoryStorage()
    queue: list = []
    log = Log.open(storage, DIRECTORY, LogConfig(segment_bytes=2 * BATCH_BYTES, retention_ms=5_000), work_queue=queue)
    for _ in range(5):
        log.append_as_leader(make_batch([b"v"], timestamp_ms=0), leader_epoch=0)
    queue.clear()
    log.delete_old_segments(NOW_MS, high_watermark=5)
    renamed = f"{DIRECTORY}/{0:020d}.log.deleted"
    assert storage.exists(renamed), "renamed at once, deleted later"
    assert any(renamed in work.delete_paths for work in queue)
    reopened = Log.open(storage, DIRECTORY, LogConfig(), log_start_offset=4)  # as after a crash
    assert not storage.exists(renamed) and bases(reopened) == [4]


def test_segment_ms_rolls_when_an_append_is_that_much_later_than_the_first_batch():
    log = Log.open(InMemoryStorage(), DIRECTORY, LogConfig(segment_ms=1_000))
    for timestamp_ms in (NOW_MS, NOW_MS + 500, NOW_MS + 1_000, NOW_MS + 1_001, NOW_MS + 1_500):
        log.append_as_leader(make_batch([b"v"], timestamp_ms=timestamp_ms), leader_epoch=0)
    assert bases(log) == [0, 3]


@pytest.mark.parametrize("broker,expected", [
    ({}, (168 * 3_600_000, -1, 168 * 3_600_000)),
    ({"log.retention.hours": "1", "log.roll.hours": "2"}, (3_600_000, -1, 7_200_000)),
    ({"log.retention.minutes": "3", "log.retention.hours": "1"}, (180_000, -1, 168 * 3_600_000)),
    ({"log.retention.ms": "42", "log.retention.minutes": "3", "log.roll.ms": "7", "log.roll.hours": "1"}, (42, -1, 7)),
    ({"log.retention.hours": "-1", "log.retention.bytes": "1000"}, (-1, 1000, 168 * 3_600_000)),
])
def test_broker_defaults_resolve_as_kafkas(broker, expected):
    config = log_config_for(KafkaConfig(broker).for_topic({}))
    assert (config.retention_ms, config.retention_bytes, config.segment_ms) == expected
    topic = log_config_for(KafkaConfig(broker).for_topic({"retention.ms": "9", "segment.ms": "8"}))
    assert (topic.retention_ms, topic.segment_ms) == (9, 8)


TOPIC = {"segment.bytes": str(2 * BATCH_BYTES), "retention.ms": "5000"}


def old_leader(storage=None, **config) -> CoreDriver:
    driver = CoreDriver(storage=storage, now_ms=NOW_MS, config={"log.retention.check.interval.ms": "1000", **config})
    driver.become("t", 0, leader=0, config=TOPIC)
    for _ in range(7):
        driver.produce("t", 0, make_batch([b"v"], timestamp_ms=NOW_MS - 10_000))
    return driver


def test_the_broker_tick_applies_retention_every_check_interval():
    driver = old_leader()
    partition = driver.manager.partitions[("t", 0)]
    driver.advance(999)
    assert partition.log_start_offset == 0, "not before log.retention.check.interval.ms"
    driver.advance(1)
    assert partition.log_start_offset == 6
    assert driver.list_offset("t", 0, EARLIEST_TIMESTAMP).offset == 6
    assert fetch_result(driver.answers[driver.fetch("t", 0, 3)]).error_code == ErrorCode.OFFSET_OUT_OF_RANGE
    data = fetch_result(driver.answers[driver.fetch("t", 0, 6)])
    assert (data.error_code, data.log_start_offset) == (ErrorCode.NONE, 6)


def test_the_log_start_offset_checkpoint_is_recovered_on_restart():
    storage = InMemoryStorage()
    driver = old_leader(storage, **{"log.flush.offset.checkpoint.interval.ms": "1000"})
    driver.advance(1000)  # retention leaves the active segment [6]
    driver.produce("t", 0, make_batch([b"v"], timestamp_ms=NOW_MS))
    partition = driver.manager.partitions[("t", 0)]
    assert partition.log.maybe_increment_log_start_offset(7)  # inside segment [6,7]
    driver.advance(1000)  # the flush and its checkpoints
    assert b"t 0 7" in storage.read_file("log-start-offset-checkpoint")
    restarted = CoreDriver(storage=storage, now_ms=NOW_MS)
    assert restarted.manager.partitions[("t", 0)].log_start_offset == 7, "not the first segment's base, 6"


def test_a_follower_raises_its_log_start_to_the_leaders_no_higher_than_its_high_watermark():
    driver = CoreDriver(broker_id=1, now_ms=NOW_MS)
    driver.become("t", 0, leader=0, replicas=(0, 1), isr=(0, 1))
    partition = driver.manager.partitions[("t", 0)]
    leader_log = Log.open(InMemoryStorage(), DIRECTORY, LogConfig(segment_bytes=2 * BATCH_BYTES))
    for _ in range(7):
        leader_log.append_as_leader(make_batch([b"v"]), leader_epoch=0)
    partition.log.reconfigure(LogConfig(segment_bytes=2 * BATCH_BYTES))

    def append(records, high_watermark, log_start_offset):
        return driver.ask("handle_follower_append", FollowerAppendRequest(partitions=(FollowerAppendPartition(
            topic="t", partition=0, current_leader_epoch=0, fetch_offset=partition.log_end_offset,
            records=records, leader_high_watermark=high_watermark, leader_log_start_offset=log_start_offset),)))

    append(leader_log.read(0, 1 << 20).records, high_watermark=3, log_start_offset=5)  # offsets 0, 1
    assert partition.log_start_offset == 2, "capped at the follower's high watermark, its log end"
    while partition.log_end_offset < leader_log.log_end_offset:
        append(leader_log.read(partition.log_end_offset, 1 << 20).records, high_watermark=7, log_start_offset=5)
    assert partition.log_start_offset == 5
    assert bases(partition.log) == [4, 6], "segments wholly below the start are deleted"
    answer = append(b"", high_watermark=7, log_start_offset=2)
    assert answer.partitions[0].error_code == ErrorCode.NONE and partition.log_start_offset == 5, "never lowered"


def test_retention_ms_compares_record_timestamps_with_the_wall_clock_not_the_monotonic_one():
    driver = CoreDriver(now_ms=5_000, config={"log.retention.check.interval.ms": "1000"})  # a monotonic clock
    driver.become("t", 0, leader=0, config=TOPIC)
    for _ in range(7):
        driver.produce("t", 0, make_batch([b"v"], timestamp_ms=NOW_MS - 10_000))
    partition = driver.manager.partitions[("t", 0)]
    driver.advance(1000)
    assert partition.log_start_offset == 0, "against the monotonic clock the records lie in the future"
    driver.manager.wall_clock_offset_ms = NOW_MS - driver.now_ms  # what the broker's shell passes
    driver.advance(1000)
    assert partition.log_start_offset == 6
