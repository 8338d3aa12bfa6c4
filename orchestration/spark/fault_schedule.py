"""The load pipeline's fault steps and producer defaults, shared by the load-consume job
(``orchestration.spark.pipeline``) and the streaming job (``orchestration.spark.streaming``)."""
from __future__ import annotations

import time

from orchestration.spark.workload import Workload

# Sends are not retried, so a retried request cannot write a record twice (which the checker
# would rightly call a duplicate); the producer's own defaults otherwise.
LOAD_PRODUCER_DEFAULTS = {"linger.ms": "5", "retries": "0", "retry.backoff.ms": "100", "request.timeout.ms": "5000",
                          "delivery.timeout.ms": "30000", "max.in.flight.requests.per.connection": "1"}


class FaultSchedule:
    """The workload's fault steps, run by the driver while the load job runs (chaos schedule
    semantics: ``at`` seconds since the load started, or ``after_acks``)."""

    def __init__(self, workload: Workload, run, topic: str) -> None:
        self.steps = list(workload.faults)
        self.run, self.topic = run, topic
        self.previous_target = None
        self.kills: list[tuple[float, int]] = []  # (wall time, partition 0's leader killed)

    def due(self, step: dict, counts: dict, elapsed_s: float) -> bool:
        if "after_acks" in step:
            return counts["acknowledged"] >= int(step["after_acks"])
        return elapsed_s >= float(step["at"])

    def maybe_run(self, counts: dict, elapsed_s: float | None) -> None:
        from orchestration.chaos.schedule import _do, _wait
        while self.steps and elapsed_s is not None and self.due(self.steps[0], counts, elapsed_s):
            step = self.steps.pop(0)
            leader_before = self.run.leader(self.topic)
            fired_at = time.time()
            self.previous_target = _do(self.run, self.topic, step, self.previous_target)
            if step["do"] == "kill" and self.previous_target == leader_before:
                self.kills.append((fired_at, leader_before))
            self.run.note(f"fault: {step['do']} {self.previous_target} at {elapsed_s:.1f}s of load")
            _wait(self.run, self.topic, step.get("wait_for", "none"), leader_before,
                  {"leaders": set(), "isr_min": 99, "epoch": 0})
