"""Proves the log cleaner's core as Kafka 2.4's LogCleaner works: the dirtiest compacted log is chosen
by min.cleanable.dirty.ratio with its cleanable part bounded by the active segment, the high
watermark and min.compaction.lag.ms; cleaning keeps the latest value per key (producer fields,
leader epoch and codec kept, tombstones kept for delete.retention.ms); the .cleaned/.swap swap
recovers a whole log after a crash at every step; and reads, reopens and followers handle the gaps
cleaning leaves. Driven on in-memory storage, records read back with aiokafka's batch reader."""
from __future__ import annotations

import pickle

import pytest
from aiokafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

from actors.codecs.record_batches import KafkaRecordCodec
from actors.core.config import KafkaConfig
from actors.core.effects import CoordinatorMetadataUpdate, Send
from actors.core.errors import ErrorCode, KafkaProtocolError
from actors.core.group import offsets_topic_records as rec
from actors.core.group.broker_link import BrokerLink
from actors.core.group.coordinator import GroupCoordinatorCore
from actors.core.group.group_metadata import OffsetAndMetadata
from actors.core.group.messages import (
    BrokerStateResponse, OffsetsLogReadRequest, OffsetsLogReadResponse,
)
from actors.core.log.checkpoints import CLEANER_OFFSET_CHECKPOINT, OffsetCheckpointFile
from actors.core.log.cleaner import (
    OFFSET_MAP_ENTRIES_DEFAULT, OffsetMap, build_offset_map, clean_filthiest_log, clean_log, clean_segment,
    cleanable_offsets, filthiest_log, log_to_clean, offset_map_entries, plan_cleaning, write_cleaned_segments,
)
from actors.core.log.cleaner_manager import LogCleanerManager
from actors.core.log.log import Log
from actors.core.log.log_config import LogConfig, log_config_for
from actors.core.log.record_batch import parse_batches
from actors.core.log.segment_swap import swap_steps, write_cleaned
from actors.core.log.storage import InMemoryStorage
from actors.core.replica.log_reads import read_log
from actors.core.topic_configs import validate_topic_config

T0 = 1_700_000_000_000
COMPACT = LogConfig(cleanup_policy="compact", segment_bytes=10_000, min_cleanable_dirty_ratio=0.5)


def batch(pairs, *, timestamp_ms=T0, codec=0, producer_id=-1, producer_epoch=-1, base_sequence=-1) -> bytes:
    """One v2 batch of (key, value) pairs (value None: a tombstone)."""
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=codec, is_transactional=0, producer_id=producer_id,
                                        producer_epoch=producer_epoch, base_sequence=base_sequence,
                                        batch_size=1 << 20)
    for index, (key, value) in enumerate(pairs):
        assert builder.append(index, timestamp_ms + index, key, value, []) is not None
    return bytes(builder.build())


def records_of(log: Log, start: int = 0) -> list[tuple[int, bytes | None, bytes | None]]:
    """(offset, key, value) of every record from ``start`` to the log end, read the way a consumer does."""
    found, offset = [], start
    while offset < log.log_end_offset:
        info = log.read(offset, 1 << 20)
        if not info.records:
            break
        for header in parse_batches(info.records):
            data = bytes(info.records[header.position:header.end_position])
            reader = DefaultRecordBatch(data)
            assert reader.validate_crc()
            found += [(r.offset, r.key, r.value) for r in reader if r.offset >= offset]
        offset = info.last_offset + 1
    return found


def clean(to_clean):
    """``clean_log`` of the round ``to_clean`` plans, reading the log's own storage."""
    return clean_log(plan_cleaning(to_clean), to_clean.log._storage)


def latest_per_key(entries):
    latest = {}
    for offset, key, value in entries:
        latest[key] = (offset, value)
    return latest


def compacted_log(storage=None, config=COMPACT, rounds=3, keys=5) -> Log:
    """A compacted log of ``rounds`` segments, each a batch per key (values r<round>), rolled by hand."""
    storage = storage or InMemoryStorage()
    log = Log.open(storage, "t-0", config)
    for round_ in range(rounds):
        for key in range(keys):
            log.append_as_leader(batch([(b"k%d" % key, b"r%d" % round_)], timestamp_ms=T0 + round_ * 1000), 1)
        log._roll()
    return log


# -- item 1: the choice of log --------------------------------------------------------------------

def test_cleanable_part_stops_at_the_active_segment_the_high_watermark_and_the_compaction_lag():
    log = compacted_log()
    bases = [s.base_offset for s in log.segments]  # 0, 5, 10, 15 (active, empty)
    assert cleanable_offsets(log, None, T0 + 10_000, log.log_end_offset) == (0, bases[3])
    # The high watermark inside the second segment: only the first is cleanable.
    assert cleanable_offsets(log, None, T0 + 10_000, 7) == (0, bases[1])
    # min.compaction.lag.ms: the third segment's records (T0+2000..) are too young at T0+2500.
    lagged = Log.open(InMemoryStorage(), "x", COMPACT)
    log.reconfigure(LogConfig(cleanup_policy="compact", segment_bytes=10_000, min_compaction_lag_ms=1000))
    assert cleanable_offsets(log, None, T0 + 2500, log.log_end_offset) == (0, bases[2])
    # A checkpoint is the first dirty offset; one outside the log starts from the log start.
    assert cleanable_offsets(log, 5, T0 + 10_000, log.log_end_offset) == (5, 15)
    assert cleanable_offsets(log, 99, T0 + 10_000, log.log_end_offset) == (0, 15)
    assert lagged.log_end_offset == 0


def test_the_dirtiest_compacted_log_above_its_ratio_is_chosen_first():
    storage = InMemoryStorage()
    a = compacted_log(storage, rounds=3)
    b = Log.open(storage, "b-0", COMPACT)
    for key in range(5):
        b.append_as_leader(batch([(b"k%d" % key, b"v")]), 1)
    b._roll()
    deleted = Log.open(storage, "d-0", LogConfig(segment_bytes=10_000))
    deleted.append_as_leader(batch([(b"k", b"v")]), 1)
    deleted._roll()
    logs = {("a", 0): a, ("b", 0): b, ("d", 0): deleted}
    hws = {key: log.log_end_offset for key, log in logs.items()}
    # a is cleaned up to 10 already (ratio 5/15); b never was (ratio 1): b first.
    chosen = filthiest_log(logs, {("a", 0): 10}, T0, hws)
    assert chosen.key == ("b", 0) and chosen.cleanable_ratio == 1.0
    assert log_to_clean(("a", 0), a, 10, T0, hws[("a", 0)]).cleanable_ratio == pytest.approx(1 / 3)
    # Below its min.cleanable.dirty.ratio (0.5) a is not chosen even alone; at 0.3 it is.
    assert filthiest_log({("a", 0): a}, {("a", 0): 10}, T0, hws) is None
    a.reconfigure(LogConfig(cleanup_policy="compact,delete", segment_bytes=10_000, min_cleanable_dirty_ratio=0.3))
    assert filthiest_log({("a", 0): a}, {("a", 0): 10}, T0, hws).key == ("a", 0)


def test_a_cleaning_round_cleans_the_dirtiest_log_and_checkpoints_its_first_dirty_offset():
    storage = InMemoryStorage()
    log = compacted_log(storage)
    before = latest_per_key(records_of(log))
    checkpoint = OffsetCheckpointFile(storage, CLEANER_OFFSET_CHECKPOINT)
    summary = clean_filthiest_log({("t", 0): log}, checkpoint, T0 + 10_000, {("t", 0): log.log_end_offset})
    assert summary is not None and "15 records" in summary
    assert checkpoint.read() == {("t", 0): 15}
    after = records_of(log)
    assert [(o, k, v) for o, k, v in after] == [(10 + i, b"k%d" % i, b"r2") for i in range(5)]
    assert latest_per_key(after) == before
    # Nothing dirty is left: the next round has nothing to do.
    assert clean_filthiest_log({("t", 0): log}, checkpoint, T0 + 10_000, {("t", 0): log.log_end_offset}) is None


# -- item 2: the offset map and the cleaning --------------------------------------------------------

def test_the_offset_map_holds_the_latest_offset_per_key_and_stops_before_overfilling():
    log = compacted_log(rounds=2, keys=3)  # offsets 0-2 r0, 3-5 r1
    offset_map = OffsetMap()
    assert build_offset_map(log.segments, 0, 6, offset_map) == 6
    assert {k: offset_map.get(k) for k in (b"k0", b"k1", b"k2")} == {b"k0": 3, b"k1": 4, b"k2": 5}
    assert offset_map.latest_offset == 5
    small = OffsetMap(max_entries=2)  # k0, k1 fit; k2's batch would make three
    assert build_offset_map(log.segments, 0, 6, small) == 2 and small.latest_offset == 1


def test_cleaning_keeps_the_latest_value_per_key_with_producer_fields_epoch_and_codec():
    storage = InMemoryStorage()
    log = Log.open(storage, "t-0", COMPACT)
    log.append_as_leader(batch([(b"a", b"1"), (b"b", b"1"), (b"c", b"1")], codec=1, producer_id=7,
                               producer_epoch=2, base_sequence=0), 4)
    log.append_as_leader(batch([(b"a", b"2")], producer_id=7, producer_epoch=2, base_sequence=3), 5)
    log._roll()
    to_clean = log_to_clean(("t", 0), log, None, T0, log.log_end_offset)
    cleaned = clean(to_clean)
    data = cleaned.segments[0][1]
    headers = parse_batches(data)
    assert len(headers) == 2
    first = headers[0]
    # The first batch lost record a (offset 0): same base and last offset, producer, epoch, gzip.
    assert (first.base_offset, first.last_offset, first.records_count) == (0, 2, 2)
    assert (first.producer_id, first.producer_epoch, first.base_sequence, first.partition_leader_epoch) == (7, 2, 0, 4)
    assert first.attributes & 0x07 == 1
    reader = DefaultRecordBatch(data[:first.size_in_bytes])
    assert reader.validate_crc()
    assert [(r.offset, r.key, r.value) for r in reader] == [(1, b"b", b"1"), (2, b"c", b"1")]
    assert data[first.size_in_bytes:] == bytes(log.read(3, 1 << 20).records)  # untouched: copied as it was


def test_a_producers_last_batch_stays_empty_when_all_its_records_go():
    log = Log.open(InMemoryStorage(), "t-0", COMPACT)
    log.append_as_leader(batch([(b"a", b"1")], producer_id=7, producer_epoch=0, base_sequence=0), 1)
    log.append_as_leader(batch([(b"a", b"2")]), 1)
    log._roll()
    offset_map = OffsetMap()
    offset_map.put(b"a", 5)
    offset_map.latest_offset = 5
    kept = parse_batches(clean_segment(log.segments[0], offset_map, retain_deletes=True,
                                       producer_last_offsets=frozenset({0})))
    # The producer's last batch and the segment's last batch stay, empty.
    assert [(h.base_offset, h.records_count, h.producer_id, h.base_sequence) for h in kept] == [
        (0, 0, 7, 0), (1, 0, -1, -1)]
    assert [h.base_offset for h in parse_batches(clean_segment(log.segments[0], offset_map, retain_deletes=True))] == [1]


def test_tombstones_are_kept_for_delete_retention_ms_after_the_clean_part():
    config = LogConfig(cleanup_policy="compact", segment_bytes=10_000, delete_retention_ms=5_000)
    log = Log.open(InMemoryStorage(), "t-0", config)
    log.append_as_leader(batch([(b"a", b"1"), (b"b", b"1")], timestamp_ms=T0), 1)
    log.append_as_leader(batch([(b"a", None)], timestamp_ms=T0 + 1), 1)
    log._roll()
    first = clean(log_to_clean(("t", 0), log, None, T0, log.log_end_offset))
    log.replace_segments(first.segments)
    # First cleaning: no clean part, so the horizon is 0 and the tombstone stays.
    assert [(o, k, v) for o, k, v in records_of(log)] == [(1, b"b", b"1"), (2, b"a", None)]
    # A newer segment, 3 s later, is cleaned: the horizon (the clean part's newest segment, T0, less
    # 5 s) is still before the tombstone's segment, which keeps it.
    log.append_as_leader(batch([(b"c", b"1")], timestamp_ms=T0 + 3_000), 1)
    log._roll()
    second = clean(log_to_clean(("t", 0), log, first.end_offset, T0, log.log_end_offset))
    log.replace_segments(second.segments)
    assert [(o, k, v) for o, k, v in records_of(log)] == [(1, b"b", b"1"), (2, b"a", None), (3, b"c", b"1")]
    # Once a segment 10 s newer is in the clean part (horizon T0 + 5 s), the next cleaning drops it.
    log.append_as_leader(batch([(b"d", b"1")], timestamp_ms=T0 + 10_000), 1)
    log._roll()
    log.append_as_leader(batch([(b"e", b"1")], timestamp_ms=T0 + 11_000), 1)
    log._roll()
    third = clean(log_to_clean(("t", 0), log, 5, T0, log.log_end_offset))
    log.replace_segments(third.segments)
    assert [(o, k, v) for o, k, v in records_of(log)] == [(1, b"b", b"1"), (3, b"c", b"1"), (4, b"d", b"1"),
                                                           (5, b"e", b"1")]


def test_keyless_records_are_refused_on_compacted_topics_with_invalid_record():
    log = Log.open(InMemoryStorage(), "t-0", COMPACT)
    with pytest.raises(KafkaProtocolError) as refused:
        log.append_as_leader(batch([(None, b"v")]), 1)
    assert refused.value.error_code == ErrorCode.INVALID_RECORD and log.log_end_offset == 0


# -- item 3: the swap and its recovery ---------------------------------------------------------------

def _swap_in_steps(log: Log, cleaned) -> list:
    originals = [s for s in log.segments if s.base_offset in {b for b, _ in cleaned}]
    writes = [lambda b=b, d=d: write_cleaned(log._storage, log.directory, b, d) for b, d in cleaned]
    return writes + swap_steps(log._storage, originals, log.directory)


SWAP_STEPS = 3 + 3 + 9 + 3 + 9  # write .cleaned, commit to .swap, originals to .deleted, .swap to .log, delete


@pytest.mark.parametrize("crash_after", range(0, SWAP_STEPS + 1))
def test_a_crash_at_any_step_of_the_swap_reopens_a_whole_log(crash_after):
    storage = InMemoryStorage()
    log = compacted_log(storage)  # each roll fsynced the segment before it: a crash loses nothing
    expected = latest_per_key(records_of(log))
    before = records_of(log)
    cleaned = clean(log_to_clean(("t", 0), log, None, T0 + 10_000, log.log_end_offset))
    assert len(cleaned.segments) == 3
    steps = _swap_in_steps(log, cleaned.segments)
    assert len(steps) == SWAP_STEPS
    for step in steps[:crash_after]:
        step()
    storage.simulate_crash()
    reopened = Log.open(storage, "t-0", COMPACT)
    after = records_of(reopened)
    assert latest_per_key(after) == expected
    committed = crash_after >= 3 + 3  # every .cleaned renamed to .swap: roll forward
    assert after == (records_of_cleaned(cleaned) if committed else before)
    assert not [n for n in storage.list_dir("t-0") if n.endswith((".cleaned", ".swap", ".deleted"))]
    assert reopened.log_end_offset == 15


def test_a_crash_during_the_roll_forward_itself_still_reopens_the_cleaned_log():
    """Recovery's own steps (remove the original, rename the .swap) are safe to interrupt: here the
    original is gone and its .swap is left, as a crash between them leaves it."""
    storage = InMemoryStorage()
    log = compacted_log(storage)
    cleaned = clean(log_to_clean(("t", 0), log, None, T0 + 10_000, log.log_end_offset))
    for step in _swap_in_steps(log, cleaned.segments)[:6]:  # committed: every .swap written
        step()
    storage.delete("t-0/00000000000000000005.log")
    storage.simulate_crash()
    reopened = Log.open(storage, "t-0", COMPACT)
    assert records_of(reopened) == records_of_cleaned(cleaned)


def test_replace_segments_on_files_and_reads_at_every_offset_find_the_batch_at_or_after_it(storage):
    """On real files too, and with an index entry per batch: a read at any offset, removed or not,
    starts at the first batch whose last offset is at or after it."""
    config = LogConfig(cleanup_policy="compact", segment_bytes=10_000, index_interval_bytes=0)
    log = compacted_log(storage, config=config)
    cleaned = clean(log_to_clean(("t", 0), log, None, T0 + 10_000, log.log_end_offset))
    log.replace_segments(cleaned.segments)
    kept = [(h.base_offset, h.last_offset) for s in log.segments for h in s.headers_from(0)]
    assert kept == [(4, 4), (9, 9), (10, 10), (11, 11), (12, 12), (13, 13), (14, 14)]
    for offset in range(15):
        info = log.read(offset, 1)
        assert info.first_offset == next(base for base, last in kept if last >= offset), offset
    assert [offset for offset, _ in log.segments[2].index_entries] == [11, 12, 13, 14]
    reopened = Log.open(storage, "t-0", config)
    assert [(h.base_offset, h.last_offset) for s in reopened.segments for h in s.headers_from(0)] == kept


def records_of_cleaned(cleaned):
    storage = InMemoryStorage()
    log = Log.open(storage, "c-0", COMPACT)
    for base, data in cleaned.segments:
        for header in parse_batches(data) if data else ():
            log.append_as_follower(data[header.position:header.end_position])
    return records_of(log)


def test_replace_segments_swaps_in_place_and_leaves_no_temporary_files():
    storage = InMemoryStorage()
    log = compacted_log(storage)
    cleaned = clean(log_to_clean(("t", 0), log, None, T0 + 10_000, log.log_end_offset))
    assert log.replace_segments(cleaned.segments) == [0, 5, 10]
    assert [(s.base_offset, s.next_offset) for s in log.segments] == [(0, 5), (5, 10), (10, 15), (15, 15)]
    # A segment with nothing left keeps its last batch, empty: it still ends where it did.
    assert [(h.base_offset, h.records_count) for h in parse_batches(log.read(5, 1 << 20).records)] == [(9, 0)]
    assert not [n for n in storage.list_dir("t-0") if n.endswith((".cleaned", ".swap", ".deleted"))]
    # A segment no longer in the log, or not as it was when cleaned, is skipped.
    assert log.replace_segments(((99, b""),)) == []
    stale = clean(log_to_clean(("t", 0), log, None, T0 + 10_000, log.log_end_offset))
    log.truncate_to(12)
    assert log.replace_segments(stale.segments) == [0, 5]


# -- item 4: offsets with gaps ----------------------------------------------------------------------

def test_reads_reopens_and_followers_handle_the_gaps_cleaning_leaves():
    storage = InMemoryStorage()
    log = compacted_log(storage)
    cleaned = clean(log_to_clean(("t", 0), log, None, T0 + 10_000, log.log_end_offset))
    log.replace_segments(cleaned.segments)
    # A fetch from a removed offset returns the next batch there is (a segment's empty last batch).
    info = log.read(3, 1 << 20)
    assert (info.first_offset, info.last_offset, info.batch_count) == (4, 4, 1)
    assert log.read_position(3) == (0, 0)
    assert records_of(log, 0)[0] == (10, b"k0", b"r2")
    # Reopened (recovering every segment), the gaps stay and the chain holds.
    served = records_of(log)
    log.close()
    reopened = Log.open(storage, "t-0", COMPACT)
    assert [(s.base_offset, s.next_offset) for s in reopened.segments] == [(0, 5), (5, 10), (10, 15), (15, 15)]
    assert records_of(reopened) == served
    # A follower fetching from its log end takes the leader's batches with their gaps.
    follower = Log.open(InMemoryStorage(), "f-0", COMPACT)
    offset = 0
    while offset < reopened.log_end_offset:
        fetched = reopened.read(offset, 1 << 20)
        if not fetched.records:
            break
        follower.append_as_follower(fetched.records)
        offset = follower.log_end_offset
    assert records_of(follower) == records_of(reopened) and follower.log_end_offset == 15
    # Going backwards is still refused.
    with pytest.raises(KafkaProtocolError):
        follower.append_as_follower(reopened.read(10, 1 << 20).records)


# -- item 4 through the replica manager: a consumer's fetch and a follower's append -------------------

def test_a_cleaned_leader_serves_consumers_and_followers_from_offsets_it_removed():
    from actors.core.fetcher.follower_messages import FollowerAppendPartition, FollowerAppendRequest
    from tests.support.core_driver import CoreDriver, fetch_request, produce_request

    config = {"cleanup.policy": "compact", "segment.bytes": "300"}
    leader = CoreDriver(broker_id=0)
    leader.become("t", 0, leader=0, replicas=(0, 1), isr=(0,), config=config)
    for round_ in range(3):
        for key in range(3):
            answer = leader.ask("handle_produce", produce_request("t", 0, batch([(b"k%d" % key, b"r%d" % round_)])))
            assert answer.responses[0].partition_responses[0].error_code == ErrorCode.NONE
    log = leader.manager.partitions[("t", 0)].log
    assert log.number_of_segments > 2
    checkpoint = OffsetCheckpointFile(leader.storage, CLEANER_OFFSET_CHECKPOINT)
    assert clean_filthiest_log({("t", 0): log}, checkpoint, T0, {("t", 0): log.log_end_offset}) is not None
    kept = [(h.base_offset, h.records_count) for s in log.segments for h in s.headers_from(0)]
    assert kept[0][0] > 0  # offset 0 (k0's first value) is gone
    # A consumer asking for offset 0 gets the first batch there is, and reads the latest value per key.
    result = fetch_result_of(leader.ask("handle_fetch", fetch_request("t", 0, 0)))
    assert result.error_code == ErrorCode.NONE
    first = parse_batches(result.records)[0]
    assert first.base_offset == kept[0][0]
    # A follower, fetching from its log end, appends what the leader serves, gaps included.
    follower = CoreDriver(broker_id=1)
    follower.become("t", 0, leader=0, replicas=(0, 1), isr=(0, 1), config=config)
    offset = 0
    for _ in range(log.log_end_offset):  # each round appends at least one batch
        if offset == log.log_end_offset:
            break
        fetched = fetch_result_of(leader.ask("handle_fetch", fetch_request("t", 0, offset, replica_id=1)))
        assert fetched.error_code == ErrorCode.NONE and fetched.records, (offset, fetched)
        records = fetched.records
        answer = follower.ask("handle_follower_append", FollowerAppendRequest(partitions=(FollowerAppendPartition(
            topic="t", partition=0, current_leader_epoch=0, fetch_offset=offset, records=records,
            leader_high_watermark=0),)))
        assert answer.partitions[0].error_code == ErrorCode.NONE, answer
        offset = follower.manager.partitions[("t", 0)].log.log_end_offset
    follower_log = follower.manager.partitions[("t", 0)].log
    assert records_of(follower_log) == records_of(log)
    assert {k: v for _, k, v in records_of(follower_log)} == {b"k0": b"r2", b"k1": b"r2", b"k2": b"r2"}


def fetch_result_of(response):
    return response.responses[0].partitions[0]


def test_the_cleaners_topic_keys_are_read_into_the_log_config():
    config = LogConfig.from_properties({
        "cleanup.policy": "compact,delete", "min.cleanable.dirty.ratio": "0.1", "min.compaction.lag.ms": "5",
        "delete.retention.ms": "7"})
    assert (config.compact, config.delete, config.min_cleanable_dirty_ratio, config.min_compaction_lag_ms,
            config.delete_retention_ms) == (True, True, 0.1, 5, 7)
    assert LogConfig().min_cleanable_dirty_ratio == 0.5 and LogConfig().delete_retention_ms == 86_400_000
    for key, value in (("min.cleanable.dirty.ratio", "1.5"), ("min.cleanable.dirty.ratio", "x"),
                       ("delete.retention.ms", "-1")):
        with pytest.raises(KafkaProtocolError):
            LogConfig.from_properties({key: value})


# -- the broker and its cleaner actor (cleaner_manager.py, actors/log_cleaner.py) ----------------------

def _cleaner_round(manager, logs, storage, now_ms=T0 + 10_000):
    """What the cleaner actor does with a plan: read, clean and write the .cleaned files, after the
    plan crossed a process boundary (pickled) and through a storage of its own view of the files."""
    plan = manager.grab_filthiest(logs, {key: log.log_end_offset for key, log in logs.items()}, now_ms)
    if plan is None:
        return None
    plan = pickle.loads(pickle.dumps(plan))
    return pickle.loads(pickle.dumps(write_cleaned_segments(plan, clean_log(plan, storage), storage)))


def test_a_round_split_between_broker_and_cleaner_swaps_in_and_checkpoints_while_appends_go_on():
    storage = InMemoryStorage()
    log = compacted_log(storage)
    logs, manager = {("t", 0): log}, LogCleanerManager(storage)
    before = latest_per_key(records_of(log))
    cleaned = _cleaner_round(manager, logs, storage)
    assert [base for base, _, _ in cleaned.segments] == [0, 5, 10]  # never the active segment (15)
    # The broker appends while the cleaner works; the swap leaves the new records where they are.
    log.append_as_leader(batch([(b"k0", b"late")], timestamp_ms=T0 + 5000), 1)
    assert "segments [0, 5, 10] swapped in" in manager.done_cleaning(cleaned, logs)
    assert OffsetCheckpointFile(storage, CLEANER_OFFSET_CHECKPOINT).read() == {("t", 0): 15}
    assert records_of(log) == [(10 + i, b"k%d" % i, b"r2") for i in range(5)] + [(15, b"k0", b"late")]
    assert latest_per_key(records_of(log))[b"k1"] == before[b"k1"]
    assert not [n for n in storage.list_dir("t-0") if n.endswith((".cleaned", ".swap", ".deleted"))]
    assert _cleaner_round(manager, logs, storage) is None  # nothing dirty left below the active segment


def test_a_superseded_round_or_a_segment_truncated_meanwhile_is_not_swapped_in():
    storage = InMemoryStorage()
    log = compacted_log(storage)
    logs, manager = {("t", 0): log}, LogCleanerManager(storage)
    stale = _cleaner_round(manager, logs, storage)
    fresh = _cleaner_round(manager, logs, storage)  # a new cleaner's round supersedes the old one's
    before = records_of(log)
    assert "stale" in manager.done_cleaning(stale, logs)
    assert records_of(log) == before
    # A follower's truncation between plan and swap: the offset map names offsets now gone (k3's
    # latest was 13), so the round is aborted (Kafka's abortAndPauseCleaning), or k3 would vanish.
    log.truncate_to(8)
    assert "truncated" in manager.done_cleaning(fresh, logs)
    assert records_of(log) == before[:8]
    assert not [n for n in storage.list_dir("t-0") if n.endswith(".cleaned")]
    reopened = Log.open(storage, "t-0", COMPACT)
    assert records_of(reopened) == records_of(log)


@pytest.mark.parametrize("files_written", [0, 1, 2])
def test_a_cleaner_killed_mid_round_leaves_the_log_whole_and_the_next_round_finishes(files_written):
    """A cleaner killed while it writes its .cleaned files (the last one torn) never reaches the
    broker: the live log is unchanged, a reopen removes the leftovers, and the next round cleans."""
    storage = InMemoryStorage()
    log = compacted_log(storage)
    logs, manager = {("t", 0): log}, LogCleanerManager(storage)
    before = records_of(log)
    plan = manager.grab_filthiest(logs, {("t", 0): log.log_end_offset}, T0 + 10_000)
    cleaned = clean_log(plan, storage)
    for base, data in cleaned.segments[:files_written]:
        write_cleaned(storage, "t-0", base, data)
    base, data = cleaned.segments[files_written]
    write_cleaned(storage, "t-0", base, data[:len(data) // 2])  # killed inside this write
    assert records_of(log) == before
    log.close()
    storage.simulate_crash()
    reopened = Log.open(storage, "t-0", COMPACT)
    assert records_of(reopened) == before
    assert not [n for n in storage.list_dir("t-0") if n.endswith(".cleaned")]
    logs = {("t", 0): reopened}
    successor = _cleaner_round(manager, logs, storage)
    manager.done_cleaning(successor, logs)
    assert records_of(reopened) == [(10 + i, b"k%d" % i, b"r2") for i in range(5)]


def test_the_cleaners_keys_are_topic_config_keys_with_kafkas_ranges_and_broker_synonyms():
    for good in ({"min.cleanable.dirty.ratio": "0.01"}, {"min.cleanable.dirty.ratio": "1"},
                 {"min.compaction.lag.ms": "0"}, {"delete.retention.ms": "1000"},
                 {"cleanup.policy": "compact,delete"}):
        validate_topic_config(good)
    for bad in ({"min.cleanable.dirty.ratio": "1.5"}, {"min.cleanable.dirty.ratio": "-0.1"},
                {"min.cleanable.dirty.ratio": "half"}, {"min.compaction.lag.ms": "-1"},
                {"delete.retention.ms": "-5"}, {"delete.retention.ms": "soon"}):
        with pytest.raises(KafkaProtocolError) as refused:
            validate_topic_config(bad)
        assert refused.value.error_code == ErrorCode.INVALID_CONFIG, bad
    broker = KafkaConfig({"log.cleaner.min.cleanable.ratio": "0.2", "log.cleaner.delete.retention.ms": "500"})
    config = log_config_for(broker.for_topic({}))
    assert (config.min_cleanable_dirty_ratio, config.delete_retention_ms, config.min_compaction_lag_ms) == (0.2, 500, 0)
    assert log_config_for(broker.for_topic({"min.cleanable.dirty.ratio": "0.7"})).min_cleanable_dirty_ratio == 0.7
    defaults = KafkaConfig()
    assert [defaults.get_str(key) for key in ("log.cleaner.enable", "log.cleaner.backoff.ms",
                                              "log.cleaner.dedupe.buffer.size")] == ["true", "15000", "134217728"]
    assert offset_map_entries(defaults.get_int("log.cleaner.dedupe.buffer.size")) == OFFSET_MAP_ENTRIES_DEFAULT


def test_a_coordinator_loads_a_compacted_offsets_partition_with_its_gaps_and_tombstones():
    """Item 4: many commits of three groups (one of whose offsets a tombstone deleted), cleaned, are
    loaded by the coordinator's chunked reads (BrokerLink, Kafka's record codec) to the same
    offsets as before cleaning, from a handful of records."""
    storage = InMemoryStorage()
    log = Log.open(storage, "__consumer_offsets-0", LogConfig(cleanup_policy="compact", segment_bytes=2048))
    for round_ in range(1, 41):
        for group in ("a", "b", "c"):
            value = rec.offset_commit_value(OffsetAndMetadata(offset=round_ if group != "b" else 100 + round_))
            log.append_as_leader(KafkaRecordCodec.encode([(rec.offset_commit_key(group, ("t", 0)), value)], T0), 1)
    log.append_as_leader(KafkaRecordCodec.encode([(rec.offset_commit_key("c", ("t", 0)), None)], T0), 1)
    log._roll()
    written = log.log_end_offset
    while clean_filthiest_log({("__consumer_offsets", 0): log}, OffsetCheckpointFile(storage, CLEANER_OFFSET_CHECKPOINT),
                              T0, {("__consumer_offsets", 0): log.log_end_offset}):
        pass
    kept = records_of(log)
    assert len(kept) == 3 and kept[-1][2] is None, "each key's last record; c's is its tombstone"
    partition = type("P", (), {"log": log, "log_end_offset": log.log_end_offset, "log_start_offset": 0})()
    link = BrokerLink(GroupCoordinatorCore(broker_id=0, now_ms=0, config={"offsets.topic.num.partitions": "1"}),
                      KafkaRecordCodec())
    (watch,) = [e.message for e in link.start(0) if isinstance(e, Send)]
    (follow_up,) = [e.message for e in link.on_broker_response(watch, BrokerStateResponse(incarnation_id="i"), 0)
                    if isinstance(e, Send)]
    effects = link.on_broker_response(follow_up, BrokerStateResponse(
        incarnation_id="i", metadata=CoordinatorMetadataUpdate(version=(0, 1), partitions=()),
        offsets_partitions_led=((0, 1),)), 0)
    reads = 0
    while (asked := [e.message for e in effects if isinstance(e, Send)
                     and isinstance(e.message, OffsetsLogReadRequest)]):
        reads += 1
        records, next_offset, end = read_log(partition, asked[0].offset, 200)  # a batch a read, gaps skipped
        effects = link.on_broker_response(asked[0], OffsetsLogReadResponse(
            records=records, next_offset=next_offset, log_end_offset=end), reads)
    groups = link.core.manager.groups
    assert {g: {tp: o.offset for tp, o in groups[g].offsets.items()} for g in groups} == {
        "a": {("t", 0): 40}, "b": {("t", 0): 140}}
    assert not link.core.manager.loading_partitions and reads < written // 10
