"""Runs seeded random fault schedules (broker kills and restarts, fetcher kills, held and dropped messages, acks=all sends after an acknowledged baseline) on the simulator under the leader-epoch policy and checks, after healing, that no acknowledged value is lost and all replicas hold the same log, with the invariants checked after every event."""
from __future__ import annotations

import itertools
import random

import pytest

from orchestration.simulation.simulation import Simulation
from orchestration.simulation.network import MessageFilter

BROKERS = (0, 1, 2)
SEEDS = range(1, 31)
SCHEDULE_STEPS = 40
# Message kinds a fault may hold or drop, as filters over (leader-ish broker b, other broker o).
FILTERS = (
    lambda b, o: MessageFilter(source=f"broker:{b}", destination=f"fetcher:{o}", message="FetchResponse"),
    lambda b, o: MessageFilter(source=f"fetcher:{o}", destination=f"broker:{b}", message="FetchRequest"),
    lambda b, o: MessageFilter(source=f"broker:{b}", destination=f"fetcher:{o}", message="OffsetForLeaderEpochResponse"),
    lambda b, o: MessageFilter(source=f"fetcher:{o}", destination=f"broker:{o}"),
    lambda b, o: MessageFilter(source=f"broker:{b}", destination="controller", message="AlterPartitionRequest"),
    lambda b, o: MessageFilter(source=f"broker:{b}", destination="controller", message="BrokerHeartbeatRequest"),
    lambda b, o: MessageFilter(source=f"channel:{b}", destination=f"broker:{b}"),
)
ACTIONS = ("produce", "run", "kill", "restart", "hold", "drop", "heal", "kill_fetcher")
WEIGHTS = (6, 4, 1, 1.5, 1.5, 1, 1.5, 0.5)


def run_schedule(seed: int) -> tuple[Simulation, list[str]]:
    """Apply a random schedule, then heal everything; returns the simulation and what was done."""
    chooser = random.Random(seed)
    sim = Simulation(brokers=BROKERS, seed=seed, latency_ms=(1, chooser.choice((2, 5, 20))), config={
        "raykafka.truncation.policy": "leader-epoch", "min.insync.replicas": "2",
        "replica.lag.time.max.ms": "2000", "unclean.leader.election.enable": "false"})
    sim.create_topic("t", assignment=[list(BROKERS)])
    # A baseline every fault below must preserve, so that no schedule passes for want of data.
    baseline = sim.produce("t", 0, ["base0", "base1", "base2"], acks="all")
    assert baseline.status == "acked", baseline
    values, done, rules = itertools.count(), [], []
    for index in range(SCHEDULE_STEPS):
        live = [b for b in BROKERS if sim.is_up(b)]
        # With fewer than min.insync.replicas brokers up nothing can be acknowledged: bring one back.
        weights = [w * (6 if a == "restart" and len(live) < 2 else 1) for a, w in zip(ACTIONS, WEIGHTS)]
        action = chooser.choices(ACTIONS, weights=weights)[0]
        if action == "produce":
            batch = [f"v{next(values)}" for _ in range(chooser.randint(1, 3))]
            sim.produce("t", 0, batch, acks="all", wait=False)
            done.append(f"produce {batch}")
        elif action == "run":
            ms = chooser.choice((10, 50, 200, 1000, 3000))
            sim.run(ms)
            done.append(f"run {ms}")
        elif action == "kill" and live:
            broker, clean, notify = chooser.choice(live), chooser.random() < 0.3, chooser.random() < 0.7
            sim.kill(broker, clean=clean, notify_controller=notify)
            done.append(f"kill {broker} clean={clean} notify={notify}")
        elif action == "restart":
            broker, clean = chooser.choice(BROKERS), chooser.random() < 0.3
            sim.restart(broker, clean=clean)
            done.append(f"restart {broker} clean={clean}")
        elif action in ("hold", "drop"):
            b, o = chooser.sample(BROKERS, 2)
            message_filter = chooser.choice(FILTERS)(b, o)
            count = chooser.choice((1, 3, None)) if action == "hold" else chooser.choice((1, 2))
            sim.network.add_rule(f"r{index}", message_filter, action=action, count=count)
            rules.append(f"r{index}")
            done.append(f"{action} r{index} {message_filter} count={count}")
        elif action == "heal" and rules:
            name = rules.pop(chooser.randrange(len(rules)))
            (sim.release if chooser.random() < 0.7 else sim.drop)(name)
            done.append(f"heal {name}")
        elif action == "kill_fetcher" and live:
            broker = chooser.choice(live)
            keys = sorted(sim.fetchers_of(broker))
            if keys:
                key = chooser.choice(keys)
                sim.kill_fetcher(broker, *key)
                done.append(f"kill_fetcher {broker} {key}")
    for name in list(sim.network.rules):
        sim.release(name)
    for broker in BROKERS:
        if not sim.is_up(broker):
            sim.restart(broker)
    sim.run_until(lambda: all(p.status != "pending" for p in sim.produce_results), limit_ms=120_000,
                  what="every send answered")
    sim.run_until(lambda: sorted(sim.isr("t")) == list(BROKERS), limit_ms=120_000, what="a full ISR")
    sim.run_until_quiet()
    return sim, done


@pytest.mark.parametrize("seed", SEEDS)
def test_no_acknowledged_loss_and_no_divergence_under_leader_epochs(seed):
    sim, done = run_schedule(seed)
    report = sim.check("t")
    logs = list(report["logs"].values())
    schedule = "\n  ".join(done)
    assert sim.leader("t") >= 0, f"seed {seed}: no leader after healing; schedule:\n  {schedule}"
    assert report["lost"] == [], f"seed {seed}: lost {report['lost']}; schedule:\n  {schedule}"
    assert report["divergent_offsets"] == [], f"seed {seed}: {report}; schedule:\n  {schedule}"
    assert len(logs) == len(BROKERS) and all(log == logs[0] for log in logs), f"seed {seed}: {report}"
    assert logs[0][:3] == ["base0", "base1", "base2"], f"seed {seed}: {report}"
