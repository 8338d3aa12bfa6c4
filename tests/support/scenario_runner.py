"""Runs a replication story from a JSON scenario file on the simulator and checks its outcome.

A scenario file holds ``brokers``, ``config`` (Kafka keys), ``seeds``, a default ``topic``, a list
of ``steps`` and ``expect``: the outcome per truncation policy (``high-watermark`` and
``leader-epoch``), in the terms a history checker reports (``lost`` acknowledged values,
``divergent_offsets`` between replicas, the final ``logs``, ...). Each step is an object with
``do`` naming the operation; ``policy`` restricts a step to one policy, ``comment`` is for people.

Operations: ``create_topic`` (assignment, config), ``produce`` (values, acks, and the expected
``status`` "acked" / "error" / "pending", optional ``offsets`` / ``error``), ``run`` (ms),
``run_until`` (conditions, limit_ms), ``run_until_quiet``, ``hold`` / ``drop_matching`` (name,
count, and a message filter: from, to, message, with_records, min_high_watermark), ``release`` /
``drop`` (name), ``kill`` (broker, clean, notify_controller), ``restart`` (broker,
lose_unflushed, lose_disk, clean), ``flush`` (broker), ``kill_fetcher`` (broker, leader) and
``expect`` (conditions, or per-policy conditions under the policy's name).

Group stories (a file with ``"group_coordinators": true`` runs each broker's group coordinator):
``add_consumer`` (name, group, topics: a consumer that joins and stays in the group),
``stop_consumer`` (name: its process dies without leaving), ``commit`` (consumer, offsets as
{"<topic>-<partition>": offset}, and the expected error name, "NONE" by default),
``expect_committed`` (consumer, offsets: what an OffsetFetch through it answers),
``restart_coordinator`` (broker), and ``kill`` with ``coordinator_of`` (a group) instead of a
broker: the broker whose coordinator coordinates that group now.

Conditions (``CONDITIONS``): controller view (``leader``, ``isr`` as a set, ``leader_epoch``,
``leader_applied``), per-broker replica state keyed by broker id (``high_watermark``,
``log_end_offset`` as a number or {"at_least": n}, ``log``, ``replica_isr``: the ISR as that broker
sees it, sorted), ``held`` per rule name, the checker's
``lost`` / ``divergent_offsets`` / ``logs``, ``produce_status`` of named produce steps (a produce
with ``"wait": false`` returns at once, "pending"), and histories: ``truncations`` and
``isr_joins`` per broker, ``elections`` (leader changes, clean or not). For groups:
``group_stable`` (the named consumers are stable in one generation on the group's one coordinator,
with assignments that cover their topics' partitions once) and ``coordinator_moved`` per group
(one coordinator coordinates it, not the one ``kill`` with ``coordinator_of`` took down).
"""
from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from orchestration.simulation.simulation import Simulation

POLICIES = ("high-watermark", "leader-epoch")
FILTER_KEYS = ("from", "to", "message", "with_records", "min_high_watermark")
BECOME_FOLLOWER_CAUSES = {"LeaderAndIsrRequest", "BrokerRegistrationResponse"}


def load_scenario(path: Path) -> dict:
    spec = json.loads(path.read_text(encoding="utf-8"))
    for key in ("name", "story", "brokers", "steps", "expect"):
        assert key in spec, f"{path.name}: missing {key!r}"
    assert set(spec["expect"]) == set(POLICIES), f"{path.name}: expect must name exactly {POLICIES}"
    return spec


class ScenarioFailure(AssertionError):
    pass


class ScenarioRun:
    """One scenario under one policy and seed."""

    def __init__(self, spec: dict, policy: str, seed: int) -> None:
        self.spec, self.policy, self.seed = spec, policy, seed
        self.topic = spec.get("topic", "t")
        config = {**spec.get("config", {}), "raykafka.truncation.policy": policy}
        self.sim = Simulation(brokers=spec["brokers"], config=config, seed=seed,
                              group_coordinators=spec.get("group_coordinators", False))
        self.step_index = -1
        self.produced: dict = {}  # produce steps' results by their "name"
        self.killed_coordinators: dict[str, int] = {}  # group -> the broker ``kill`` took down under it

    def run(self) -> Simulation:
        for index, step in enumerate(self.spec["steps"]):
            self.step_index = index
            if step.get("policy", self.policy) != self.policy:
                continue
            operation = getattr(self, f"_do_{step['do']}", None)
            assert operation is not None, f"unknown operation {step['do']!r}"
            operation(step)
        self.step_index = len(self.spec["steps"])
        self._expect(self.spec["expect"][self.policy], "final outcome")
        return self.sim

    # ------------------------------------------------------------------------------ failing
    def _fail(self, what: str) -> None:
        recent = "\n  ".join(list(self.sim.trace)[-30:])
        step = self.spec["steps"][self.step_index] if self.step_index < len(self.spec["steps"]) else "final expect"
        raise ScenarioFailure(
            f"{self.spec['name']} [{self.policy}, seed={self.seed}] step {self.step_index} {step}:\n  {what}\n"
            f"simulation at step {self.sim.step_count}, t={self.sim.now_ms} ms; recent events:\n  {recent}")

    # --------------------------------------------------------------------------- operations
    def _do_create_topic(self, step: dict) -> None:
        code = self.sim.create_topic(step.get("topic", self.topic), step.get("partitions", 1),
                                     step.get("replication_factor", -1), step.get("config"),
                                     assignment=step.get("assignment"))
        if code != "NONE":
            self._fail(f"CreateTopics answered {code}")

    def _do_produce(self, step: dict) -> None:
        wait = step.get("wait", True)
        result = self.sim.produce(step.get("topic", self.topic), step.get("partition", 0), step["values"],
                                  step.get("acks", "all"), wait=wait, limit_ms=step.get("limit_ms"))
        if "name" in step:
            self.produced[step["name"]] = result
        expected = {"status": step.get("expect", "acked" if wait else "pending")}
        actual = {"status": result.status}
        for key, value in (("offsets", result.offsets), ("error", result.error)):
            if key in step:
                expected[key], actual[key] = step[key], value
        if expected != actual:
            self._fail(f"produce {step['values']}: expected {expected}, got {actual}")

    def _do_run(self, step: dict) -> None:
        self.sim.run(step["ms"])

    def _do_run_until(self, step: dict) -> None:
        conditions = {k: v for k, v in step.items() if k in CONDITIONS}
        reached = self.sim.run_until(lambda: not self._mismatches(conditions), limit_ms=step.get("limit_ms", 30_000),
                                     what=str(conditions), stall_ok=True)
        if not reached:
            self._fail("not reached: " + "; ".join(self._mismatches(conditions)))

    def _do_run_until_quiet(self, step: dict) -> None:
        self.sim.run_until_quiet()

    def _filter(self, step: dict) -> dict:
        return {k: v for k, v in step.items() if k in FILTER_KEYS}

    def _do_hold(self, step: dict) -> None:
        self.sim.hold(step["name"], count=step.get("count"), **self._filter(step))

    def _do_drop_matching(self, step: dict) -> None:
        self.sim.drop_matching(step["name"], count=step.get("count"), **self._filter(step))

    def _do_release(self, step: dict) -> None:
        self.sim.release(step["name"])

    def _do_drop(self, step: dict) -> None:
        self.sim.drop(step["name"])

    def _do_kill(self, step: dict) -> None:
        broker = step.get("broker")
        if "coordinator_of" in step:
            coordinators = self.sim.coordinators_of(step["coordinator_of"])
            if len(coordinators) != 1:
                self._fail(f"group {step['coordinator_of']} has coordinators {coordinators}, not one")
            broker = self.killed_coordinators[step["coordinator_of"]] = coordinators[0]
        self.sim.kill(broker, clean=step.get("clean", False), notify_controller=step.get("notify_controller", True))

    # ------------------------------------------------------------------------------ groups
    def _do_add_consumer(self, step: dict) -> None:
        self.sim.add_consumer(step["name"], step["group"], step.get("topics", [self.topic]))

    def _do_stop_consumer(self, step: dict) -> None:
        self.sim.stop_consumer(step["name"])

    def _do_restart_coordinator(self, step: dict) -> None:
        self.sim.restart_coordinator(step["broker"])

    def _do_commit(self, step: dict) -> None:
        offsets = {_topic_partition(k): v for k, v in step["offsets"].items()}
        outcome = self.sim.consumer(step["consumer"]).commit(offsets)
        self.sim.run_until(lambda: outcome["errors"] is not None, limit_ms=step.get("limit_ms", 30_000),
                           what="the commit answered")
        expected = {k: step.get("expect", "NONE") for k in step["offsets"]}
        actual = {f"{t}-{p}": error for (t, p), error in outcome["errors"].items()}
        if actual != expected:
            self._fail(f"commit {step['offsets']}: expected {expected}, got {actual}")

    def _do_expect_committed(self, step: dict) -> None:
        partitions = [_topic_partition(k) for k in step["offsets"]]
        result = self.sim.consumer(step["consumer"]).fetch_committed(partitions)
        self.sim.run_until(lambda: result["offsets"] is not None or result["error"] is not None,
                           limit_ms=step.get("limit_ms", 30_000), what="the offset fetch answered")
        actual = result["error"] or {f"{t}-{p}": o for (t, p), o in result["offsets"].items()}
        if actual != step["offsets"]:
            self._fail(f"committed offsets: expected {step['offsets']}, got {actual}")

    def _group_stable(self, expected: list) -> Any:
        members = [self.sim.consumer(name) for name in expected]
        coordinators = {m.group_id: self.sim.coordinators_of(m.group_id) for m in members}
        not_ready = [name for name, m in zip(expected, members) if m.state != "stable"
                     or [m.coordinator] != [f"coordinator:{b}" for b in coordinators[m.group_id]]]
        if not_ready:
            return f"not stable on the group's one coordinator: {not_ready}"
        if len({m.generation_id for m in members}) != 1:
            return f"in generations {sorted({m.generation_id for m in members})}"
        assigned = sorted(tp for m in members for tp in m.assignment)
        wanted = sorted((t, p) for t in {t for m in members for t in m.topics}
                        for p in range(self.sim.partition_count(t)))
        return expected if assigned == wanted else f"assigned {assigned}, not each of {wanted} once"

    def _coordinator_moved(self, expected: dict) -> dict:
        return {group: len(c := self.sim.coordinators_of(group)) == 1 and c[0] != self.killed_coordinators.get(group)
                for group in expected}

    def _do_restart(self, step: dict) -> None:
        self.sim.restart(step["broker"], lose_unflushed=step.get("lose_unflushed", False),
                         lose_disk=step.get("lose_disk", False), clean=step.get("clean", False))

    def _do_flush(self, step: dict) -> None:
        self.sim.flush(step["broker"])

    def _do_kill_fetcher(self, step: dict) -> None:
        self.sim.kill_fetcher(step["broker"], step["leader"], step.get("fetcher_id", 0))

    def _do_expect(self, step: dict) -> None:
        conditions = {k: v for k, v in step.items() if k in CONDITIONS}
        conditions.update(step.get(self.policy, {}))
        self._expect(conditions, "expect")

    def _expect(self, conditions: dict, what: str) -> None:
        unknown = set(conditions) - set(CONDITIONS)
        assert not unknown, f"unknown conditions {sorted(unknown)}"
        mismatches = self._mismatches(conditions)
        if mismatches:
            self._fail(f"{what}: " + "; ".join(mismatches))

    # --------------------------------------------------------------------------- conditions
    def _mismatches(self, conditions: dict) -> list[str]:
        found = []
        for key, expected in conditions.items():
            actual = CONDITIONS[key](self, expected)
            if _normalise(actual) != _normalise(expected):
                found.append(f"{key}: expected {expected!r}, got {actual!r}")
        return found

    def _per_broker(self, expected: dict, read: Callable[[int], Any]) -> dict:
        actual = {}
        for broker, wanted in expected.items():
            value = read(int(broker))
            if isinstance(wanted, dict) and "at_least" in wanted:
                value = {"at_least": wanted["at_least"]} if value is not None and value >= wanted["at_least"] else value
            actual[broker] = value
        return actual

    def _check(self) -> dict:
        return self.sim.check(self.topic)

    def _leader_applied(self, expected: bool) -> bool:
        described = self.sim.describe(self.topic)
        replica = self.sim.replica(described["leader"], self.topic) if described["leader"] >= 0 else None
        return replica is not None and replica.is_leader and replica.leader_epoch == described["leader_epoch"]

    def _truncations(self, expected: dict) -> dict:
        return {broker: [{"from": t.from_offset, "to": t.to_offset, "leader": t.leader_id,
                          "by": "become-follower" if t.cause in BECOME_FOLLOWER_CAUSES else "fetcher"}
                         for t in self.sim.truncations_of(int(broker), self.topic)]
                for broker in expected}

    def _isr_joins(self, expected: dict) -> dict:
        return {broker: [{"log_end_offset": j.log_end_offset, "leader_high_watermark": j.leader_high_watermark}
                         for j in self.sim.isr_joins if j.broker_id == int(broker)]
                for broker in expected}

    def _elections(self, expected: list) -> list:
        return [{"leader": e.leader_id, "clean": e.clean} for e in self.sim.elections
                if e.topic_partition == (self.topic, 0)]


def _topic_partition(name: str) -> tuple[str, int]:
    topic, _, partition = name.rpartition("-")
    return topic, int(partition)


def _normalise(value: Any) -> Any:
    """JSON has string keys; compare broker-keyed maps by string key."""
    if isinstance(value, dict):
        return {str(k): _normalise(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_normalise(v) for v in value]
    return value


CONDITIONS: dict[str, Callable[[ScenarioRun, Any], Any]] = {
    "leader": lambda run, _: run.sim.leader(run.topic),
    "isr": lambda run, expected: sorted(run.sim.isr(run.topic)) if sorted(run.sim.isr(run.topic)) != sorted(expected)
    else expected,
    "leader_epoch": lambda run, _: run.sim.leader_epoch(run.topic),
    "leader_applied": ScenarioRun._leader_applied,
    "high_watermark": lambda run, e: run._per_broker(e, lambda b: run.sim.high_watermark(b, run.topic)),
    "log_end_offset": lambda run, e: run._per_broker(e, lambda b: run.sim.log_end_offset(b, run.topic)),
    "replica_isr": lambda run, e: run._per_broker(
        e, lambda b: None if (r := run.sim.replica(b, run.topic)) is None else sorted(r.isr)),
    "log": lambda run, e: run._per_broker(
        e, lambda b: None if (log := run.sim.log_of(b, run.topic)) is None else [v for _, v in log]),
    "held": lambda run, e: {name: len(run.sim.held(name)) for name in e},
    "lost": lambda run, _: run._check()["lost"],
    "divergent_offsets": lambda run, _: run._check()["divergent_offsets"],
    "logs": lambda run, e: {b: log for b, log in run._check()["logs"].items() if str(b) in {str(k) for k in e}},
    "truncations": ScenarioRun._truncations,
    "isr_joins": ScenarioRun._isr_joins,
    "elections": ScenarioRun._elections,
    "produce_status": lambda run, e: {name: run.produced[name].status for name in e},
    "group_stable": ScenarioRun._group_stable,
    "coordinator_moved": ScenarioRun._coordinator_moved,
}
