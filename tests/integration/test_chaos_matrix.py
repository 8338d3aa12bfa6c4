"""The failover matrix on real actors: every replication and controller row of
``raykafka chaos list`` runs end to end (a cluster, a load, its faults, the invariant sampler)
and the history checker's verdict must match the row's expectation: a clean history, or exactly
the anomalies the row demonstrates (the KIP-101 stories under the high-watermark rule, an unclean
election). Rows share this module's Ray, each with a cluster of its own; the Ray-node row is in
``test_chaos_nodes.py``. Slow rows carry the ``chaos`` marker (``make chaos``)."""
from __future__ import annotations

import pytest

from orchestration.chaos.runner import run_scenario
from orchestration.chaos.scenarios import CODED, SCHEDULES_DIR
from orchestration.chaos.schedule import load_schedule

pytestmark = pytest.mark.integration

ROWS = [load_schedule(path) for path in sorted(SCHEDULES_DIR.glob("*.toml"))] + CODED


def _param(row):
    return pytest.param(row, id=row.name, marks=[pytest.mark.chaos] if row.slow else [])


@pytest.mark.parametrize("scenario", [_param(row) for row in ROWS if not row.nodes])
def test_matrix_row(scenario, ray_session, tmp_path):
    verdict = run_scenario(scenario, seed=0, output_dir=tmp_path / scenario.name)
    print(verdict.table())  # shown with -s, and kept in the row's verdict.txt
    assert verdict.passed, verdict.table()
