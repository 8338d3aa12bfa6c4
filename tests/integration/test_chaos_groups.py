"""The consumer-group rows of the chaos failover matrix (orchestration/chaos/group_scenarios.py),
each on a cluster and a Ray of its own, judged by the runner's verdict."""
from __future__ import annotations

import pytest
import ray

from orchestration.chaos.group_scenarios import GROUP_SCENARIOS
from orchestration.chaos.runner import run_scenario

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("scenario", [
    pytest.param(s, id=s.name, marks=[pytest.mark.chaos] if s.slow else []) for s in GROUP_SCENARIOS])
def test_group_failover_row(scenario, tmp_path, monkeypatch):
    assert not ray.is_initialized(), "run_scenario starts and stops a Ray of its own"
    # A plain ray.init() joins the newest Ray started on this machine (/tmp/ray/ray_current_cluster),
    # e.g. a multi-node test's; "local" makes run_scenario start its own.
    monkeypatch.setenv("RAY_ADDRESS", "local")
    verdict = run_scenario(scenario, seed=0, output_dir=tmp_path)
    assert verdict.passed, verdict.table()
