"""Proves the follower's truncation rule is Kafka 2.4's getOffsetTruncationState (KIP-101/279) and
that apply_follower_truncation applies each TruncationMode correctly, table-driven on real Logs
over InMemoryStorage."""
from __future__ import annotations

import pytest

from actors.core.errors import ErrorCode
from actors.core.log.log import Log
from actors.core.log.log_config import LogConfig
from actors.core.log.storage import InMemoryStorage
from actors.core.fetcher.follower_messages import FollowerTruncatePartition, TruncationMode
from actors.core.fetcher.truncation import apply_follower_truncation, offset_truncation_state
from tests.support.core_driver import make_batch


def log_with(*runs: tuple[int, int], start_at: int = 0) -> Log:
    """A log holding, for each (epoch, count), ``count`` one-record batches written in ``epoch``."""
    log = Log.open(InMemoryStorage(), "orders-0", LogConfig())
    if start_at:
        log.truncate_fully_and_start_at(start_at)
    for epoch, count in runs:
        for _ in range(count):
            log.append_as_leader(make_batch([b"v"]), leader_epoch=epoch)
    return log


# The follower: epoch 0 wrote 0..4, epoch 2 wrote 5..9 (LEO 10); it never saw epochs 1 or 3.
FOLLOWER = ((0, 5), (2, 5))

CASES = [
    # (case, leader epoch, leader end offset, fallback, expected (offset, complete))
    ("leader knows no epoch: fall back to the high watermark", -1, -1, 3, (3, True)),
    ("leader knows no epoch, no fallback: keep the log", -1, -1, None, (10, True)),
    ("leader knows no epoch, fallback above the LEO: clamp", -1, -1, 20, (10, True)),
    ("leader answer without epoch (old protocol): its offset", -1, 7, 0, (7, True)),
    ("leader answer without epoch, above our LEO", -1, 15, 0, (10, True)),
    ("follower knows the epoch and is ahead: leader's end", 2, 8, 0, (8, True)),
    ("follower knows the epoch and is behind: keep the log", 2, 12, 0, (10, True)),
    ("follower knows an older epoch that ended earlier", 0, 3, 0, (3, True)),
    ("follower's own epoch ended before the leader's end", 0, 7, 0, (5, True)),
    ("follower never saw the leader's epoch: cut to its smaller epoch, ask again", 1, 7, 0, (5, False)),
    ("leader epoch above everything the follower tracks: leader's offset", 3, 12, 0, (10, True)),
    ("leader epoch above everything, leader end below our LEO", 3, 8, 0, (8, True)),
]


@pytest.mark.parametrize("case, leader_epoch, leader_end_offset, fallback, expected", CASES,
                         ids=[case[0] for case in CASES])
def test_offset_truncation_state(case, leader_epoch, leader_end_offset, fallback, expected):
    log = log_with(*FOLLOWER)
    assert offset_truncation_state(log, leader_epoch=leader_epoch, leader_end_offset=leader_end_offset,
                                   fallback_offset=fallback) == expected
    assert log.log_end_offset == 10, "the rule only computes; it must not truncate"


def test_empty_follower_truncates_to_nothing_and_is_done():
    assert offset_truncation_state(log_with(), leader_epoch=2, leader_end_offset=5) == (0, True)


def test_follower_whose_log_starts_after_the_asked_epoch_uses_its_first_epoch_start():
    # Cache [(2, 5)]: asked about epoch 1, the follower's cache answers (1, 5) as Kafka's does.
    log = log_with((2, 3), start_at=5)
    assert offset_truncation_state(log, leader_epoch=1, leader_end_offset=7) == (5, True)


def truncate(mode: TruncationMode, **fields) -> FollowerTruncatePartition:
    return FollowerTruncatePartition(topic="orders", partition=0, current_leader_epoch=4, mode=mode, **fields)


APPLY_CASES = [
    # (case, request, high watermark, expected (LEO, latest epoch, HW, complete, log start))
    ("epoch end: follower ahead, truncated to the leader's end",
     truncate(TruncationMode.TO_LEADER_EPOCH_END, leader_epoch=2, leader_end_offset=8), 9, (8, 2, 8, True, 0)),
    ("epoch end: follower behind, nothing to do",
     truncate(TruncationMode.TO_LEADER_EPOCH_END, leader_epoch=2, leader_end_offset=12), 9, (10, 2, 9, True, 0)),
    ("epoch end: unknown epoch, intermediate cut, not complete",
     truncate(TruncationMode.TO_LEADER_EPOCH_END, leader_epoch=1, leader_end_offset=7), 9, (5, 0, 5, False, 0)),
    ("epoch end: leader knows no epoch, truncate to the high watermark",
     truncate(TruncationMode.TO_LEADER_EPOCH_END, leader_epoch=-1, leader_end_offset=-1), 6, (6, 2, 6, True, 0)),
    ("to offset below the LEO",
     truncate(TruncationMode.TO_OFFSET, offset=7), 9, (7, 2, 7, True, 0)),
    ("to offset inside epoch 0: epoch 2 disappears from the cache",
     truncate(TruncationMode.TO_OFFSET, offset=3), 9, (3, 0, 3, True, 0)),
    ("to offset above the LEO: nothing to do",
     truncate(TruncationMode.TO_OFFSET, offset=20), 9, (10, 2, 9, True, 0)),
    ("fully and start at the leader's log start",
     truncate(TruncationMode.FULLY_AND_START_AT, offset=15), 9, (15, -1, 15, True, 15)),
]


@pytest.mark.parametrize("case, request_partition, high_watermark, expected", APPLY_CASES,
                         ids=[case[0] for case in APPLY_CASES])
def test_apply_follower_truncation(case, request_partition, high_watermark, expected):
    log = log_with(*FOLLOWER)
    state = apply_follower_truncation(log, request_partition, high_watermark=high_watermark)
    assert state.error_code == ErrorCode.NONE
    assert (state.topic, state.partition) == ("orders", 0)
    assert (state.log_end_offset, state.latest_epoch, state.high_watermark, state.truncation_complete,
            log.log_start_offset) == expected
    assert (log.log_end_offset, log.latest_epoch) == expected[:2], "the state must describe the real log"


@pytest.mark.parametrize("request_partition", [
    truncate(TruncationMode.TO_OFFSET, offset=-1),
    truncate(TruncationMode.FULLY_AND_START_AT, offset=-3),
    truncate(TruncationMode.TO_LEADER_EPOCH_END, leader_epoch=2, leader_end_offset=-5),
], ids=["to-offset", "fully", "epoch-end"])
def test_illegal_truncation_is_refused_and_changes_nothing(request_partition):
    log = log_with(*FOLLOWER)
    state = apply_follower_truncation(log, request_partition, high_watermark=9)
    assert state.error_code == ErrorCode.INVALID_REQUEST
    assert (log.log_end_offset, log.latest_epoch, state.log_end_offset) == (10, 2, 10)


def test_truncation_inside_a_batch_reports_where_the_log_really_ends():
    log = Log.open(InMemoryStorage(), "orders-0", LogConfig())
    log.append_as_leader(make_batch([b"a", b"b", b"c"]), leader_epoch=0)  # offsets 0..2
    log.append_as_leader(make_batch([b"d", b"e", b"f"]), leader_epoch=1)  # offsets 3..5
    state = apply_follower_truncation(log, truncate(TruncationMode.TO_OFFSET, offset=4), high_watermark=6)
    assert (state.log_end_offset, state.latest_epoch, state.high_watermark) == (3, 0, 3)


def test_two_rounds_reach_the_kip_279_answer():
    """Follower [e0: 0..4, e2: 5..9] against leader [e0: 0..4, e1: 5..7, e3: 8..]: the leader first
    answers (1, 8) for epoch 2, the follower cuts to 5 and asks about epoch 0, and stops at 5."""
    log = log_with(*FOLLOWER)
    first = apply_follower_truncation(
        log, truncate(TruncationMode.TO_LEADER_EPOCH_END, leader_epoch=1, leader_end_offset=8), high_watermark=4)
    assert (first.log_end_offset, first.latest_epoch, first.truncation_complete) == (5, 0, False)
    second = apply_follower_truncation(
        log, truncate(TruncationMode.TO_LEADER_EPOCH_END, leader_epoch=0, leader_end_offset=5), high_watermark=4)
    assert (second.log_end_offset, second.latest_epoch, second.truncation_complete) == (5, 0, True)
    assert second.high_watermark == 4
