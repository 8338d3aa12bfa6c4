"""Proves, in the deterministic simulator with the shipped drivers, that a follower rejoining the
ISR of many partitions costs the controller a few AlterPartitions, not one per partition: each
leader batches its pending ISR changes (one request in flight), and the controller answers each
request with one UpdateMetadata per live broker carrying only the partitions whose ISR changed.
Acknowledged writes survive it and every step keeps the simulator's invariants."""
from __future__ import annotations

import pytest

from actors.core.messages.alter_partition import AlterPartitionRequest
from actors.core.messages.update_metadata import UpdateMetadataRequest
from orchestration.simulation.simulation import Simulation

TOPIC = "t"
PARTITIONS = 24
BROKERS = (0, 1, 2)
REJOINING = 2


def record_requests(sim: Simulation) -> list:
    """Every request posted from now on, in order (the simulator's network is the only way out)."""
    posted: list = []
    post = sim.network.post

    def recording_post(**message):
        posted.append(message["payload"])
        return post(**message)
    sim.network.post = recording_post
    return posted


def isr_settled(sim: Simulation, expected: set[int]) -> bool:
    """Every partition's ISR is ``expected`` in the controller and on its leader, nothing pending."""
    for described in sim.controller.describe_topic(TOPIC):
        leader = sim.replica(described["leader"], TOPIC, described["partition"])
        if (set(described["isr"]) != expected or leader is None or set(leader.isr) != expected
                or leader.pending_isr is not None):
            return False
    return True


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_follower_rejoining_many_isrs_costs_a_few_alter_partitions(seed):
    sim = Simulation(brokers=list(BROKERS), seed=seed)
    assert sim.create_topic(TOPIC, partitions=PARTITIONS, replication_factor=3) == "NONE"
    sim.kill(REJOINING)  # the controller takes it out of every ISR
    sim.run_until(lambda: isr_settled(sim, {0, 1}), limit_ms=30_000, what=f"broker {REJOINING} out of every ISR")
    for index in range(0, PARTITIONS, 3):  # some partitions move on while it is away
        assert sim.produce(TOPIC, index, [f"v{index}"]).status == "acked"

    posted = record_requests(sim)
    sim.restart(REJOINING)
    sim.run_until(lambda: isr_settled(sim, set(BROKERS)), limit_ms=60_000,
                  what=f"broker {REJOINING} back in every ISR")

    alter_partitions = [r for r in posted if isinstance(r, AlterPartitionRequest)]
    proposed = {(t.topic_name, p.partition_index) for r in alter_partitions for t in r.topics for p in t.partitions}
    assert proposed == {(TOPIC, index) for index in range(PARTITIONS)}
    assert len(alter_partitions) < PARTITIONS // 2, (
        f"{len(alter_partitions)} AlterPartitions for {PARTITIONS} ISR expansions: not batched")
    # After the first AlterPartition, every UpdateMetadata answers one (one per live broker each),
    # and carries only partitions an AlterPartition asked to change.
    first = next(i for i, r in enumerate(posted) if isinstance(r, AlterPartitionRequest))
    refreshes = [r for r in posted[first:] if isinstance(r, UpdateMetadataRequest)]
    assert len(refreshes) <= len(BROKERS) * len(alter_partitions)
    for refresh in refreshes:
        carried = {(t.topic_name, s.partition_index) for t in refresh.topic_states for s in t.partition_states}
        assert carried <= proposed and len(carried) < PARTITIONS, "only the changed partitions"
    for index in range(0, PARTITIONS, 3):
        checked = sim.check(TOPIC, index)
        assert checked["lost"] == [] and checked["divergent_offsets"] == [], checked
