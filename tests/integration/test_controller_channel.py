"""The controller's per-broker request queue on a real 3-broker cluster with a tiny queue limit:
while the controller cannot reach one broker, a flood of control requests overflows that broker's
send queue; once the link heals, the broker catches up on everything and still applies later
control requests (a new topic, then a leader change); a send thread whose worker fails is
replaced; and ``Cluster.controller_queue_sizes`` reports Kafka's QueueSize (waiting requests
only) and the requests' queue times throughout."""
from __future__ import annotations

import pytest
import ray

from actors.fault_network import CONTROLLER_NODE
from orchestration.admin.wait import wait_until
from orchestration.chaos.faults import Faults
from tests.support.clusters import running_cluster

pytestmark = pytest.mark.integration

QUEUE_SIZE_MAX = 4  # the smallest the controller accepts: one broker's resync
# controller.socket.timeout.ms: the victim's request in flight when the link heals was sent into the
# cut and is retried only once its wait runs out; 5 s instead of Kafka's 30 s.
CONFIG = {"raykafka.controller.queue.size.max": str(QUEUE_SIZE_MAX), "broker.heartbeat.interval.ms": "500",
          "controlled.shutdown.retry.backoff.ms": "500", "auto.leader.rebalance.enable": "false",
          "controller.socket.timeout.ms": "5000"}
VICTIM = 1
FLOOD_TOPICS = 6  # each sends the victim a LeaderAndIsr and an UpdateMetadata: 12 requests for 4 places
WAIT_S = 120


@pytest.fixture(scope="module")
def cluster(ray_session, tmp_path_factory):
    with running_cluster(tmp_path_factory, CONFIG) as started:
        yield started


def broker_view(cluster, broker_id: int, topic: str) -> dict:
    return {e["partition"]: (e["leader"], e["leader_epoch"])
            for e in ray.get(cluster.broker(broker_id).describe_partitions.remote(), timeout=30)
            if e["topic"] == topic}


def controller_view(cluster, topic: str) -> dict:
    return {p.partition: (p.leader, p.leader_epoch) for p in cluster.describe_topic(topic)}


def in_step(cluster, broker_id: int, topics: list[str]) -> bool:
    return all(broker_view(cluster, broker_id, t) == controller_view(cluster, t) for t in topics)


def victim_queue(cluster):
    """The victim's queue status; a thread too slow to answer (None) makes the caller's wait poll again."""
    status = cluster.controller_queue_sizes()[VICTIM]
    assert status is not None, f"broker {VICTIM}'s send thread did not answer"
    return status


def all_drained(cluster):
    """Every queue's status once each is empty, idle and has sent a request; else None."""
    statuses = cluster.controller_queue_sizes()
    drained = all(s is not None and s.queue_size == 0 and not s.in_flight and s.last_queue_time_ms >= 0
                  for s in statuses.values())
    return statuses if drained else None


def test_queue_sizes_are_reported_per_broker_from_the_cluster(cluster):
    cluster.create_topic("observed", partitions=3, replication_factor=3)
    statuses = wait_until(lambda: all_drained(cluster), WAIT_S,
                          "every send queue drained, each having sent at least one request")
    assert sorted(statuses) == sorted(cluster.broker_ids)
    # An empty queue has no head to age. Drops are not checked here: with this module's tiny limit
    # a send thread slow to start on a busy machine can overflow at start-up, which is allowed.
    assert all(s.broker_id == b and s.head_queue_time_ms == 0 for b, s in statuses.items()), statuses
    cluster.delete_topic("observed")


def test_a_flooded_send_queue_drops_its_backlog_and_its_broker_still_follows_the_controller(cluster):
    faults = Faults(cluster)
    flood = [f"flood-{i}" for i in range(FLOOD_TOPICS)]
    # The controller's requests to the victim stop arriving: its send thread retries the request
    # in flight, and everything after it waits in the queue.
    faults.partition([CONTROLLER_NODE], [VICTIM], one_way=True)
    try:
        for topic in flood:  # led by the other brokers, so that each topic is served at once
            cluster.create_topic(topic, assignment=[[0, VICTIM, 2], [2, VICTIM, 0]])
        wait_until(lambda: victim_queue(cluster).dropped_total > 0, WAIT_S, f"broker {VICTIM}'s send queue to overflow")
        wait_until(lambda: victim_queue(cluster).head_queue_time_ms > 0, WAIT_S,
                   "the oldest waiting request to show its time in the queue")
        status = wait_until(lambda: victim_queue(cluster), WAIT_S, f"broker {VICTIM}'s queue status")
        assert status.in_flight, "the request in flight is kept through the overflow"
        assert 0 < status.queue_size <= QUEUE_SIZE_MAX, status
        assert status.resyncs_requested > 0, status
    finally:
        faults.heal()

    wait_until(lambda: in_step(cluster, VICTIM, flood), WAIT_S,
               f"broker {VICTIM} to catch up on every flooded topic after the link healed")
    wait_until(lambda: victim_queue(cluster).queue_size == 0 and not victim_queue(cluster).in_flight, WAIT_S,
               f"broker {VICTIM}'s send queue to drain")

    # Later control requests still reach the victim and are applied: a new topic led by broker 0 ...
    cluster.create_topic("after-flood", assignment=[[0, VICTIM, 2]])
    wait_until(lambda: in_step(cluster, VICTIM, ["after-flood"]), WAIT_S, f"broker {VICTIM} to learn of after-flood")
    assert broker_view(cluster, VICTIM, "after-flood")[0][0] == 0
    # ... whose leadership then moves to the victim.
    before = controller_view(cluster, "after-flood")[0]
    assert cluster.controlled_shutdown(0) == "NONE"
    try:
        after = controller_view(cluster, "after-flood")[0]
        assert after[0] == VICTIM and after[1] > before[1], (before, after)
        wait_until(lambda: broker_view(cluster, VICTIM, "after-flood").get(0) == after, WAIT_S,
                   f"broker {VICTIM} to take over the leadership of after-flood-0")
    finally:
        cluster.restart_broker(0)
    for topic in flood + ["after-flood"]:
        cluster.delete_topic(topic)


def test_a_send_thread_whose_worker_fails_is_replaced_and_its_broker_keeps_up(cluster):
    broker_id = 2
    controller = cluster.controller()
    failing = ray.get(controller.send_thread.remote(broker_id), timeout=30)
    try:
        ray.get(failing.fail_worker.remote(), timeout=30)
    except ray.exceptions.ActorDiedError:
        pass  # the thread may end its process before this call's answer leaves it: the failure injected

    def replaced() -> bool:
        current = ray.get(controller.send_thread.remote(broker_id), timeout=30)
        return current is not None and current._actor_id != failing._actor_id
    wait_until(replaced, WAIT_S, f"the controller to replace broker {broker_id}'s failed send thread")
    cluster.create_topic("after-failure", partitions=3, replication_factor=3)
    wait_until(lambda: in_step(cluster, broker_id, ["after-failure"]), WAIT_S,
               f"broker {broker_id} to learn of after-failure from the new send thread")
    cluster.delete_topic("after-failure")
