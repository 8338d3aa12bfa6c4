"""Proves, in the deterministic simulator with the real cores, that a controller channel whose queue
overflows while its broker is unreachable keeps the request in flight, asks for one resync, and
that its broker then catches up on every change it missed and follows later leader changes."""
from __future__ import annotations

import pytest

from orchestration.simulation.simulation import Simulation

QUEUE_SIZE_MAX = 4
STALLED = 1


def broker_view(sim: Simulation, broker_id: int, topic: str) -> tuple[int, int] | None:
    replica = sim.replica(broker_id, topic)
    return None if replica is None else (replica.leader_id, replica.leader_epoch)


def controller_view(sim: Simulation, topic: str) -> tuple[int, int]:
    described = sim.describe(topic)
    return described["leader"], described["leader_epoch"]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_an_overflowing_channel_resyncs_its_broker_instead_of_losing_it(seed):
    sim = Simulation(brokers=[0, 1, 2], config={"raykafka.controller.queue.size.max": str(QUEUE_SIZE_MAX)},
                     seed=seed)
    channel = sim.nodes[f"channel:{STALLED}"]
    # Broker 1 stops hearing from the controller: the channel's request in flight is held.
    sim.hold("stalled", source=f"channel:{STALLED}", destination=f"broker:{STALLED}")
    topics = [f"t{i}" for i in range(6)]
    for topic in topics:
        assert sim.create_topic(topic, assignment=[[0, STALLED, 2]], wait=False) == "NONE"
    sim.run_until(lambda: channel.queue.dropped_total > 0, limit_ms=10_000, what="the channel's queue to overflow")
    stuck = channel.queue.in_flight
    assert stuck is not None and channel.queue.queue_size <= QUEUE_SIZE_MAX
    sim.run(1_000)
    assert channel.queue.in_flight is stuck, "the request in flight survives the overflow"
    assert channel.queue.resyncs_requested >= 1

    sim.release("stalled")
    sim.run_until(lambda: all(broker_view(sim, STALLED, t) == controller_view(sim, t) for t in topics),
                  limit_ms=30_000, what=f"broker {STALLED} to catch up on every topic")
    sim.run_until(lambda: channel.queue.queue_size == 0 and channel.queue.in_flight is None, limit_ms=30_000,
                  what="the channel to drain")

    # A later leader change still reaches broker 1.
    sim.kill(0)
    sim.run_until(lambda: controller_view(sim, "t0")[0] == STALLED, limit_ms=30_000, what="broker 1 elected")
    sim.run_until(lambda: broker_view(sim, STALLED, "t0") == controller_view(sim, "t0"), limit_ms=30_000,
                  what=f"broker {STALLED} to lead t0")
