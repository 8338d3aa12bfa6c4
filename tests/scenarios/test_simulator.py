"""Proves the simulator's own machinery (seeded determinism, holding and dropping messages, calls to a dead broker failing with NETWORK_EXCEPTION, crash and lost-disk restarts, bounded runs, invariant failures naming seed and step) by driving small two-broker clusters of the real cores."""
from __future__ import annotations

import pytest

from actors.core.replica import partition as partition_module
from orchestration.simulation.simulation import Simulation, SimulationInvariantError, SimulationStalled


def two_brokers(seed: int = 1, **config) -> Simulation:
    sim = Simulation(brokers=[0, 1], config=config, seed=seed, latency_ms=(1, 10))
    assert sim.create_topic("t", assignment=[[0, 1]]) == "NONE"
    sim.run_until(lambda: sorted(sim.isr("t")) == [0, 1])
    return sim


def test_the_same_seed_replays_the_same_run_and_another_seed_does_not():
    def trace(seed: int) -> list[str]:
        sim = two_brokers(seed)
        sim.produce("t", 0, ["a", "b"], acks="all")
        sim.kill(0)
        sim.run_until_quiet()
        return list(sim.trace)
    assert trace(7) == trace(7)
    assert trace(7) != trace(8)


def test_a_held_message_waits_for_release_and_a_dropped_one_never_arrives():
    sim = two_brokers()
    sim.hold("to-follower", source="broker:0", destination="fetcher:1", message="FetchResponse", with_records=True)
    assert sim.produce("t", 0, ["a"], acks=1).status == "acked"
    sim.run(500)
    assert len(sim.held("to-follower")) == 1 and sim.log_end_offset(1, "t") == 0
    sim.release("to-follower")
    sim.run_until(lambda: sim.log_end_offset(1, "t") == 1, limit_ms=100)

    sim.hold("to-follower-again", source="broker:0", destination="fetcher:1", message="FetchResponse",
             with_records=True)
    assert sim.produce("t", 0, ["b"], acks=1).status == "acked"
    sim.run_until(lambda: sim.held("to-follower-again"))
    assert sim.drop("to-follower-again") == 1
    sim.run(1_000)
    # The fetcher waits for the lost answer until its request times out (30 s), then fetches again.
    assert sim.log_end_offset(1, "t") == 1
    sim.run_until(lambda: sim.log_end_offset(1, "t") == 2, limit_ms=40_000)


def test_a_call_parked_at_a_broker_that_dies_fails_with_network_exception():
    sim = two_brokers()
    sim.hold("to-follower", source="broker:0", destination="fetcher:1", message="FetchResponse", with_records=True)
    parked = sim.produce("t", 0, ["a"], acks="all", wait=False)
    sim.run(200)
    assert parked.status == "pending"
    sim.kill(0)
    sim.run_until(lambda: parked.status != "pending", limit_ms=100)
    assert (parked.status, parked.error) == ("error", "NETWORK_EXCEPTION")
    assert sim.produce("t", 0, ["b"], acks="all", to_broker=0).error == "NETWORK_EXCEPTION"


def test_a_crash_loses_the_unflushed_tail_and_a_lost_disk_loses_everything():
    sim = two_brokers()
    sim.produce("t", 0, ["a"], acks="all")
    sim.flush(1)
    sim.produce("t", 0, ["b"], acks="all")
    sim.run_until_quiet()
    sim.kill(0)
    sim.restart(1, lose_unflushed=True)
    assert [v for _, v in sim.log_of(1, "t")] == ["a"]
    sim.restart(1, lose_disk=True)
    assert sim.log_of(1, "t") is None  # no partition directory at all until LeaderAndIsr
    sim.run_until(lambda: sim.log_of(1, "t") is not None)
    assert sim.log_of(1, "t") == []


def test_runs_are_bounded():
    sim = two_brokers()
    with pytest.raises(SimulationStalled, match="seed=1"):
        sim.run_until(lambda: False, limit_ms=2_000)


def test_a_broken_invariant_names_the_seed_and_the_step(monkeypatch):
    sim = two_brokers(seed=42)
    sim.produce("t", 0, ["a"], acks="all")

    def runaway(self, now_ms: int) -> bool:  # a leader whose high watermark runs past its log end
        if self.is_leader:
            self.high_watermark = self.log.log_end_offset + 1
        return False
    monkeypatch.setattr(partition_module.Partition, "maybe_increment_high_watermark", runaway)
    with pytest.raises(SimulationInvariantError, match=r"seed=42 step=\d+ t=\d+ms\): broker 0 t-0: high watermark \d+ > log end offset \d+"):
        sim.produce("t", 0, ["b"], acks="all")


def test_a_paused_broker_answers_nothing_until_it_resumes():
    sim = two_brokers()
    sim.pause(0)
    parked = sim.produce("t", 0, ["a"], acks=1, wait=False)
    sim.run(2_000)
    assert parked.status == "pending" and sim.log_end_offset(0, "t") == 0
    sim.resume(0)
    sim.run_until(lambda: parked.status != "pending", limit_ms=1_000)
    assert parked.status == "acked", parked


def test_a_controller_failover_takes_a_new_epoch_and_still_elects_leaders():
    sim = two_brokers()
    epoch = sim.controller.controller_epoch
    sim.restart_controller()
    assert sim.controller.controller_epoch == epoch + 1
    leader = sim.leader("t")
    sim.kill(leader, notify_controller=False)  # the new controller learns it from missed heartbeats
    sim.run_until(lambda: sim.leader("t") not in (-1, leader), limit_ms=10_000)


def test_a_call_whose_answer_is_lost_with_its_callee_fails_at_once():
    """An answer in flight when its sender dies never arrives; the call fails with
    NETWORK_EXCEPTION at once, as Ray fails a call to an actor that died, instead of waiting out
    the caller's timeout. Here: heartbeat answers lost in a controller failover must not leave
    their brokers silent past the new controller's session timeout (which would fence them)."""
    sim = two_brokers()
    sim.run_until(lambda: any(m.type_name == "BrokerHeartbeatResponse" for m in sim.network.messages.values()),
                  limit_ms=2_000, what="a heartbeat answer in flight")
    epochs = {b: sim.broker(b).lifecycle.broker_epoch for b in (0, 1)}
    sim.restart_controller()
    assert [c.request for c in sim.network.calls.values() if c.callee == "controller"
            and not any(m.call_id == c.id for m in sim.network.messages.values())] == []
    sim.run(4_000)  # past broker.session.timeout.ms (3 s here)
    assert {b: sim.broker(b).lifecycle.broker_epoch for b in (0, 1)} == epochs
    assert not [e for e in sim.log_events if "missed heartbeats" in e[3]]


def test_a_controller_failover_sends_one_leader_and_isr_and_one_update_metadata_per_broker():
    """Kafka's onControllerFailover batches: whatever the number of partitions, each broker gets
    one LeaderAndIsr (its replicas) and one UpdateMetadata (every partition), not one per partition."""
    sim = Simulation(brokers=range(5), seed=3)
    assert sim.create_topic("many", partitions=200, replication_factor=3) == "NONE"
    sim.run(200)
    before = dict(sim.network.sent)
    sim.restart_controller()
    sim.run(100)
    sent = {kind: sim.network.sent[kind] - before.get(kind, 0) for kind in ("LeaderAndIsrRequest",
                                                                            "UpdateMetadataRequest")}
    assert sent == {"LeaderAndIsrRequest": 5, "UpdateMetadataRequest": 5}
