"""A scenario's verdict compares the checker's findings with what the row expects: a clean
history, or the anomaly kinds it demonstrates (required) plus the ones it tolerates (hand-written
histories, no Ray)."""
from __future__ import annotations

from orchestration.chaos.runner import Scenario, expectation_checks
from orchestration.chaos.checker import check


def history(*, lose: bool) -> list[dict]:
    events = [{"time": 0.0, "process": "p", "type": "invoke", "f": "send", "value": {"topic": "t", "partition": 0, "value": "a"}},
              {"time": 0.1, "process": "p", "type": "ok", "f": "send", "value": {"topic": "t", "partition": 0, "offset": 0, "value": "a"}}]
    read = "b" if lose else "a"
    events.append({"time": 1.0, "process": "c", "type": "ok", "f": "poll",
                   "value": {"records": [["t", 0, 0, read]], "positions_before": {"t-0": 0}}})
    return events


def scenario(**kwargs) -> Scenario:
    return Scenario(name="s", title="t", criterion="c", script=lambda run: None, **kwargs)


def passed(row: Scenario, events) -> bool:
    return all(c.ok for c in expectation_checks(row, check(events, unseen_is_anomaly=row.unseen_is_anomaly)))


def test_a_clean_row_passes_a_clean_history_and_fails_a_lossy_one():
    assert passed(scenario(), history(lose=False))
    assert not passed(scenario(), history(lose=True))


def test_a_row_that_demonstrates_a_loss_fails_when_the_checker_sees_none():
    row = scenario(expected_anomalies=("lost-write", "inconsistent-offsets"))
    assert passed(row, history(lose=True))
    assert not passed(row, history(lose=False)), "the checker must be able to fail"


def test_tolerated_kinds_are_allowed_but_not_required():
    row = scenario(expected_anomalies=("inconsistent-offsets",), tolerated_anomalies=("lost-write",))
    assert passed(row, history(lose=True))
    assert not passed(scenario(expected_anomalies=("inconsistent-offsets",)), history(lose=True))
