"""The log cleaner in the simulator: one per broker, as the Ray broker starts a ``LogCleanerActor``
(actors/log_cleaner.py), running the same round over the simulated clock and network.

Theory of operation. A ``SimLogCleaner`` is the driver of the node ``cleaner:<broker>``, started
with its broker when ``log.cleaner.enable`` is true (the simulator's default is false, so that a
run without compacted topics steps as it always did) and taken down with it (a Ray actor's child
dies with its owner). A round is the Ray cleaner's loop, step by step:

1. ``idle``: it calls its broker with ``GrabFilthiestLog`` (the Ray broker's ``cleaner_plan``);
   the broker's driver answers with ``grab_filthiest_log`` (a ``CleaningPlan``, which opens a new
   round in the broker's ``LogCleanerManager``) or None, and then the cleaner waits
   ``log.cleaner.backoff.ms``.
2. ``cleaning``: the round takes the simulated time its reads take at
   ``log.cleaner.io.max.bytes.per.second`` (a millisecond with the default, unthrottled); then
   ``carry_out_round`` (actors/core/log/cleaner.py, the function the Ray cleaner runs on its
   thread) reads the planned segments from the broker's storage and writes their ``.cleaned``
   files. Appends, truncations, retention and faults go on meanwhile, so the read may meet a
   segment truncated since the plan, and a storage fault may fail it: the round is dropped and
   the cleaner backs off, as the Ray cleaner does.
3. ``swapping``: it calls its broker with ``LogCleaned``; the broker's driver runs
   ``on_log_cleaned``, whose ``LogCleanerManager.done_cleaning`` swaps the segments in only if
   the round is still the current one and its log was not truncated meanwhile. The answer is the
   broker's log line for the round, kept in ``Simulation.cleaner_rounds``; then it asks again.

Killing the cleaner (``kill_cleaner``) at any phase leaves at most ``.cleaned`` files beside a
whole log: its broker starts another a second later (the Ray broker's watch), whose first plan
supersedes the dead one's round. Killing the broker between the ``.cleaned`` write and the swap
(the ``LogCleaned`` call still on its way) leaves the same, which ``Log.open`` removes on restart.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from actors.core.config import KafkaConfig
from actors.core.errors import ErrorCode, KafkaProtocolError
from actors.core.log.cleaner import CleanedSegments, CleaningPlan, carry_out_round, offset_map_entries

__all__ = ["CleanerRound", "GrabFilthiestLog", "LogCleaned", "SimLogCleaner", "serve_cleaner"]

# A call to the broker that is not answered in this long is given up (the broker is paused or
# partitioned away); the cleaner backs off and asks again.
CLEANER_CALL_TIMEOUT_MS = 30_000
# What a round's log line says about its swap (cleaner_manager.LogCleanerManager.done_cleaning).
OUTCOMES = (("swapped in", "swapped"), ("aborted", "aborted"), ("stale", "stale"))


@dataclass(frozen=True)
class GrabFilthiestLog:
    """The cleaner asks its broker for the next round (the Ray broker's ``cleaner_plan``)."""


@dataclass(frozen=True)
class LogCleaned:
    """The cleaner wrote a round's ``.cleaned`` files (the Ray broker's ``cleaner_done``)."""

    cleaned: CleanedSegments


@dataclass(frozen=True)
class CleanerRound:
    """One round a simulated cleaner carried to its end: ``outcome`` is "swapped", "aborted" (the
    log was truncated meanwhile), "stale" (a newer round or log superseded it), "failed" (the read
    or the ``.cleaned`` write failed) or "lost" (the broker did not answer the hand-over).
    ``planned_bytes`` is the size of the segments the round rewrote as planned, ``cleaned_bytes``
    their size cleaned."""

    at_ms: int
    broker_id: int
    key: Any
    round_id: int
    outcome: str
    planned_bytes: int
    cleaned_bytes: int
    line: str


def serve_cleaner(sim: Any, node: Any, request: Any, respond: Callable[[Any], None]) -> None:
    """The broker's side of its cleaner's calls, on one step of the broker (``node``)."""
    if isinstance(request, GrabFilthiestLog):
        respond(node.driver.grab_filthiest_log())
        return
    assert isinstance(request, LogCleaned), request
    before = len(sim.log_events)
    node.driver.on_log_cleaned(request.cleaned)
    lines = [message for _, name, _, message in sim.log_events[before:] if name == node.name and "log cleaner" in message]
    respond(lines[-1] if lines else "the broker is stopping; nothing swapped")


class SimLogCleaner:
    """The driver of one simulated cleaner node (see the module docstring)."""

    def __init__(self, sim: Any, node: Any, broker: Any, config: KafkaConfig) -> None:
        self._sim, self.node, self._broker = sim, node, broker
        self.broker_id = broker.broker_id
        self.backoff_ms = config.get_int("log.cleaner.backoff.ms")
        self.offset_map_entries = offset_map_entries(config.get_int("log.cleaner.dedupe.buffer.size", 1))
        self.io_bytes_per_s = float(config.get_str("log.cleaner.io.max.bytes.per.second"))
        self.phase = "idle"
        self.rounds = 0
        self._plan: CleaningPlan | None = None

    # ------------------------------------------------------------------------------- phases
    def start(self) -> None:
        self._ask()

    def on_wakeup(self) -> None:
        if self.phase == "idle":
            self._ask()
        elif self.phase == "cleaning":
            self._clean()

    def _call(self, request: Any, on_reply: Callable[[Any], None]) -> None:
        self._sim.call(self.node, self._broker.name, self._broker.incarnation, request, on_reply,
                       timeout_ms=CLEANER_CALL_TIMEOUT_MS, timeout_error=ErrorCode.REQUEST_TIMED_OUT)

    def _ask(self) -> None:
        self.phase = "asking"
        self._call(GrabFilthiestLog(), self._on_plan)

    def _back_off(self) -> None:
        self.phase, self._plan = "idle", None
        self.node.timers.add(self._sim.now_ms + self.backoff_ms)

    def _on_plan(self, plan: Any) -> None:
        if not isinstance(plan, CleaningPlan):  # None, or the call failed: the broker is restarting
            self._back_off()
            return
        self.phase, self._plan = "cleaning", plan
        read_bytes = sum(s.size_bytes for s in plan.segments)
        read_ms = 0 if math.isinf(self.io_bytes_per_s) else math.ceil(1000 * read_bytes / self.io_bytes_per_s)
        self.node.timers.add(self._sim.now_ms + max(1, read_ms))
        self._sim.record(f"{self.node.name}: cleaning {plan.key} (round {plan.round_id}, {read_bytes} bytes)")

    def _clean(self) -> None:
        plan = self._plan
        assert plan is not None
        storage = self._sim.storages[self.broker_id]
        try:
            cleaned = carry_out_round(plan, storage, offset_map_entries=self.offset_map_entries)
        except (OSError, KafkaProtocolError, ValueError) as exc:  # a segment gone or cut under it, a disk fault
            self._sim.record(f"{self.node.name}: cleaning {plan.key} failed: {type(exc).__name__}: {exc}")
            self._note(plan, "failed", 0, 0, f"{type(exc).__name__}: {exc}")
            self._back_off()
            return
        by_base = {s.base_offset: s.size_bytes for s in plan.segments}
        planned = sum(by_base[base] for base, _, _ in cleaned.segments)
        written = sum(size for _, _, size in cleaned.segments)
        self.phase = "swapping"
        self._call(LogCleaned(cleaned), lambda answer: self._on_swapped(plan, planned, written, answer))

    def _on_swapped(self, plan: CleaningPlan, planned: int, written: int, answer: Any) -> None:
        if isinstance(answer, ErrorCode):
            self._note(plan, "lost", planned, written, answer.name)
            self._back_off()
            return
        outcome = next((name for words, name in OUTCOMES if words in answer), "stale")
        self._note(plan, outcome, planned, written, answer)
        self.rounds += 1
        self._plan = None
        self._ask()

    def _note(self, plan: CleaningPlan, outcome: str, planned: int, written: int, line: str) -> None:
        self._sim.cleaner_rounds.append(CleanerRound(
            at_ms=self._sim.now_ms, broker_id=self.broker_id, key=plan.key, round_id=plan.round_id,
            outcome=outcome, planned_bytes=planned, cleaned_bytes=written, line=line))
