"""A scenario's verdict compares the checker's findings with what the row expects: a clean
history, or the anomaly kinds it demonstrates (required) plus the ones it tolerates (hand-written
histories, no Ray)."""
from __future__ import annotations

import pytest

from orchestration.chaos.runner import IDEMPOTENT, PRODUCER_MODES, RETRIES_0, Scenario, expectation_checks
from orchestration.clients.idempotence import idempotence_enabled
from orchestration.clients.producer import PRODUCER_DEFAULTS, parse_acks
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


def duplicated() -> list[dict]:
    """"a" acknowledged at offset 1 after a retry, and read at 0 and 1: written twice."""
    events = history(lose=False)
    events[1]["value"]["offset"] = 1
    events[2]["value"]["records"] = [["t", 0, 0, "a"], ["t", 0, 1, "a"]]
    return events


def test_idempotent_rows_name_no_duplicate_in_their_verdict():
    row = scenario(producer_modes=(IDEMPOTENT,))
    checks = expectation_checks(row, check(duplicated()), IDEMPOTENT)
    named = [c for c in checks if c.what.startswith("no duplicate")]
    assert len(named) == 1 and not named[0].ok and named[0].detail == "1 found"
    clean = expectation_checks(row, check(history(lose=False)), IDEMPOTENT)
    assert all(c.ok for c in clean) and any(c.what.startswith("no duplicate") for c in clean)
    assert not any(c.what.startswith("no duplicate") for c in expectation_checks(row, check(duplicated()), RETRIES_0))


@pytest.mark.parametrize("mode, idempotent", [(IDEMPOTENT, True), (RETRIES_0, False)])
def test_the_producer_modes_are_what_they_say(mode, idempotent):
    """The idempotent mode is Kafka 3.x's defaults (retries and in-flight at the client's own,
    idempotence on with acks=all); retries-0 cannot be idempotent (Kafka refuses the mix)."""
    config = {**PRODUCER_MODES[mode], "acks": "all"}
    settings = {**PRODUCER_DEFAULTS, **config}
    assert idempotence_enabled(settings, parse_acks("all"), explicit="enable.idempotence" in config) is idempotent
    if mode == IDEMPOTENT:
        assert "retries" not in config and "max.in.flight.requests.per.connection" not in config


def test_a_row_names_only_known_producer_modes():
    with pytest.raises(AssertionError):
        scenario(producer_modes=("retries-3",))
