"""Proves the Ray shells' metrics export (actors/ray_seams.py ``RayEventLog``) adds up counter
increases and exports their sum once per flush interval, while gauges and histograms are exported
as they come: a fetch or a produce increases counters on every request, and each export is a call
into Ray's metrics library. A real asyncio loop and a recording export in place of Ray's; no Ray."""
from __future__ import annotations

import asyncio
import time

from actors.core.metrics import BYTES_IN, BYTES_OUT, MESSAGES_IN, PURGATORY_SIZE, REQUEST_TOTAL_TIME, broker_tags
from actors.ray_seams import RayEventLog

WAIT_LIMIT_S = 10.0
FLUSH_INTERVAL_S = 0.05


class RecordingExport:
    """Stands in for Ray's metrics: every export as (name, kind, value, tags)."""

    def __init__(self) -> None:
        self.exports: list[tuple[str, str, float, tuple]] = []

    def __call__(self, name: str, kind: str, value: float, tags: tuple) -> None:
        self.exports.append((name, kind, value, tags))

    def of(self, name: str) -> list[tuple[float, tuple]]:
        return [(value, tags) for exported, _, value, tags in self.exports if exported == name]


async def wait_for(what: str, condition) -> None:
    deadline = time.monotonic() + WAIT_LIMIT_S
    while not condition():
        assert time.monotonic() < deadline, f"waited {WAIT_LIMIT_S}s for {what}"
        await asyncio.sleep(0.01)


def test_counter_increases_are_exported_summed_once_per_flush_interval():
    async def story() -> None:
        export = RecordingExport()
        log = RayEventLog(export=export, counter_flush_interval_s=FLUSH_INTERVAL_S)
        orders, payments = broker_tags(0, topic="orders"), broker_tags(0, topic="payments")
        for _ in range(3):
            log.metric(BYTES_OUT, 1000, orders)
        log.metric(BYTES_OUT, 7, payments)
        log.metric(BYTES_OUT, 0, payments)  # Ray's counters only go up: nothing to add
        assert export.of(BYTES_OUT) == [], "a counter increase was exported before the flush"
        await wait_for("the first flush of BYTES_OUT", lambda: export.of(BYTES_OUT))
        assert sorted(export.of(BYTES_OUT)) == sorted([(3000, orders), (7, payments)])
        # The next increases wait for the next flush, and only they are exported then.
        log.metric(BYTES_OUT, 5, orders)
        await wait_for("the second flush of BYTES_OUT", lambda: len(export.of(BYTES_OUT)) == 3)
        assert export.of(BYTES_OUT)[-1] == (5, orders)
    asyncio.run(story())


def test_gauges_and_histograms_are_exported_at_once():
    async def story() -> None:
        export = RecordingExport()
        log = RayEventLog(export=export, counter_flush_interval_s=60.0)
        log.metric(REQUEST_TOTAL_TIME, 3, broker_tags(0, request="fetch"))
        log.metric(REQUEST_TOTAL_TIME, 4, broker_tags(0, request="fetch"))
        log.metric(PURGATORY_SIZE, 2, broker_tags(0, delayed_operation="Fetch"))
        assert [value for value, _ in export.of(REQUEST_TOTAL_TIME)] == [3, 4]
        assert [value for value, _ in export.of(PURGATORY_SIZE)] == [2]
    asyncio.run(story())


def test_without_an_event_loop_counters_are_exported_at_once():
    export = RecordingExport()
    log = RayEventLog(export=export)
    tags = broker_tags(0, topic="orders")
    log.metric(BYTES_IN, 100, tags)
    log.metric(MESSAGES_IN, 2, tags)
    assert export.of(BYTES_IN) == [(100, tags)] and export.of(MESSAGES_IN) == [(2, tags)]


def test_flush_exports_what_is_pending_at_once():
    """``flush`` exports what was added up since the last flush at once, and only once."""
    async def story() -> None:
        export = RecordingExport()
        log = RayEventLog(export=export, counter_flush_interval_s=60.0)
        log.metric(BYTES_OUT, 10, broker_tags(0, topic="orders"))
        log.flush()
        assert export.of(BYTES_OUT) == [(10, broker_tags(0, topic="orders"))]
        log.flush()
        assert len(export.of(BYTES_OUT)) == 1, "a flush exported the same increase twice"
    asyncio.run(story())


def test_a_gauge_is_set_again_with_its_last_value_while_it_stays_unchanged():
    # Ray's metrics agent drops a process's metrics once it reports nothing new for a while; a
    # gauge set once (a controller's epoch) must still be on the endpoint minutes later.
    async def story() -> None:
        export = RecordingExport()
        log = RayEventLog(export=export, counter_flush_interval_s=60.0, gauge_refresh_interval_s=FLUSH_INTERVAL_S)
        tags = broker_tags(0)
        log.metric(PURGATORY_SIZE, 4, tags)
        log.metric(PURGATORY_SIZE, 2, tags)
        await wait_for("two refreshes of the purgatory gauge", lambda: len(export.of(PURGATORY_SIZE)) >= 4)
        assert export.of(PURGATORY_SIZE)[:2] == [(4, tags), (2, tags)]
        assert set(export.of(PURGATORY_SIZE)[2:]) == {(2, tags)}, "a refresh set something other than the last value"
    asyncio.run(story())
