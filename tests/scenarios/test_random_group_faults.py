"""Runs seeded random fault schedules over consumer groups from the simulator's own generator
(orchestration/simulation/random_faults.py: broker crashes and restarts, group coordinator
restarts, delayed messages, among them those between a coordinator and its broker, with offset
commits along the way) with the shipped group coordinator driver, and checks, after healing, that
the group is stable on one coordinator and an offset fetch answers the last acknowledged commit."""
from __future__ import annotations

import functools

import pytest

from orchestration.simulation.random_faults import RunOptions, SeedResult, run_seed

SEEDS = range(1, 13)
FAULTS = ("crash", "restart", "delay")
SCHEDULE_STEPS = 80


@functools.lru_cache(maxsize=None)
def result(seed: int) -> SeedResult:
    return run_seed(RunOptions(seed=seed, faults=FAULTS, partitions=2, schedule_steps=SCHEDULE_STEPS))


@pytest.mark.parametrize("seed", SEEDS)
def test_random_group_faults_keep_acknowledged_commits(seed):
    outcome = result(seed)
    assert outcome.passed, f"seed {seed}: {outcome.verdict} {outcome.detail}; replay: " \
        f"{outcome.options.replay_command()}; schedule: {outcome.schedule}"


def test_the_schedules_acknowledge_commits_to_check():
    # A seed whose schedule acknowledged no commit checks nothing about commits; most must have one.
    with_commits = [seed for seed in SEEDS if result(seed).commits_acknowledged > 0]
    assert len(with_commits) >= len(SEEDS) // 2, f"only seeds {with_commits} of {SEEDS} acknowledged a commit"
