"""The idempotent producer's state in a partition's log (KIP-98), as Kafka's ProducerStateManager
keeps it: a retried batch is answered with its original offsets and written once, a fenced epoch
and a sequence gap are refused with Kafka's error codes and change nothing, a new epoch starts at
sequence 0, followers rebuild the same state from what they replicate, and the state survives a
restart (snapshot plus replay), a torn snapshot, truncation and the log start moving."""
from __future__ import annotations

import pytest
from kafka.record.default_records import DefaultRecordBatchBuilder

from actors.core.errors import ErrorCode, KafkaProtocolError
from actors.core.log.log import Log, LogConfig
from actors.core.log.producer_state import (
    BATCHES_RETAINED, INT32_MAX, ProducerStateManager, increment_sequence, snapshot_offsets, snapshot_path,
)
from actors.core.log.storage import InMemoryStorage

DIRECTORY = "orders-0"
PID = 1000


def batch(producer_id: int = PID, epoch: int = 0, base_sequence: int = 0, records: int = 3, value: bytes = b"v") -> bytes:
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False, producer_id=producer_id,
                                        producer_epoch=epoch, base_sequence=base_sequence, batch_size=1 << 20)
    for index in range(records):
        builder.append(index, timestamp=1000 + index, key=None, value=value, headers=[])
    return bytes(builder.build())


def open_log(storage: InMemoryStorage | None = None, **config) -> tuple[Log, InMemoryStorage]:
    storage = storage or InMemoryStorage()
    return Log.open(storage, DIRECTORY, LogConfig.from_properties(config)), storage


def refused(log: Log, records: bytes) -> ErrorCode:
    end_before = log.log_end_offset
    with pytest.raises(KafkaProtocolError) as caught:
        log.append_as_leader(records, leader_epoch=0)
    assert log.log_end_offset == end_before, "a refused append must write nothing"
    return caught.value.error_code


def test_a_retried_batch_gets_its_original_offsets_and_is_written_once():
    log, _ = open_log()
    first = log.append_as_leader(batch(base_sequence=0), leader_epoch=0)
    second = log.append_as_leader(batch(base_sequence=3), leader_epoch=0)
    retry = log.append_as_leader(batch(base_sequence=0), leader_epoch=0)
    assert (retry.first_offset, retry.last_offset) == (first.first_offset, first.last_offset) == (0, 2)
    assert retry.batch_count == 0 and log.log_end_offset == second.last_offset + 1 == 6


def test_only_the_last_five_batches_are_recognised_as_duplicates():
    log, _ = open_log()
    for index in range(BATCHES_RETAINED + 1):
        log.append_as_leader(batch(base_sequence=3 * index), leader_epoch=0)
    assert log.append_as_leader(batch(base_sequence=3), leader_epoch=0).first_offset == 3
    # The oldest batch fell out of the window: a retry of it is out of order, not a duplicate.
    assert refused(log, batch(base_sequence=0)) == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER


def test_a_gap_in_the_sequence_is_refused():
    log, _ = open_log()
    log.append_as_leader(batch(base_sequence=0), leader_epoch=0)
    assert refused(log, batch(base_sequence=4)) == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert log.append_as_leader(batch(base_sequence=3), leader_epoch=0).first_offset == 3


def test_an_older_epoch_is_fenced_and_a_new_epoch_starts_at_sequence_zero():
    log, _ = open_log()
    log.append_as_leader(batch(epoch=1, base_sequence=0), leader_epoch=0)
    assert refused(log, batch(epoch=0, base_sequence=3)) == ErrorCode.INVALID_PRODUCER_EPOCH
    assert refused(log, batch(epoch=2, base_sequence=3)) == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    log.append_as_leader(batch(epoch=2, base_sequence=0), leader_epoch=0)
    assert log.producer_state.entry(PID).producer_epoch == 2
    # The new epoch's batches replace the old ones: the old epoch's first batch is no duplicate now.
    assert refused(log, batch(epoch=1, base_sequence=0)) == ErrorCode.INVALID_PRODUCER_EPOCH


def test_an_unknown_producer_must_start_at_sequence_zero():
    log, _ = open_log()
    assert refused(log, batch(base_sequence=7)) == ErrorCode.UNKNOWN_PRODUCER_ID


def test_batches_without_a_producer_id_are_not_checked():
    log, _ = open_log()
    for _ in range(2):
        log.append_as_leader(batch(producer_id=-1, epoch=-1, base_sequence=-1), leader_epoch=0)
    assert log.log_end_offset == 6 and log.producer_state.producers == {}


def test_later_batches_of_one_append_are_checked_against_the_earlier_ones():
    log, _ = open_log()
    assert refused(log, batch(base_sequence=0) + batch(base_sequence=5)) == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    info = log.append_as_leader(batch(base_sequence=0) + batch(base_sequence=3), leader_epoch=0)
    assert (info.first_offset, info.last_offset) == (0, 5)
    assert log.producer_state.entry(PID).last_seq == 5


def test_sequences_wrap_after_the_largest_int32():
    assert increment_sequence(INT32_MAX - 1, 1) == INT32_MAX
    assert increment_sequence(INT32_MAX, 1) == 0
    assert increment_sequence(INT32_MAX - 1, 3) == 1
    log, _ = open_log()
    log.append_as_leader(batch(base_sequence=0, records=1), leader_epoch=0)
    state = log.producer_state
    entry = state.entry(PID)
    state._producers[PID] = entry.with_batch(0, entry.batches[-1].__class__(INT32_MAX - 2, INT32_MAX, 0, 0, 0))
    info = log.append_as_leader(batch(base_sequence=0, records=2), leader_epoch=0)
    assert info.batch_count == 1 and state.entry(PID).last_seq == 1


def test_a_follower_rebuilds_the_leaders_state_from_the_batches_it_replicates():
    leader, _ = open_log()
    for sequence in (0, 3, 6):
        leader.append_as_leader(batch(base_sequence=sequence), leader_epoch=4)
    follower, _ = open_log()
    follower.append_as_follower(leader.read(0, 1 << 20).records)
    assert follower.producer_state.producers == leader.producer_state.producers
    assert follower.producer_state.map_end_offset == 9


def test_a_restart_rebuilds_the_state_from_the_snapshot_and_the_batches_after_it():
    log, storage = open_log(**{"segment.bytes": "300"})
    infos = [log.append_as_leader(batch(base_sequence=3 * index), leader_epoch=0) for index in range(6)]
    assert log.number_of_segments > 1 and snapshot_offsets(storage, DIRECTORY), "a roll writes a snapshot"
    expected = log.producer_state.producers
    log.flush()  # a crash after the flush: no close, so no snapshot at the end
    reopened, _ = open_log(storage, **{"segment.bytes": "300"})
    assert reopened.producer_state.producers == expected
    retry = reopened.append_as_leader(batch(base_sequence=15), leader_epoch=0)
    assert (retry.first_offset, retry.batch_count) == (infos[-1].first_offset, 0)


def test_a_torn_snapshot_is_skipped_and_the_log_replayed_instead():
    log, storage = open_log(**{"segment.bytes": "300"})
    for index in range(6):
        log.append_as_leader(batch(base_sequence=3 * index), leader_epoch=0)
    expected = log.producer_state.producers
    log.close()
    newest = snapshot_offsets(storage, DIRECTORY)[-1]
    storage.write_file_atomically(snapshot_path(DIRECTORY, newest), b'{"crc": 1, "bo')
    reopened, _ = open_log(storage, **{"segment.bytes": "300"})
    assert reopened.producer_state.producers == expected
    assert newest not in snapshot_offsets(storage, DIRECTORY)


def test_truncation_forgets_the_batches_it_removes():
    log, storage = open_log(**{"segment.bytes": "300"})
    for index in range(6):
        log.append_as_leader(batch(base_sequence=3 * index), leader_epoch=0)
    log.truncate_to(9)
    assert log.producer_state.entry(PID).last_seq == 8
    assert all(offset <= 9 for offset in snapshot_offsets(storage, DIRECTORY))
    # The removed batch at sequence 9 is not a duplicate any more: it is written again, at 9.
    info = log.append_as_leader(batch(base_sequence=9), leader_epoch=1)
    assert (info.first_offset, info.batch_count) == (9, 1)
    log.truncate_fully_and_start_at(100)
    assert log.producer_state.producers == {} and snapshot_offsets(storage, DIRECTORY) == []


def test_moving_the_log_start_forgets_producers_whose_batches_are_all_gone():
    log, _ = open_log()
    log.append_as_leader(batch(producer_id=1, base_sequence=0), leader_epoch=0)
    log.append_as_leader(batch(producer_id=2, base_sequence=0), leader_epoch=0)
    log.maybe_increment_log_start_offset(3)
    assert set(log.producer_state.producers) == {2}
    assert refused(log, batch(producer_id=1, base_sequence=3)) == ErrorCode.UNKNOWN_PRODUCER_ID


def test_a_snapshot_round_trips_and_a_corrupt_one_is_refused():
    log, _ = open_log()
    log.append_as_leader(batch(base_sequence=0), leader_epoch=0)
    state = log.producer_state
    again = ProducerStateManager.from_snapshot(state.to_snapshot())
    assert again.producers == state.producers and again.map_end_offset == state.map_end_offset
    data = bytearray(state.to_snapshot())
    data[data.index(b'1000')] = ord("2")
    with pytest.raises(ValueError):
        ProducerStateManager.from_snapshot(bytes(data))
