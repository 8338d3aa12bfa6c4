"""A multi-node Ray on one machine, for node faults: one worker node per chosen broker.

``ray.cluster_utils.Cluster`` starts a head node and extra raylets in this machine; each extra
node here carries a custom resource named after the broker it hosts, and ``placement()`` gives
``Cluster.start`` the resources that pin each broker (and its group coordinator and the
controller's send thread to it; its fetchers follow it by node affinity) there, instead of the
placement group ``Cluster.start`` makes otherwise (``orchestration.admin.placement``).
``remove(broker_id)`` takes the node away, killing every process on it at once, as a machine that
loses power; ``restore(broker_id)`` adds a node with the same resource, where Ray restarts the
broker, which finds its log directory (the same disk) as a rebooted machine would. The head
node hosts the driver, the controller and the other brokers (pinned there by a resource of its
own).
"""
from __future__ import annotations

import uuid

import ray
from loguru import logger

NODE_RESOURCE_AMOUNT = 1.0
# A broker takes a sliver of its node's resource, so its group coordinator fits beside it.
PLACEMENT_AMOUNT = 0.01
OBJECT_STORE_BYTES = 150 * 1024 * 1024
HEAD_RESOURCE = "raykafka-node-head"


def node_resource(broker_id: int) -> str:
    return f"raykafka-node-broker-{int(broker_id)}"


class RayNodes:
    def __init__(self, broker_ids_on_own_nodes: list[int], *, head_cpus: int = 2,
                 namespace: str | None = None) -> None:
        from ray.cluster_utils import Cluster as RayCluster
        assert not ray.is_initialized(), "RayNodes starts its own Ray; shut the current one down first"
        self.broker_ids = [int(b) for b in broker_ids_on_own_nodes]
        self._cluster = RayCluster(initialize_head=True, head_node_args={
            "num_cpus": head_cpus, "object_store_memory": OBJECT_STORE_BYTES, "include_dashboard": False,
            "resources": {HEAD_RESOURCE: NODE_RESOURCE_AMOUNT}})
        self._nodes: dict[int, object] = {}
        for broker_id in self.broker_ids:
            self._nodes[broker_id] = self._add(broker_id)
        ray.init(address=self._cluster.address, namespace=namespace or f"raykafka-nodes-{uuid.uuid4().hex[:8]}",
                 log_to_driver=False)
        self._cluster.wait_for_nodes()

    def _add(self, broker_id: int):
        return self._cluster.add_node(num_cpus=0, object_store_memory=OBJECT_STORE_BYTES,
                                      resources={node_resource(broker_id): NODE_RESOURCE_AMOUNT})

    def placement(self, broker_ids: list[int]) -> dict[int, dict[str, float]]:
        """``broker_resources`` for ``Cluster.start``: the chosen brokers on their own nodes, every
        other broker on the head node (Ray would otherwise place a resource-free actor anywhere,
        and a node removal would take more than it names)."""
        return {broker_id: {node_resource(broker_id) if broker_id in self.broker_ids else HEAD_RESOURCE:
                            PLACEMENT_AMOUNT} for broker_id in broker_ids}

    def head_placement(self) -> dict[str, float]:
        """Resources that keep an actor (the controller) on the head node."""
        return {HEAD_RESOURCE: PLACEMENT_AMOUNT}

    def remove(self, broker_id: int) -> None:
        node = self._nodes.pop(int(broker_id), None)
        if node is None:
            raise ValueError(f"broker {broker_id} has no node of its own here (or it is already removed)")
        logger.info("removing the Ray node of broker {}", broker_id)
        self._cluster.remove_node(node, allow_graceful=False)

    def restore(self, broker_id: int) -> None:
        broker_id = int(broker_id)
        if broker_id in self._nodes:
            raise ValueError(f"broker {broker_id}'s node is up")
        if broker_id not in self.broker_ids:
            raise ValueError(f"broker {broker_id} never had a node of its own here")
        self._nodes[broker_id] = self._add(broker_id)
        self._cluster.wait_for_nodes()

    def shutdown(self) -> None:
        ray.shutdown()
        self._cluster.shutdown()

    def __enter__(self) -> "RayNodes":
        return self

    def __exit__(self, *exc) -> None:
        self.shutdown()
