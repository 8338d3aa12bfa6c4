"""The failover matrix: every scenario ``raykafka chaos`` can run, by name.

Rows that are a load plus a list of faults are schedule files (``schedules/*.toml``, see
``orchestration.chaos.schedule``). Rows that need a choreography (the KIP-101 stories, unclean
elections, the zombie controller, send threads, a Ray node removed) are scripts here; the group
rows are in ``orchestration.chaos.group_scenarios``. Each row states its pass criterion.
"""
from __future__ import annotations

import time
from pathlib import Path

import ray

from orchestration.chaos.checker import check
from orchestration.history import read_history
from orchestration.chaos.runner import IDEMPOTENT, Run, Scenario
from orchestration.errors import KafkaError
from orchestration.chaos.schedule import load_schedule

SCHEDULES_DIR = Path(__file__).parent / "schedules"
# How long story 1 holds B's answers to A back: long enough for the script to cut the link after
# m2's acknowledgement, on a busy machine, before the answer carrying the new HW arrives.
ANSWER_HOLD_MS = 4000
POLICIES = ("high-watermark", "leader-epoch")


# ------------------------------------------------------------------------ KIP-101 story 1
def kip101_story1(policy: str) -> Scenario:
    def script(run: Run) -> None:
        """B (broker 1) leads, A (broker 0) follows. m1, m2 are acknowledged with acks=all; the
        fetch answer that would tell A the HW passed m2 is lost (a one-way cut from B to A). A
        restarts; B dies before A fetches m2 again; A is elected (unclean: Kafka 2.4's controller
        drops a bounced broker from the ISR, see scenario file 01 for the same approximation)."""
        topic = "story1"
        run.create_topic(topic, assignment=[[1, 0]], config={"min.insync.replicas": "1",
                                                             "unclean.leader.election.enable": "true"})
        run.wait_isr(topic, 2)
        first = run.produce(topic, ["m1"])
        run.require(first == {"m1": 0}, "m1 acknowledged at offset 0", str(first))
        run.wait(lambda: run.broker_view(0, topic)["high_watermark"] == 1, "A to learn HW 1")
        # B answers a follower fetch as soon as its HW passes what that follower last saw (Kafka's
        # DelayedFetch), so the answer that tells A the HW passed m2 leaves B at once. Holding
        # B's answers to A back on the wire leaves time to cut the link before that one arrives;
        # the answer that carries m2 itself arrives first (m2 is acknowledged only once A's next
        # fetch asks past it).
        run.faults.delay(1, 0, ANSWER_HOLD_MS)
        second = run.produce(topic, ["m2"], request_timeout_ms=str(30_000))
        run.faults.partition([1], [0], one_way=True)  # B's answers to A are lost from now on
        run.require(second == {"m2": 1}, "m2 acknowledged at offset 1", str(second))
        view = run.broker_view(0, topic)
        run.require(view["log_end_offset"] == 2 and view["high_watermark"] == 1,
                    "precondition: A holds m2 but its HW is still 1",
                    f"A's LEO {view['log_end_offset']}, HW {view['high_watermark']}")
        run.faults.kill("broker", 0, restart=True)  # A restarts, m2 on its disk
        run.wait(lambda: (run.broker_view(0, topic) or {}).get("leader") == 1, "A back, following B")
        if policy == "high-watermark":
            run.wait(lambda: run.broker_view(0, topic)["log_end_offset"] == 1, "A to truncate to its HW (1)")
        else:
            time.sleep(2.0)  # A asks B where its epoch ends; the answer is lost, and A truncates nothing
            run.require(run.broker_view(0, topic)["log_end_offset"] == 2, "A kept m2 after its restart",
                        str(run.broker_view(0, topic)))
        run.faults.kill("broker", 1, restart=False)  # B dies before A fetches m2 again
        run.wait_leader(topic, lambda leader: leader == 0, "A elected")
        run.faults.heal()
        later = run.produce(topic, ["after-1", "after-2"])
        run.require(all(isinstance(o, int) for o in later.values()), "writes go on after the election", str(later))
        run.read_all(topic)

    lossy = policy == "high-watermark"
    return Scenario(
        name=f"kip101-story1-{policy}", brokers=2,
        title=f"KIP-101 story 1 on real actors under raykafka.truncation.policy={policy}",
        criterion=("the checker reports the acknowledged m2 lost (and another value at its offset): the "
                   "high-watermark rule truncates it" if lossy else
                   "nothing is lost: A keeps m2 because it truncates by leader epoch, not to its HW"),
        script=script, config={"raykafka.truncation.policy": policy, "replica.fetch.wait.max.ms": "3000",
                               "replica.lag.time.max.ms": "30000",
                               "replica.high.watermark.checkpoint.interval.ms": "200"},
        expected_anomalies=("lost-write", "inconsistent-offsets") if lossy else None,
        # The old rule's loss is shown by `make chaos`; `make test` runs the leader-epoch row, and
        # the simulator's pinned seeds (tests/scenarios) show both rules on every run.
        slow=lossy)


# ------------------------------------------------------------------------ KIP-101 story 2
def kip101_story2(policy: str) -> Scenario:
    def script(run: Run) -> None:
        """A (broker 0) leads, B (broker 1) follows; both hold m0..m9 with HW 10 (m7..m9 sent with
        acks=0, so no client was told they were written). B stops; A loses its unflushed tail
        (m7..m9) in a power loss and comes back as the only ISR member, leading a new epoch, and
        writes n7..n9. B comes back: under the high-watermark rule it keeps m7..m9 (its HW was
        10) and the replicas differ below the HW forever; under leader epochs it truncates to 7."""
        topic = "story2"
        run.create_topic(topic, assignment=[[0, 1]], config={"min.insync.replicas": "1"})
        run.wait_isr(topic, 2)
        first = run.produce(topic, [f"m{i}" for i in range(7)])
        run.require(sorted(first.values()) == list(range(7)), "m0..m6 acknowledged at 0..6", str(first))
        run.produce(topic, [f"m{i}" for i in range(7, 10)], acks="0")
        run.wait(lambda: all(run.broker_view(b, topic)["high_watermark"] == 10 for b in (0, 1)),
                 "both replicas at HW 10")
        run.wait(lambda: run.checkpointed_high_watermark(1, topic) == 10, "B's HW checkpoint on disk to hold 10")
        run.faults.kill("broker", 1, restart=False)
        run.wait(lambda: run.partition_state(topic).isr == [0], "the ISR to shrink to A")
        run.faults.lose_unflushed_tail(0, topic, 0, keep_below=7)
        run.wait_leader(topic, lambda leader: leader == 0, "A leading again")
        run.require(run.broker_view(0, topic)["log_end_offset"] == 7, "A came back with m0..m6 only",
                    str(run.broker_view(0, topic)))
        second = run.produce(topic, ["n7", "n8", "n9"])
        run.require(sorted(second.values()) == [7, 8, 9], "n7..n9 acknowledged at 7..9", str(second))
        run.faults.restart(1)
        run.wait_isr(topic, 2)
        run.sample_now()  # the history holds both replicas in the ISR
        digests = run.cluster.replica_digests(topic, 0, 10)
        agree = len({tuple(map(tuple, d)) for d in digests.values()}) == 1
        run.note(f"replica digests below offset 10 {'agree' if agree else 'differ'} ({policy})")
        run.faults.kill("broker", 0, restart=False)  # now B leads: what does it serve at 7..9?
        run.wait_leader(topic, lambda leader: leader == 1, "B elected (it is in the ISR)")
        run.read_all(topic)

    diverges = policy == "high-watermark"
    return Scenario(
        name=f"kip101-story2-{policy}", brokers=2,
        title=f"KIP-101 story 2 on real actors under raykafka.truncation.policy={policy}",
        criterion=("the checker reports the divergence: replicas differ below the HW in the samples, and "
                   "reads from the new leader contradict acknowledged writes" if diverges else
                   "nothing diverges: B truncates to the end of its epoch (7) and refetches n7..n9"),
        script=script, config={"raykafka.truncation.policy": policy,
                               "replica.high.watermark.checkpoint.interval.ms": "500"},
        expected_anomalies=("replicas-diverge-below-hw", "inconsistent-offsets") if diverges else None,
        tolerated_anomalies=("lost-write",) if diverges else (),
        slow=diverges)  # as story 1: `make test` runs the leader-epoch row


# ------------------------------------------------------------------------ unclean election
def unclean_election(enabled: bool) -> Scenario:
    def script(run: Run) -> None:
        """A (0) leads, B (1) follows. B dies; A writes alone (min.insync.replicas=1); A dies; B
        comes back. Off: no leader until A returns, nothing lost. On: B leads at once, A's lone
        writes are lost, and A truncates them when it returns: no divergence."""
        topic = "unclean"
        run.create_topic(topic, assignment=[[0, 1]], config={
            "min.insync.replicas": "1", "unclean.leader.election.enable": str(enabled).lower()})
        run.wait_isr(topic, 2)
        run.produce(topic, [f"both-{i}" for i in range(20)])
        run.faults.kill("broker", 1, restart=False)
        run.wait(lambda: run.partition_state(topic).isr == [0], "the ISR to shrink to A")
        alone = run.produce(topic, [f"alone-{i}" for i in range(20)])
        run.require(all(isinstance(o, int) for o in alone.values()), "A alone acknowledges acks=all writes")
        run.faults.kill("broker", 0, restart=False)
        run.wait(lambda: run.partition_state(topic).leader == -1, "the partition to go offline")
        run.faults.restart(1)
        if not enabled:
            deadline, led = time.monotonic() + 6.0, []
            while time.monotonic() < deadline:
                led.append(run.partition_state(topic).leader)
                time.sleep(0.5)
            run.require(set(led) == {-1}, "no leader while only the out-of-sync replica is up", f"leaders {set(led)}")
            run.faults.restart(0)
            run.wait_leader(topic, lambda leader: leader == 0, "A (the ISR member) leads again")
        else:
            run.wait_leader(topic, lambda leader: leader == 1, "B elected uncleanly")
            later = run.produce(topic, [f"after-{i}" for i in range(20)])
            run.require(all(isinstance(o, int) for o in later.values()), "B acknowledges new writes")
            run.faults.restart(0)
        run.wait_isr(topic, 2)
        run.sample_now()  # the history holds both replicas in the ISR
        run.read_all(topic)

    return Scenario(
        name=f"unclean-election-{'on' if enabled else 'off'}", brokers=2,
        title=f"unclean.leader.election.enable={str(enabled).lower()} with every ISR member dead",
        criterion=("B is elected uncleanly; the checker reports A's lone acknowledged writes lost, and nothing "
                   "diverges (A truncates when it returns)" if enabled else
                   "no leader until A, the ISR member, returns; nothing is lost"),
        script=script, expected_anomalies=("lost-write", "inconsistent-offsets") if enabled else None,
        slow=enabled)  # `make test` runs the "off" row; `make chaos` the unclean one too


# ------------------------------------------------------------------------ lost disk
# How long the lost-disk row watches the partition stay offline before an operator steps in.
OFFLINE_OBSERVED_S = 4.0
# The reader's ListOffsets gives up after this long without a leader (default.api.timeout.ms).
OFFLINE_READ_TIMEOUT_MS = 3000


def _read_while_offline(run: Run, topic: str) -> str:
    """What a reader gets from the offline partition: Kafka's error name, or its end offset."""
    consumer = run.cluster.consumer({"auto.offset.reset": "earliest", "enable.auto.commit": "false",
                                     "default.api.timeout.ms": str(OFFLINE_READ_TIMEOUT_MS)},
                                    history=run.history, process="reader-while-offline")
    consumer.assign([(topic, 0)])
    try:
        return f"end offset {consumer.end_offsets([(topic, 0)])[(topic, 0)]}"
    except KafkaError as exc:
        return exc.name
    finally:
        consumer.close()


def _wait_offline_and_show_it(run: Run, topic: str) -> None:
    """Unclean election off: the partition has no leader, also once the out-of-sync replica is
    back; a reader is refused (not served an empty log); the checker finds nothing lost so far."""
    run.wait(lambda: run.partition_state(topic).leader == -1 and run.partition_state(topic).isr == [],
             "broker 0 out of the ISR for its lost disk, and the partition offline")
    run.faults.restart(1)  # the replica that missed the last writes returns: not a clean leader either
    deadline, leaders = time.monotonic() + OFFLINE_OBSERVED_S, set()
    while time.monotonic() < deadline:
        leaders.add(run.partition_state(topic).leader)
        time.sleep(0.5)
    run.require(leaders == {-1}, "no leader while only the empty and the out-of-sync replica are up",
                f"leaders seen {sorted(leaders)}")
    outcome = _read_while_offline(run, topic)
    run.require(not outcome.startswith("end offset"), "a reader is refused, not served an empty log", outcome)
    so_far = check(read_history(run.history.path))
    run.require(so_far.counts["lost-write"] == 0, "the checker finds nothing lost while the partition is offline",
                f"lost-write={so_far.counts['lost-write']}, acknowledged and not readable: {so_far.counts['unseen']}")


def lost_disk_of_last_isr_member(unclean_by: str) -> Scenario:
    def script(run: Run) -> None:
        """Broker 0 leads, broker 1 follows (min.insync.replicas=1). Broker 1 dies; 0 writes alone;
        0 loses its disk (restarted on an empty log directory with a new directory id). The
        controller takes 0 out of the ISR for it. By operator: unclean election is off, so the
        partition stays offline, also once 1 is back, and a reader is refused; then an operator
        runs leader-election --election-type unclean on the partition. By config: the topic allows
        unclean elections, so the controller elects 0 as it registers. Either way the history records the unclean
        election, and the checker reports exactly the acknowledged records the new leader lacks."""
        topic = "lostdisk"
        config = {"min.insync.replicas": "1"}
        if unclean_by == "config":
            config["unclean.leader.election.enable"] = "true"
        run.create_topic(topic, assignment=[[0, 1]], config=config)
        run.wait_isr(topic, 2)
        both = run.produce(topic, [f"both-{i}" for i in range(20)])
        run.faults.kill("broker", 1, restart=False)
        run.wait(lambda: run.partition_state(topic).isr == [0], "the ISR to shrink to broker 0")
        alone = run.produce(topic, [f"alone-{i}" for i in range(20)])
        acknowledged = {value for value, outcome in {**both, **alone}.items() if isinstance(outcome, int)}
        run.require(len(acknowledged) == 40, "40 records acknowledged before the disk is lost",
                    f"{len(acknowledged)} acknowledged")
        epoch = run.partition_state(topic).leader_epoch
        run.faults.lose_disk(0)
        if unclean_by == "operator":
            _wait_offline_and_show_it(run, topic)
            outcome = run.cluster.elect_leaders("unclean", topic, [0])
            run.require(outcome == {(topic, 0): "NONE"}, "the operator's unclean election elects a leader",
                        str(outcome))
        leader = run.wait_leader(topic, lambda leader: True, "a leader elected uncleanly")
        state = run.partition_state(topic)
        run.faults.record("unclean-election", f"{topic}-0", leader=leader, leader_epoch=state.leader_epoch,
                          previous_leader_epoch=epoch, requested_by=(
                              "an operator (leader-election --election-type unclean)" if unclean_by == "operator"
                              else "unclean.leader.election.enable=true"))
        if unclean_by == "config":
            run.faults.restart(1)
        after = run.produce(topic, [f"after-{i}" for i in range(50)])  # past every old offset
        run.require(all(isinstance(o, int) for o in after.values()), "the new leader acknowledges new writes",
                    f"{sum(isinstance(o, int) for o in after.values())} of {len(after)} acknowledged")
        run.wait_isr(topic, 2)
        run.sample_now()
        run.read_all(topic)
        lost = {a.value for a in check(read_history(run.history.path)).of_kind("lost-write")}
        # Broker 0 came back empty; broker 1 holds what it copied before it died.
        expected = acknowledged if leader == 0 else {v for v in acknowledged if v.startswith("alone-")}
        run.require(lost == expected, f"the checker reports exactly the {len(expected)} acknowledged records "
                    f"broker {leader} lacks", f"{len(lost)} reported; missing from the report "
                    f"{sorted(expected - lost)[:5]}, reported beyond it {sorted(lost - expected)[:5]}")

    return Scenario(
        name=f"lost-disk-of-last-isr-member-unclean-by-{unclean_by}", brokers=2,
        title=("the last ISR member loses its disk; " + (
            "the partition stays offline until an operator's leader-election --election-type unclean"
            if unclean_by == "operator" else "unclean.leader.election.enable=true elects it empty")),
        criterion=(("while unclean election is off the partition stays offline and reads are refused, and the "
                    "checker finds nothing lost; after the operator's unclean election " if unclean_by == "operator"
                    else "the controller elects the empty replica uncleanly; ")
                   + "the history records the unclean election, and the checker reports exactly the acknowledged "
                     "records the new leader lacks (lost-write, and the new records at their offsets)"),
        script=script, expected_anomalies=("lost-write", "inconsistent-offsets"),
        slow=unclean_by == "operator")  # `make test` runs the unclean-by-config row; `make chaos` both


# ------------------------------------------------------------------------ controller rows
def _converged(run: Run, topic: str) -> bool:
    """Every live replica agrees with the controller on each partition's leader and epoch."""
    live = set(run.cluster.describe_cluster()["brokers"])
    for state in run.cluster.describe_topic(topic):
        for broker_id in set(state.replicas) & live:
            view = run.broker_view(broker_id, topic, state.partition)
            if view is None or view["leader_epoch"] != state.leader_epoch or view["leader"] != state.leader:
                return False
    return True


def _send_threads_killed(run: Run) -> None:
    """Each request-send thread of the controller is killed in turn under load, each time just
    before a leadership change that must reach every broker through those threads."""
    topic = "chaos"
    run.create_topic(topic, partitions=3, replication_factor=3, config={"min.insync.replicas": "2"})
    load = run.start_load(topic, producers=1, rate_per_s=150, partition=None)
    load.wait_acknowledged(100)
    for broker_id in run.cluster.broker_ids:
        epoch = run.partition_state(topic).leader_epoch
        run.faults.kill("request-send-thread", broker_id)
        leader = run.leader(topic)
        run.faults.controlled_shutdown(leader)
        run.wait(lambda: run.partition_state(topic).leader_epoch > epoch, "a new leader for partition 0")
        run.faults.restart(leader)
        run.wait(lambda: _converged(run, topic), f"every broker to apply the controller's state "
                                                 f"(send thread {broker_id} replaced)")
    load.stop()
    for p in range(3):
        run.wait_isr(topic, 3, partition=p)
    run.require(_converged(run, topic), "brokers and controller agree on every leader and epoch")
    run.read_all(topic)


def _zombie_controller(run: Run) -> None:
    """The active controller stops the world; a new one takes over with a higher epoch and moves a
    leader; the zombie wakes up and acts on its stale view: every broker refuses it, it resigns."""
    topic = "chaos"
    run.create_topic(topic, partitions=3, replication_factor=3, config={"min.insync.replicas": "2"})
    load = run.start_load(topic, producers=1, rate_per_s=150, partition=None)
    load.wait_acknowledged(100)
    zombie = run.cluster.controller()
    old_epoch = ray.get(zombie.controller_epoch.remote(), timeout=30)
    run.faults.pause("controller")
    successor = run.cluster.start_controller()
    run.faults.record("start-controller", "controller", note="a new controller while the old one is paused")
    new_epoch = ray.get(successor.controller_epoch.remote(), timeout=30)
    run.wait(lambda: all(ray.get(run.cluster.broker(b).describe_broker.remote(), timeout=10)["controller_epoch"]
                         == new_epoch for b in run.cluster.broker_ids), "every broker to follow the new controller")
    epoch = run.partition_state(topic).leader_epoch
    run.faults.kill("broker", run.leader(topic), restart=True)
    # A leader elected, not only a new epoch (the one that takes the killed leader out leaves no leader yet).
    run.wait(lambda: (state := run.partition_state(topic)).leader_epoch > epoch and state.leader >= 0,
             "the new controller to elect a leader")
    before = {p.partition: (p.leader, p.leader_epoch) for p in run.cluster.describe_topic(topic)}
    run.faults.record("resume", "controller-zombie")
    ray.get(zombie.resume.remote(), timeout=30)
    # The zombie queues its stale state for every broker; each broker refuses it by epoch.
    ray.get([zombie.resync_broker.remote(broker_id) for broker_id in run.cluster.broker_ids], timeout=60)
    run.wait(lambda: not ray.get(zombie.describe_cluster.remote(), timeout=10)["active"], "the zombie to resign")
    run.sample_now()  # the history holds the cluster as the resigned zombie left it
    load.stop()
    for p in range(3):
        run.wait_isr(topic, 3, partition=p)
    after = {p.partition: (p.leader, p.leader_epoch) for p in run.cluster.describe_topic(topic)}
    run.require(run.cluster.controller_epoch() == new_epoch > old_epoch, "the new controller's epoch stands",
                f"{old_epoch} -> {new_epoch}")
    run.require(before == after, "the zombie changed no leadership", f"{before} vs {after}")
    run.require(_converged(run, topic), "brokers follow the new controller's state")
    ray.kill(zombie, no_restart=True)
    run.read_all(topic)


def _node_removed(run: Run) -> None:
    """Broker 2 runs on a Ray node of its own and leads; the node is removed (every process on it
    dies at once), then comes back with the same disk."""
    topic = "chaos"
    run.create_topic(topic, assignment=[[2, 0, 1]], config={"min.insync.replicas": "2"})
    run.wait_isr(topic, 3)
    before = ray.get(run.cluster.broker(2).ping.remote(), timeout=30)["incarnation_id"]
    load = run.start_load(topic, producers=1, rate_per_s=150, partition=0)
    load.wait_acknowledged(200)
    run.faults.remove_node(2)
    run.wait_leader(topic, lambda leader: leader != 2, "a leader on a surviving node")
    acknowledged = load.acknowledged
    load.wait_acknowledged(acknowledged + 200)
    run.faults.restore_node(2)
    run.wait(lambda: ray.get(run.cluster.broker(2).ping.remote(), timeout=10)["incarnation_id"] != before,
             "broker 2 restarted on its returned node", timeout_s=120)
    run.wait_isr(topic, 3, timeout_s=120)
    load.stop()
    run.read_all(topic)


CODED: list[Scenario] = [
    Scenario(name="each-send-thread-killed", title="each controller request-send thread killed in turn, "
             "each time before a leadership change", criterion="the controller replaces each thread and resends "
             "its broker the current state; every broker converges on the controller's leaders and epochs; "
             "nothing acknowledged is lost", script=_send_threads_killed, slow=True, producer_modes=(IDEMPOTENT,)),
    Scenario(name="zombie-controller", title="a paused controller replaced, then waking up as a zombie",
             criterion="brokers fence the zombie by controller epoch; it resigns; no leadership or topic changes "
             "because of it; nothing acknowledged is lost", script=_zombie_controller,
             producer_modes=(IDEMPOTENT,)),
    *[kip101_story1(policy) for policy in POLICIES],
    *[kip101_story2(policy) for policy in POLICIES],
    unclean_election(False), unclean_election(True),
    lost_disk_of_last_isr_member("operator"), lost_disk_of_last_isr_member("config"),
    Scenario(name="ray-node-removed", title="the Ray node hosting the leader broker is removed, then returns",
             criterion="a surviving replica is elected; writes go on; the broker restarts on its returned node "
                       "from its disk and rejoins the ISR; nothing acknowledged is lost",
             script=_node_removed, nodes=(2,), slow=True, producer_modes=(IDEMPOTENT,)),
]


def all_scenarios() -> dict[str, Scenario]:
    """Every row of the matrix by name: schedule files, coded rows, group, log-cleaner and retention rows."""
    from orchestration.chaos.cleaner_scenarios import CLEANER_SCENARIOS
    from orchestration.chaos.group_scenarios import GROUP_SCENARIOS
    from orchestration.chaos.retention_scenarios import RETENTION_SCENARIOS
    rows = [load_schedule(path) for path in sorted(SCHEDULES_DIR.glob("*.toml"))] + CODED + list(GROUP_SCENARIOS) \
        + list(CLEANER_SCENARIOS) + list(RETENTION_SCENARIOS)
    by_name: dict[str, Scenario] = {}
    for row in rows:
        assert row.name not in by_name, f"two scenarios named {row.name!r}"
        by_name[row.name] = row
    return by_name
