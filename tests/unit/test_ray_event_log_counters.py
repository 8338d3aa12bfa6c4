"""The Ray shells' event log exports a counter's increments summed: many increments of one counter
and tag set inside ``COUNTER_FLUSH_S`` reach Ray's metrics as one ``inc`` of their sum, soon after,
on the event loop (a Produce request adds to two counters, and Ray records every ``inc`` through
its metrics library: per request that cost more than counting); outside an event loop, and for
gauges and histograms, each value goes to Ray at once. No Ray: a stand-in metric records the calls."""
from __future__ import annotations

import asyncio

from actors import ray_seams
from actors.core.metrics import BYTES_IN, MESSAGES_IN, REQUEST_TOTAL_TIME, broker_tags


class Recorded:
    def __init__(self) -> None:
        self.calls: list = []

    def inc(self, value, tags):
        self.calls.append(("inc", value, tags))

    def observe(self, value, tags):
        self.calls.append(("observe", value, tags))


def stand_ins(monkeypatch) -> dict:
    recorded = {name: Recorded() for name in (BYTES_IN, MESSAGES_IN, REQUEST_TOTAL_TIME)}
    monkeypatch.setattr(ray_seams, "_metrics", dict(recorded))
    return recorded


async def increments_story(recorded: dict) -> None:
    log = ray_seams.RayEventLog()
    topic_a, topic_b = broker_tags(1, topic="a"), broker_tags(1, topic="b")
    for _ in range(100):
        log.metric(BYTES_IN, 1000, topic_a)
        log.metric(MESSAGES_IN, 10, topic_a)
        log.metric(REQUEST_TOTAL_TIME, 2, broker_tags(1, request="produce"))
    log.metric(BYTES_IN, 5, topic_b)
    log.metric(BYTES_IN, 0, topic_b)  # Ray's counters take only increases: nothing to add
    deadline = asyncio.get_running_loop().time() + 10 * ray_seams.COUNTER_FLUSH_S + 5
    while not recorded[BYTES_IN].calls or not recorded[MESSAGES_IN].calls:
        assert asyncio.get_running_loop().time() < deadline, "the summed increments never reached Ray"
        await asyncio.sleep(0.01)


def test_increments_within_the_flush_interval_reach_ray_as_one_sum_per_counter_and_tags(monkeypatch):
    recorded = stand_ins(monkeypatch)
    asyncio.run(increments_story(recorded))
    assert sorted(recorded[BYTES_IN].calls) == [("inc", 5, {"broker_id": "1", "topic": "b"}),
                                                ("inc", 100_000, {"broker_id": "1", "topic": "a"})]
    assert recorded[MESSAGES_IN].calls == [("inc", 1000, {"broker_id": "1", "topic": "a"})]
    # A histogram keeps every observation.
    assert len(recorded[REQUEST_TOTAL_TIME].calls) == 100


def test_outside_an_event_loop_each_increment_goes_to_ray_at_once(monkeypatch):
    recorded = stand_ins(monkeypatch)
    ray_seams.RayEventLog().metric(BYTES_IN, 7, broker_tags(2, topic="t"))
    assert recorded[BYTES_IN].calls == [("inc", 7, {"broker_id": "2", "topic": "t"})]
