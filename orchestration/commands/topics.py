"""``raykafka topics create|list|describe|delete``, as ``kafka-topics`` has them.

``describe`` prints per partition the leader, replicas, ISR, leader epoch, high watermark and log
end offset; ``--under-replicated-partitions`` keeps the partitions whose ISR is smaller than their
replicas, ``--unavailable-partitions`` those without a leader.
"""
from __future__ import annotations

import argparse
from dataclasses import asdict

from orchestration.commands.cluster import parse_config
from orchestration.commands.common import add_target_arguments, connected, emit, fail, table


def _create(args: argparse.Namespace) -> int:
    assignment = None
    if args.replica_assignment:
        # kafka-topics' form: partitions separated by commas, replicas by colons ("0:1,1:2").
        assignment = [[int(b) for b in replicas.split(":")] for replicas in args.replica_assignment.split(",")]
    with connected(args) as cluster:
        try:
            cluster.create_topic(args.topic, partitions=args.partitions, replication_factor=args.replication_factor,
                                 config=parse_config(args.config), assignment=assignment)
        except Exception as exc:
            return fail(args, exc)
    emit(args, {"topic": args.topic, "created": True}, lambda a: f"Created topic {a['topic']}.")
    return 0


def _list(args: argparse.Namespace) -> int:
    with connected(args) as cluster:
        topics = cluster.topics()
    emit(args, topics, lambda a: "\n".join(a))
    return 0


def _describe(args: argparse.Namespace) -> int:
    with connected(args) as cluster:
        try:
            names = [args.topic] if args.topic else [t for t in cluster.topics() if not t.startswith("__")
                                                      or args.include_internal]
            partitions = [asdict(p) for name in names for p in cluster.describe_topic(name)]
        except Exception as exc:
            return fail(args, exc)
    if args.under_replicated_partitions:
        partitions = [p for p in partitions if len(p["isr"]) < len(p["replicas"])]
    if args.unavailable_partitions:
        partitions = [p for p in partitions if p["leader"] < 0]

    def text(rows: list[dict]) -> str:
        return table(["Topic", "Partition", "Leader", "Replicas", "Isr", "LeaderEpoch", "HW", "LEO"], [
            [p["topic"], p["partition"], p["leader"] if p["leader"] >= 0 else "none",
             ",".join(map(str, p["replicas"])), ",".join(map(str, p["isr"])), p["leader_epoch"],
             p["high_watermark"], p["log_end_offset"]] for p in rows])
    emit(args, partitions, text)
    return 0


def _delete(args: argparse.Namespace) -> int:
    with connected(args) as cluster:
        try:
            cluster.delete_topic(args.topic)
        except Exception as exc:
            return fail(args, exc)
    emit(args, {"topic": args.topic, "deleted": True}, lambda a: f"Deleted topic {a['topic']}.")
    return 0


def add_parsers(commands) -> None:
    topics = commands.add_parser("topics", help="create, list, describe and delete topics (kafka-topics)")
    sub = topics.add_subparsers(dest="topics_command", required=True)
    create = sub.add_parser("create", help="create a topic")
    create.add_argument("topic")
    create.add_argument("--partitions", type=int, default=1)
    create.add_argument("--replication-factor", type=int, default=1)
    create.add_argument("--replica-assignment", default=None, help="replicas per partition, e.g. 0:1,1:2")
    create.add_argument("--config", action="append", default=[], metavar="KEY=VALUE", help="a topic setting")
    create.set_defaults(run=_create)
    listed = sub.add_parser("list", help="every topic")
    listed.set_defaults(run=_list)
    describe = sub.add_parser("describe", help="leader, replicas, ISR, leader epoch, HW and LEO per partition")
    describe.add_argument("topic", nargs="?", default=None, help="one topic (default: every topic)")
    describe.add_argument("--under-replicated-partitions", action="store_true")
    describe.add_argument("--unavailable-partitions", action="store_true")
    describe.add_argument("--include-internal", action="store_true", help="with every topic: __consumer_offsets too")
    describe.set_defaults(run=_describe)
    delete = sub.add_parser("delete", help="delete a topic")
    delete.add_argument("topic")
    delete.set_defaults(run=_delete)
    for parser in (create, listed, describe, delete):
        add_target_arguments(parser)
