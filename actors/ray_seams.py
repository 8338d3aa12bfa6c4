"""The seams of actors/drivers/seams.py on Ray: what every Ray shell plugs its driver into.

Theory of operation. ``RayClock`` reads the monotonic clock and turns ``wake_at`` into an event
loop timer that calls the shell's wake-up (a deadline already pending is not armed twice; at most
``TIMERS_PENDING_MAX`` are pending, past that the shell's periodic tick stands in). ``RayEventLog``
sends log lines to loguru and ``Metric`` effects to Ray's metrics (a gauge, a counter, or a
histogram, by name; a counter's increases summed for up to ``COUNTER_FLUSH_INTERVAL_S``).
``RayMessenger`` runs each call as a task on the actor's event loop: ``invoke`` (the shell's: which
actor, which method, through the network-fault seam or not) is awaited, and its answer, or
``REQUEST_TIMED_OUT`` / ``NETWORK_EXCEPTION`` for a call that timed out or raised, goes to the
driver's ``on_reply`` on the loop, so the driver is never entered twice at once. Stopping the
messenger cancels its calls in flight. ``RayStorageWorker`` runs a driver's storage work (fsyncs,
checkpoint writes) on one executor thread of its own, in the order given, and reports each back on
the event loop (after the shell's ``gate``: a paused broker hears nothing), so a slow disk never
stalls the requests the loop serves; ``drain`` waits for the work already given, before a clean
shutdown writes the same files.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import time
from collections.abc import Awaitable, Callable
from typing import Any

from loguru import logger

from actors.core.metrics import COUNTER, GAUGE, HISTOGRAM, LATENCY_BOUNDARIES_MS, description_of, kind_of
from actors.drivers.seams import CALL_TIMED_OUT, PEER_UNREACHABLE, Reply

TIMERS_PENDING_MAX = 1_000
# How often ``RayEventLog`` exports the counter increases it added up (see there).
COUNTER_FLUSH_INTERVAL_S = 1.0
# How often ``RayEventLog`` sets each gauge's last value again (see there).
GAUGE_REFRESH_INTERVAL_S = 10.0
_metrics: dict[str, Any] = {}


def monotonic_ms() -> int:
    return int(time.monotonic() * 1000)


class RayClock:
    def __init__(self, on_wakeup: Callable[[], None], what: str) -> None:
        self._on_wakeup = on_wakeup
        self._what = what
        self._pending: dict[int, asyncio.TimerHandle] = {}

    def now_ms(self) -> int:
        return monotonic_ms()

    def wake_at(self, deadline_ms: int) -> None:
        if deadline_ms in self._pending or len(self._pending) >= TIMERS_PENDING_MAX:
            return
        delay_s = max(0.0, (deadline_ms - monotonic_ms()) / 1000)
        self._pending[deadline_ms] = asyncio.get_running_loop().call_later(delay_s, self._fire, deadline_ms)

    def _fire(self, deadline_ms: int) -> None:
        self._pending.pop(deadline_ms, None)
        try:
            self._on_wakeup()
        except Exception:
            logger.exception("{}: a timer's wake-up failed", self._what)

    def cancel_all(self) -> None:
        for handle in self._pending.values():
            handle.cancel()
        self._pending.clear()


async def tick_forever(interval_s: float, tick: Callable[[], Any], what: str) -> None:
    """The shell's periodic wake-up, which also covers a lost timer."""
    while True:
        await asyncio.sleep(interval_s)
        try:
            result = tick()
            if asyncio.iscoroutine(result):
                await result
        except Exception:
            logger.exception("{} tick failed", what)


def export_to_ray(name: str, kind: str, value: float, tags: tuple[tuple[str, str], ...]) -> None:
    """Export one metric value to Ray's metrics by its kind (actors/core/metrics.py): set a gauge,
    increase a counter, or observe a histogram."""
    if name not in _metrics:
        from ray.util.metrics import Counter, Gauge, Histogram
        keys = tuple(k for k, _ in tags)
        description = description_of(name)
        if kind == HISTOGRAM:
            _metrics[name] = Histogram(name, description=description, boundaries=list(LATENCY_BOUNDARIES_MS),
                                       tag_keys=keys)
        else:
            _metrics[name] = (Counter if kind == COUNTER else Gauge)(name, description=description, tag_keys=keys)
    if kind == HISTOGRAM:
        _metrics[name].observe(value, tags=dict(tags))
    elif kind == COUNTER:
        _metrics[name].inc(value, tags=dict(tags))
    else:
        _metrics[name].set(value, tags=dict(tags))


class RayEventLog:
    """Log lines to loguru; ``Metric`` effects to ``export`` (Ray's metrics).

    Counters are added up per (name, tags) and exported as one increase per
    ``counter_flush_interval_s``: every fetch and produce increases counters, and each export is a
    call into Ray's metrics library that costs more than adding up (Ray itself reports metrics to
    its agent only every few seconds, so a scrape sees no difference). Gauges and histograms are
    exported as they come. Without a running event loop (no timer to flush on), counters too.

    Each gauge's last value is set again every ``gauge_refresh_interval_s``: Ray's metrics agent
    stops exporting a process's metrics once that process has reported nothing new for a while
    (a controller's gauges, set at its first events and then steady, were gone from the endpoint
    within 40 s), while a Kafka gauge is there whenever it is scraped."""

    def __init__(self, export: Callable[[str, str, float, tuple], None] = export_to_ray,
                 counter_flush_interval_s: float = COUNTER_FLUSH_INTERVAL_S,
                 gauge_refresh_interval_s: float = GAUGE_REFRESH_INTERVAL_S) -> None:
        self._export = export
        self._counter_flush_interval_s = counter_flush_interval_s
        self._gauge_refresh_interval_s = gauge_refresh_interval_s
        self._counts: dict[tuple[str, tuple], float] = {}
        self._gauges: dict[tuple[str, tuple], float] = {}  # each gauge's last value
        self._flush_armed = False
        self._refresh_armed = False

    def log(self, level: str, message: str) -> None:
        logger.log(level.upper(), message)

    def metric(self, name: str, value: float, tags: tuple[tuple[str, str], ...]) -> None:
        kind = kind_of(name)
        if kind == GAUGE:
            self._gauges[(name, tags)] = value
            self._arm_refresh()
        if kind != COUNTER:
            self._export(name, kind, value, tags)
        elif value > 0:  # Ray's counters only go up
            key = (name, tags)
            self._counts[key] = self._counts.get(key, 0) + value
            self._arm_flush()

    def _arm_flush(self) -> None:
        if self._flush_armed:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no event loop to flush on later: export now
            self.flush()
            return
        self._flush_armed = True
        loop.call_later(self._counter_flush_interval_s, self.flush)

    def _arm_refresh(self) -> None:
        if self._refresh_armed:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no event loop to refresh on: the gauge stays as Ray keeps it
            return
        self._refresh_armed = True
        loop.call_later(self._gauge_refresh_interval_s, self.refresh_gauges)

    def refresh_gauges(self) -> None:
        """Set every gauge's last value again, and arm the next refresh."""
        self._refresh_armed = False
        self._export_each(GAUGE, dict(self._gauges))
        self._arm_refresh()

    def flush(self) -> None:
        """Export the counter increases added up since the last flush."""
        self._flush_armed = False
        counts, self._counts = self._counts, {}
        self._export_each(COUNTER, counts)

    def _export_each(self, kind: str, values: dict[tuple[str, tuple], float]) -> None:
        # A timer's callback: one metric Ray refuses must not stop the others, nor the timer.
        for (name, tags), value in values.items():
            try:
                self._export(name, kind, value, tags)
            except Exception:
                logger.exception("exporting {} failed", name)


class RayMessenger:
    """Calls as event-loop tasks; a shell gives ``invoke`` (and ``tell``/``start``/``stop`` if it needs them)."""

    def __init__(self, what: str, invoke: Callable[[str, Any, float], Awaitable[Any]]) -> None:
        self._what = what
        self._invoke = invoke
        self._tasks: set[asyncio.Task] = set()

    def call(self, destination: str, request: Any, *, timeout_ms: int, on_reply: Reply) -> None:
        self.spawn(self._call(destination, request, timeout_ms / 1000, on_reply))

    async def _call(self, destination: str, request: Any, timeout_s: float, on_reply: Reply) -> None:
        try:
            response = await asyncio.wait_for(self._invoke(destination, request, timeout_s), timeout_s)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            logger.debug("{}: {} to {} failed: {!r}", self._what, type(request).__name__, destination, exc)
            response = CALL_TIMED_OUT if isinstance(exc, asyncio.TimeoutError) else PEER_UNREACHABLE
        try:
            on_reply(response)
        except Exception:
            logger.exception("{}: handling the answer to {} failed", self._what, type(request).__name__)

    def spawn(self, coroutine: Awaitable[Any]) -> asyncio.Task:
        task = asyncio.get_running_loop().create_task(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def cancel_all(self) -> None:
        for task in list(self._tasks):
            task.cancel()


class RayStorageWorker:
    """``StorageWorker`` on one thread: works run one at a time, in order, off the event loop."""

    def __init__(self, what: str, gate: Callable[[], Awaitable[Any]] | None = None) -> None:
        self._what = what
        self._gate = gate
        self._executor = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix=what)
        self._tasks: set[asyncio.Task] = set()

    def run(self, work: Callable[[], None], on_done: Callable[[str | None], None]) -> None:
        loop = asyncio.get_running_loop()
        task = loop.create_task(self._run(loop.run_in_executor(self._executor, work), on_done))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _run(self, running: asyncio.Future, on_done: Callable[[str | None], None]) -> None:
        error = None
        try:
            await running
        except Exception as exc:
            logger.exception("{}: storage work failed", self._what)
            error = f"{type(exc).__name__}: {exc}"
        if self._gate is not None:
            await self._gate()
        try:
            on_done(error)
        except Exception:
            logger.exception("{}: handling the end of a storage work failed", self._what)

    async def drain(self) -> None:
        """Wait until every work given so far has run on its thread (the one thread runs works in
        order, so a no-op given now ends after all of them); their reports may still be pending."""
        await asyncio.get_running_loop().run_in_executor(self._executor, lambda: None)

    def shutdown(self) -> None:
        """No more works; the one running finishes on its thread."""
        for task in list(self._tasks):
            task.cancel()
        self._executor.shutdown(wait=False)
