"""Where a cluster's brokers run on a multi-node Ray: one placement-group bundle per broker.

Theory of operation. ``Cluster.start`` counts the alive Ray nodes that can hold a broker's bundle
and ``choose_placement`` picks the placement group's strategy from that count: ``STRICT_SPREAD``
(every broker on a machine of its own) when there are at least as many such nodes as brokers;
otherwise ``SPREAD`` (as few brokers per machine as Ray can manage) on two or more nodes, and
``PACK`` on one; a fallback is shown by ``raykafka cluster status`` and, on several nodes, logged as a
warning.
``BrokerPlacement`` creates the group (named, detached with a detached cluster) and gives each
broker's actors the scheduling strategy of the broker's bundle: the broker, its group
coordinator, and the controller's request-send thread to it (the controller is given the
strategies when it starts). A broker's replica fetchers are started by the broker itself, with
node affinity to the node it runs on, which is its bundle's node.

A bundle reserves a sliver of memory (``BUNDLE``), not CPU: Ray refuses a bundle of zero
resources, every Ray node has memory, and a fractional CPU held by each broker would keep a whole
CPU from tasks that ask for one (a Spark executor on a 2-core machine). The actors ask for no
resources of their own (``num_cpus=0``), so a broker, its coordinator, its send thread and its
fetchers share a bundle that holds no more than the sliver.

Ray keeps a bundle on its node: a broker that Ray restarts after a crash comes back to that node
and finds its log directory there. When the node itself is gone, Ray moves the bundle to another
node that has room (with ``STRICT_SPREAD``, one that holds no other broker), the broker starts
there on an empty log directory with a new directory id, and the controller takes it out of every
ISR until it has caught up (``actors/core/controller/lost_disks.py``).

A cluster whose brokers are pinned to nodes by custom resources (``broker_resources``, as
``orchestration.admin.ray_nodes`` places them for node faults) makes no placement group: its
strategy is ``PINNED`` and each broker's actors ask for the broker's resources.
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass

import ray
from loguru import logger
from ray.util.placement_group import get_placement_group, placement_group, remove_placement_group
from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

STRICT_SPREAD = "STRICT_SPREAD"
SPREAD = "SPREAD"
PACK = "PACK"
PINNED = "PINNED"
# One MiB of Ray's "memory" resource per broker: enough for Ray to accept the bundle, too little to
# matter on any node.
BUNDLE_MEMORY_BYTES = 1024 * 1024
BUNDLE = {"memory": float(BUNDLE_MEMORY_BYTES)}
# How long a placement group may take to be placed. A STRICT_SPREAD group not placed by then (a
# node counted as alive that is going away, say) is removed and the cluster falls back to SPREAD.
PLACEMENT_READY_TIMEOUT_S = 60


# ----------------------------------------------------------------------- the choice (pure)
@dataclass(frozen=True)
class PlacementChoice:
    """The strategy for ``brokers`` brokers on ``usable_nodes`` nodes, and why."""
    strategy: str
    brokers: int
    usable_nodes: int
    reason: str

    @property
    def fallback(self) -> bool:
        """True when some brokers share a machine though the cluster wanted one each."""
        return self.strategy in (SPREAD, PACK)


def choose_placement(brokers: int, usable_nodes: int) -> PlacementChoice:
    """``STRICT_SPREAD`` with a node for every broker, else ``SPREAD`` over two or more nodes,
    else ``PACK`` on the one node (zero usable nodes is treated as one: Ray then waits for room)."""
    if brokers < 1:
        raise ValueError(f"a cluster needs at least one broker, not {brokers}")
    if usable_nodes >= brokers:
        return PlacementChoice(STRICT_SPREAD, brokers, usable_nodes,
                               f"{usable_nodes} Ray nodes for {brokers} brokers: one broker per node")
    if usable_nodes >= 2:
        return PlacementChoice(SPREAD, brokers, usable_nodes,
                               f"only {usable_nodes} Ray nodes for {brokers} brokers: "
                               "spread as evenly as Ray can, some brokers share a node")
    return PlacementChoice(PACK, brokers, usable_nodes,
                           f"only {max(usable_nodes, 1)} Ray node for {brokers} brokers: all on one node")


def usable_node_count(nodes: list[dict], bundle: dict[str, float] = BUNDLE) -> int:
    """How many of ``nodes`` (rows as ``ray.nodes()`` gives them) are alive and could hold
    ``bundle`` on their own."""
    return sum(1 for node in nodes if node.get("Alive") and all(
        node.get("Resources", {}).get(resource, 0.0) >= amount for resource, amount in bundle.items()))


# -------------------------------------------------------------------------- on Ray
class BrokerPlacement:
    """The placement in force for a cluster's brokers: its choice, its placement group (none when
    ``PINNED``), each broker's bundle index and, when pinned, each broker's custom resources."""

    def __init__(self, choice: PlacementChoice, *, group_name: str | None = None, group=None,
                 bundle_index: dict[int, int] | None = None,
                 resources: dict[int, dict[str, float]] | None = None) -> None:
        self.choice = choice
        self.group_name = group_name
        self.group = group
        self.bundle_index = {int(k): int(v) for k, v in (bundle_index or {}).items()}
        self.resources = {int(k): dict(v) for k, v in (resources or {}).items()}

    @classmethod
    def create(cls, broker_ids: list[int], *, detached: bool,
               broker_resources: dict[int, dict[str, float]] | None = None) -> "BrokerPlacement":
        """Place ``broker_ids`` on the Ray this process is connected to; returns once placed."""
        if broker_resources:
            choice = PlacementChoice(PINNED, len(broker_ids), usable_node_count(ray.nodes()),
                                     "brokers pinned to nodes by custom resources")
            return cls(choice, resources=broker_resources)
        choice = choose_placement(len(broker_ids), usable_node_count(ray.nodes()))
        try:
            return cls._create_group(choice, broker_ids, detached)
        except TimeoutError:
            if choice.strategy != STRICT_SPREAD:
                raise
            fallback = PlacementChoice(SPREAD, choice.brokers, choice.usable_nodes,
                                       f"a STRICT_SPREAD placement was not placed within "
                                       f"{PLACEMENT_READY_TIMEOUT_S}s: spread as evenly as Ray can")
            return cls._create_group(fallback, broker_ids, detached)

    @classmethod
    def _create_group(cls, choice: PlacementChoice, broker_ids: list[int], detached: bool) -> "BrokerPlacement":
        # A name of its own per cluster: another cluster in the namespace, or one left behind by a
        # crashed start, never collides with it. ClusterInfo keeps it for Cluster.connect.
        name = f"raykafka-brokers-{uuid.uuid4().hex[:8]}"
        group = placement_group([dict(BUNDLE) for _ in broker_ids], strategy=choice.strategy, name=name,
                                lifetime="detached" if detached else None)
        try:
            ray.get(group.ready(), timeout=PLACEMENT_READY_TIMEOUT_S)
        except ray.exceptions.GetTimeoutError as exc:
            remove_placement_group(group)
            raise TimeoutError(f"placement group {name} ({choice.strategy}) not placed in "
                               f"{PLACEMENT_READY_TIMEOUT_S}s") from exc
        placement = cls(choice, group_name=name, group=group,
                        bundle_index={broker_id: index for index, broker_id in enumerate(broker_ids)})
        # One node (a laptop) packs as expected; several nodes too few for the brokers is worth a warning.
        if choice.fallback and choice.strategy != "PACK":
            logger.warning("brokers placed with {} ({}): a lost node takes more than one broker", choice.strategy,
                           choice.reason)
        else:
            logger.info("brokers placed with {} ({})", choice.strategy, choice.reason)
        return placement

    @classmethod
    def restore(cls, described: dict | None) -> "BrokerPlacement | None":
        """The placement that ``describe`` wrote (kept in ClusterInfo), found again by group name."""
        if not described:
            return None
        choice = PlacementChoice(described["strategy"], int(described["brokers"]), int(described["usable_nodes"]),
                                 described["reason"])
        group = None
        if described.get("group_name"):
            try:
                group = get_placement_group(described["group_name"])
            except ValueError:
                logger.warning("placement group {} is gone; brokers restarted from here are placed anywhere",
                               described["group_name"])
        return cls(choice, group_name=described.get("group_name"), group=group,
                   bundle_index=described.get("bundle_index"), resources=described.get("resources"))

    def actor_options(self, broker_id: int) -> dict:
        """Ray ``.options(...)`` that put an actor on ``broker_id``'s node: in its bundle, or with its
        custom resources when pinned; none for a broker the placement does not know."""
        if broker_id in self.resources:
            return {"resources": dict(self.resources[broker_id])}
        if self.group is not None and broker_id in self.bundle_index:
            return {"scheduling_strategy": PlacementGroupSchedulingStrategy(
                self.group, placement_group_bundle_index=self.bundle_index[broker_id],
                placement_group_capture_child_tasks=False)}
        return {}

    def describe(self) -> dict:
        return {"strategy": self.choice.strategy, "fallback": self.choice.fallback, "brokers": self.choice.brokers,
                "usable_nodes": self.choice.usable_nodes, "reason": self.choice.reason,
                "group_name": self.group_name, "bundle_index": dict(self.bundle_index),
                "resources": dict(self.resources)}

    def remove(self) -> None:
        """Remove the placement group (after the cluster's actors): its nodes' slivers are free again."""
        if self.group is not None:
            try:
                remove_placement_group(self.group)
            except Exception as exc:  # already removed, or Ray is going away
                logger.warning("removing placement group {}: {!r}", self.group_name, exc)
            self.group = None
