"""The consumer-group rows of the chaos failover matrix (orchestration/chaos/group_scenarios.py),
each on a cluster of its own on this module's Ray (as test_chaos_matrix.py's rows), judged by the
runner's verdict."""
from __future__ import annotations

import pytest

from orchestration.chaos.group_scenarios import GROUP_SCENARIOS
from orchestration.chaos.runner import run_scenario

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("scenario", [
    pytest.param(s, id=s.name, marks=[pytest.mark.chaos] if s.slow else []) for s in GROUP_SCENARIOS])
def test_group_failover_row(scenario, ray_session, tmp_path):
    verdict = run_scenario(scenario, seed=0, output_dir=tmp_path)
    assert verdict.passed, verdict.table()
