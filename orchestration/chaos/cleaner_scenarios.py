"""The failover matrix's log-cleaner rows: a compacted topic written with many values per key while
the leader's log cleaner actor is killed mid-round, or while the leader broker is killed as its
cleaner hands a round over for the swap. Each row's history records every send's key, and the
checker judges the topic by the latest value per key (``check(..., compacted_topics=...)``): a
superseded value may be gone, a key's latest acknowledged value may not.

The cleaner reads slowly here (``log.cleaner.io.max.bytes.per.second``) so that a round lasts
long enough to be caught in the middle, and small segments with a low dirty ratio give it work.
"""
from __future__ import annotations

import time

import ray

from orchestration.chaos.runner import IDEMPOTENT, Run, Scenario
from orchestration.history import read_history

TOPIC = "compacted"
KEYS = 20
ROUNDS = 8  # values per key in each write
PADDING = "x" * 200  # values of about 250 bytes: a round has kilobytes to read
PRODUCER = {"batch_size": 2048, "linger_ms": 0}
TOPIC_CONFIG = {"cleanup.policy": "compact", "segment.bytes": "16384", "min.cleanable.dirty.ratio": "0.01",
                "min.insync.replicas": "2"}
CLEANER_CONFIG = {"log.cleaner.backoff.ms": "200", "log.cleaner.io.max.bytes.per.second": "8000"}
CATCH_TIMEOUT_S = 120


def _write(run: Run, prefix: str) -> dict:
    """ROUNDS values for each of KEYS keys, acks=all: one produce call per round (a value for
    every key), so that no request for the partition is larger than a segment; returns the outcomes."""
    outcomes: dict = {}
    for round_ in range(ROUNDS):
        values = [run.next_value(f"{prefix}-k{key}-r{round_}-{PADDING}") for key in range(KEYS)]
        outcomes.update(run.produce(TOPIC, values, keys=[f"k{key}" for key in range(KEYS)], **PRODUCER))
    acknowledged = sum(isinstance(o, int) for o in outcomes.values())
    run.require(acknowledged == len(outcomes), f"{prefix}: every keyed send acknowledged",
                f"{acknowledged} of {len(outcomes)}")
    return outcomes


def _cleaner(run: Run, broker_id: int) -> dict:
    """The broker's cleaner as it says: {"started", "phase", "rounds"} (phase None when it has none)."""
    entry = ray.get(run.cluster.broker(broker_id).log_cleaner.remote(), timeout=10)
    state = {"started": entry["started"], "phase": None, "rounds": 0}
    if entry["actor"] is not None:
        try:
            state.update(ray.get(entry["actor"].describe.remote(), timeout=10))
        except ray.exceptions.RayError:  # killed or being replaced: no phase to report
            pass
    return state


def _in_phase(run: Run, broker_id: int, phase: str) -> bool:
    return (_cleaner(run, broker_id)["phase"] or "").startswith(phase)


def _read_back(run: Run) -> None:
    acknowledged = sum(1 for event in read_history(run.history.path)
                       if event["f"] == "send" and event["type"] == "ok" and event["value"]["topic"] == TOPIC)
    read = run.read_all(TOPIC)
    run.require(read < acknowledged, "the leader's log was compacted (fewer records read than acknowledged)",
                f"{read} read of {acknowledged} acknowledged")


def _cleaner_killed_mid_round(run: Run) -> None:
    """The leader's cleaner is killed while it cleans; the broker starts another, which cleans the
    log from the last round swapped in; writes go on meanwhile."""
    run.create_topic(TOPIC, config=TOPIC_CONFIG)
    run.wait_isr(TOPIC, 3)
    leader = run.leader(TOPIC)
    _write(run, "before")
    run.wait(lambda: _in_phase(run, leader, "cleaning"), f"broker {leader}'s cleaner in a round", CATCH_TIMEOUT_S)
    started = _cleaner(run, leader)["started"]
    run.faults.kill("log-cleaner", leader)
    run.note(f"killed broker {leader}'s log cleaner mid-round")
    _write(run, "after")
    run.wait(lambda: (lambda c: c["started"] > started and c["rounds"] >= 1)(_cleaner(run, leader)),
             f"broker {leader}'s new cleaner to finish a round", CATCH_TIMEOUT_S)
    run.wait_isr(TOPIC, 3)
    _read_back(run)


def _catch_a_swap(run: Run, broker_id: int, attempts: int = 3) -> str:
    """Polls the broker's cleaner as fast as Ray answers until it is seen handing a round over
    (phase ``swapping``: the broker is swapping the cleaned segments in). A round whose swap went
    by unseen is followed by another write and another round, up to ``attempts``; then the phase
    settled for is ``cleaning`` (the round's ``.cleaned`` files half written). Returns the phase."""
    for attempt in range(attempts):
        rounds = _cleaner(run, broker_id)["rounds"]
        deadline = time.monotonic() + CATCH_TIMEOUT_S
        while time.monotonic() < deadline:
            state = _cleaner(run, broker_id)
            if (state["phase"] or "").startswith("swapping"):
                return "swapping"
            if state["rounds"] > rounds:
                break  # the swap went by between two looks: dirty the log again
        _write(run, f"again{attempt}")
    run.wait(lambda: _in_phase(run, broker_id, "cleaning"), f"broker {broker_id}'s cleaner in a round", CATCH_TIMEOUT_S)
    return "cleaning"


def _broker_killed_at_swap(run: Run) -> None:
    """The leader broker is killed as its cleaner hands a cleaned round over for the swap (the
    swap is the broker's: renames to .swap, then into place), or, when no look caught that moment
    in three rounds, while its cleaner writes a round; Ray restarts it, and its log recovery
    finishes or undoes the swap. A follower leads meanwhile; the restarted broker rejoins the ISR."""
    run.create_topic(TOPIC, config=TOPIC_CONFIG)
    run.wait_isr(TOPIC, 3)
    leader = run.leader(TOPIC)
    _write(run, "before")
    phase = _catch_a_swap(run, leader)
    run.faults.kill("broker", leader, restart=True)
    run.note(f"killed broker {leader} while its cleaner was {phase}")
    run.wait_leader(TOPIC, lambda new: new != leader, "a surviving replica to lead")
    _write(run, "after")
    run.wait_isr(TOPIC, 3, timeout_s=CATCH_TIMEOUT_S)
    run.wait(lambda: _cleaner(run, leader)["rounds"] >= 1, f"restarted broker {leader}'s cleaner to finish a round",
             CATCH_TIMEOUT_S)
    _read_back(run)


CRITERION = ("every key's latest acknowledged value is read back (the checker's latest-value-per-key rule); "
             "superseded values may be gone and the log holds fewer records than were acknowledged; "
             "nothing else is anomalous")
CLEANER_SCENARIOS: list[Scenario] = [
    Scenario(name="log-cleaner-killed-mid-round", title="the leader's log cleaner killed while it cleans a "
             "compacted topic", criterion=CRITERION, script=_cleaner_killed_mid_round, config=CLEANER_CONFIG,
             slow=True, producer_modes=(IDEMPOTENT,)),
    Scenario(name="broker-killed-at-cleaner-swap", title="the leader broker killed as its log cleaner hands a "
             "round over for the swap (or, if never caught there, mid-round)", criterion=CRITERION, script=_broker_killed_at_swap, config=CLEANER_CONFIG,
             slow=True, producer_modes=(IDEMPOTENT,)),
]
