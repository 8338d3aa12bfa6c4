"""The hop trace and its reading: ``hop`` writes nothing unless RAYKAFKA_HOP_TRACE is set, writes
one timed line per event when it is, and benchmarks/ack_hops.py picks each write's round trip out
of a merged timeline (the first of each event after the one before, the follower waited for last)."""
from __future__ import annotations

import importlib
import os

from actors import hop_trace
from benchmarks.ack_hops import CHAIN, breakdown, read_trace


def test_off_by_default_and_one_line_per_event_when_on(tmp_path, monkeypatch):
    monkeypatch.delenv("RAYKAFKA_HOP_TRACE", raising=False)
    importlib.reload(hop_trace).hop("broker-1 ProduceRequest in")
    assert not hop_trace.enabled() and os.listdir(tmp_path) == []
    monkeypatch.setenv("RAYKAFKA_HOP_TRACE", str(tmp_path))
    try:
        importlib.reload(hop_trace).hop("broker-1 ProduceRequest in")
        hop_trace.hop("broker-1 ProduceRequest out")
        events = read_trace(str(tmp_path))
        assert set(events) == {"broker-1 ProduceRequest in", "broker-1 ProduceRequest out"}
        assert events["broker-1 ProduceRequest in"][0] <= events["broker-1 ProduceRequest out"][0]
    finally:
        monkeypatch.delenv("RAYKAFKA_HOP_TRACE")
        importlib.reload(hop_trace)


def _chain_events(leader: int, follower: int, start: float, step: float) -> dict[str, list[float]]:
    events: dict[str, list[float]] = {}
    for i, (_, owner, event) in enumerate(CHAIN[1:-1], start=1):
        name = f"{owner.replace('L', str(leader)).replace('F', str(follower))} " \
               f"{event.replace('replica-F', f'replica-{follower}')}"
        events.setdefault(name, []).append(start + i * step)
    return events


def test_a_write_waits_for_its_slower_follower_and_earlier_events_are_skipped():
    fast, slow = _chain_events(1, 2, 10.0, 0.001), _chain_events(1, 0, 10.0, 0.002)
    merged = {name: sorted(fast.get(name, []) + slow.get(name, [])) for name in set(fast) | set(slow)}
    # A Fetch of follower 2 answered before the write was sent belongs to no round trip of it.
    merged["broker-1 FetchRequest replica-2 out"].insert(0, 9.0)
    merged["broker-1 ProduceRequest out"] = [10.030]  # after both followers' next Fetch
    [chain] = breakdown(merged, leader=1, followers=[2, 0], writes=[(10.0, 10.031)])
    assert len(chain) == len(CHAIN)
    assert chain[2] == 10.0 + 2 * 0.002  # follower 0's parked Fetch answered: it moved the HW last
    assert chain[-3] == 10.0 + 10 * 0.002 and chain[-1] == 10.031


def test_a_write_missing_an_event_is_left_out():
    events = _chain_events(1, 2, 10.0, 0.001)
    del events["broker-2 FollowerAppendRequest resolved"]
    assert breakdown(events, leader=1, followers=[2], writes=[(10.0, 10.02)]) == []
