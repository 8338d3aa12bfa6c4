"""Proves ``raykafka sim`` catches a broken rule and replays a seed exactly: with the high-watermark
truncation rule that KIP-101 replaced, random crash and restart schedules lose acknowledged records
within a bounded number of seeds while the leader-epoch rule loses none on the same seeds; a failing
seed's printed command, run again in a fresh process, gives the same verdict and step count."""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

from orchestration.simulation import command
from orchestration.simulation.random_faults import RunOptions, run_seed

REPO_ROOT = Path(__file__).resolve().parents[2]
# The first seed that loses records under the high-watermark rule is 25 (4 of seeds 1..120 do:
# 25, 30, 49 and 99, and 74 shows an anomaly; before followers' fetches lingered for records to
# carry a new high watermark, it was 9, and 9, 49 and 74 lost records; before the controller held
# CreateTopics answers until every broker knew the topic,
# which changed the message schedules, it was 25, and before followers fetched in sessions, 15);
# the seeds after it leave room for a change in the schedules that moves it a little.
SEEDS_TO_FIND_A_LOSS = range(1, 31)


def main(argv: list[str]) -> int:
    """``raykafka`` with these arguments, in this process (the CLI's own logging setup left out)."""
    assert argv[0] == "sim", argv
    parser = argparse.ArgumentParser(prog="raykafka sim")
    command.add_arguments(parser)
    return command.main(parser.parse_args(argv[1:]))
CRASH_AND_RESTART = ("crash", "restart")


def test_the_high_watermark_rule_loses_acknowledged_records_within_the_bound_and_leader_epochs_do_not():
    broken = {seed: run_seed(RunOptions(seed=seed, faults=CRASH_AND_RESTART, policy="high-watermark"))
              for seed in SEEDS_TO_FIND_A_LOSS}
    lost = [seed for seed, result in broken.items() if result.verdict == "LOST" and result.lost > 0]
    assert lost, f"no seed of {SEEDS_TO_FIND_A_LOSS} lost a record under the high-watermark rule: " + \
        ", ".join(f"{s}: {r.verdict}" for s, r in broken.items())
    for seed in lost:
        fixed = run_seed(RunOptions(seed=seed, faults=CRASH_AND_RESTART, policy="leader-epoch"))
        assert fixed.passed, f"seed {seed} under leader epochs: {fixed.verdict} {fixed.detail}"
        assert fixed.acknowledged > 0, f"seed {seed} under leader epochs acknowledged nothing, so proves nothing"


def test_a_seed_replays_identically_in_this_process_and_from_its_printed_command(capsys):
    options = RunOptions(seed=25, faults=CRASH_AND_RESTART, policy="high-watermark")
    first, again = run_seed(options), run_seed(options)
    assert (first.verdict, first.steps, first.simulated_ms, first.schedule) == \
        (again.verdict, again.steps, again.simulated_ms, again.schedule)
    assert first.verdict == "LOST", f"seed 25 was expected to lose records: {first.verdict} {first.detail}"

    assert main(options.replay_command().split()[1:]) == 1
    printed = capsys.readouterr().out
    assert f"replay: {options.replay_command()}" in printed, printed

    # A fresh interpreter has another string-hash seed: the replay must not depend on it.
    command = [sys.executable, "-m", "orchestration.cli", *options.replay_command().split()[1:], "--json"]
    environment = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "PYTHONHASHSEED": "12345"}
    replayed = subprocess.run(command, cwd=REPO_ROOT, env=environment, capture_output=True, text=True, timeout=300)
    assert replayed.returncode == 1, replayed.stderr
    row = json.loads(replayed.stdout.splitlines()[0])
    assert (row["verdict"], row["steps"], row["simulated_ms"]) == (first.verdict, first.steps, first.simulated_ms)
    assert row["replay"] == options.replay_command()


def test_a_passing_run_prints_a_row_per_seed_and_exits_zero(capsys):
    assert main(["sim", "--seeds", "1..2", "--faults", "crash,restart"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["seed", "steps", "simulated", "faults", "acknowledged", "lost", "verdict"]
    assert [line.split()[0] for line in lines[1:3]] == ["1", "2"] and all(line.endswith("PASS") for line in lines[1:3])
    assert "2 seeds, 0 failed" in "\n".join(lines)
