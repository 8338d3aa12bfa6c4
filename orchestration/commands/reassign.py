"""``raykafka reassign-partitions``, as ``kafka-reassign-partitions`` has it.

``--execute`` submits the moves in a reassignment JSON file (Kafka's format:
``{"version": 1, "partitions": [{"topic": "t", "partition": 0, "replicas": [1, 2]}]}``) to the
controller's AlterPartitionReassignments and prints the current assignment to keep for a rollback;
with ``--wait`` it shows each partition's progress live (its target replicas in the ISR) until
every move is complete. ``--verify`` says per partition whether its move is complete or still in
progress. ``--generate`` proposes a file that spreads ``--topics-to-move-json-file``'s topics over
``--broker-list`` with Kafka's replica assignment. ``--cancel`` stops the moves of a file.
"""
from __future__ import annotations

import argparse
import json
import random
import time

from orchestration.commands.common import add_bootstrap_server, add_target_arguments, connected, emit, fail, table


def _read_moves(path: str) -> dict[tuple[str, int], list[int]]:
    with open(path, encoding="utf-8") as handle:
        document = json.load(handle)
    moves = {}
    for entry in document.get("partitions", []):
        moves[(str(entry["topic"]), int(entry["partition"]))] = [int(b) for b in entry["replicas"]]
    if not moves:
        raise ValueError(f"{path} names no partitions")
    return moves


def _as_document(assignment: dict[tuple[str, int], list[int]]) -> dict:
    return {"version": 1, "partitions": [{"topic": t, "partition": p, "replicas": list(r)}
                                         for (t, p), r in sorted(assignment.items())]}


def _status(cluster, moves: dict[tuple[str, int], list[int]]) -> list[dict]:
    """Per partition: complete (its replicas are the target, nothing moving), in progress, or failed."""
    ongoing = cluster.list_partition_reassignments()
    described = {(p.topic, p.partition): p for topic in sorted({t for t, _ in moves})
                 for p in cluster.describe_topic(topic)}
    rows = []
    for (topic, partition), target in sorted(moves.items()):
        now = described.get((topic, partition))
        if (topic, partition) in ongoing:
            status = "in progress"
        elif now is not None and list(now.replicas) == target:
            status = "complete"
        else:
            status = "failed"
        rows.append({"topic": topic, "partition": partition, "target": target, "status": status,
                     "replicas": list(now.replicas) if now else [], "isr": list(now.isr) if now else [],
                     "in_sync_targets": len(set(target) & set(now.isr)) if now else 0})
    return rows


def _execute(args: argparse.Namespace, cluster, moves) -> int:
    current = {tp: list(p.replicas) for tp in moves for p in cluster.describe_topic(tp[0]) if p.partition == tp[1]}
    outcome = cluster.alter_partition_reassignments(moves)
    refused = {f"{t}-{p}": code for (t, p), code in outcome.items() if code != "NONE"}
    if not args.json:
        print("Current partition replica assignment\n\n" + json.dumps(_as_document(current))
              + "\n\nSave this to use as the --reassignment-json-file option during rollback")
    if args.wait and not refused:
        _wait(args, cluster, moves)
    answer = {"started": sorted(f"{t}-{p}" for (t, p), c in outcome.items() if c == "NONE"), "refused": refused,
              "current": _as_document(current)}
    if args.wait and not refused:
        answer["status"] = _status(cluster, moves)
    emit(args, answer, lambda a: "\n".join([f"Successfully started partition reassignment for {tp}"
                                            for tp in a["started"]] +
                                           [f"error: {tp}: {code}" for tp, code in a["refused"].items()]))
    return 1 if refused else 0


def _wait(args: argparse.Namespace, cluster, moves) -> None:
    """Show each partition's target replicas joining the ISR until every move is complete."""
    from orchestration.progress import ProgressDisplay
    deadline = time.monotonic() + args.timeout_s
    with ProgressDisplay() as display:
        while True:
            rows = _status(cluster, moves)
            for row in rows:
                display.update((row["topic"], row["partition"]), f"{row['topic']}-{row['partition']}",
                               completed=row["in_sync_targets"] if row["status"] != "complete" else len(row["target"]),
                               total=len(row["target"]),
                               detail=f"{row['status']}  replicas {row['replicas']} isr {row['isr']}")
            if all(row["status"] != "in progress" for row in rows):
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"reassignment still in progress after {args.timeout_s}s: "
                                   f"{[r['topic'] + '-' + str(r['partition']) for r in rows if r['status'] != 'complete']}")
            time.sleep(1)


def _generate(args: argparse.Namespace, cluster) -> int:
    from actors.core.controller.topics import assign_replicas_to_brokers
    with open(args.topics_to_move_json_file, encoding="utf-8") as handle:
        topics = [str(t["topic"]) for t in json.load(handle).get("topics", [])]
    brokers = [int(b) for b in args.broker_list.split(",")]
    current, proposed = {}, {}
    rng = random.Random(0)
    for topic in topics:
        described = cluster.describe_topic(topic)
        for p in described:
            current[(topic, p.partition)] = list(p.replicas)
        spread = assign_replicas_to_brokers(num_partitions=len(described), replication_factor=len(described[0].replicas),
                                            brokers=brokers, start_index=rng.randrange(len(brokers)),
                                            next_replica_shift=rng.randrange(len(brokers)))
        proposed.update({(topic, partition): replicas for partition, replicas in spread.items()})
    answer = {"current": _as_document(current), "proposed": _as_document(proposed)}
    emit(args, answer, lambda a: "Current partition replica assignment\n" + json.dumps(a["current"]) +
         "\n\nProposed partition reassignment configuration\n" + json.dumps(a["proposed"]))
    return 0


def _run(args: argparse.Namespace) -> int:
    modes = [m for m in ("execute", "verify", "generate", "cancel") if getattr(args, m)]
    if len(modes) != 1:
        return fail(args, ValueError("give exactly one of --execute, --verify, --generate, --cancel"))
    with connected(args) as cluster:
        try:
            if args.generate:
                if not args.topics_to_move_json_file or not args.broker_list:
                    raise ValueError("--generate needs --topics-to-move-json-file and --broker-list")
                return _generate(args, cluster)
            moves = _read_moves(args.reassignment_json_file)
            if args.execute:
                return _execute(args, cluster, moves)
            if args.cancel:
                outcome = cluster.alter_partition_reassignments({tp: None for tp in moves})
                rows = [{"topic": t, "partition": p, "result": r} for (t, p), r in sorted(outcome.items())]
                emit(args, rows, lambda a: table(["TOPIC", "PARTITION", "RESULT"],
                                                 [[r["topic"], r["partition"], r["result"]] for r in a]))
                return 0
            rows = _status(cluster, moves)
        except Exception as exc:
            return fail(args, exc)
    emit(args, rows, lambda a: "\n".join(f"Reassignment of partition {r['topic']}-{r['partition']} is "
                                         f"{'complete' if r['status'] == 'complete' else 'still in progress' if r['status'] == 'in progress' else 'failed'}."
                                         for r in a))
    return 0


def add_parsers(commands) -> None:
    reassign = commands.add_parser("reassign-partitions", help="move replicas (kafka-reassign-partitions)")
    reassign.add_argument("--reassignment-json-file", default=None, help="the moves, in Kafka's JSON format")
    reassign.add_argument("--execute", action="store_true", help="start the moves")
    reassign.add_argument("--verify", action="store_true", help="say per partition: complete or in progress")
    reassign.add_argument("--generate", action="store_true", help="propose moves over --broker-list")
    reassign.add_argument("--cancel", action="store_true", help="stop the moves, back to the old replicas")
    reassign.add_argument("--wait", action="store_true", help="with --execute: show progress until complete")
    reassign.add_argument("--timeout-s", type=float, default=600, help="with --wait: give up after this long")
    reassign.add_argument("--topics-to-move-json-file", default=None, help='for --generate: {"topics": [{"topic": "t"}]}')
    reassign.add_argument("--broker-list", default=None, help="for --generate: brokers to spread over, e.g. 0,1,2")
    reassign.set_defaults(run=_run)
    add_target_arguments(reassign)
    add_bootstrap_server(reassign)
