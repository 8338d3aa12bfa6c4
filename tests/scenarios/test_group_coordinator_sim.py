"""Proves, in the deterministic simulator running the shipped group coordinator driver, that a
coordinator whose read of a __consumer_offsets partition fails during a load (the broker slow,
restarting, or its answer lost) retries the read and goes on to coordinate the partition's groups,
instead of answering COORDINATOR_LOAD_IN_PROGRESS until the next leadership change."""
from __future__ import annotations

import pytest

from orchestration.simulation.simulation import Simulation


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_load_whose_read_is_lost_is_retried_and_the_group_forms(seed):
    sim = Simulation(brokers=[0, 1, 2], seed=seed, group_coordinators=True)
    # Every coordinator's first read of its offsets partition is answered into the void.
    sim.drop_matching("first-reads", count=3, message="OffsetsLogReadResponse")
    sim.create_topic("t", partitions=2, replication_factor=3)
    member = sim.add_consumer("a", "g", ["t"])
    sim.run_until(lambda: member.state == "stable", limit_ms=120_000, what="the consumer stable in its group")
    assert member.assignment == (("t", 0), ("t", 1))
    assert sim.network.rules["first-reads"].matched == 3, "the first reads' answers were lost"
