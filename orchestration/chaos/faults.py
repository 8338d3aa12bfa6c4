"""Faults on purpose: raykafka's fault injector (Jepsen's nemesis).

Each primitive names a Kafka failure:
- a crashed process: ``kill`` of any role (a broker, its replica fetchers, the controller, a
  controller request-send thread, a group coordinator), Ray restarting it or not;
- a process restarted with its disk (``restart``) or without it (``lose_disk``), and a power loss
  that takes the unflushed tail of one log with it (``lose_unflushed_tail``);
- a failing disk (``storage_fault``: full, failing writes or failing fsyncs) under a broker: its
  log directory goes offline, it halts and Ray starts it again with a healthy disk;
- a planned stop (``controlled_shutdown``);
- a long stop-the-world pause (``pause``/``resume``: the actor holds every request and timer, so
  it misses heartbeats and fetches while Ray still calls it alive);
- network faults between nodes through the shells' fault network (``actors/fault_network.py``):
  ``partition`` (one way or both), ``isolate``, ``delay``, ``drop``, and ``heal``;
- a whole Ray node gone (``remove_node``/``restore_node``), for clusters placed on a
  multi-node Ray (``orchestration.admin.ray_nodes.RayNodes``).
Every fault is written to the history, when one is given, with its time, before it is done (so a
checker can relate what clients saw to it). Network rules take effect everywhere within
``actors.fault_network.RULES_IN_FORCE_S``; the network primitives wait that long before returning.
"""
from __future__ import annotations

import time
from collections.abc import Iterable

import ray

from actors.fault_network import CONTROLLER_NODE, RULES_IN_FORCE_S, LinkRule, broker_node, publish_rules
from orchestration.admin.cluster import Cluster
from orchestration.history import HistoryWriter

Node = int | str  # a broker id, or a node name ("broker-1", "controller")


def node_name(node: Node) -> str:
    if isinstance(node, int):
        return broker_node(node)
    if node == CONTROLLER_NODE or node.startswith("broker-"):
        return node
    raise ValueError(f"unknown node {node!r}: a broker id, 'broker-<id>' or 'controller'")


class Faults:
    def __init__(self, cluster: Cluster, history: HistoryWriter | None = None, *, ray_nodes=None) -> None:
        self.cluster = cluster
        self.history = history
        self.ray_nodes = ray_nodes
        self._links: list[LinkRule] = []

    def record(self, name: str, target: str, **detail) -> None:
        """Write a fault (or a step of one done by hand) to the history."""
        if self.history is not None:
            self.history.fault(name, target, detail)

    # ------------------------------------------------------------------------------ processes
    def kill(self, role: str, broker_id: int | None = None, *, restart: bool = True) -> None:
        self.record("kill", f"{role}-{broker_id}" if broker_id is not None else role, restart=restart)
        self.cluster.kill(role, broker_id, restart=restart)

    def restart(self, broker_id: int) -> None:
        self.record("restart", f"broker-{broker_id}")
        self.cluster.restart_broker(broker_id)

    def lose_disk(self, broker_id: int) -> None:
        """Crash the broker and start it again with an empty log directory."""
        self.record("lose-disk", f"broker-{broker_id}")
        self.cluster.kill("broker", broker_id, restart=False)
        self.cluster.restart_broker(broker_id, wipe_disk=True)

    def lose_unflushed_tail(self, broker_id: int, topic: str, partition: int, keep_below: int,
                            *, restart: bool = True) -> None:
        """A power loss: the broker dies and its log of ``topic``-``partition`` keeps only the
        offsets below ``keep_below`` (what had reached the disk); it restarts when ``restart``."""
        self.record("lose-unflushed-tail", f"broker-{broker_id}", topic=topic, partition=partition,
                     keep_below=keep_below, restart=restart)
        self.cluster.kill("broker", broker_id, restart=False)
        self.cluster.truncate_replica_on_disk(broker_id, topic, partition, keep_below)
        if restart:
            self.cluster.restart_broker(broker_id)

    def storage_fault(self, broker_id: int, fault: str = "disk-full", *, room_bytes: int = 0) -> None:
        """The broker's disk fills up (``disk-full``: what fits in ``room_bytes`` of the next append
        lands, the rest fails with ENOSPC), or fails writes (``write-error``) or fsyncs
        (``fsync-error``) with EIO, until its process ends (actors/core/log/storage_faults.py)."""
        self.record("storage-fault", f"broker-{broker_id}", fault=fault, room_bytes=room_bytes)
        ray.get(self.cluster.broker(broker_id).inject_storage_fault.remote(fault, room_bytes), timeout=30)

    def controlled_shutdown(self, broker_id: int) -> str:
        self.record("controlled-shutdown", f"broker-{broker_id}")
        return self.cluster.controlled_shutdown(broker_id)

    def pause(self, role: str, broker_id: int | None = None) -> None:
        self.record("pause", f"{role}-{broker_id}" if broker_id is not None else role)
        ray.get(self._actor(role, broker_id).pause.remote(), timeout=30)

    def resume(self, role: str, broker_id: int | None = None) -> None:
        self.record("resume", f"{role}-{broker_id}" if broker_id is not None else role)
        ray.get(self._actor(role, broker_id).resume.remote(), timeout=30)

    def _actor(self, role: str, broker_id: int | None):
        if role == "broker":
            return self.cluster.broker(broker_id)
        if role == "controller":
            return self.cluster.controller()
        raise ValueError(f"pause/resume supports 'broker' and 'controller', not {role!r}")

    # -------------------------------------------------------------------------------- network
    def partition(self, side_a: Iterable[Node], side_b: Iterable[Node], *, one_way: bool = False) -> None:
        """Cut every link from ``side_a`` to ``side_b``, and back unless ``one_way``.

        One way (a -> b) loses a's requests to b and b's answers to a: b's requests to a still run
        there, but b never learns their outcome."""
        a, b = sorted({node_name(n) for n in side_a}), sorted({node_name(n) for n in side_b})
        if set(a) & set(b):
            raise ValueError(f"a node cannot be on both sides of a partition: {a} / {b}")
        rules = [LinkRule(x, y, "cut") for x in a for y in b]
        if not one_way:
            rules += [LinkRule(y, x, "cut") for x in a for y in b]
        self.record("partition", " ".join(a) + (" -> " if one_way else " <-> ") + " ".join(b),
                     side_a=a, side_b=b, one_way=one_way)
        self._publish(self._links + rules)

    def isolate(self, node: Node, from_nodes: Iterable[Node] | None = None) -> None:
        """Cut ``node`` off from ``from_nodes`` (default: every other server node), both ways."""
        name = node_name(node)
        others = [node_name(n) for n in from_nodes] if from_nodes is not None else \
            [broker_node(b) for b in self.cluster.broker_ids if broker_node(b) != name] + \
            ([CONTROLLER_NODE] if name != CONTROLLER_NODE else [])
        self.partition([name], others)

    def delay(self, source: Node, destination: Node, delay_ms: int, *, both_ways: bool = False) -> None:
        self._links_between("delay", source, destination, both_ways, delay_ms=int(delay_ms))

    def drop(self, source: Node, destination: Node, probability: float, *, both_ways: bool = False) -> None:
        self._links_between("drop", source, destination, both_ways, probability=float(probability))

    def _links_between(self, action: str, source: Node, destination: Node, both_ways: bool, **kwargs) -> None:
        a, b = node_name(source), node_name(destination)
        rules = [LinkRule(a, b, action, **kwargs)] + ([LinkRule(b, a, action, **kwargs)] if both_ways else [])
        self.record(action, f"{a} {'<->' if both_ways else '->'} {b}", **kwargs)
        self._publish(self._links + rules)

    def heal(self) -> None:
        """Every link works again."""
        self.record("heal", "network", rules_removed=len(self._links))
        self._publish([])

    def _publish(self, rules: list[LinkRule]) -> None:
        publish_rules(self.cluster.namespace, rules)
        self._links = list(rules)
        time.sleep(RULES_IN_FORCE_S)  # every shell judges its calls by them by now

    # ---------------------------------------------------------------------------- Ray nodes
    def remove_node(self, broker_id: int) -> None:
        """Take away the Ray node that hosts ``broker_id`` (and its fetchers and coordinator):
        every process on it dies at once, as a machine that loses power."""
        self._require_nodes()
        self.record("remove-node", f"broker-{broker_id}")
        self.ray_nodes.remove(broker_id)

    def restore_node(self, broker_id: int) -> None:
        """Bring the node back (same resources, same disk); Ray restarts the broker there."""
        self._require_nodes()
        self.record("restore-node", f"broker-{broker_id}")
        self.ray_nodes.restore(broker_id)

    def _require_nodes(self) -> None:
        if self.ray_nodes is None:
            raise ValueError("node faults need a cluster placed on a multi-node Ray (orchestration.admin.ray_nodes)")
