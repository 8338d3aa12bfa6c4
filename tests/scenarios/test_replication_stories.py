"""Replays each replication story in tests/scenarios/*.json on the deterministic simulator (real cores, no Ray) under both truncation policies and several seeds, and checks the outcome the file expects for that policy."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.scenario_runner import POLICIES, ScenarioRun, load_scenario

SCENARIO_DIR = Path(__file__).parent
SCENARIO_FILES = sorted(SCENARIO_DIR.glob("*.json"))


def _cases():
    assert SCENARIO_FILES, f"no scenario files in {SCENARIO_DIR}"
    for path in SCENARIO_FILES:
        spec = load_scenario(path)
        marks = [pytest.mark.xfail(reason=spec["xfail"], strict=True)] if "xfail" in spec else []
        for policy in POLICIES:
            for seed in spec.get("seeds", [1]):
                yield pytest.param(spec, policy, seed, id=f"{path.stem}-{policy}-seed{seed}", marks=marks)


@pytest.mark.parametrize(("spec", "policy", "seed"), list(_cases()))
def test_replication_story(spec, policy, seed):
    ScenarioRun(spec, policy, seed).run()
