"""Proves the simulator's incremental invariant checks miss nothing: over seeded random fault
schedules (every fault kind, both truncation policies), after every step of every broker the
replicas whose state changed (high watermark, log end offset, leadership, ISR, or the replica
itself) are among those the step reached, and after every simulation step the partitions whose
leadership the controller changed are among those it wrote; each found by a full diff."""
from __future__ import annotations

import pytest

from orchestration.simulation.nodes import Nodes
from orchestration.simulation.random_faults import RunOptions, run_seed
from orchestration.simulation.simulation import Simulation

SEEDS = (1, 2, 3, 4)


def replica_states(partitions: dict) -> dict:
    return {tp: (id(p), p.high_watermark, p.log_end_offset, p.leader_epoch, p.is_leader, tuple(p.isr))
            for tp, p in dict.items(partitions)}


@pytest.fixture
def cross_checked(monkeypatch):
    step_broker, check_invariants = Nodes._step_broker, Simulation._check_invariants
    leaderships_seen: dict = {}

    def checked_step_broker(self, node, cause, step):
        partitions = node.core.replica_manager.partitions
        if partitions.armed:
            return step_broker(self, node, cause, step)
        before, reached = replica_states(partitions), []

        def watched() -> None:
            try:
                step()
            finally:
                reached.append(set(partitions.before))
        step_broker(self, node, cause, watched)
        after = replica_states(partitions)
        changed = {tp for tp in before.keys() | after.keys() if before.get(tp) != after.get(tp)}
        assert changed <= reached[0], f"{node.name} {cause}: changed {sorted(changed - reached[0])} unnoticed"

    def checked_invariants(self, touched=None):
        leaderships = self.controller.context.leadership
        previous = leaderships_seen.get(id(leaderships), {})
        now = {tp: id(value) for tp, value in dict.items(leaderships)}
        changed = {tp for tp in previous.keys() | now.keys() if previous.get(tp) != now.get(tp)}
        assert changed <= set(leaderships.written), f"leaderships {sorted(changed - set(leaderships.written))} unnoticed"
        leaderships_seen[id(leaderships)] = now
        return check_invariants(self, touched)

    monkeypatch.setattr(Nodes, "_step_broker", checked_step_broker)
    monkeypatch.setattr(Simulation, "_check_invariants", checked_invariants)


@pytest.mark.parametrize("policy", ["leader-epoch", "high-watermark"])
@pytest.mark.parametrize("seed", SEEDS)
def test_every_change_a_step_makes_is_among_what_it_reached(cross_checked, seed, policy):
    result = run_seed(RunOptions(seed=seed, partitions=2, policy=policy, schedule_steps=30))
    assert result.steps > 0 and result.verdict in ("PASS", "LOST", "ANOMALY", "INVARIANT", "GROUP"), result
