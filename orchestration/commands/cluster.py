"""``raykafka cluster start|status|stop``: a cluster of detached actors that outlives the command.

``start`` joins a running Ray (``ray start --head`` first; ``--address``, default auto) or, with
``--local``, starts a Ray head of its own on 127.0.0.1, then starts the controller, the brokers and
their group coordinators as detached actors, and remembers the Ray address under the namespace so
that later commands find it. ``status`` prints brokers with their Kafka listeners, the
``bootstrap.servers`` string stock clients take, the controller and partition health.
``stop`` removes every actor, ends the Ray head that ``--local`` started and waits until its
processes have exited, says what it stopped, and where the logs stay; with ``--delete-data`` it
also removes the data directories that ``start`` made (``orchestration.admin.data_dirs``).
"""
from __future__ import annotations

import argparse
import os

from actors.core.errors import KafkaProtocolError
from actors.core.topic_configs import check_broker_config
from actors.wire.listeners import check_listener_config, with_listeners_for_hosts
from orchestration.admin.detached import (
    forget_cluster, raykafka_home, remember_cluster, remembered_cluster, start_local_head, stop_local_head,
)
from orchestration.admin.data_dirs import delete_cluster_data
from orchestration.commands.common import add_target_arguments, connected, emit, fail, ray_address, table
from orchestration.errors import KafkaError


def parse_config(pairs: list[str]) -> dict[str, str]:
    config = {}
    for pair in pairs or ():
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise argparse.ArgumentTypeError(f"--config takes key=value, not {pair!r}")
        config[key.strip()] = value.strip()
    return config


def _start(args: argparse.Namespace) -> int:
    import ray

    from orchestration.admin.cluster import Cluster
    config = parse_config(args.config)
    try:
        check_broker_config(config)  # an unknown key or bad value is refused before a Ray head starts
        check_listener_config(config)
    except KafkaProtocolError as exc:
        return fail(args, KafkaError(exc.error_code, exc.message))
    head = start_local_head(num_cpus=args.num_cpus) if args.local else {}
    address = head.get("address") or ray_address(args, join_any=True)
    log_dir = os.path.abspath(args.log_dir or str(raykafka_home() / "logs" / args.namespace))
    log_dir_created = not os.path.lexists(log_dir)  # only then may ``stop --delete-data`` remove it
    try:
        ray.init(address=address, namespace=args.namespace, log_to_driver=False)
        # A Ray cluster this command joins may span hosts (nodes can join it later): brokers listen
        # on their node's IP unless --config names listeners; --local's own head keeps loopback.
        config = with_listeners_for_hosts(config, several_hosts=not args.local)
        cluster = Cluster.start(brokers=args.brokers, log_dir=log_dir, config=config, detached=True)
        epoch = cluster.controller_epoch()
        placement = cluster.placement.describe()
        broker_log_dirs = {b: cluster.broker_log_dir(b) for b in cluster.broker_ids}
        cluster.close()
    except BaseException as exc:
        if head:
            ray.shutdown()
            stop_local_head(head["head_pid"], temp_dir=head["temp_dir"])
        if isinstance(exc, Exception):
            return fail(args, exc)
        raise
    remember_cluster(args.namespace, **{**head, "address": address, "log_dir": log_dir,
                                        "log_dir_created": log_dir_created, "broker_log_dirs": broker_log_dirs})
    answer = {"namespace": args.namespace, "address": address, "brokers": args.brokers, "log_dir": log_dir,
              "controller_epoch": epoch, "placement": placement, "local_head": bool(head), **head}
    emit(args, answer, lambda a: (
        f"raykafka cluster with {a['brokers']} brokers up in namespace {a['namespace']} on Ray {a['address']} "
        f"(controller epoch {a['controller_epoch']}); broker logs in {a['log_dir']}\n{placement_line(a['placement'])}"
        + (f"\nRay head (pid {a['head_pid']}) metrics: http://127.0.0.1:{a['metrics_export_port']}/metrics"
           if head else "")))
    return 0


def _status(args: argparse.Namespace) -> int:
    with connected(args) as cluster:
        answer = cluster.status()

    def text(a: dict) -> str:
        rows = [[b["broker_id"], "up" if b["up"] else "DOWN", b["broker_epoch"], b["pid"], (b["node_id"] or "")[:12],
                 b.get("node_ip") or "", b["actor_id"] or "",
                 " ".join(f"{name}://{address}" for name, address in b["listeners"].items()) or "-",
                 b.get("log_dir") or "-"]
                for b in a["brokers"]]
        nodes = {}
        for b in a["brokers"]:
            if b.get("node_ip") and (b.get("ray_logs_dir") or b.get("metrics")):
                nodes.setdefault((b["node_ip"], b.get("node_id")), (b.get("ray_logs_dir") or "-", b.get("metrics") or "-"))
        p = a["partitions"]
        return "\n".join([
            table(["broker", "state", "epoch", "pid", "node", "node ip", "actor id (ray logs actor --id)", "listener",
                   "data dir"], rows),
            *(f"node {ip}: ray logs {logs}, metrics {metrics}" for (ip, _), (logs, metrics) in nodes.items()),
            placement_line(a.get("placement")),
            f"controller: {a['controller']['actor_name']} epoch {a['controller']['controller_epoch']}",
            f"partitions: {p['count']}, under-replicated {len(p['under_replicated'])}, offline {len(p['offline'])}",
            f"bootstrap.servers={a['bootstrap_servers'] or '(no broker registered a Kafka listener)'}",
            f"broker logs: {a['log_dir']}"])
    emit(args, answer, text)
    return 0


def placement_line(placement: dict | None) -> str:
    if not placement:
        return "placement: unknown (started by an older raykafka)"
    warning = " (FALLBACK: some brokers share a Ray node)" if placement.get("fallback") else ""
    return f"placement: {placement['strategy']}{warning}: {placement['reason']}"


def _stop(args: argparse.Namespace) -> int:
    import ray

    from orchestration.admin.cluster import Cluster
    remembered = remembered_cluster(args.namespace) or {}
    answer = {"namespace": args.namespace, "stopped": False, "log_dir": remembered.get("log_dir")}
    broker_log_dirs = dict(remembered.get("broker_log_dirs") or {})
    try:
        cluster = Cluster.connect(namespace=args.namespace, address=ray_address(args))
        answer["log_dir"] = cluster.log_dir
        answer["brokers"] = list(cluster.broker_ids)
        broker_log_dirs = {b: cluster.broker_log_dir(b) for b in cluster.broker_ids}
        cluster.stop()
        answer["stopped"] = True
    except Exception as exc:  # no cluster, or no Ray there any more: the head is still ended below
        answer["error"] = str(exc)
    finally:
        if ray.is_initialized():
            ray.shutdown()
    head_gone = True
    if remembered.get("head_pid"):
        head = stop_local_head(remembered["head_pid"], temp_dir=remembered.get("temp_dir"))
        head_gone = not head["still_running"]
        answer.update(ray_head=head, ray_head_stopped=head_gone,
                      ray_logs=f"{remembered['temp_dir']}/session_latest/logs")
    if args.delete_data:
        # Only once nothing can write there: the actors are removed, or the Ray they ran on is gone.
        if answer["stopped"] or (remembered.get("head_pid") and head_gone):
            answer["data"] = delete_cluster_data(
                log_dir=answer["log_dir"], broker_log_dirs=broker_log_dirs,
                log_dir_created=bool(remembered.get("log_dir_created")),
                ray_temp_dir=remembered.get("temp_dir") if remembered.get("head_pid") and head_gone else None)
        else:  # nothing is deleted; a cluster this machine knows nothing of has no path to name
            answer["data"] = {"deleted": [], "missing": [], "kept": [], "refused": [
                {"path": answer["log_dir"], "reason": "the cluster could not be stopped, so its brokers may still run"}]
                if answer["log_dir"] else []}
    if head_gone:
        forget_cluster(args.namespace)  # else a second ``cluster stop`` can try again
    emit(args, answer, _stop_text)
    return 0 if answer["stopped"] and head_gone else 1


def _stop_text(a: dict) -> str:
    lines = [f"stopped raykafka cluster {a['namespace']}: brokers {a.get('brokers')}, their group coordinators "
             f"and the controller" if a["stopped"] else f"no raykafka cluster stopped ({a.get('error')})"]
    head = a.get("ray_head")
    if head is not None:
        names = sorted({p["name"] for p in head["processes"]})
        lines.append(f"Ray head (pid {head['head_pid']}): {len(head['processes'])} processes "
                     f"({', '.join(names) or 'already gone'}); {len(head['terminated'])} exited on SIGTERM, "
                     f"{len(head['killed'])} killed")
        if head["still_running"]:
            lines.append("STILL RUNNING: " + ", ".join(f"{p['name']} (pid {p['pid']})" for p in head["still_running"]))
    data = a.get("data")
    if data is None:
        ray_logs = f", Ray's logs in {a['ray_logs']}" if a.get("ray_logs") else ""
        lines.append(f"broker logs stay in {a['log_dir']}{ray_logs}")
        return "\n".join(lines)
    lines += [f"deleted {path}" for path in data["deleted"]]
    lines += [f"kept {path} (it existed before cluster start)" for path in data["kept"]]
    lines += [f"not on this machine: {path}" for path in data["missing"]]
    lines += [f"NOT DELETED {r['path']}: {r['reason']}" for r in data["refused"]]
    return "\n".join(lines)


def add_parsers(commands) -> None:
    cluster = commands.add_parser("cluster", help="start, inspect and stop a cluster that outlives the command")
    sub = cluster.add_subparsers(dest="cluster_command", required=True)
    start = sub.add_parser("start", help="start brokers and a controller as detached Ray actors")
    add_target_arguments(start)
    start.add_argument("--brokers", type=int, default=3, help="brokers to start")
    start.add_argument("--local", action="store_true", help="start a Ray head of its own on 127.0.0.1")
    start.add_argument("--num-cpus", type=int, default=None,
                       help="CPUs of the Ray head --local starts (default: every CPU)")
    start.add_argument("--log-dir", default=None, help="broker log directories (default: ~/.raykafka/logs/NAMESPACE)")
    start.add_argument("--config", action="append", default=[], metavar="KEY=VALUE",
                       help="a broker/controller setting with Kafka's key (repeatable)")
    start.set_defaults(run=_start)
    status = sub.add_parser("status", help="brokers, controller and partition health")
    add_target_arguments(status)
    status.set_defaults(run=_status)
    stop = sub.add_parser("stop", help="remove every actor (and the Ray head --local started); data stays "
                                        "unless --delete-data")
    add_target_arguments(stop)
    stop.add_argument("--delete-data", action="store_true",
                      help="also delete the brokers' data directories and the --local Ray head's temporary "
                           "directory that 'cluster start' made (default: keep them)")
    stop.set_defaults(run=_stop)
