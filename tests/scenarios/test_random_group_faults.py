"""Runs seeded random fault schedules over consumer groups on the simulator (broker kills and
restarts, group coordinator restarts, held messages between a coordinator and its broker, commits
after each) with the shipped group coordinator driver, and checks, after healing, that the group is
stable on one coordinator and the last acknowledged commit is what an offset fetch answers."""
from __future__ import annotations

import random

import pytest

from orchestration.simulation.simulation import Simulation
from orchestration.simulation.network import MessageFilter

BROKERS = (0, 1, 2)
SEEDS = range(1, 5)
ROUNDS = 6
PARTITIONS = (("t", 0), ("t", 1))


def run_schedule(seed: int) -> tuple[Simulation, list, dict, list[str]]:
    chooser = random.Random(seed)
    sim = Simulation(brokers=BROKERS, seed=seed, group_coordinators=True)
    sim.create_topic("t", partitions=2, replication_factor=3)
    members = [sim.add_consumer(name, "g", ["t"]) for name in ("a", "b")]
    acknowledged: dict = {}
    done: list[str] = []
    for index in range(ROUNDS):
        sim.run(chooser.randint(200, 2_000))
        fault, broker = chooser.choice(("kill", "restart", "coordinator", "hold", "none")), chooser.choice(BROKERS)
        done.append(f"{fault} {broker}")
        if fault == "kill" and all(sim.is_up(b) for b in BROKERS):
            sim.kill(broker)
        elif fault == "restart":
            sim.restart(broker)
        elif fault == "coordinator":
            sim.restart_coordinator(broker)
        elif fault == "hold":
            sim.network.add_rule(f"hold-{index}", MessageFilter(source=f"coordinator:{broker}",
                                                                destination=f"broker:{broker}"), count=5)
        for member in members:
            if member.state != "stable":
                continue
            offsets = {tp: 100 * index + len(done) for tp in PARTITIONS}
            outcome = member.commit(offsets)
            sim.run_until(lambda: outcome["errors"] is not None, limit_ms=30_000, what="the commit answered")
            if set(outcome["errors"].values()) == {"NONE"}:
                acknowledged = offsets
    for name in list(sim.network.rules):
        sim.release(name)
    for broker in BROKERS:
        if not sim.is_up(broker):
            sim.restart(broker)
    return sim, members, acknowledged, done


@pytest.mark.parametrize("seed", SEEDS)
def test_random_group_faults_keep_acknowledged_commits(seed):
    sim, members, acknowledged, done = run_schedule(seed)
    schedule = f"seed {seed}: {done}"

    def stable() -> bool:
        coordinators = sim.coordinators_of("g")
        return len(coordinators) == 1 and all(
            m.state == "stable" and m.coordinator == f"coordinator:{coordinators[0]}" for m in members)
    sim.run_until(stable, limit_ms=120_000, what=f"the group stable on one coordinator after {schedule}")
    assert acknowledged, f"no commit was acknowledged, so the schedule proves nothing: {schedule}"
    fetched = members[0].fetch_committed(list(PARTITIONS))
    sim.run_until(lambda: fetched["offsets"] is not None or fetched["error"] is not None, limit_ms=30_000,
                  what="the offset fetch answered")
    assert fetched["offsets"] == acknowledged, f"{schedule}: acknowledged {acknowledged}, fetched {fetched}"
