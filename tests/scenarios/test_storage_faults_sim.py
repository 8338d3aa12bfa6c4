"""Proves a leader whose disk fills up (or fails a write or an fsync) under acks=all load loses no
acknowledged record: its log directory goes offline, nothing after the failure is acknowledged,
it halts and is restarted with a healthy disk, leadership moves to another ISR member, and the
restarted broker recovers what it really wrote and rejoins the ISR; run in the seeded simulator
over the shipped cores and drivers, with the simulator's history checker."""
from __future__ import annotations

import pytest

from actors.core.log.storage_faults import DISK_FULL, FSYNC_ERROR, WRITE_ERROR
from orchestration.simulation.random_faults import RunOptions, run_seed
from orchestration.simulation.simulation import Simulation

CONFIG = {"min.insync.replicas": "2", "replica.lag.time.max.ms": "2000",
          "unclean.leader.election.enable": "false", "log.flush.offset.checkpoint.interval.ms": "200"}


@pytest.mark.parametrize("fault", [DISK_FULL, WRITE_ERROR, FSYNC_ERROR])
def test_a_leader_whose_disk_fails_under_acks_all_load_loses_nothing_acknowledged(fault):
    sim = Simulation(config=CONFIG, seed=7)
    sim.create_topic("t", replication_factor=3)
    for index in range(5):
        assert sim.produce("t", 0, [f"before-{index}"], acks="all").status == "acked"
    leader, epoch = sim.leader("t"), sim.leader_epoch("t")
    incarnation = sim.nodes[f"broker:{leader}"].incarnation
    sim.fail_storage(leader, fault, room_bytes=40)
    during = [sim.produce("t", 0, [f"during-{i}"], acks="all", wait=False) for i in range(20)]
    sim.run_until(lambda: all(r.status != "pending" for r in during), limit_ms=60_000,
                  what="every send during the fault answered")
    # A failed write halts it at once; a failed fsync at its next flush (the recovery-point
    # checkpoint, every 200 ms), which may come after the sends were answered.
    sim.run_until(lambda: sim.nodes[f"broker:{leader}"].incarnation > incarnation, limit_ms=30_000,
                  what="the broker halted on its failed disk and restarted")
    if fault != FSYNC_ERROR:  # the first write fails: nothing sent to that leader after it is acknowledged
        assert all(r.status == "error" for r in during), [(r.status, r.error) for r in during]
    def led_anew() -> bool:
        new_leader = sim.leader("t")
        replica = sim.replica(new_leader, "t") if new_leader >= 0 else None
        return sim.leader_epoch("t") > epoch and replica is not None and replica.leader_epoch == sim.leader_epoch("t")
    sim.run_until(led_anew, limit_ms=30_000, what="a new leader elected and leading")
    assert sim.leader("t") != leader, "leadership moved off the failed broker"
    after = sim.produce("t", 0, ["after"], acks="all")
    assert after.status == "acked", after.error
    sim.run_until(lambda: sorted(sim.isr("t")) == [0, 1, 2], limit_ms=60_000, what="the ISR full again")
    sim.run_until_quiet()
    verdict = sim.check("t")
    assert verdict["lost"] == [] and verdict["divergent_offsets"] == [], verdict
    acknowledged = {v for t, p, o, v in sim.acknowledged}
    assert {f"before-{i}" for i in range(5)} | {"after"} <= acknowledged


def test_random_schedules_with_storage_faults_lose_nothing_acknowledged():
    for seed in (1, 2, 3):
        result = run_seed(RunOptions(seed=seed, faults=("storage-fault", "crash", "restart")))
        assert result.passed, (result.verdict, result.detail, result.options.replay_command(), result.schedule[-20:])
        assert any("storage fault" in step for step in result.schedule), result.schedule
