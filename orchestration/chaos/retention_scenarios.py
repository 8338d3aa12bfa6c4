"""The failover matrix's retention row: a topic under time retention (``retention.ms``) written at a
steady rate while its leader broker is killed and restarted. Retention deletes old segments on
every replica and moves the log start offset before, during and after the failover. The checker is
told the topic's retention.ms (``check(..., retention_ms=...)``): a value more than retention.ms
older than the read that passed it may be gone; every value retention still had to keep must be
read, so a log start offset that moved too far (on the leader, or carried to a follower that then
leads) is a lost write.

Retention is checked every second here (``log.retention.check.interval.ms``) and segments are
small, so segments expire while the load runs.
"""
from __future__ import annotations

from orchestration.chaos.runner import IDEMPOTENT, Run, Scenario

TOPIC = "retained"
RETENTION_MS = 10_000
TOPIC_CONFIG = {"retention.ms": str(RETENTION_MS), "segment.bytes": "8192", "min.insync.replicas": "2"}
CONFIG = {"log.retention.check.interval.ms": "1000"}
RATE_PER_S = 100
# Retention is judged on records' age: give it time to delete before and after the kill.
EXPIRY_TIMEOUT_S = 90


def _log_start(run: Run, broker_id: int) -> int:
    view = run.broker_view(broker_id, TOPIC)
    return -1 if view is None else view["log_start_offset"]


def _leader_killed_under_retention(run: Run) -> None:
    """Load runs until retention has moved the leader's log start; the leader is killed (Ray
    restarts it) and a follower leads; the load goes on until the new leader's retention has moved
    its log start again; then everything from each log start to the high watermark is read."""
    run.create_topic(TOPIC, config=TOPIC_CONFIG)
    run.wait_isr(TOPIC, 3)
    leader = run.leader(TOPIC)
    load = run.start_load(TOPIC, producers=1, rate_per_s=RATE_PER_S, partition=0)
    run.wait(lambda: _log_start(run, leader) > 0, f"retention to move broker {leader}'s log start",
             EXPIRY_TIMEOUT_S)
    start_before = _log_start(run, leader)
    run.faults.kill("broker", leader, restart=True)
    run.note(f"killed broker {leader} with its log start at {start_before}")
    successor = run.wait_leader(TOPIC, lambda new: new != leader, "a surviving replica to lead")
    start_at_takeover = _log_start(run, successor)
    run.wait(lambda: _log_start(run, successor) > max(start_at_takeover, start_before),
             f"retention to move broker {successor}'s log start as leader", EXPIRY_TIMEOUT_S)
    load.stop()
    run.wait_isr(TOPIC, 3, timeout_s=EXPIRY_TIMEOUT_S)
    run.require(load.acknowledged > 0, "the load was acknowledged throughout", f"{load.acknowledged} acknowledged")
    start = _log_start(run, run.leader(TOPIC))
    run.require(start > start_before, "the log start moved past what it was at the kill",
                f"{start_before} at the kill, {start} at the end")
    run.read_all(TOPIC)


RETENTION_SCENARIOS: list[Scenario] = [
    Scenario(name="leader-killed-under-retention", title="the leader broker killed while time retention "
             "deletes old segments under load", criterion="every acknowledged value retention.ms still had to keep "
             "is read back (the checker's retention rule); the log start moved on the old and the new leader; "
             "nothing else is anomalous", script=_leader_killed_under_retention, config=CONFIG, slow=True,
             producer_modes=(IDEMPOTENT,)),
]
