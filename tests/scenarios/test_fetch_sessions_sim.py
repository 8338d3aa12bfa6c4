"""Proves that followers replicate through incremental fetch sessions (KIP-227) in the simulator:
with many partitions, a few of them written, every follower converges on the leader's log while
its fetches name only the partitions that moved, and after the leader restarts (its sessions gone)
and a fetcher is killed (its session forgotten) replication still converges."""
from __future__ import annotations

from orchestration.simulation.simulation import Simulation

PARTITIONS = 16


def _converged(sim: Simulation, topic: str) -> bool:
    for partition in range(PARTITIONS):
        ends = {sim.log_end_offset(b, topic, partition) for b in (0, 1, 2)}
        if len(ends) != 1 or sorted(sim.isr(topic, partition)) != [0, 1, 2]:
            return False
    return True


def _sessions_held_for_followers(sim: Simulation) -> int:
    return sum(1 for broker_id in (0, 1, 2) if sim.is_up(broker_id)
               for session in sim.broker(broker_id).replica_manager.fetch_sessions.sessions.values()
               if session.privileged)


def _incremental_fetches(sim: Simulation) -> int:
    """Incremental fetches the live leaders took in followers' sessions (each moved an epoch past 1)."""
    return sum(session.epoch - 1 for broker_id in (0, 1, 2) if sim.is_up(broker_id)
               for session in sim.broker(broker_id).replica_manager.fetch_sessions.sessions.values()
               if session.privileged)


def _whole(sim: Simulation, topic: str) -> None:
    for partition in range(PARTITIONS):
        found = sim.check(topic, partition)
        assert found["lost"] == [] and found["divergent_offsets"] == [], (partition, found)


def test_replication_converges_through_fetch_sessions_across_a_leader_restart_and_a_fetcher_kill():
    sim = Simulation(brokers=[0, 1, 2], config={}, seed=3, latency_ms=(1, 5))
    assert sim.create_topic("t", partitions=PARTITIONS, replication_factor=3) == "NONE"
    sim.run_until(lambda: _converged(sim, "t"), limit_ms=120_000)
    assert _sessions_held_for_followers(sim) > 0, "followers fetch in sessions"

    for value in range(5):
        for partition in (1, 9):
            assert sim.produce("t", partition, [f"v{value}"], acks="all").status == "acked"
    sim.run_until(lambda: _converged(sim, "t"), limit_ms=60_000)
    assert _incremental_fetches(sim) > 0, "fetches after the first are incremental"
    assert sim.log_end_offset(2, "t", 9) == 5 and sim.log_end_offset(0, "t", 1) == 5

    leader = sim.leader("t", 1)
    sim.kill(leader)
    sim.restart(leader)
    sim.run_until(lambda: sim.is_registered(leader), limit_ms=60_000)
    for partition in range(PARTITIONS):
        sim.produce("t", partition, ["after"], acks=1)
    sim.run_until(lambda: _converged(sim, "t"), limit_ms=120_000)
    assert _sessions_held_for_followers(sim) > 0, "followers opened new sessions with the restarted leader"

    follower = next(b for b in (0, 1, 2) if b != sim.leader("t", 9))
    sim.kill_fetcher(follower, sim.leader("t", 9))
    assert sim.produce("t", 9, ["last"], acks="all").status == "acked"
    sim.run_until(lambda: _converged(sim, "t"), limit_ms=120_000)
    _whole(sim, "t")
