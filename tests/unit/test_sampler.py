"""Proves the sampler turns brokers' replica views and batch digests into the samples the checker
judges (one per claimed leadership, digests compared only among the leader's reachable ISR below
its high watermark), by running its pure functions on hand-made broker states, writing the samples
through HistoryWriter and checking them, and by driving its thread with fake collection."""
from __future__ import annotations

import threading

import pytest

from orchestration.chaos.checker import INVARIANT_KINDS, check
from orchestration.history import HistoryWriter, read_history
from orchestration.chaos.sampler import Sampler, build_samples, digest_requests, digests_agree

TOPIC = "t"


def view(partition=0, *, leader, epoch, isr, hw, leo, is_leader, topic=TOPIC, replicas=(0, 1, 2), start=0):
    """One replica as ``BrokerActor.describe_partitions`` reports it."""
    return {"topic": topic, "partition": partition, "leader": leader, "leader_epoch": epoch,
            "replicas": list(replicas), "isr": list(isr), "high_watermark": hw, "log_end_offset": leo,
            "log_start_offset": start, "is_leader": is_leader}


def batches(*ranges, epoch=1, crc_of=None):
    """Digest rows (base, last, leader epoch, crc); the crc is a function of the range unless a
    range is listed in ``crc_of`` with another crc, as a diverged replica's batch would be."""
    crc_of = crc_of or {}
    return [(base, last, epoch, crc_of.get((base, last), base * 1000 + last)) for base, last in ranges]


TEN = [(0, 9), (10, 19), (20, 29)]

# Each case: broker states, digests for partition 0, and the samples expected (leader,
# leader_epoch, isr, replica ids, digests flag), in order.
CASES = {
    "one leader, replicas in sync": (
        {0: [view(leader=0, epoch=3, isr=[0, 1, 2], hw=30, leo=30, is_leader=True)],
         1: [view(leader=0, epoch=3, isr=[0, 1, 2], hw=30, leo=30, is_leader=False)],
         2: [view(leader=0, epoch=3, isr=[0, 1, 2], hw=20, leo=30, is_leader=False)]},
        {0: batches(*TEN), 1: batches(*TEN), 2: batches(*TEN)},
        [(0, 3, [0, 1, 2], [0, 1, 2], True)]),
    "two leaders in one epoch": (
        {0: [view(leader=0, epoch=5, isr=[0, 1], hw=20, leo=20, is_leader=True)],
         1: [view(leader=1, epoch=5, isr=[1, 2], hw=20, leo=20, is_leader=True)],
         2: [view(leader=1, epoch=5, isr=[1, 2], hw=20, leo=20, is_leader=False)]},
        {0: batches(*TEN[:2]), 1: batches(*TEN[:2]), 2: batches(*TEN[:2])},
        [(0, 5, [0, 1], [0, 1, 2], True), (1, 5, [1, 2], [0, 1, 2], True)]),
    "deposed leader still claims an older epoch": (
        {0: [view(leader=0, epoch=4, isr=[0, 1, 2], hw=20, leo=25, is_leader=True)],
         1: [view(leader=1, epoch=5, isr=[1, 2], hw=20, leo=30, is_leader=True)],
         2: [view(leader=1, epoch=5, isr=[1, 2], hw=20, leo=30, is_leader=False)]},
        {0: batches((0, 9), (10, 19), (20, 24)), 1: batches(*TEN), 2: batches(*TEN)},
        [(0, 4, [0, 1, 2], [0, 1, 2], True), (1, 5, [1, 2], [0, 1, 2], True)]),
    "lagging ISR follower: agree on the common prefix": (
        {0: [view(leader=0, epoch=2, isr=[0, 1, 2], hw=20, leo=30, is_leader=True)],
         1: [view(leader=0, epoch=2, isr=[0, 1, 2], hw=10, leo=20, is_leader=False)],
         2: [view(leader=0, epoch=2, isr=[0, 1, 2], hw=20, leo=25, is_leader=False)]},
        {0: batches((0, 9), (10, 19), (20, 24), (25, 29)), 1: batches((0, 9), (10, 19)),
         2: batches((0, 9), (10, 19), (20, 24))},
        [(0, 2, [0, 1, 2], [0, 1, 2], True)]),
    "ISR member diverges below the HW": (
        {0: [view(leader=0, epoch=2, isr=[0, 1, 2], hw=30, leo=30, is_leader=True)],
         1: [view(leader=0, epoch=2, isr=[0, 1, 2], hw=30, leo=30, is_leader=False)],
         2: [view(leader=0, epoch=2, isr=[0, 1, 2], hw=30, leo=30, is_leader=False)]},
        {0: batches(*TEN), 1: batches(*TEN), 2: batches(*TEN, crc_of={(10, 19): 7})},
        [(0, 2, [0, 1, 2], [0, 1, 2], False)]),
    "out-of-ISR replica with a divergent tail is not compared": (
        {0: [view(leader=0, epoch=2, isr=[0, 1], hw=30, leo=30, is_leader=True)],
         1: [view(leader=0, epoch=2, isr=[0, 1], hw=30, leo=30, is_leader=False)],
         2: [view(leader=0, epoch=2, isr=[0, 1], hw=10, leo=30, is_leader=False)]},
        {0: batches(*TEN), 1: batches(*TEN), 2: batches((0, 9), (10, 14), (15, 29), epoch=1)},
        [(0, 2, [0, 1], [0, 1, 2], True)]),
    "no broker claims leadership": (
        {0: [view(leader=-1, epoch=6, isr=[0], hw=20, leo=20, is_leader=False)],
         1: [view(leader=0, epoch=5, isr=[0, 1], hw=20, leo=30, is_leader=False)]},
        {},
        [(None, 6, [0], [0, 1], True)]),
    "unreachable broker is missing, its divergence unseen": (
        {0: [view(leader=0, epoch=3, isr=[0, 1, 2], hw=30, leo=30, is_leader=True)],
         1: [view(leader=0, epoch=3, isr=[0, 1, 2], hw=30, leo=30, is_leader=False)]},
        {0: batches(*TEN), 1: batches(*TEN)},
        [(0, 3, [0, 1, 2], [0, 1], True)]),
    "leader's digest missing: nothing judged": (
        {0: [view(leader=0, epoch=3, isr=[0, 1], hw=30, leo=30, is_leader=True)],
         1: [view(leader=0, epoch=3, isr=[0, 1], hw=30, leo=30, is_leader=False)]},
        {1: batches((0, 9), crc_of={(0, 9): 1})},
        [(0, 3, [0, 1], [0, 1], True)]),
}


def summarize(samples):
    return [(s["leader"], s["leader_epoch"], s["isr"], sorted(s["replicas"]), s["digests_agree_below_hw"])
            for s in samples]


@pytest.mark.parametrize("name", CASES)
def test_build_samples(name):
    states, digests, expected = CASES[name]
    samples = build_samples(states, {(TOPIC, 0): digests})
    assert summarize(samples) == expected
    for s in samples:
        assert (s["topic"], s["partition"]) == (TOPIC, 0)
        for broker_id, replica in s["replicas"].items():
            reported = states[broker_id][0]
            assert replica == {"log_end_offset": reported["log_end_offset"],
                               "high_watermark": reported["high_watermark"]}


def write_and_check(samples, path, time_s=1.0):
    with HistoryWriter(path) as history:
        for value in samples:
            history.sample(**value, time=time_s)
    events = list(read_history(path))
    assert [e["value"]["leader"] for e in events] == [s["leader"] for s in samples]
    return check(events)


@pytest.mark.parametrize("name, kinds", [
    ("one leader, replicas in sync", set()),
    ("two leaders in one epoch", {"multiple-leaders-in-epoch"}),
    ("deposed leader still claims an older epoch", set()),
    ("lagging ISR follower: agree on the common prefix", set()),
    ("ISR member diverges below the HW", {"replicas-diverge-below-hw"}),
    ("out-of-ISR replica with a divergent tail is not compared", set()),
    ("no broker claims leadership", set()),
])
def test_samples_round_trip_through_the_history_into_the_checker(tmp_path, name, kinds):
    states, digests, _ = CASES[name]
    report = write_and_check(build_samples(states, {(TOPIC, 0): digests}), tmp_path / "history.jsonl")
    assert report.kinds() & set(INVARIANT_KINDS) == kinds
    assert report.stats["samples"] == len(CASES[name][2])


@pytest.mark.parametrize("digests, end, agree", [
    ([batches(*TEN), batches(*TEN)], 30, True),
    ([batches(*TEN), batches(*TEN, crc_of={(10, 19): 7})], 30, False),
    ([batches(*TEN), batches(*TEN, crc_of={(20, 29): 7})], 20, True),  # differs only at/above end
    ([batches(*TEN), batches(*TEN, crc_of={(20, 29): 7})], 29, True),  # the batch straddles end
    ([batches(*TEN), batches((0, 9), (10, 19))], 30, True),  # one digest stops earlier
    ([batches(*TEN), batches((10, 19), (20, 29))], 30, True),  # one starts later (log start, window)
    ([batches(*TEN), batches((10, 19), (20, 29), crc_of={(10, 19): 7})], 30, False),
    ([batches(*TEN), batches((0, 9), (10, 14), (15, 29))], 30, False),  # other boundaries below end
    ([batches(*TEN), batches((0, 9), (10, 14), (15, 29))], 10, True),  # ... but only above it
    ([batches(*TEN), batches(*TEN, epoch=2)], 30, False),  # same offsets, other leader epoch
    ([batches(*TEN), []], 30, True),  # nothing in common
    ([batches(*TEN)], 30, True),
    ([[list(row) for row in batches(*TEN)], batches(*TEN)], 30, True),  # rows as lists, as JSON gives
])
def test_digests_agree(digests, end, agree):
    assert digests_agree(digests, end) is agree


def test_topics_filter_skips_consumer_offsets_unless_named():
    states = {0: [view(leader=0, epoch=1, isr=[0], hw=0, leo=0, is_leader=True),
                  view(leader=0, epoch=1, isr=[0], hw=0, leo=0, is_leader=True, topic="__consumer_offsets"),
                  view(1, leader=0, epoch=1, isr=[0], hw=0, leo=0, is_leader=True, topic="other")]}
    assert [(s["topic"], s["partition"]) for s in build_samples(states, {})] == [("other", 1), (TOPIC, 0)]
    assert [s["topic"] for s in build_samples(states, {}, topics=["other"])] == ["other"]
    assert [s["topic"] for s in build_samples(states, {}, topics=["__consumer_offsets"])] == ["__consumer_offsets"]


def test_digest_requests_cover_the_leader_and_its_reachable_isr_up_to_its_hw():
    states, _, _ = CASES["deposed leader still claims an older epoch"]
    # Broker 0 (epoch 4, HW 20) lists 0, 1, 2; broker 1 (epoch 5, HW 20) lists 1, 2.
    assert digest_requests(states, None, None) == {(TOPIC, 0, b): (0, 20) for b in (0, 1, 2)}
    states, _, _ = CASES["out-of-ISR replica with a divergent tail is not compared"]
    assert digest_requests(states, None, 8) == {(TOPIC, 0, 0): (22, 30), (TOPIC, 0, 1): (22, 30)}
    states, _, _ = CASES["unreachable broker is missing, its divergence unseen"]
    assert set(digest_requests(states, None, None)) == {(TOPIC, 0, 0), (TOPIC, 0, 1)}
    states, _, _ = CASES["no broker claims leadership"]
    assert digest_requests(states, None, None) == {}
    empty = {0: [view(leader=0, epoch=1, isr=[0, 1], hw=0, leo=5, is_leader=True)],
             1: [view(leader=0, epoch=1, isr=[0, 1], hw=0, leo=5, is_leader=False)]}
    assert digest_requests(empty, None, None) == {}  # HW 0: nothing committed to compare


def test_two_claimants_ask_each_replica_once_for_the_widest_range():
    states = {0: [view(leader=0, epoch=5, isr=[0, 2], hw=12, leo=20, is_leader=True)],
              1: [view(leader=1, epoch=5, isr=[1, 2], hw=30, leo=30, is_leader=True)],
              2: [view(leader=1, epoch=5, isr=[1, 2], hw=30, leo=30, is_leader=False)]}
    assert digest_requests(states, None, 10) == {(TOPIC, 0, 0): (2, 12), (TOPIC, 0, 1): (20, 30),
                                                 (TOPIC, 0, 2): (2, 30)}


class FakeSampler(Sampler):
    """The Sampler with its two Ray calls replaced: collection advances the clock, or fails."""

    def __init__(self, history, clock, fail_rounds=0):
        super().__init__(cluster=None, history=history, topics=None, interval_s=0.01, call_timeout_s=0.1)
        self.clock = clock
        self.fail_rounds = fail_rounds
        self.collected = threading.Event()

    def _describe_all(self):
        self.clock.advance(1.0)  # collecting takes time: the sample must be stamped before it
        if self.fail_rounds:
            self.fail_rounds -= 1
            raise RuntimeError("describe blew up")
        self.collected.set()
        states, _, _ = CASES["one leader, replicas in sync"]
        return states

    def _digests(self, wanted):
        assert set(wanted) == {(TOPIC, 0, b) for b in (0, 1, 2)}
        return {(TOPIC, 0): CASES["one leader, replicas in sync"][1]}


class Clock:
    def __init__(self):
        self.now = 100.0
        self.lock = threading.Lock()

    def __call__(self):
        with self.lock:
            return self.now

    def advance(self, seconds):
        with self.lock:
            self.now += seconds


def test_sample_once_stamps_the_time_before_collecting(tmp_path):
    clock = Clock()
    with HistoryWriter(tmp_path / "h.jsonl", clock=clock) as history:
        clock.advance(2.0)
        events = FakeSampler(history, clock).sample_once()
    assert [e["time"] for e in events] == [2.0]
    assert [e["time"] for e in read_history(tmp_path / "h.jsonl")] == [2.0]


def test_thread_counts_failed_rounds_and_keeps_sampling(tmp_path):
    clock = Clock()
    with HistoryWriter(tmp_path / "h.jsonl", clock=clock) as history:
        sampler = FakeSampler(history, clock, fail_rounds=2)
        with sampler:
            assert sampler.collected.wait(timeout=10), "the thread never got past the failing rounds"
        assert not sampler._thread.is_alive()
        assert sampler.errors == 2
        assert sampler.rounds >= 1 and sampler.samples_written == sampler.rounds
    report = check(read_history(tmp_path / "h.jsonl"))
    assert report.stats["samples"] == sampler.samples_written and report.valid
