"""Fault schedule files parse into scenarios, bad files are refused with the step that is wrong,
and seeded target choice and jitter repeat exactly for one seed (a fake run, no Ray)."""
from __future__ import annotations

import random
from types import SimpleNamespace

import pytest

from orchestration.chaos.scenarios import SCHEDULES_DIR
from orchestration.chaos.schedule import ScheduleError, _resolve, load_schedule

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
])
def test_bad_schedules_are_refused(tmp_path, change, message):
    path = tmp_path / "x.toml"
    path.write_text(VALID.replace(*change))
    with pytest.raises(ScheduleError, match=message):
        load_schedule(path)


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
