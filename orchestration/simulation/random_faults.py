"""Seeded random fault schedules over a whole simulated cluster, judged by the history checker.

Theory of operation. ``run_seed(options)`` builds a ``Simulation`` of ``brokers`` brokers with
their fetchers, the controller and its send threads, a group coordinator per broker, and two
consumers in a group; creates topic ``t`` (``partitions`` partitions, replication factor
min(3, brokers), ``min.insync.replicas=2``) and acknowledges a baseline on every partition. Then
it applies ``schedule_steps`` random actions chosen by a ``random.Random(seed)``: acks=all sends
(without waiting), runs of simulated time, offset commits by stable consumers, and the faults the
options allow:

- ``crash``: kill a broker (a process kill; clean or not, Ray's death notice or not);
- ``restart``: start a broker again over its disk, or restart a group coordinator (empty);
- ``pause``: stop a broker's process (its fetchers too) until a heal resumes it;
- ``partition``: hold every message to and from one broker; the heal loses or delivers them;
- ``drop`` / ``delay``: lose, or hold back until a heal, some messages of one kind on one link;
- ``lose-disk`` / ``unflushed-tail``: restart a broker with an empty disk, or cut back to its
  last fsync. Kafka 2.4 loses acknowledged data when every replica of a partition loses its disk
  or its unflushed tail (the known gap of scenario 05b), so these apply only to a broker whose
  partitions keep two other live members of the ISR that no fault is holding;
- ``storage-fault``: a broker's disk fills up (what fits of the next append lands), or fails its
  writes or fsyncs: its log directory goes offline, and it halts and restarts with a healthy disk
  (actors/core/replica/log_dir_failure_handler.py). Like a crash, safe for any broker;
- ``kill-cleaner`` (compacted runs only): kill a broker's log cleaner, one in the middle of a
  round if there is one; its broker starts another a second later.

``compacted`` (``raykafka sim --compacted``) makes ``t`` a compacted topic (small segments, a low
``min.cleanable.dirty.ratio``, tombstones kept for 5 s) written with keys from a small key space,
some sends tombstones, and runs a throttled log cleaner per broker (log_cleaner.py). Before the
faults, ``PRELOAD_SENDS`` keyed sends are acknowledged, so that the cleaners have segments to
clean while brokers crash and followers truncate. The checker then judges ``t`` by the latest
value per key (its ``latest-value-lost`` rule, counted as lost): a superseded value or a
tombstone may be gone, a key's latest acknowledged value may not. ``SeedResult.cleaner`` counts
the cleaners' rounds by outcome and the bytes the swapped rounds rewrote and kept. Without
``compacted`` no cleaner runs and no seed draws anything it did not draw before.

``retention`` (``raykafka sim --retention``) puts ``t`` under time retention (``retention.ms`` of
``RETENTION_MS``, small segments, a retention check every simulated half second) with records
stamped on the brokers' clock, so the brokers' own retention (ReplicaManager.tick, the code a
broker runs) deletes old segments and moves the log start offset while the faults happen. The
checker is told the topic's retention.ms: a value whose send is more than that older than the read
that passed it may be gone, any other acknowledged value may not. ``SeedResult.retention`` counts
the partitions whose log start moved and the acknowledged records below it. With both options the
topic is ``cleanup.policy=compact,delete``. Like ``compacted``, ``retention`` draws nothing from
the seed that a default run does not.

Then everything heals, every broker runs, and the run goes on until every send is answered, every
partition has its full ISR and nothing changes any more. The invariants (invariants.py) are
checked after every step; at the end a reader polls every partition from its log start to its
high watermark and ``orchestration.chaos.checker`` judges the history of sends and polls, with
acknowledged values never read counted as lost (after healing the reader has read everything).
The group is checked too: stable on one coordinator, and an offset fetch answers the last
acknowledged commit.

``RunOptions.replay_command`` is the one command that replays a seed: everything is drawn from
the seed, so the same options give the same steps, faults and verdict.
"""
from __future__ import annotations

import collections
import itertools
import random
from dataclasses import dataclass, field

from actors.core.log.storage_faults import STORAGE_FAULTS
from orchestration.chaos.checker import check
from orchestration.simulation.invariants import SimulationInvariantError
from orchestration.simulation.network import MessageFilter
from orchestration.simulation.simulation import Simulation, SimulationStalled

FAULT_KINDS = ("crash", "restart", "pause", "partition", "drop", "delay", "lose-disk", "unflushed-tail",
               "storage-fault", "kill-cleaner")
POLICIES = ("leader-epoch", "high-watermark")
TOPIC, GROUP, OFFSETS_TOPIC = "t", "g", "__consumer_offsets"
# Message kinds a drop or delay may take, as filters over (leader-ish broker b, other broker o).
FILTERS = (
    lambda b, o: MessageFilter(source=f"broker:{b}", destination=f"fetcher:{o}", message="FetchResponse"),
    lambda b, o: MessageFilter(source=f"fetcher:{o}", destination=f"broker:{b}", message="FetchRequest"),
    lambda b, o: MessageFilter(source=f"broker:{b}", destination=f"fetcher:{o}", message="OffsetForLeaderEpochResponse"),
    lambda b, o: MessageFilter(source=f"fetcher:{o}", destination=f"broker:{o}"),
    lambda b, o: MessageFilter(source=f"broker:{b}", destination="controller", message="AlterPartitionRequest"),
    lambda b, o: MessageFilter(source=f"broker:{b}", destination="controller", message="BrokerHeartbeatRequest"),
    lambda b, o: MessageFilter(source=f"channel:{b}", destination=f"broker:{b}"),
    lambda b, o: MessageFilter(source=f"coordinator:{b}", destination=f"broker:{b}"),
)
# (action, weight, the fault kind that allows it; None: always allowed).
ACTIONS = (("produce", 10, None), ("run", 5, None), ("commit", 1, None), ("heal", 2, None),
           ("crash", 1, "crash"), ("restart", 1.5, "restart"), ("pause", 0.7, "pause"),
           ("partition", 0.7, "partition"), ("drop", 1, "drop"), ("delay", 1.5, "delay"),
           ("lose-disk", 0.4, "lose-disk"), ("unflushed-tail", 0.6, "unflushed-tail"),
           ("storage-fault", 0.6, "storage-fault"), ("kill-cleaner", 1, "kill-cleaner"))
# Actions that only a compacted run has: the log cleaners run only there.
COMPACTED_ACTIONS = frozenset({"kill-cleaner"})
# The compacted workload (``--compacted``): keys from a small key space, some of them tombstones,
# on a compacted topic with small segments, cleaned by a throttled cleaner per broker.
KEYS = tuple(f"k{i}" for i in range(6))
TOMBSTONE_CHANCE = 0.15
PRELOAD_SENDS, PRELOAD_RECORDS = 12, 5  # acknowledged before the faults: every key written many times
COMPACTED_TOPIC_CONFIG = {"cleanup.policy": "compact", "segment.bytes": "400", "min.cleanable.dirty.ratio": "0.1",
                          "delete.retention.ms": "5000"}
CLEANER_CONFIG = {"log.cleaner.enable": "true", "log.cleaner.backoff.ms": "300",
                  "log.cleaner.io.max.bytes.per.second": "20000"}
# The retention workload (``--retention``): old segments deleted by time while the faults happen.
RETENTION_MS = 8_000
RETENTION_TOPIC_CONFIG = {"retention.ms": str(RETENTION_MS), "segment.bytes": "400"}
RETENTION_BROKER_CONFIG = {"log.retention.check.interval.ms": "500"}
HEAL_LIMIT_MS = 180_000
# Errors after which a send may have been appended (orchestration/clients/producer.py's rule): a
# lost call or timeout, or the produce purgatory's answers after the leader appended (a storage
# error's too: a parked send, or a write that reached the disk in part or whole).
MAYBE_APPENDED = frozenset({"REQUEST_TIMED_OUT", "NETWORK_EXCEPTION", "NOT_ENOUGH_REPLICAS_AFTER_APPEND",
                            "UNKNOWN_SERVER_ERROR", "KAFKA_STORAGE_ERROR"})


@dataclass(frozen=True)
class RunOptions:
    """What one seed runs; everything else is drawn from the seed."""

    seed: int = 1
    brokers: int = 3
    partitions: int = 1
    faults: tuple[str, ...] = FAULT_KINDS
    policy: str = "leader-epoch"
    schedule_steps: int = 40
    compacted: bool = False  # the keyed workload on a compacted topic, with the log cleaners on
    retention: bool = False  # the topic under time retention, judged by what retention must keep

    def __post_init__(self) -> None:
        unknown = set(self.faults) - set(FAULT_KINDS)
        assert not unknown, f"unknown faults {sorted(unknown)}; known: {', '.join(FAULT_KINDS)}"
        assert self.policy in POLICIES, f"unknown policy {self.policy!r}; known: {', '.join(POLICIES)}"
        assert self.brokers >= 3 and self.partitions >= 1 and self.schedule_steps >= 0, self

    def replay_command(self) -> str:
        faults = ",".join(self.faults) if self.faults else "none"
        return (f"raykafka sim --seed {self.seed} --brokers {self.brokers} --partitions {self.partitions} "
                f"--faults {faults} --policy {self.policy} --steps {self.schedule_steps}"
                + (" --compacted" if self.compacted else "") + (" --retention" if self.retention else ""))


@dataclass
class SeedResult:
    """One seed's outcome. ``verdict``: PASS, LOST (acknowledged values lost), ANOMALY (another
    checker anomaly or diverging replicas), INVARIANT (an invariant broke mid-run), STALLED (the
    cluster did not heal within its bound) or GROUP (the group lost an acknowledged commit)."""

    options: RunOptions
    verdict: str = "PASS"
    steps: int = 0
    simulated_ms: int = 0
    faults: int = 0
    acknowledged: int = 0
    lost: int = 0
    commits_acknowledged: int = 0  # offset commits the group coordinator acknowledged
    # A compacted run's cleaner rounds by outcome, the bytes the swapped ones rewrote and kept,
    # and the records the final read found on the topic (cleaner_figures).
    cleaner: dict = field(default_factory=dict)
    # A retention run's partitions whose log start offset moved, and the acknowledged records
    # below the log start offsets at the end (retention_figures).
    retention: dict = field(default_factory=dict)
    anomalies: dict = field(default_factory=dict)  # the checker's counts by kind, those found
    detail: str = ""
    schedule: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return self.verdict == "PASS"

    def to_dict(self) -> dict:
        return {"seed": self.options.seed, "verdict": self.verdict, "steps": self.steps,
                "simulated_ms": self.simulated_ms, "faults": self.faults, "acknowledged": self.acknowledged,
                "lost": self.lost, "detail": self.detail,
                "replay": None if self.passed else self.options.replay_command(),
                **({"cleaner": self.cleaner} if self.options.compacted else {}),
                **({"retention": self.retention} if self.options.retention else {})}


class _Schedule:
    """Applies one seed's random actions to a simulation, keeping what it did."""

    def __init__(self, sim: Simulation, options: RunOptions, chooser: random.Random) -> None:
        self.sim, self.options, self.chooser = sim, options, chooser
        self.brokers = tuple(sim.broker_ids)
        self.values = itertools.count()
        self.done: list[str] = []
        self.rules: list[str] = []
        self.partitioned: dict[str, int] = {}  # rule name -> the broker it cuts off
        self.paused: set[int] = set()
        self.faults = 0
        self.acknowledged_commit: dict = {}
        self.commits_acknowledged = 0
        self.later_commits: list[dict] = []  # commits tried after the last acknowledged one
        self.members = [sim.add_consumer(name, GROUP, [TOPIC]) for name in ("a", "b")]
        self.actions = [(a, w) for a, w, kind in ACTIONS if (kind is None or kind in options.faults)
                        and (options.compacted or a not in COMPACTED_ACTIONS)]
        self._steps = {"produce": self._produce, "run": self._run, "commit": self._commit, "heal": self._heal,
                       "crash": self._crash, "restart": self._restart, "pause": self._pause,
                       "partition": self._partition, "drop": self._drop, "delay": self._delay,
                       "lose-disk": self._lose_disk, "unflushed-tail": self._unflushed_tail,
                       "storage-fault": self._storage_fault, "kill-cleaner": self._kill_cleaner}

    def step(self, index: int) -> None:
        live = [b for b in self.brokers if self.sim.is_up(b)]
        # With fewer than min.insync.replicas brokers up nothing can be acknowledged: bring one back.
        weights = [w * (6 if a == "restart" and len(live) < 2 else 1) for a, w in self.actions]
        action = self.chooser.choices([a for a, _ in self.actions], weights=weights)[0]
        self._steps[action](index, live)

    def _note(self, what: str, fault: bool = True) -> None:
        self.done.append(what)
        self.faults += fault

    def _produce(self, index: int, live: list[int]) -> None:
        partition = self.chooser.randrange(self.options.partitions)
        batch = [f"v{next(self.values)}" for _ in range(self.chooser.randint(1, 3))]
        if self.options.compacted:
            keys = [self.chooser.choice(KEYS) for _ in batch]
            tombstones = [v for v in batch if self.chooser.random() < TOMBSTONE_CHANCE]
            self.sim.produce(TOPIC, partition, batch, acks="all", wait=False, keys=keys, tombstones=tombstones)
            self._note(f"produce {TOPIC}-{partition} {list(zip(keys, batch))} tombstones {tombstones}", fault=False)
            return
        self.sim.produce(TOPIC, partition, batch, acks="all", wait=False)
        self._note(f"produce {TOPIC}-{partition} {batch}", fault=False)

    def _run(self, index: int, live: list[int]) -> None:
        ms = self.chooser.choice((10, 50, 200, 1000, 3000))
        self.sim.run(ms)
        self._note(f"run {ms}", fault=False)

    def _commit(self, index: int, live: list[int]) -> None:
        member = self.chooser.choice(self.members)
        if member.state != "stable":
            return
        offsets = {(TOPIC, p): index for p in range(self.options.partitions)}
        outcome = member.commit(offsets)
        self.sim.run_until(lambda: outcome["errors"] is not None, limit_ms=30_000, what="the commit answered")
        if set(outcome["errors"].values()) == {"NONE"}:
            self.acknowledged_commit, self.later_commits = offsets, []
            self.commits_acknowledged += 1
        else:  # an error answer may still have been written (a timeout, a lost answer)
            self.later_commits.append(offsets)
        self._note(f"commit {member.node.name} {index}: {outcome['errors']}", fault=False)

    def _crash(self, index: int, live: list[int]) -> None:
        if live:
            broker, clean, notify = self.chooser.choice(live), self.chooser.random() < 0.3, self.chooser.random() < 0.7
            self._resume(broker)
            self.sim.kill(broker, clean=clean, notify_controller=notify)
            self._note(f"crash {broker} clean={clean} notify={notify}")

    def _restart(self, index: int, live: list[int]) -> None:
        broker = self.chooser.choice(self.brokers)
        if self.chooser.random() < 0.25:
            self.sim.restart_coordinator(broker)
            self._note(f"restart coordinator {broker}")
            return
        clean = self.chooser.random() < 0.3
        self._resume(broker)
        self.sim.restart(broker, clean=clean)
        self._note(f"restart {broker} clean={clean}")

    def _disk_fault(self, live: list[int], what: str, **loss: bool) -> None:
        safe = [b for b in live if self._others_in_isr(b) and b not in self.paused]
        if safe:
            broker = self.chooser.choice(safe)
            self.sim.restart(broker, **loss)
            self._note(f"{what} {broker}")

    def _lose_disk(self, index: int, live: list[int]) -> None:
        self._disk_fault(live, "lose-disk", lose_disk=True)

    def _unflushed_tail(self, index: int, live: list[int]) -> None:
        self._disk_fault(live, "unflushed-tail", lose_unflushed=True)

    def _storage_fault(self, index: int, live: list[int]) -> None:
        candidates = [b for b in live if b not in self.paused]
        if candidates:
            broker, fault = self.chooser.choice(candidates), self.chooser.choice(STORAGE_FAULTS)
            self.sim.fail_storage(broker, fault, room_bytes=self.chooser.choice((0, 40, 4000)))
            self._note(f"storage fault {fault} on {broker}")

    def _kill_cleaner(self, index: int, live: list[int]) -> None:
        cleaners = {b: c for b in live if (c := self.sim.cleaner(b)) is not None}
        mid_round = [b for b, c in cleaners.items() if c.phase in ("cleaning", "swapping")]
        if cleaners:  # one in the middle of a round if there is one
            broker = self.chooser.choice(mid_round or sorted(cleaners))
            phase = cleaners[broker].phase
            self.sim.kill_cleaner(broker)
            self._note(f"kill-cleaner {broker} ({phase})")

    def preload(self) -> None:
        """A compacted run's first writes, acknowledged before any fault: segments for the
        cleaners to clean while the faults happen."""
        for _ in range(PRELOAD_SENDS):
            partition = self.chooser.randrange(self.options.partitions)
            batch = [f"v{next(self.values)}" for _ in range(PRELOAD_RECORDS)]
            keys = [self.chooser.choice(KEYS) for _ in batch]
            tombstones = [v for v in batch if self.chooser.random() < TOMBSTONE_CHANCE]
            sent = self.sim.produce(TOPIC, partition, batch, acks="all", keys=keys, tombstones=tombstones)
            assert sent.status == "acked", f"a preload send was not acknowledged: {sent}"
        self._note(f"preload {PRELOAD_SENDS} sends of {PRELOAD_RECORDS} keyed records", fault=False)

    def _others_in_isr(self, broker: int) -> bool:
        """Every partition the broker hosts (the offsets topic's too) keeps two other ISR members that
        are up, reachable and hold the leader's high watermark. A replica that lost its disk stays
        in the ISR until its leader notices, so ISR membership alone does not say it holds data."""
        cut = self.paused | set(self.partitioned.values())
        for topic in (TOPIC, OFFSETS_TOPIC):
            for described in self.sim.controller.describe_topic(topic) or ():
                if broker not in described["replicas"]:
                    continue
                partition = described["partition"]
                leader_hw = self.sim.high_watermark(described["leader"], topic, partition)
                holding = [b for b in described["isr"] if b != broker and b not in cut and leader_hw is not None
                           and (self.sim.log_end_offset(b, topic, partition) or -1) >= leader_hw]
                if len(holding) < 2:
                    return False
        return True

    def _pause(self, index: int, live: list[int]) -> None:
        candidates = [b for b in live if b not in self.paused]
        if candidates:
            broker = self.chooser.choice(candidates)
            self.sim.pause(broker)
            self.paused.add(broker)
            self._note(f"pause {broker}")

    def _resume(self, broker: int) -> None:
        if broker in self.paused:
            self.paused.discard(broker)
            self.sim.resume(broker)

    def _partition(self, index: int, live: list[int]) -> None:
        broker = self.chooser.choice(self.brokers)
        ends = (f"broker:{broker}", f"fetcher:{broker}:", f"coordinator:{broker}", f"cleaner:{broker}")

        def on_its_side(name: str) -> bool:
            return name in ends or name.startswith(ends[1])
        name = f"partition{index}"
        self.sim.network.add_rule(name, MessageFilter(
            predicate=lambda m: on_its_side(m.source) != on_its_side(m.destination)), action="hold")
        self.rules.append(name)
        self.partitioned[name] = broker
        self._note(f"partition {broker} from the rest ({name})")

    def _link_rule(self, index: int, action: str) -> None:
        b, o = self.chooser.sample(self.brokers, 2)
        message_filter = self.chooser.choice(FILTERS)(b, o)
        count = self.chooser.choice((1, 3, None)) if action == "hold" else self.chooser.choice((1, 2))
        self.sim.network.add_rule(f"r{index}", message_filter, action=action, count=count)
        self.rules.append(f"r{index}")
        self._note(f"{'delay' if action == 'hold' else 'drop'} r{index} {message_filter} count={count}")

    def _drop(self, index: int, live: list[int]) -> None:
        self._link_rule(index, "drop")

    def _delay(self, index: int, live: list[int]) -> None:
        self._link_rule(index, "hold")

    def _heal(self, index: int, live: list[int]) -> None:
        if self.paused and (not self.rules or self.chooser.random() < 0.5):
            broker = self.chooser.choice(sorted(self.paused))
            self._resume(broker)
            self._note(f"resume {broker}", fault=False)
        elif self.rules:
            name = self.rules.pop(self.chooser.randrange(len(self.rules)))
            self.partitioned.pop(name, None)
            deliver = self.chooser.random() < 0.7
            (self.sim.release if deliver else self.sim.drop)(name)
            self._note(f"heal {name} ({'deliver' if deliver else 'lose'} what it held)", fault=False)

    def heal_everything(self) -> None:
        for broker in sorted(self.paused):
            self._resume(broker)
        for name in list(self.sim.network.rules):
            self.sim.release(name)
        for broker in self.brokers:
            if not self.sim.is_up(broker):
                self.sim.restart(broker)


def build_simulation(options: RunOptions, chooser: random.Random) -> Simulation:
    replication_factor = min(3, options.brokers)
    return Simulation(brokers=range(options.brokers), seed=options.seed, group_coordinators=True,
                      latency_ms=(1, chooser.choice((2, 5, 20))), config={
                          "raykafka.truncation.policy": options.policy, "min.insync.replicas": "2",
                          "replica.lag.time.max.ms": "2000", "unclean.leader.election.enable": "false",
                          "offsets.topic.replication.factor": str(replication_factor),
                          **(CLEANER_CONFIG if options.compacted else {}),
                          **(RETENTION_BROKER_CONFIG if options.retention else {})})


def topic_config(options: RunOptions) -> dict | None:
    """Topic ``t``'s configuration for the workloads the options ask for."""
    if not (options.compacted or options.retention):
        return None
    config = {**(COMPACTED_TOPIC_CONFIG if options.compacted else {}),
              **(RETENTION_TOPIC_CONFIG if options.retention else {})}
    if options.compacted and options.retention:
        config["cleanup.policy"] = "compact,delete"
    return config


def run_seed(options: RunOptions) -> SeedResult:
    """Run one seed's schedule, heal, and judge it (see the module docstring); never raises for
    what the cluster did: a broken invariant or a stall is the verdict."""
    result = SeedResult(options=options)
    chooser = random.Random(options.seed)
    sim = build_simulation(options, chooser)
    if options.retention:
        sim.record_clock_base_ms = 0
    schedule = None
    try:
        sim.create_topic(TOPIC, partitions=options.partitions, replication_factor=min(3, options.brokers),
                         config=topic_config(options))
        for partition in range(options.partitions):
            keyed = {"keys": [f"base{partition}"]} if options.compacted else {}
            baseline = sim.produce(TOPIC, partition, [f"base{partition}"], acks="all", **keyed)
            assert baseline.status == "acked", f"the baseline send was not acknowledged: {baseline}"
        schedule = _Schedule(sim, options, chooser)
        if options.compacted:
            schedule.preload()
        # The group settles before the faults begin: the offsets topic is created on the first
        # FindCoordinator with its replication factor capped by the brokers alive then.
        sim.run_until(lambda: _group_stable(sim, schedule), limit_ms=60_000, what="the group stable before faults")
        for index in range(options.schedule_steps):
            schedule.step(index)
        schedule.heal_everything()
        _run_until_healed(sim, options)
        _judge(sim, schedule, result)
    except SimulationInvariantError as error:
        result.verdict, result.detail = "INVARIANT", str(error).splitlines()[0]
    except SimulationStalled as error:
        result.verdict, result.detail = "STALLED", str(error).splitlines()[0]
    result.steps, result.simulated_ms = sim.step_count, sim.now_ms
    result.acknowledged = len(sim.acknowledged)
    if schedule is not None:
        result.faults, result.schedule = schedule.faults, schedule.done
        result.commits_acknowledged = schedule.commits_acknowledged
    if options.compacted:
        result.cleaner = cleaner_figures(sim)
    if options.retention:
        result.retention = retention_figures(sim)
    return result


def retention_figures(sim: Simulation) -> dict:
    """A retention run's deletions: the partitions of ``t`` whose leader's log start offset moved
    (``partitions_moved``), and the acknowledged records below the log start offsets at the end
    (``acknowledged_below_start``), of ``acknowledged``."""
    starts = {}
    for described in sim.controller.describe_topic(TOPIC) or ():
        replica = sim.replica(described["leader"], TOPIC, described["partition"])
        starts[described["partition"]] = 0 if replica is None else replica.log.log_start_offset
    acknowledged = [(p, o) for t, p, o, _ in sim.acknowledged if t == TOPIC]
    return {"partitions_moved": sum(1 for start in starts.values() if start > 0),
            "acknowledged_below_start": sum(1 for p, o in acknowledged if o < starts.get(p, 0)),
            "acknowledged": len(acknowledged)}


def cleaner_figures(sim: Simulation) -> dict:
    """A compacted run's cleaning: rounds by outcome, the bytes the swapped rounds rewrote
    (``planned_bytes``) and kept (``cleaned_bytes``), the records each partition's leader holds
    below its high watermark (``records_read``), the records acknowledged (``acknowledged``) and
    the times a replica of the topic truncated its log (``truncations``)."""
    outcomes = collections.Counter(r.outcome for r in sim.cleaner_rounds)
    swapped = [r for r in sim.cleaner_rounds if r.outcome == "swapped"]
    records = 0
    for described in sim.controller.describe_topic(TOPIC) or ():
        leader, partition = described["leader"], described["partition"]
        high_watermark = sim.high_watermark(leader, TOPIC, partition) or 0
        records += sum(1 for offset, _ in sim.log_of(leader, TOPIC, partition) or () if offset < high_watermark)
    return {**{name: outcomes[name] for name in ("swapped", "aborted", "stale", "failed", "lost")},
            "planned_bytes": sum(r.planned_bytes for r in swapped), "cleaned_bytes": sum(r.cleaned_bytes for r in swapped),
            "records_read": records, "acknowledged": sum(1 for t, *_ in sim.acknowledged if t == TOPIC),
            "truncations": sum(1 for t in sim.truncations if t.topic_partition[0] == TOPIC)}


def _run_until_healed(sim: Simulation, options: RunOptions) -> None:
    sim.run_until(lambda: all(p.status != "pending" for p in sim.produce_results), limit_ms=HEAL_LIMIT_MS,
                  what="every send answered")
    replicas = {d["partition"]: sorted(d["replicas"]) for d in sim.controller.describe_topic(TOPIC)}
    try:
        sim.run_until(lambda: all(sorted(sim.isr(TOPIC, p)) == replicas[p] for p in replicas),
                      limit_ms=HEAL_LIMIT_MS, what="a full ISR on every partition")
    except SimulationStalled as stalled:
        raise SimulationStalled(f"{str(stalled).splitlines()[0]}; {isr_views(sim, TOPIC)}") from None
    sim.run_until_quiet(limit_ms=HEAL_LIMIT_MS)


def isr_views(sim: Simulation, topic: str) -> str:
    """Each partition without its full ISR, as the controller and each live replica see it, on one
    line: what a stalled run needs to be read."""
    views = []
    for described in sim.controller.describe_topic(topic):
        if sorted(described["isr"]) == sorted(described["replicas"]):
            continue
        partition = described["partition"]
        replicas = []
        for broker_id in described["replicas"]:
            replica = sim.replica(broker_id, topic, partition)
            replicas.append(f"{broker_id}: down" if replica is None else (
                f"{broker_id}: leader {replica.leader_id} epoch {replica.leader_epoch} ISR {list(replica.isr)} "
                f"partition epoch {replica.partition_epoch} pending {replica.pending_isr} "
                f"LEO {replica.log_end_offset} HW {replica.high_watermark}"))
        views.append(f"{topic}-{partition}: controller leader {described['leader']} epoch "
                     f"{described['leader_epoch']} ISR {described['isr']} partition epoch "
                     f"{described['partition_epoch']}; replicas {'; '.join(replicas)}")
    return " | ".join(views) or "every partition has its full ISR"


def history_of(sim: Simulation) -> list[dict]:
    """The run as the checker's history: every send (invoke, then ok, fail or info) at its
    simulated second, then one poll per partition, now, of everything from its leader's log start
    to its high watermark."""
    events: list[dict] = []
    for sent in sim.produce_results:
        index = sent.sent_ms / 1000
        for position, (value, offset) in enumerate(zip(sent.values, sent.offsets)):
            invoked = {"topic": sent.topic, "partition": sent.partition, "value": value}
            if sent.keys:
                invoked["key"] = sent.keys[position]
            if value in sent.tombstones:
                invoked["tombstone"] = True
            events.append({"time": index, "process": "producer", "type": "invoke", "f": "send", "value": invoked})
            if sent.status == "acked":  # at the send's time too: the file's order puts it after
                events.append({"time": index, "process": "producer", "type": "ok", "f": "send", "value": {
                    "topic": sent.topic, "partition": sent.partition, "offset": offset, "value": value}})
            elif sent.status == "error":
                # As the producer judges it: indeterminate when the attempt may have appended.
                kind = "info" if sent.error in MAYBE_APPENDED or sent.base_offset >= 0 else "fail"
                events.append({"time": index, "process": "producer", "type": kind, "f": "send",
                               "value": {"value": value, "error": sent.error}})
    end = sim.now_ms / 1000
    for described in sim.controller.describe_topic(TOPIC):
        partition, leader = described["partition"], described["leader"]
        log = sim.log_of(leader, TOPIC, partition) or []
        high_watermark = sim.high_watermark(leader, TOPIC, partition) or 0
        records = [[TOPIC, partition, offset, value] for offset, value in log if offset < high_watermark]
        replica = sim.replica(leader, TOPIC, partition)
        start = records[0][2] if records else (replica.log.log_start_offset if replica is not None else 0)
        events.append({"time": end, "process": "reader", "type": "ok", "f": "poll",
                       "value": {"records": records, "positions_before": {f"{TOPIC}-{partition}": start}}})
    return events


def _judge(sim: Simulation, schedule: _Schedule, result: SeedResult) -> None:
    options = schedule.options
    report = check(history_of(sim), unseen_is_anomaly=True, compacted_topics=(TOPIC,) if options.compacted else (),
                   retention_ms={TOPIC: RETENTION_MS} if options.retention else None)
    lost = report.of_kind("lost-write") + report.of_kind("latest-value-lost") + report.of_kind("unseen")
    result.lost = len(lost)
    result.anomalies = {kind: count for kind, count in report.counts.items() if count}
    divergent = {p: c["divergent_offsets"] for p in range(sim.partition_count(TOPIC))
                 if (c := sim.check(TOPIC, p))["divergent_offsets"]}
    if lost:
        result.verdict = "LOST"
        result.detail = "lost " + ", ".join(f"{a.topic_partition}@{a.offset}={a.value}" for a in lost[:5])
    elif not report.valid or divergent:
        result.verdict = "ANOMALY"
        result.detail = f"checker: {report.summary()}; divergent offsets: {divergent}"
    if result.verdict == "PASS":
        _judge_group(sim, schedule, result)


def _group_stable(sim: Simulation, schedule: _Schedule) -> bool:
    coordinators = sim.coordinators_of(GROUP)
    return len(coordinators) == 1 and all(
        m.state == "stable" and m.coordinator == f"coordinator:{coordinators[0]}" for m in schedule.members)


def _judge_group(sim: Simulation, schedule: _Schedule, result: SeedResult) -> None:
    sim.run_until(lambda: _group_stable(sim, schedule), limit_ms=HEAL_LIMIT_MS, what="the group stable on one coordinator")
    if not schedule.acknowledged_commit:
        return
    fetched = schedule.members[0].fetch_committed(sorted(schedule.acknowledged_commit))
    sim.run_until(lambda: fetched["offsets"] is not None or fetched["error"] is not None, limit_ms=30_000,
                  what="the offset fetch answered")
    if fetched["offsets"] != schedule.acknowledged_commit and fetched["offsets"] not in schedule.later_commits:
        result.verdict = "GROUP"
        result.detail = f"acknowledged commit {schedule.acknowledged_commit}, fetched {fetched}"
