"""Fault schedule files parse into scenarios, bad files are refused with the step that is wrong,
and seeded target choice and jitter repeat exactly for one seed (a fake run, no Ray)."""
from __future__ import annotations

import random
import time
import tomllib
from types import SimpleNamespace

import pytest

from orchestration.chaos.scenarios import SCHEDULES_DIR
from orchestration.chaos.schedule import ScheduleError, _end_load, _resolve, load_schedule

VALID = """
name = "x"
title = "t"
criterion = "c"
[topic]
name = "chaos"
[load]
rate_per_s = 10
[[step]]
at = 1
do = "kill"
target = "leader"
"""


def test_every_shipped_schedule_parses():
    paths = sorted(SCHEDULES_DIR.glob("*.toml"))
    assert len(paths) >= 5
    names = [load_schedule(path).name for path in paths]
    assert len(set(names)) == len(names)
    assert [path.stem for path in paths] == names, "a schedule file is named after its scenario"


@pytest.mark.parametrize("change, message", [
    (("do = \"kill\"", "do = \"explode\""), "'do' must be one of"),
    (("at = 1", "at = 1\nafter_acks = 5"), "not both"),
    (("target = \"leader\"", "target = \"leader\"\nwait_for = \"forever\""), "'wait_for' must be one of"),
    (("criterion = \"c\"\n", ""), "missing 'criterion'"),
    (("[load]", "[load\n"), "x.toml"),
    (("criterion = \"c\"\n", "criterion = \"c\"\nproducer_modes = [\"retries-3\"]\n"), "'producer_modes' must"),
])
def test_bad_schedules_are_refused(tmp_path, change, message):
    path = tmp_path / "x.toml"
    path.write_text(VALID.replace(*change))
    with pytest.raises(ScheduleError, match=message):
        load_schedule(path)


def test_every_shipped_schedule_runs_with_idempotent_producers_and_one_keeps_retries_0():
    """Every produce-side schedule row runs with idempotent producers (retries on); at least one
    also runs with retries=0, so the matrix still shows the indeterminate sends retries remove."""
    rows = [load_schedule(path) for path in sorted(SCHEDULES_DIR.glob("*.toml"))]
    assert all("idempotent" in row.producer_modes for row in rows), [(r.name, r.producer_modes) for r in rows]
    assert any("retries-0" in row.producer_modes for row in rows)


def test_a_schedule_without_producer_modes_runs_retries_0(tmp_path):
    path = tmp_path / "x.toml"
    path.write_text(VALID)
    assert load_schedule(path).producer_modes == ("retries-0",)


def fake_run(seed: int):
    state = SimpleNamespace(leader=1, isr=[0, 1, 2], replicas=[1, 0, 2])
    return SimpleNamespace(rng=random.Random(seed), partition_state=lambda topic, partition=0: state,
                           leader=lambda topic, partition=0: state.leader,
                           cluster=SimpleNamespace(broker_ids=[0, 1, 2]))


def test_targets_resolve_and_repeat_for_a_seed():
    def choices(seed):
        run = fake_run(seed)
        return [_resolve(run, "chaos", target, None) for target in ("follower", "random-broker") * 10]

    assert choices(7) == choices(7)
    assert any(choices(seed) != choices(7) for seed in range(8)), "the seed drives the choice"
    run = fake_run(0)
    assert _resolve(run, "chaos", "leader", None) == 1
    assert all(_resolve(run, "chaos", "follower", None) in (0, 2) for _ in range(20))
    assert _resolve(run, "chaos", "broker-2", None) == 2
    assert _resolve(run, "chaos", "same", 0) == 0
    with pytest.raises(ScheduleError):
        _resolve(run, "chaos", "same", None)
    with pytest.raises(ScheduleError):
        _resolve(run, "chaos", "the-moon", None)


def test_the_load_ends_once_enough_sends_are_acknowledged_after_the_last_step():
    """``acknowledged_after_steps``: the load runs on until that many more sends are acknowledged
    after the last step (a condition), not until ``duration_s`` has passed; without it, the time."""
    waited, notes = [], []
    load = SimpleNamespace(acknowledged=350, wait_acknowledged=lambda count, timeout_s: waited.append(count))
    run = SimpleNamespace(note=notes.append)
    started = time.monotonic()
    _end_load(run, load, {"acknowledged_after_steps": 200, "duration_s": 600}, started)
    assert waited == [550] and time.monotonic() - started < 60, "it waited for acknowledgements, not the time"
    assert notes and "200 more sends acknowledged" in notes[0]
    _end_load(run, load, {"duration_s": 0.2}, started - 1.0)
    assert waited == [550], "without the key the load runs for duration_s"


def test_every_shipped_schedule_ends_its_load_by_a_condition_or_a_time():
    for path in sorted(SCHEDULES_DIR.glob("*.toml")):
        load = tomllib.loads(path.read_text())["load"]
        assert ("acknowledged_after_steps" in load) != ("duration_s" in load), path.name
