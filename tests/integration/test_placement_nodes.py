"""Proves brokers are placed across Ray nodes, on one multi-node Ray on this machine
(``ray.cluster_utils.Cluster``: a head and two worker nodes, shared by every test here): one broker
per node with STRICT_SPREAD, shown by ``raykafka cluster status --json``; each broker's fetchers,
send thread and group coordinator on its node; a broker Ray restarts back on its node with its
log; and a broker whose node is removed starting empty on the node that replaces it, with a new
log directory, catching up into the ISR with no acknowledged record lost.

The log directory names the node (``{node_id}``), so that each Ray node here keeps a disk of its
own, as separate machines would."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
import ray
from ray.cluster_utils import Cluster as RayCluster

from orchestration import Cluster
from orchestration.admin.placement import STRICT_SPREAD
from orchestration.admin.wait import wait_until
from orchestration.chaos.runner import FAST_FAILOVER_CONFIG
from tests.support.reading import read_to_high_watermark

pytestmark = pytest.mark.integration

REPO_ROOT = Path(__file__).resolve().parents[2]
OBJECT_STORE_BYTES = 100 * 1024 * 1024
HEAD_RESOURCE = "raykafka-test-head"  # keeps the controller (and this driver's work) on the head
WORKER_NODES = 2
WAIT_S = 120
CLI_TIMEOUT_S = 180


class RayNodesHere:
    """The multi-node Ray of this module: a head and worker nodes, each a raylet on this machine."""

    def __init__(self) -> None:
        self.ray_cluster = RayCluster(initialize_head=True, head_node_args={
            "num_cpus": 1, "object_store_memory": OBJECT_STORE_BYTES, "include_dashboard": False,
            "resources": {HEAD_RESOURCE: 1.0}})
        self.workers = {}
        for _ in range(WORKER_NODES):
            self.add_worker()

    def add_worker(self):
        node = self.ray_cluster.add_node(num_cpus=0, object_store_memory=OBJECT_STORE_BYTES)
        self.workers[node.node_id] = node
        return node

    def remove_worker(self, node_id: str) -> None:
        self.ray_cluster.remove_node(self.workers.pop(node_id), allow_graceful=False)


@pytest.fixture(scope="module")
def ray_nodes():
    assert not ray.is_initialized(), "this module starts a multi-node Ray of its own"
    nodes = RayNodesHere()
    try:
        ray.init(address=nodes.ray_cluster.address, namespace=f"raykafka-placement-{uuid.uuid4().hex[:8]}",
                 log_to_driver=False)
        nodes.ray_cluster.wait_for_nodes()
        yield nodes
    finally:
        ray.shutdown()
        nodes.ray_cluster.shutdown()


@pytest.fixture(scope="module")
def cluster(ray_nodes, tmp_path_factory):
    log_dir = tmp_path_factory.mktemp("logs") / "{node_id}"
    started = Cluster.start(brokers=3, log_dir=str(log_dir), config=FAST_FAILOVER_CONFIG, detached=True,
                            controller_resources={HEAD_RESOURCE: 0.01})
    try:
        yield started
    finally:
        started.stop()


def node_of(actor) -> str:
    """The Ray node an actor runs on, asked of the actor itself."""
    return ray.get(actor.__ray_call__.remote(lambda self: ray.get_runtime_context().get_node_id()), timeout=60)


def ping(cluster, broker_id: int, timeout_s: float = 10) -> dict:
    return ray.get(cluster.broker(broker_id).ping.remote(), timeout=timeout_s)


def full_isr(cluster, topic: str, brokers: set[int]) -> bool:
    return all(brokers <= set(p.isr) for p in cluster.describe_topic(topic))


def produce(cluster, topic: str, partitions: int, count: int, prefix: str) -> dict[tuple[int, int], bytes]:
    """Send ``count`` records with acks=all; every acknowledged one by (partition, offset)."""
    producer = cluster.producer({"acks": "all", "linger.ms": "5", "retries": "1000000",
                                 "delivery.timeout.ms": "120000"})
    sent = [(f"{prefix}{i}".encode(), producer.send(topic, value=f"{prefix}{i}".encode(), partition=i % partitions))
            for i in range(count)]
    producer.flush(timeout=WAIT_S)
    acknowledged = {}
    for value, future in sent:
        if future.exception(timeout=1) is None:
            metadata = future.result(timeout=1)
            acknowledged[(metadata.partition, metadata.offset)] = value
    assert len(acknowledged) >= count * 0.9, f"only {len(acknowledged)} of {count} acknowledged"
    return acknowledged


def log_end_offsets(cluster, broker_id: int, topic: str) -> dict[int, int]:
    return {p["partition"]: p["log_end_offset"]
            for p in ray.get(cluster.broker(broker_id).describe_partitions.remote(), timeout=30) if p["topic"] == topic}


def test_brokers_spread_one_per_node_and_status_says_where(cluster, ray_nodes, tmp_path):
    done = subprocess.run([sys.executable, "-m", "orchestration.cli", "cluster", "status", "--json",
                           "--namespace", cluster.namespace, "--address", ray_nodes.ray_cluster.address],
                          capture_output=True, text=True, cwd=REPO_ROOT, timeout=CLI_TIMEOUT_S,
                          env=dict(os.environ, PYTHONPATH=str(REPO_ROOT), RAYKAFKA_HOME=str(tmp_path)))
    assert done.returncode == 0, done.stderr[-3000:]
    status = json.loads(done.stdout.strip().splitlines()[-1])
    assert status["placement"]["strategy"] == STRICT_SPREAD and not status["placement"]["fallback"], status
    alive = {node["NodeID"]: node["NodeManagerAddress"] for node in ray.nodes() if node["Alive"]}
    brokers = {b["broker_id"]: b for b in status["brokers"]}
    assert all(b["up"] for b in brokers.values()), brokers
    assert len({b["node_id"] for b in brokers.values()}) == 3, f"brokers share a node: {brokers}"
    for b in brokers.values():
        assert alive.get(b["node_id"]) == b["node_ip"], (b, alive)
        assert b["node_id"] in b["log_dir"], f"broker {b['broker_id']}'s log directory is not its node's: {b}"


def test_each_brokers_fetchers_send_thread_and_coordinator_share_its_node(cluster):
    cluster.create_topic("placed", partitions=3, replication_factor=3)
    wait_until(lambda: full_isr(cluster, "placed", set(cluster.broker_ids)), WAIT_S, "a full ISR on 'placed'")
    for broker_id in cluster.broker_ids:
        home = ping(cluster, broker_id)["node_id"]
        fetchers = ray.get(cluster.broker(broker_id).fetchers.remote(), timeout=30)
        assert fetchers, f"broker {broker_id} follows partitions but runs no fetcher"
        companions = {f"fetcher {key}": entry["actor"] for key, entry in fetchers.items()}
        companions["send thread"] = cluster._ask_controller(lambda controller: controller.send_thread.remote(broker_id))
        companions["group coordinator"] = cluster._coordinators[broker_id]
        for name, actor in companions.items():
            assert actor is not None, f"broker {broker_id} has no {name}"
            assert node_of(actor) == home, f"broker {broker_id}'s {name} is not on its node {home}"


def test_a_broker_restarted_by_ray_comes_back_on_its_node_with_its_log(cluster):
    cluster.create_topic("kept", partitions=2, replication_factor=3, config={"min.insync.replicas": "2"})
    wait_until(lambda: full_isr(cluster, "kept", set(cluster.broker_ids)), WAIT_S, "a full ISR on 'kept'")
    produce(cluster, "kept", 2, 400, "k")
    broker_id = cluster.broker_ids[1]
    wait_until(lambda: full_isr(cluster, "kept", set(cluster.broker_ids)), WAIT_S, "every replica in the ISR")
    leader_ends = {p.partition: p.high_watermark for p in cluster.describe_topic("kept")}
    wait_until(lambda: log_end_offsets(cluster, broker_id, "kept") == leader_ends, WAIT_S,
               f"broker {broker_id} to hold every record of 'kept' ({leader_ends})")
    before = ping(cluster, broker_id)

    cluster.kill("broker", broker_id, restart=True)

    def restarted():
        try:
            answer = ping(cluster, broker_id)
        except Exception:
            return None  # restarting
        return answer if answer["incarnation_id"] != before["incarnation_id"] else None
    after = wait_until(restarted, WAIT_S, f"broker {broker_id} restarted by Ray")
    assert after["node_id"] == before["node_id"], f"broker {broker_id} moved from {before['node_id']} to {after}"
    assert (after["log_dir"], after["directory_id"]) == (before["log_dir"], before["directory_id"]), (before, after)
    wait_until(lambda: log_end_offsets(cluster, broker_id, "kept").keys() == leader_ends.keys(), WAIT_S,
               f"broker {broker_id} to host 'kept' again")
    assert log_end_offsets(cluster, broker_id, "kept") == leader_ends, "the restarted broker lost its log"


def test_a_broker_whose_node_is_removed_starts_empty_elsewhere_and_catches_up(cluster, ray_nodes):
    topic, partitions = "moved", 3
    cluster.create_topic(topic, partitions=partitions, replication_factor=3, config={"min.insync.replicas": "2"})
    everyone = set(cluster.broker_ids)
    wait_until(lambda: full_isr(cluster, topic, everyone), WAIT_S, f"a full ISR on {topic!r}")
    victim = next(b for b in cluster.broker_ids if ping(cluster, b)["node_id"] in ray_nodes.workers)
    before = ping(cluster, victim)
    acknowledged = produce(cluster, topic, partitions, 300, "before-")

    ray_nodes.remove_worker(before["node_id"])
    # STRICT_SPREAD leaves no free node here: the victim's bundle waits for one, the victim is down.
    wait_until(lambda: all(victim not in p.isr for p in cluster.describe_topic(topic)), WAIT_S,
               f"broker {victim} out of every ISR after its node went away")
    acknowledged |= produce(cluster, topic, partitions, 300, "during-")

    new_node = ray_nodes.add_worker()
    ray_nodes.ray_cluster.wait_for_nodes()

    def moved():
        try:
            answer = ping(cluster, victim)
        except Exception:
            return None  # its bundle is not placed yet, or the broker is starting
        return answer if answer["node_id"] == new_node.node_id else None
    after = wait_until(moved, WAIT_S, f"broker {victim} started on the new node {new_node.node_id}")
    assert after["log_dir"] != before["log_dir"] and after["directory_id"] != before["directory_id"], \
        f"broker {victim} did not start on a new log directory: before {before}, after {after}"
    wait_until(lambda: full_isr(cluster, topic, everyone), WAIT_S, f"broker {victim} back in every ISR of {topic!r}")
    leader_ends = {p.partition: p.high_watermark for p in cluster.describe_topic(topic)}
    wait_until(lambda: all(log_end_offsets(cluster, victim, topic).get(p, -1) >= end for p, end in leader_ends.items()),
               WAIT_S, f"broker {victim} caught up to {leader_ends}")

    at_least = {p: max(o for (q, o) in acknowledged if q == p) + 1 for p in range(partitions)}
    seen = read_to_high_watermark(cluster, topic, partitions, at_least=at_least)
    lost = {k: v for k, v in acknowledged.items() if k not in seen or seen[k].value != v}
    assert not lost, f"{len(lost)} acknowledged records lost or changed, e.g. {sorted(lost.items())[:3]}"
    status = cluster.status()
    assert {b["broker_id"]: b["node_id"] for b in status["brokers"]}[victim] == new_node.node_id, status
