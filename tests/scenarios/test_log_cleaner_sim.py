"""Proves the log cleaner runs in the simulator as a killable role per broker that compacts a
replicated topic with the shipped cleaning core and keeps every key's latest acknowledged value
through cleaner kills, broker kills between the ``.cleaned`` write and the swap, truncations and
random fault schedules, and that the history checker catches a cleaner that drops a latest value;
run in the seeded simulator over the shipped cores and drivers."""
from __future__ import annotations

import json

import pytest

import actors.core.log.cleaner as cleaner_core
from orchestration.simulation.command import add_arguments, main
from orchestration.simulation.random_faults import RunOptions, run_seed
from orchestration.simulation.simulation import Simulation

TOPIC = "c"
KEYS = [f"k{i}" for i in range(5)]
CONFIG = {"log.cleaner.enable": "true", "log.cleaner.backoff.ms": "200",
          "log.cleaner.io.max.bytes.per.second": "20000", "min.insync.replicas": "2",
          "replica.lag.time.max.ms": "2000", "unclean.leader.election.enable": "false"}
TOPIC_CONFIG = {"cleanup.policy": "compact", "segment.bytes": "300", "min.cleanable.dirty.ratio": "0.1"}


def _cluster(seed: int = 5) -> Simulation:
    sim = Simulation(config=CONFIG, seed=seed)
    assert sim.create_topic(TOPIC, replication_factor=3, config=TOPIC_CONFIG) == "NONE"
    return sim


def _write(sim: Simulation, sends: int, prefix: str, tombstone_every: int = 0) -> None:
    """``sends`` acks=all sends of a value for every key (one tombstone every ``tombstone_every``)."""
    for index in range(sends):
        values = [f"{prefix}{index}-{key}" for key in KEYS]
        tombstones = [values[index % len(KEYS)]] if tombstone_every and index % tombstone_every == 0 else []
        sent = sim.produce(TOPIC, 0, values, acks="all", keys=KEYS, tombstones=tombstones)
        assert sent.status == "acked", sent


def _led(sim: Simulation) -> bool:
    leader = sim.leader(TOPIC)
    replica = sim.replica(leader, TOPIC) if leader >= 0 else None
    return replica is not None and replica.is_leader and replica.leader_epoch == sim.leader_epoch(TOPIC)


def _latest_per_key(sim: Simulation) -> dict[str, str]:
    """Each key's latest acknowledged value (tombstones included, by their send's name)."""
    keys = {v: k for r in sim.produce_results for k, v in zip(r.keys, r.values)}
    latest: dict[str, tuple[int, str]] = {}
    for topic, _, offset, value in sim.acknowledged:
        if topic == TOPIC and offset > latest.get(keys[value], (-1, ""))[0]:
            latest[keys[value]] = (offset, value)
    return {key: value for key, (_, value) in latest.items()}


def _assert_whole_and_compacted(sim: Simulation) -> None:
    """Every live replica holds each key's latest acknowledged value, fewer records than were
    acknowledged, agrees with the others where both hold an offset, and keeps no .cleaned file."""
    latest = _latest_per_key(sim)
    acknowledged = sum(1 for t, *_ in sim.acknowledged if t == TOPIC)
    for broker_id in sim.broker_ids:
        log = sim.log_of(broker_id, TOPIC)
        assert log is not None, f"broker {broker_id} hosts {TOPIC}"
        values = {value for _, value in log}
        assert set(latest.values()) <= values, (broker_id, sorted(set(latest.values()) - values))
        assert len(log) < acknowledged, (broker_id, len(log), acknowledged)
        directory = sim.replica(broker_id, TOPIC).log.directory
        assert not [n for n in sim.storages[broker_id].list_dir(directory) if n.endswith((".cleaned", ".swap"))]
    assert sim.check(TOPIC)["divergent_offsets"] == []


def _swapped(sim: Simulation, broker_id: int | None = None) -> list:
    return [r for r in sim.cleaner_rounds if r.outcome == "swapped" and broker_id in (None, r.broker_id)
            and r.key == (TOPIC, 0)]


def test_every_brokers_cleaner_compacts_its_replica_and_keeps_each_keys_latest_value():
    sim = _cluster()
    _write(sim, 12, "a", tombstone_every=4)
    sim.run_until(lambda: all(_swapped(sim, b) for b in sim.broker_ids), limit_ms=30_000,
                  what="a round swapped in on every broker")
    sim.run_until_quiet()
    for broker_id in sim.broker_ids:
        rounds = _swapped(sim, broker_id)
        assert sum(r.cleaned_bytes for r in rounds) < sum(r.planned_bytes for r in rounds), rounds
    _assert_whole_and_compacted(sim)
    leader = sim.leader(TOPIC)
    first_offset = sim.log_of(leader, TOPIC)[0][0]
    assert sim.replica(leader, TOPIC).log_start_offset < first_offset, "cleaning left a gap where values were"


@pytest.mark.parametrize("phase", ["cleaning", "swapping"])
def test_a_cleaner_killed_mid_round_is_replaced_and_the_next_cleaner_compacts_the_log(phase):
    """Killed while it reads, or once its .cleaned files are written and the hand-over is on its way."""
    sim = _cluster()
    _write(sim, 10, "a")
    leader = sim.leader(TOPIC)
    if phase == "swapping":
        sim.hold("swap", source=f"cleaner:{leader}", message="LogCleaned")
    sim.run_until(lambda: (c := sim.cleaner(leader)) is not None and c.phase == phase, limit_ms=30_000,
                  what=f"the leader's cleaner {phase}")
    if phase == "swapping":
        sim.run_until(lambda: sim.held("swap"), limit_ms=1_000, what="the hand-over held")
        directory = sim.replica(leader, TOPIC).log.directory
        assert [n for n in sim.storages[leader].list_dir(directory) if n.endswith(".cleaned")]
    before = len(_swapped(sim, leader))
    sim.kill_cleaner(leader)
    if phase == "swapping":
        assert sim.drop("swap") == 0, "the hand-over went down with its cleaner"
    assert sim.cleaner(leader) is None
    _write(sim, 4, "b")
    sim.run_until(lambda: sim.cleaner(leader) is not None, limit_ms=5_000, what="the broker to start another cleaner")
    sim.run_until(lambda: len(_swapped(sim, leader)) > before, limit_ms=30_000, what="the new cleaner's round swapped")
    sim.run_until_quiet()
    _assert_whole_and_compacted(sim)


@pytest.mark.parametrize("lose_unflushed", [False, True], ids=["process-kill", "machine-crash"])
def test_a_broker_killed_between_the_cleaned_write_and_the_swap_recovers_a_whole_log(lose_unflushed):
    sim = _cluster()
    _write(sim, 10, "a")
    leader = sim.leader(TOPIC)
    sim.hold("swap", source=f"cleaner:{leader}", message="LogCleaned")
    sim.run_until(lambda: sim.held("swap"), limit_ms=30_000, what="the leader's cleaner handing a round over")
    directory = sim.replica(leader, TOPIC).log.directory
    assert [n for n in sim.storages[leader].list_dir(directory) if n.endswith(".cleaned")], "the .cleaned files"
    records_before = sim.log_of(leader, TOPIC)
    sim.restart(leader, lose_unflushed=lose_unflushed)
    assert sim.drop("swap") == 0, "the hand-over went down with its cleaner"
    assert not [n for n in sim.storages[leader].list_dir(directory) if n.endswith((".cleaned", ".swap"))]
    if not lose_unflushed:  # nothing swapped: the restarted log is the one the broker had
        assert sim.log_of(leader, TOPIC) == records_before
    sim.run_until(lambda: _led(sim), limit_ms=30_000, what="a leader leading in the controller's epoch")
    _write(sim, 3, "b")
    sim.run_until(lambda: sorted(sim.isr(TOPIC)) == [0, 1, 2] and _swapped(sim, leader), limit_ms=60_000,
                  what="the restarted broker in the ISR and its new cleaner's round swapped")
    sim.run_until_quiet()
    _assert_whole_and_compacted(sim)


def _random_seeds(seeds, **options):
    return [run_seed(RunOptions(seed=seed, compacted=True, **options)) for seed in seeds]


def test_compacted_random_schedules_clean_and_keep_every_keys_latest_acknowledged_value():
    results = _random_seeds(range(1, 7))
    for result in results:
        figures = result.cleaner
        assert result.passed, (result.verdict, result.detail, result.options.replay_command(), result.schedule[-20:])
        assert figures["swapped"] >= 1 and figures["cleaned_bytes"] < figures["planned_bytes"], figures
        assert figures["records_read"] < figures["acknowledged"], figures
    schedules = [step for result in results for step in result.schedule]
    assert any(step.startswith("crash") for step in schedules) and any(
        step.startswith("kill-cleaner") for step in schedules), "leader kills and cleaner kills happened"
    assert sum(result.cleaner["truncations"] for result in results) > 0, "some replica truncated its log"


def test_the_checker_catches_a_cleaner_that_drops_a_keys_latest_value(monkeypatch):
    keep = cleaner_core._keep

    def drops_latest_values(record, offset, offset_map, retain_deletes):
        if record.key is not None and record.has_value and offset == offset_map.get(record.key):
            return False  # the latest value of its key, which Kafka's cleaner always keeps
        return keep(record, offset, offset_map, retain_deletes)
    monkeypatch.setattr(cleaner_core, "_keep", drops_latest_values)
    results = _random_seeds(range(1, 5))
    assert all(r.cleaner["swapped"] >= 1 for r in results), [r.cleaner for r in results]
    assert all(r.verdict == "LOST" and r.anomalies.get("latest-value-lost") for r in results), \
        [(r.verdict, r.anomalies, r.detail) for r in results]


def test_raykafka_sim_runs_the_compacted_workload(capsys):
    import argparse
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    assert main(parser.parse_args(["--seeds", "1..2", "--compacted", "--json"])) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    seeds = [row for row in rows if "seed" in row]
    assert [row["seed"] for row in seeds] == [1, 2]
    assert all(row["verdict"] == "PASS" and row["cleaner"]["swapped"] >= 1 for row in seeds), seeds
    assert RunOptions(seed=3, compacted=True).replay_command().endswith(" --compacted")


def test_a_round_whose_log_is_truncated_before_the_swap_is_aborted():
    sim = _cluster()
    _write(sim, 10, "a")
    leader = sim.leader(TOPIC)
    sim.hold("swap", source=f"cleaner:{leader}", message="LogCleaned")
    sim.run_until(lambda: sim.held("swap"), limit_ms=30_000, what="the leader's cleaner handing a round over")
    # A tail only the leader has (the answers to its followers' fetches held), then the leader's process stops:
    # another replica is elected, and the old leader truncates that tail when it follows again.
    sim.hold("no-fetch", source=f"broker:{leader}", message="FetchResponse")
    tail = sim.produce(TOPIC, 0, ["tail-k0"], acks=1, keys=["k0"])
    assert tail.status == "acked", tail
    epoch = sim.leader_epoch(TOPIC)
    sim.pause(leader)
    sim.run_until(lambda: sim.leader_epoch(TOPIC) > epoch and _led(sim), limit_ms=30_000, what="another leader")
    _write(sim, 2, "b")
    sim.drop("no-fetch")
    sim.resume(leader)
    sim.run_until(lambda: sim.truncations_of(leader, TOPIC), limit_ms=30_000, what="the old leader truncating")
    assert sim.release("swap") == 1
    sim.run_until(lambda: any(r.broker_id == leader and r.outcome == "aborted" for r in sim.cleaner_rounds),
                  limit_ms=10_000, what="the round aborted")
    sim.run_until(lambda: sorted(sim.isr(TOPIC)) == [0, 1, 2], limit_ms=60_000, what="the ISR full again")
    sim.run_until_quiet()
    _assert_whole_and_compacted(sim)
