"""The consumer-group rows of the failover matrix: scenarios whose faults hit a group's
coordinator or one of its members, with consumers polling through them.

Theory of operation. Each row is a ``Scenario`` whose script drives real group members
(``Consumer`` in group mode) against a cluster under the runner's ``FAST_FAILOVER_CONFIG``. A
member polling in the driver runs in a ``GroupReader`` thread: it polls, commits synchronously
after every poll that returned records, and records its polls in the run's history, so the
checker sees every read (a skip or a consumer going backwards is an anomaly; a rebalance that
moves a position is not, since each poll carries ``positions_before``). A member that must die as
a crashed process would runs in a Ray actor (``ConsumerProcess``); its polls are not recorded (the
history lives in the driver). Group state is watched from outside, as an operator would with
kafka-consumer-groups: ``describe_group`` for members, assignments and committed offsets, and a
lighter ``group_state`` (state, members, generation, coordinator) where it is polled quickly.
The members and these probes live in ``group_members``; this module holds the rows' stories.

Every wait is bounded; threads are daemons, stopped and joined in ``finally`` blocks, and
consumers are closed there too.
"""
from __future__ import annotations

import time

import ray
from loguru import logger

from orchestration.chaos.group_members import (
    GROUP_CONSUMER_CONFIG, POLL_MS, SESSION_TIMEOUT_MS, ActorPoller, ConsumerProcess, GroupReader, SpreadLoad,
    assignment_problem, broker_directory, caught_up, group_state, offsets_text, stable_with, wait_or_require,
)
from orchestration.chaos.runner import Run, Scenario

REBALANCE_STATES = ("PreparingRebalance", "CompletingRebalance")
# c2 starting its consumer and sending JoinGroup, on a machine that may be busy.
REBALANCE_START_TIMEOUT_S = 30
STABLE_AFTER_KILL_S = 30  # a restarted coordinator reloads the group, the members rejoin
CATCH_UP_TIMEOUT_S = 60
EXPULSION_SLACK_S = 6.0  # on top of session.timeout.ms: the expiry tick, the survivor's rejoin


# ------------------------------------------------------------- row 1: coordinator killed mid-rebalance
def coordinator_killed_mid_rebalance(run: Run) -> None:
    """Story: under a steady load on a 6-partition topic, consumer c1 owns every partition of
    group "chaos-group"; c2 joins, which starts a rebalance; while the group is
    PreparingRebalance or CompletingRebalance, its coordinator actor is killed (Ray restarts it
    and it reloads the group from __consumer_offsets).

    Criterion: the group is Stable with both members within STABLE_AFTER_KILL_S; their
    assignments cover the 6 partitions with no overlap; once the load stops, the committed offsets
    reach the high watermarks; a full read then finds every acknowledged write, and the checker
    finds nothing (no skip, no consumer going backwards)."""
    topic, group, partitions = "group-chaos", "chaos-group", 6
    run.create_topic(topic, partitions=partitions, replication_factor=3)
    directory = broker_directory(run)
    load = SpreadLoad(run, topic, partitions, rate_per_s=100)
    readers: list[GroupReader] = []
    try:
        readers.append(GroupReader(run, topic, group, "c1").start())
        first = wait_or_require(run, lambda: stable_with(run, group, 1), "c1 alone in a Stable group", 30)
        if first is None:
            return
        load.wait_acknowledged(200)
        generation_before = first.generation_id

        readers.append(GroupReader(run, topic, group, "c2").start())
        joined_at = time.monotonic()
        killed_in = None
        deadline = joined_at + REBALANCE_START_TIMEOUT_S
        while time.monotonic() < deadline:
            try:
                state = group_state(directory, group)
            except Exception as exc:
                logger.debug("group state: {!r}", exc)
                time.sleep(0.01)
                continue
            rebalancing = state.state in REBALANCE_STATES
            done_already = state.state == "Stable" and state.generation > generation_before
            if rebalancing or done_already:
                if done_already:
                    run.note(f"the rebalance was over (Stable, generation {state.generation}) before it was "
                             "seen in progress; killing the coordinator anyway")
                killed_in = state
                run.faults.kill("group-coordinator", state.coordinator, restart=True)
                break
            time.sleep(0.005)
        if killed_in is None:
            run.require(False, "c2's join started a rebalance",
                        f"no rebalance seen within {REBALANCE_START_TIMEOUT_S}s")
            return
        killed_at = time.monotonic()
        run.note(f"killed coordinator {killed_in.coordinator} {killed_at - joined_at:.2f}s after c2 started, "
                 f"group {killed_in.state} (generation {killed_in.generation}, {killed_in.members} members)")

        stable = wait_or_require(run, lambda: stable_with(run, group, 2),
                                 f"the group is Stable with both members within {STABLE_AFTER_KILL_S}s",
                                 STABLE_AFTER_KILL_S, lambda d: f"after {time.monotonic() - killed_at:.1f}s, "
                                 f"generation {d.generation_id}, coordinator {d.coordinator}")
        if stable is None:
            return
        problem = assignment_problem(stable, topic, partitions)
        run.require(not problem, "the assignment covers every partition once",
                    problem or "; ".join(f"{m.client_id}: {[p for _, p in m.assignment]}" for m in stable.members))

        load.wait_acknowledged(load.acknowledged + 200)  # keep consuming under load after the failover
        load.stop()
        run.note(load.summary())
        wait_or_require(run, lambda: caught_up(run, group, topic, partitions),
                        "committed offsets reach the high watermarks", CATCH_UP_TIMEOUT_S, offsets_text)
    finally:
        for reader in readers:
            reader.stop(run)
        load.stop()
    for reader in readers:
        run.note(reader.summary())
        run.require(not reader.errors, f"{reader.process} polled and committed without errors",
                    "; ".join(reader.errors[:5]) or "none")
    run.read_all(topic)


# ---------------------------------------------------------------- row 2: consumer heartbeat expiry
def consumer_heartbeat_expiry(run: Run) -> None:
    """Story: under a steady load on a 6-partition topic, group "expiry-group" has two members:
    "survivor" polling in the driver and another in a process of its own; both commit after
    every poll. That process is killed (no LeaveGroup, no last commit), so only its missing
    heartbeats tell the coordinator.

    Criterion: within session.timeout.ms + EXPULSION_SLACK_S of the kill the group is Stable with
    the survivor alone, owning all 6 partitions; in each of the dead member's partitions the
    survivor's first read is at the offset the dead member last committed (position ==
    committed); the checker finds no skip and no consumer going backwards in the survivor's
    polls; a full read finds every acknowledged write. How long the expulsion took is noted."""
    topic, group, partitions = "group-expiry", "expiry-group", 6
    run.create_topic(topic, partitions=partitions, replication_factor=3)
    directory = broker_directory(run)
    load = SpreadLoad(run, topic, partitions, rate_per_s=100)
    survivor = GroupReader(run, topic, group, "survivor")
    actor = ConsumerProcess.remote(run.cluster.namespace, run.cluster.broker_ids,
                                   {**GROUP_CONSUMER_CONFIG, "group.id": group, "client.id": "doomed"}, topic)
    poller = ActorPoller(actor)
    actor_alive = True
    try:
        survivor.start()
        poller.start()

        def both_consuming():
            description = stable_with(run, group, 2)
            if description is None or assignment_problem(description, topic, partitions):
                return None
            doomed = next(m.assignment for m in description.members if m.client_id == "doomed")
            committed = {tp: description.offsets[tp].committed_offset for tp in doomed if tp in description.offsets}
            return doomed if doomed and len(committed) == len(doomed) and min(committed.values()) > 0 else None
        doomed = wait_or_require(run, both_consuming, "both members consuming and committing", 60)
        if doomed is None:
            return
        load.wait_acknowledged(load.acknowledged + 100)

        poller.stop()  # no call in flight: what the dead member committed is final
        run.history.fault("kill", "consumer-doomed", {"restart": False, "process": "ray.kill"})
        ray.kill(actor, no_restart=True)
        actor_alive = False
        killed_at = time.monotonic()
        offsets = run.cluster.describe_group(group).offsets
        committed = {tp: offsets[tp].committed_offset for tp in doomed}
        run.note(f"killed the member owning {[p for _, p in doomed]}; it had committed "
                 f"{ {p: o for (_, p), o in sorted(committed.items())} }")

        bound_s = SESSION_TIMEOUT_MS / 1000 + EXPULSION_SLACK_S

        def survivor_alone():
            state = group_state(directory, group)
            return state if state.state == "Stable" and state.members == 1 else None
        alone = wait_or_require(run, survivor_alone, f"the dead member is expelled within {bound_s:.0f}s",
                                bound_s, lambda _: f"{time.monotonic() - killed_at:.2f}s after the kill")
        if alone is None:
            return
        run.note(f"measurement: the dead member was expelled and the group Stable again "
                 f"{time.monotonic() - killed_at:.2f}s after the kill (session.timeout.ms={SESSION_TIMEOUT_MS})")
        description = wait_or_require(run, lambda: stable_with(run, group, 1), "the group is Stable with one member",
                                      10)
        if description is None:
            return
        problem = assignment_problem(description, topic, partitions)
        run.require(not problem, "the survivor owns all 6 partitions", problem or f"{description.members[0].client_id}")

        def resumed():
            taken = survivor.first_assignment_after(killed_at, doomed)
            return taken if taken is not None and set(doomed) <= set(taken.first_offsets) else None
        taken = wait_or_require(run, resumed, "the survivor reads each of the dead member's partitions", 30)
        if taken is not None:
            first = {tp: taken.first_offsets[tp] for tp in doomed}
            run.require(first == committed, "the survivor resumes the dead member's partitions at their "
                        "committed offsets", ", ".join(f"p{p}: committed {committed[(t, p)]}, first read "
                                                       f"{first[(t, p)]}" for t, p in doomed))
        load.stop()
        run.note(load.summary())
        wait_or_require(run, lambda: caught_up(run, group, topic, partitions),
                        "committed offsets reach the high watermarks", CATCH_UP_TIMEOUT_S, offsets_text)
    finally:
        poller.stop()
        if actor_alive:
            ray.kill(actor, no_restart=True)
        survivor.stop(run)
        load.stop()
    run.note(survivor.summary())
    run.require(not survivor.errors, "the survivor polled and committed without errors",
                "; ".join(survivor.errors[:5]) or "none")
    run.read_all(topic)


# ------------------------------------------------- row 3: committed offsets across coordinator failover
def committed_offsets_across_coordinator_failover(run: Run) -> None:
    """Story: a consumer of group "durable-group" reads all of a 3-partition topic and commits,
    per partition, an offset inside the log picked by the seeded rng (so that resuming anywhere
    else shows). Then the broker leading the group's __consumer_offsets partition (its
    coordinator's broker) is killed and not restarted, so the coordinator moves.

    Criterion: ``committed()`` returns exactly the same offsets, answered by a coordinator on
    another broker; the group is Stable again; after that consumer leaves, a new member resumes
    exactly at the committed offsets (its first read in each partition); the killed broker,
    restarted at the end, rejoins every ISR of the topic. The checker finds nothing."""
    topic, group, partitions, per_partition = "group-progress", "durable-group", 3, 40
    run.create_topic(topic, partitions=partitions, replication_factor=3)
    tps = [(topic, p) for p in range(partitions)]
    for p in range(partitions):
        outcomes = run.produce(topic, [run.next_value(f"v{p}") for _ in range(per_partition)], partition=p)
        run.require(all(isinstance(o, int) for o in outcomes.values()), f"partition {p}'s records acknowledged",
                    f"{sum(isinstance(o, int) for o in outcomes.values())} of {per_partition}")
    config = {**GROUP_CONSUMER_CONFIG, "group.id": group}
    committer = run.cluster.consumer({**config, "client.id": "committer"}, history=run.history, process="committer")
    resumer = None
    killed = None
    try:
        committer.subscribe([topic])
        ends = committer.end_offsets(tps)

        def read_everything():
            committer.poll(timeout_ms=POLL_MS)
            return committer.assignment() == set(tps) and all(committer.position(tp) >= ends[tp] for tp in tps)
        if wait_or_require(run, read_everything, "the committer reads every partition", 60) is None:
            return
        chosen = {tp: run.rng.randrange(1, ends[tp]) for tp in tps}
        committer.commit(chosen)
        before = committer.committed(tps)
        run.require(before == chosen, "the commit is acknowledged", f"committed {before}, chose {chosen}")
        old = run.cluster.describe_group(group).coordinator
        run.note(f"committed {[chosen[tp] for tp in tps]}; coordinator on broker {old}")

        killed = old
        run.faults.kill("broker", old, restart=False)

        def moved():
            coordinator = run.cluster.describe_group(group).coordinator
            return (coordinator,) if coordinator != old else None
        moved_to = wait_or_require(run, moved, "the coordinator moves to another broker", 60)
        if moved_to is None:
            return
        new = moved_to[0]

        def same_offsets():
            committer.poll(timeout_ms=100)  # the member keeps polling: it finds the new coordinator
            return committer.committed(tps) == before
        wait_or_require(run, same_offsets, f"committed() returns the same offsets from broker {new}", 60,
                        lambda _: f"{[before[tp] for tp in tps]}")

        def stable_again():
            committer.poll(timeout_ms=100)
            return stable_with(run, group, 1)
        stable = wait_or_require(run, stable_again, "the group is Stable again", 60,
                                 lambda d: f"coordinator {d.coordinator}, generation {d.generation_id}")
        if stable is not None:
            run.require(stable.coordinator != old, "on a coordinator other than the dead broker's",
                        f"broker {stable.coordinator}, not {old}")
        committer.close(timeout_ms=10000)

        resumer = run.cluster.consumer({**config, "client.id": "resumer"}, history=run.history, process="resumer")
        resumer.subscribe([topic])
        first: dict[tuple[str, int], int] = {}

        def resumed_everywhere():
            for record in resumer.poll(timeout_ms=POLL_MS):
                first.setdefault((record.topic, record.partition), record.offset)
            return set(first) == set(tps)
        if wait_or_require(run, resumed_everywhere, "a new member reads every partition", 60):
            run.require(first == before, "a new member resumes exactly at the committed offsets",
                        ", ".join(f"p{p}: committed {before[(t, p)]}, first read {first[(t, p)]}" for t, p in tps))
        wait_or_require(run, lambda: (resumer.poll(timeout_ms=50), stable_with(run, group, 1))[1],
                        "the group is Stable with the new member", 30)
    finally:
        committer.close(timeout_ms=10000)
        if resumer is not None:
            resumer.close(timeout_ms=10000)
        if killed is not None:
            run.faults.restart(killed)
    for p in range(partitions):
        wait_or_require(run, lambda p=p: len(run.partition_state(topic, p).isr) == 3,
                        f"{topic}-{p}'s ISR is full again", 60)


GROUP_SCENARIOS = [
    Scenario(
        name="coordinator-killed-mid-rebalance",
        title="A group's coordinator is killed while a second member's join rebalances the group",
        criterion="Stable with both members within 30 s, every partition assigned once, committed offsets "
                  "reach the high watermarks, every acknowledged write read; a clean history.",
        script=coordinator_killed_mid_rebalance, slow=True),
    Scenario(
        name="consumer-heartbeat-expiry",
        title="A consumer process dies without leaving; its heartbeats stop",
        criterion="Within session.timeout.ms + 6 s the group is Stable with the survivor owning every "
                  "partition; it resumes the dead member's partitions at their committed offsets; a clean history.",
        script=consumer_heartbeat_expiry, slow=True),
    Scenario(
        name="committed-offsets-across-coordinator-failover",
        title="The broker leading a group's __consumer_offsets partition dies; the coordinator moves",
        criterion="committed() returns the same offsets from the new coordinator, the group is Stable again, a "
                  "new member resumes exactly there, the broker rejoins the ISRs on restart; a clean history.",
        script=committed_offsets_across_coordinator_failover, slow=False),
]
