"""The failover matrix on real actors: every replication and controller row of
``raykafka chaos list`` runs end to end (a cluster, a load, its faults, the invariant sampler)
and the history checker's verdict must match the row's expectation: a clean history, or exactly
the anomalies the row demonstrates (the KIP-101 stories under the high-watermark rule, an unclean
election, a lost disk); the log-cleaner rows judge their compacted topic by the latest value per
key, and the retention row its topic by what retention.ms must keep. Each row runs once per producer mode it names (idempotent producers with
retries on, where "no duplicate" is part of the criterion, and/or retries=0). Rows share this
module's Ray, each with a cluster of its own; the Ray-node row is in ``test_chaos_nodes.py``. Slow
rows carry the ``chaos`` marker (``make chaos``)."""
from __future__ import annotations

import pytest

from orchestration.chaos.cleaner_scenarios import CLEANER_SCENARIOS
from orchestration.chaos.retention_scenarios import RETENTION_SCENARIOS
from orchestration.chaos.runner import matrix_runs, run_scenario
from orchestration.chaos.scenarios import CODED, SCHEDULES_DIR
from orchestration.chaos.schedule import load_schedule

pytestmark = pytest.mark.integration

ROWS = [load_schedule(path) for path in sorted(SCHEDULES_DIR.glob("*.toml"))] + CODED + CLEANER_SCENARIOS + RETENTION_SCENARIOS


@pytest.mark.parametrize(("scenario", "producer_mode"), [
    pytest.param(row, mode, id=name, marks=[pytest.mark.chaos] if row.slow else [])
    for row, mode, name in matrix_runs([row for row in ROWS if not row.nodes])])
def test_matrix_row(scenario, producer_mode, ray_session, tmp_path):
    verdict = run_scenario(scenario, seed=0, output_dir=tmp_path / scenario.name, producer_mode=producer_mode)
    print(verdict.table())  # shown with -s, and kept in the row's verdict.txt
    assert verdict.passed, verdict.table()
