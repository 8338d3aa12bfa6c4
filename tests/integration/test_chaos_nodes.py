"""The failover matrix rows that remove a whole Ray node: each starts a multi-node Ray of its own
(``ray.cluster_utils.Cluster``), places a broker on a node of its own, removes that node and
brings it back, and the history checker must find nothing lost."""
from __future__ import annotations

import pytest
import ray

from orchestration.chaos.runner import matrix_runs, run_scenario
from orchestration.chaos.scenarios import CODED

pytestmark = [pytest.mark.integration]


@pytest.mark.parametrize(("scenario", "producer_mode"), [
    pytest.param(row, mode, id=name, marks=[pytest.mark.chaos] if row.slow else [])
    for row, mode, name in matrix_runs([row for row in CODED if row.nodes])])
def test_matrix_row_on_a_multi_node_ray(scenario, producer_mode, tmp_path):
    assert not ray.is_initialized(), "this row starts a multi-node Ray of its own"
    verdict = run_scenario(scenario, seed=0, output_dir=tmp_path / scenario.name, producer_mode=producer_mode)
    print(verdict.table())
    assert not ray.is_initialized(), "the row left Ray running"
    assert verdict.passed, verdict.table()
