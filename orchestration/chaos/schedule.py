"""Fault schedules: a small TOML file that names a cluster, a load and the faults to inject.

Theory of operation. A schedule file describes one scenario: ``name``, ``title``, ``criterion``,
``brokers``, broker ``[config]``, the ``[topic]`` to create, the ``[load]`` (producers, rate, acks,
and when it ends: ``acknowledged_after_steps`` more sends acknowledged once the last step is done,
or ``duration_s`` seconds after it started), then ``[[step]]``s run in order, each when its trigger fires:
``at`` (seconds since the load started) or ``after_acks`` (that many sends acknowledged), plus
``jitter_s`` (a seeded random extra wait). A step does one fault (``do``) to a ``target``:
``leader``/``follower`` (of the topic's partition 0 when the step fires; a follower is picked by
the seeded rng), ``random-broker``, ``broker-<id>``, ``controller``, or ``same`` (the previous
step's target, to restart or resume it). ``wait_for`` then waits for ``new-leader``,
``isr-shrunk``, ``isr-full`` or ``leader-led`` (some broker leads). ``[end]`` names what to wait
for before the final read, and ``[expect]`` what must have been seen (``leader_changed``,
``isr_shrank``, ``controller_epoch_increased``). ``producer_modes`` lists the producer modes the
matrix runs the row in (``retries-0``, ``idempotent``; see ``runner.PRODUCER_MODES``), the first
being the default. The same seed gives the same targets and jitter.

Verbs: kill (``role`` = broker, controller, replica-fetcher, request-send-thread,
group-coordinator; ``restart``), restart, lose-disk, storage-fault (``fault`` = disk-full,
write-error or fsync-error; ``room_bytes``), controlled-shutdown, pause/resume (``role``
broker or controller), isolate (``from`` = followers or all), partition (``from`` = followers or
all, ``one_way``), delay (``delay_ms``, ``from``), drop (``probability``, ``from``), heal, sleep
(``seconds``).
"""
from __future__ import annotations

import time
import tomllib
from pathlib import Path
from typing import Any

from orchestration.chaos.runner import PRODUCER_MODES, RETRIES_0, Run, Scenario

VERBS = ("kill", "restart", "lose-disk", "storage-fault", "controlled-shutdown", "pause", "resume", "isolate", "partition",
         "delay", "drop", "heal", "sleep")
WAITS = ("new-leader", "isr-shrunk", "isr-full", "leader-led", "none")
TRIGGER_TIMEOUT_S = 60


class ScheduleError(ValueError):
    pass


def load_schedule(path: str | Path) -> Scenario:
    """Parse and check a schedule file; the scenario it returns runs it."""
    path = Path(path)
    try:
        spec = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ScheduleError(f"{path}: {exc}") from exc
    for key in ("name", "title", "criterion", "topic", "load", "step"):
        if key not in spec:
            raise ScheduleError(f"{path}: missing '{key}'")
    for index, step in enumerate(spec["step"]):
        where = f"{path}: step {index + 1}"
        if step.get("do") not in VERBS:
            raise ScheduleError(f"{where}: 'do' must be one of {', '.join(VERBS)}")
        if step.get("wait_for", "none") not in WAITS:
            raise ScheduleError(f"{where}: 'wait_for' must be one of {', '.join(WAITS)}")
        if "at" in step and "after_acks" in step:
            raise ScheduleError(f"{where}: give 'at' or 'after_acks', not both")
    producer_modes = tuple(spec.get("producer_modes", (RETRIES_0,)))
    if not producer_modes or not set(producer_modes) <= set(PRODUCER_MODES):
        raise ScheduleError(f"{path}: 'producer_modes' must list some of {', '.join(PRODUCER_MODES)}")
    expected = spec.get("expect", {}).get("anomalies")
    return Scenario(
        name=spec["name"], title=spec["title"], criterion=spec["criterion"],
        script=lambda run: run_schedule(run, spec), brokers=int(spec.get("brokers", 3)),
        config={str(k): str(v) for k, v in spec.get("config", {}).items()},
        expected_anomalies=tuple(expected) if expected is not None else None,
        tolerated_anomalies=tuple(spec.get("expect", {}).get("tolerated", ())),
        slow=bool(spec.get("slow", False)), producer_modes=producer_modes)


def run_schedule(run: Run, spec: dict[str, Any]) -> None:
    topic_spec, load_spec = spec["topic"], spec["load"]
    topic = topic_spec.get("name", "chaos")
    run.create_topic(topic, partitions=int(topic_spec.get("partitions", 1)),
                     replication_factor=int(topic_spec.get("replication_factor", 3)),
                     config={str(k): str(v) for k, v in topic_spec.get("config", {}).items()})
    first = run.partition_state(topic)
    seen = {"leaders": {first.leader}, "isr_min": len(first.isr), "epoch": run.cluster.controller_epoch()}
    load = run.start_load(topic, producers=int(load_spec.get("producers", 1)),
                          rate_per_s=float(load_spec.get("rate_per_s", 100)), acks=str(load_spec.get("acks", "all")))
    started = time.monotonic()
    previous_target: Any = None
    for index, step in enumerate(spec["step"]):
        if "after_acks" in step:
            load.wait_acknowledged(int(step["after_acks"]), TRIGGER_TIMEOUT_S)
        elif "at" in step:
            _sleep_until(started + float(step["at"]))
        if step.get("jitter_s"):
            time.sleep(run.rng.uniform(0, float(step["jitter_s"])))
        leader_before = run.leader(topic)
        previous_target = _do(run, topic, step, previous_target)
        run.note(f"step {index + 1}: {step['do']} {previous_target if previous_target is not None else ''} "
                 f"at {time.monotonic() - started:.1f}s")
        _wait(run, topic, step.get("wait_for", "none"), leader_before, seen)
        state = run.partition_state(topic)
        seen["leaders"].add(state.leader)
        seen["isr_min"] = min(seen["isr_min"], len(state.isr))
    _end_load(run, load, load_spec, started)
    load.stop()
    run.note(f"load: {load.sent} sent, {load.acknowledged} acknowledged, {load.failed} not")
    run.require(load.acknowledged > 0, "the load was acknowledged", f"{load.acknowledged} acknowledged")
    run.faults.heal()
    end = spec.get("end", {})
    if end.get("wait_for") == "isr-full":
        run.wait_isr(topic, len(first.replicas))
    elif end.get("wait_for") == "leader-led":
        run.wait_leader(topic, lambda leader: True, "a leader")
    run.read_all(topic)
    expect = spec.get("expect", {})
    final = run.partition_state(topic)
    if expect.get("leader_changed"):
        run.require(len(seen["leaders"]) > 1 or final.leader != first.leader, "leadership moved",
                    f"leaders seen: {sorted(seen['leaders'])}")
    if expect.get("isr_shrank"):
        run.require(seen["isr_min"] < len(first.isr), "the ISR shrank during the fault",
                    f"smallest ISR seen: {seen['isr_min']} of {len(first.isr)}")
    if expect.get("isr_full_at_end", end.get("wait_for") == "isr-full"):
        run.require(len(final.isr) == len(first.replicas), "the ISR is full again", f"ISR {final.isr}")
    if expect.get("controller_epoch_increased"):
        epoch = run.cluster.controller_epoch()
        run.require(epoch > seen["epoch"], "a new controller epoch", f"{seen['epoch']} -> {epoch}")


def _end_load(run: Run, load, load_spec: dict[str, Any], started: float) -> None:
    """The load runs on until ``acknowledged_after_steps`` more sends are acknowledged once the last
    step is done (writes go on after the faults; bounded, a failure if they do not), or, without
    it, until ``duration_s`` seconds after it started."""
    if "acknowledged_after_steps" in load_spec:
        after = int(load_spec["acknowledged_after_steps"])
        load.wait_acknowledged(load.acknowledged + after, TRIGGER_TIMEOUT_S)
        run.note(f"load: {after} more sends acknowledged after the last step")
    else:
        _sleep_until(started + float(load_spec.get("duration_s", 0)))


def _sleep_until(deadline: float) -> None:
    remaining = deadline - time.monotonic()
    if remaining > 0:
        time.sleep(remaining)


def _resolve(run: Run, topic: str, target: Any, previous: Any) -> Any:
    if target is None or target == "same":
        if previous is None and target == "same":
            raise ScheduleError("'same' names the previous step's target, and there is none")
        return previous
    if isinstance(target, int):
        return target
    if target == "leader":
        return run.leader(topic)
    if target == "follower":
        state = run.partition_state(topic)
        candidates = sorted(b for b in state.isr if b != state.leader) or sorted(
            b for b in state.replicas if b != state.leader)
        return run.rng.choice(candidates)
    if target == "random-broker":
        return run.rng.choice(sorted(run.cluster.broker_ids))
    if target == "controller":
        return "controller"
    if isinstance(target, str) and target.startswith("broker-") and target[7:].isdigit():
        return int(target[7:])
    raise ScheduleError(f"unknown target {target!r}")


def _peers(run: Run, topic: str, target: Any, which: str) -> list:
    if which == "followers":
        state = run.partition_state(topic)
        return [b for b in state.replicas if b != target]
    if which == "all":
        return [b for b in run.cluster.broker_ids if b != target] + (["controller"] if target != "controller" else [])
    raise ScheduleError(f"'from' must be 'followers' or 'all', not {which!r}")


def _do(run: Run, topic: str, step: dict, previous: Any) -> Any:
    verb, faults = step["do"], run.faults
    if verb == "heal":
        faults.heal()
        return previous
    if verb == "sleep":
        time.sleep(float(step.get("seconds", 1)))
        return previous
    target = _resolve(run, topic, step.get("target"), previous)
    role = step.get("role", "controller" if target == "controller" else "broker")
    broker_id = None if target == "controller" else target
    if verb == "kill":
        faults.kill(role, broker_id, restart=bool(step.get("restart", True)))
    elif verb == "restart":
        faults.restart(broker_id)
    elif verb == "lose-disk":
        faults.lose_disk(broker_id)
    elif verb == "storage-fault":
        faults.storage_fault(broker_id, str(step.get("fault", "disk-full")), room_bytes=int(step.get("room_bytes", 0)))
    elif verb == "controlled-shutdown":
        faults.controlled_shutdown(broker_id)
    elif verb == "pause":
        faults.pause(role, broker_id)
    elif verb == "resume":
        faults.resume(role, broker_id)
    elif verb in ("isolate", "partition"):
        peers = _peers(run, topic, target, step.get("from", "all"))
        faults.partition([target], peers, one_way=bool(step.get("one_way", False)) and verb == "partition")
    elif verb == "delay":
        for peer in _peers(run, topic, target, step.get("from", "followers")):
            faults.delay(target, peer, int(step["delay_ms"]), both_ways=True)
    elif verb == "drop":
        for peer in _peers(run, topic, target, step.get("from", "followers")):
            faults.drop(target, peer, float(step["probability"]), both_ways=True)
    return target


def _wait(run: Run, topic: str, what: str, leader_before: int, seen: dict) -> None:
    if what == "none":
        return
    if what == "new-leader":
        run.wait_leader(topic, lambda leader: leader != leader_before, f"a leader other than {leader_before}")
    elif what == "leader-led":
        run.wait_leader(topic, lambda leader: True, "a leader")
    elif what == "isr-shrunk":
        size = len(run.partition_state(topic).replicas)
        run.wait(lambda: len(run.partition_state(topic).isr) < size, "the ISR to shrink")
        seen["isr_min"] = min(seen["isr_min"], len(run.partition_state(topic).isr))
    elif what == "isr-full":
        run.wait_isr(topic, len(run.partition_state(topic).replicas))
