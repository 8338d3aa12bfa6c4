"""A running cluster's health in one answer, as ``raykafka cluster status`` prints it.

Brokers: each configured broker id, whether its actor answers, its broker epoch as the controller
registered it, its Kafka listeners as it registered them (``listeners``: name -> host:port;
``listener``: the PLAINTEXT one, else the first), the Ray node (id and IP) and process it runs in,
its actor id (``ray logs actor --id ID`` reads its log), its log directory as resolved on its
node, that node's Ray log directory (``ray_logs_dir``, where the actor's log files are) and its
Prometheus endpoint (``metrics``), each per node. Placement: the placement group's strategy in force and why
(``orchestration.admin.placement``). The controller: its actor and controller epoch. Partitions,
as the controller knows them: how many, how many under-replicated (ISR smaller than the replicas)
and offline (no leader), Kafka's UnderReplicatedPartitions and OfflinePartitionsCount.
``bootstrap_servers``: the registered brokers' client listeners, what a stock Kafka client is
given: PLAINTEXT when the brokers have one, else the first advertised (``Cluster.bootstrap_servers``).
"""
from __future__ import annotations

import ray

from actors.ray_metadata_store import active_controller

PING_TIMEOUT_S = 5
# The listener stock clients are given when the brokers have it, else the first advertised one
# (Cluster.bootstrap_servers chooses the same way).
BOOTSTRAP_LISTENER = "PLAINTEXT"


def client_listener(names) -> str:
    """The listener stock clients are given, among the brokers' listener ``names`` (in order)."""
    names = list(names)
    return BOOTSTRAP_LISTENER if BOOTSTRAP_LISTENER in names or not names else names[0]


def cluster_status(cluster) -> dict:
    described = cluster.describe_cluster()
    brokers = []
    for broker_id in cluster.broker_ids:
        registered = described["brokers"].get(broker_id) or described["brokers"].get(str(broker_id))
        listeners = dict(registered.get("listeners") or {}) if registered else {}
        entry = {"broker_id": broker_id, "up": False, "registered": registered is not None,
                 "broker_epoch": registered["broker_epoch"] if registered else None, "listeners": listeners,
                 "listener": listeners.get(BOOTSTRAP_LISTENER) or next(iter(listeners.values()), None),
                 "node_id": None, "node_ip": None, "pid": None, "actor_id": None, "ray_logs_dir": None, "metrics": None,
                 "log_dir": cluster.broker_log_dir(broker_id)}
        try:
            handle = cluster.broker(broker_id)
            entry["actor_id"] = handle._actor_id.hex()
            ping = ray.get(handle.ping.remote(), timeout=PING_TIMEOUT_S)
            entry.update(up=True, node_id=ping.get("node_id"), node_ip=ping.get("node_ip"), pid=ping.get("pid"),
                         log_dir=ping.get("log_dir", entry["log_dir"]), ray_logs_dir=ping.get("ray_logs_dir"),
                         metrics=(f"http://{ping['node_ip']}:{ping['metrics_export_port']}/metrics"
                                  if ping.get("metrics_export_port") and ping.get("node_ip") else None))
        except Exception:
            pass  # down, or restarting: reported as not up
        brokers.append(entry)
    controller = active_controller(cluster.namespace) or {}
    partitions = {"count": 0, "under_replicated": [], "offline": []}
    for topic in described["topics"]:
        for p in cluster._ask_controller(lambda controller: controller.describe_topic.remote(topic)) or []:
            partitions["count"] += 1
            name = f"{topic}-{p['partition']}"
            if p["leader"] < 0:
                partitions["offline"].append(name)
            if len(p["isr"]) < len(p["replicas"]):
                partitions["under_replicated"].append(name)
    placement = cluster.placement.describe() if cluster.placement is not None else None
    name = client_listener(name for b in brokers for name in b["listeners"])
    bootstrap = ",".join(b["listeners"][name] for b in brokers if name in b["listeners"])
    return {"namespace": cluster.namespace, "log_dir": cluster.log_dir, "brokers": brokers, "placement": placement,
            "bootstrap_servers": bootstrap,
            "controller": {"actor_name": controller.get("actor_name"), "controller_epoch": described["controller_epoch"],
                           "active": described["active"]},
            "topics": described["topics"], "partitions": partitions}
