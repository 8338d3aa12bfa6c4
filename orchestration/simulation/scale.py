"""Leadership at scale: a broker loss and a controller failover on a simulated cluster of many brokers.

Theory of operation. ``run_scale`` builds a ``Simulation`` of ``brokers`` brokers (no group
coordinators) and creates one topic of ``partitions`` partitions with replication factor 3, then
measures three phases, each as simulated time until it is done, the
wall-clock time and steps the simulation took, and the requests of ``COUNTED`` kinds sent:

1. broker loss: the broker leading the most partitions dies (Ray's death notice reaches the
   controller); done when every partition has a live leader that has applied its LeaderAndIsr;
2. broker loss during a controller failover: another broker dies and the controller fails over
   at the same moment; the new controller learns the death only from the missed heartbeats
   (``broker.session.timeout.ms``); done as in 1, under the new controller's epoch;
3. both lost brokers come back: done when every partition's ISR, in the controller and on its
   leader, is all its replicas again with no ISR change pending, and every request the
   controller queued for a broker has been delivered (so the UpdateMetadata count is all the
   ISR changes cost, not what the send threads delivered by then). The controller took the
   lost brokers out of the ISRs itself; bringing them back is the leaders' work, one ISR
   expansion per partition they host, so this is where the leaders' ISR changes
   (AlterPartition) and the controller's metadata refreshes for them show.

Each phase also reports ``isr_changes_committed``: the ISR changes the controller accepted from
leaders in it (each bumps a partition's partition epoch and not its leader epoch).

Invariants are checked after every step as in every simulation; "led again" is polled every
``POLL_MS`` of simulated time, so the times are accurate to that. Nothing is asserted: the
figures are returned (and ``out`` gets a line per phase, and a progress line every
``PROGRESS_MS`` simulated) for benchmarks/sim_scale.py and ``raykafka sim --scale``.
"""
from __future__ import annotations

import collections
import time
from collections.abc import Callable

from orchestration.simulation.simulation import Simulation

TOPIC = "scale"
POLL_MS = 50
PROGRESS_MS = 500
PHASE_LIMIT_MS = 600_000
# The requests each phase reports the count of: the controller's, and the brokers' to it.
COUNTED = ("LeaderAndIsrRequest", "UpdateMetadataRequest", "StopReplicaRequest", "AlterPartitionRequest",
           "BrokerRegistrationRequest", "FetchRequest")


def _led_everywhere(sim: Simulation, controller_epoch: int | None = None) -> bool:
    """Every partition has a live leader whose replica leads in the controller's leader epoch
    (and, with ``controller_epoch``, that controller is the one in charge)."""
    if controller_epoch is not None and sim.controller.controller_epoch != controller_epoch:
        return False
    for topic_partition, leadership in sim.controller.context.leadership.items():
        if topic_partition[0] != TOPIC or leadership.leader < 0 or not sim.is_up(leadership.leader):
            return False
        replica = sim.replica(leadership.leader, *topic_partition)
        if replica is None or not replica.is_leader or replica.leader_epoch != leadership.leader_epoch:
            return False
    return True


def _run_until_led(sim: Simulation, condition: Callable[[], bool],
                   out: Callable[[str], None] | None = None) -> None:
    """Run until ``condition``; with ``out``, a progress line every ``PROGRESS_MS`` simulated."""
    started_s, started_ms = time.monotonic(), sim.now_ms
    deadline_ms, next_progress_ms = sim.now_ms + PHASE_LIMIT_MS, sim.now_ms + PROGRESS_MS
    while not condition():
        assert sim.now_ms < deadline_ms, f"the phase was not done within {PHASE_LIMIT_MS} ms"
        sim.run(POLL_MS)
        if out is not None and sim.now_ms >= next_progress_ms:
            next_progress_ms += PROGRESS_MS
            out(f"  ... {sim.now_ms - started_ms} ms simulated, {sim.step_count} steps, "
                f"{round(time.monotonic() - started_s, 1)} s wall-clock")


def _isr_settled(sim: Simulation) -> bool:
    """Every partition's ISR is its live replicas, in the controller and on its leader, with no
    ISR change pending."""
    context = sim.controller.context
    for topic_partition, leadership in context.leadership.items():
        if topic_partition[0] != TOPIC:
            continue
        live = {r for r in context.replicas(topic_partition) if sim.is_up(r)}
        replica = sim.replica(leadership.leader, *topic_partition) if leadership.leader >= 0 else None
        if (set(leadership.isr) != live or replica is None or set(replica.isr) != live
                or replica.pending_isr is not None):
            return False
    return True


def _channels_drained(sim: Simulation) -> bool:
    """No control request waiting in, or on its way from, any broker's send thread."""
    return all(n.queue.queue_size == 0 and n.queue.in_flight is None
               for name, n in sim.nodes.items() if name.startswith("channel:"))


def _isr_changes_committed(sim: Simulation) -> int:
    """Partition epochs not explained by leader epochs: one per ISR change a leader got committed."""
    return sum(l.partition_epoch - l.leader_epoch for tp, l in sim.controller.context.leadership.items()
               if tp[0] == TOPIC)


def _most_leaderships(sim: Simulation, exclude: int | None = None) -> int:
    counts = collections.Counter(l.leader for tp, l in sim.controller.context.leadership.items()
                                 if tp[0] == TOPIC and l.leader >= 0 and l.leader != exclude)
    return min(counts, key=lambda b: (-counts[b], b))


def _phase(sim: Simulation, name: str, act: Callable[[], None], condition: Callable[[], bool],
           out: Callable[[str], None] | None) -> dict:
    started_s, started_ms, started_step = time.monotonic(), sim.now_ms, sim.step_count
    sent_before = collections.Counter(sim.network.sent)
    isr_changes_before = _isr_changes_committed(sim)
    act()
    _run_until_led(sim, condition, out)
    figures = {"simulated_ms": sim.now_ms - started_ms, "steps": sim.step_count - started_step,
               "wall_clock_s": round(time.monotonic() - started_s, 2),
               "isr_changes_committed": _isr_changes_committed(sim) - isr_changes_before,
               "requests_sent": {kind: sim.network.sent[kind] - sent_before[kind] for kind in COUNTED
                                 if sim.network.sent[kind] > sent_before[kind]}}
    if out is not None:
        out(f"{name} after {figures['simulated_ms']} ms simulated, "
            f"{figures['steps']} steps, {figures['wall_clock_s']} s wall-clock; "
            f"{figures['isr_changes_committed']} ISR changes committed; requests sent: "
            + ", ".join(f"{n} {kind}" for kind, n in figures["requests_sent"].items()))
    return figures


def run_scale(brokers: int = 100, partitions: int = 10_000, seed: int = 1,
              out: Callable[[str], None] | None = None) -> dict:
    """The figures of the three phases (see the module docstring)."""
    started_s = time.monotonic()
    sim = Simulation(brokers=range(brokers), seed=seed, trace_max=50)
    figures: dict = {"brokers": brokers, "partitions": partitions, "replication_factor": 3, "seed": seed,
                     "start_wall_clock_s": round(time.monotonic() - started_s, 2)}
    created_s, created_ms = time.monotonic(), sim.now_ms
    # Not create_topic's own wait: it checks every replica after every step.
    assert sim.create_topic(TOPIC, partitions=partitions, replication_factor=3, wait=False) == "NONE"
    _run_until_led(sim, lambda: _led_everywhere(sim))
    figures["create_topic"] = {"simulated_ms": sim.now_ms - created_ms,
                               "wall_clock_s": round(time.monotonic() - created_s, 2)}
    if out is not None:
        out(f"{brokers} brokers, topic of {partitions} partitions led everywhere after "
            f"{figures['create_topic']['simulated_ms']} ms simulated ({figures['create_topic']['wall_clock_s']} s)")
    first = _most_leaderships(sim)
    figures["leaderships_moved_by_broker_loss"] = sum(
        1 for tp, l in sim.controller.context.leadership.items() if tp[0] == TOPIC and l.leader == first)
    figures["broker_loss"] = _phase(sim, f"broker {first} lost: every partition led again",
                                    lambda: sim.kill(first), lambda: _led_everywhere(sim), out)
    second = _most_leaderships(sim, exclude=first)
    epoch = sim.controller.controller_epoch + 1

    def lose_broker_and_controller() -> None:
        sim.kill(second, notify_controller=False)
        sim.restart_controller()
    figures["broker_loss_during_controller_failover"] = _phase(
        sim, f"broker {second} lost while the controller fails over: every partition led again",
        lose_broker_and_controller, lambda: _led_everywhere(sim, controller_epoch=epoch), out)

    def restart_lost_brokers() -> None:
        sim.restart(first)
        sim.restart(second)
    figures["lost_brokers_rejoin_isrs"] = _phase(
        sim, f"brokers {first} and {second} restart: every ISR whole again", restart_lost_brokers,
        lambda: _isr_settled(sim) and _channels_drained(sim), out)
    figures["total_steps"], figures["total_simulated_ms"] = sim.step_count, sim.now_ms
    figures["total_wall_clock_s"] = round(time.monotonic() - started_s, 2)
    return figures
