"""``raykafka topics create|list|describe|alter|delete|alter-config|describe-config``, as
``kafka-topics`` and ``kafka-configs`` have them.

``describe`` prints per topic its partition count, replication factor and config overrides
(Kafka's "Configs:"), and per partition the leader, replicas, ISR, leader epoch, high watermark and
log end offset; ``alter --partitions N`` grows a topic to N partitions (``--replica-assignment``
for the new ones only, as kafka-topics --alter takes it); ``--under-replicated-partitions`` keeps the partitions whose ISR is smaller than
their replicas, ``--unavailable-partitions`` those without a leader. ``alter-config`` sets
(``--set key=value``) and deletes (``--delete key``) a topic's overrides through a broker, as
``kafka-configs --alter --add-config/--delete-config`` does; ``describe-config`` lists every topic
key with its value and source.
"""
from __future__ import annotations

import argparse
from dataclasses import asdict

from orchestration.commands.cluster import parse_config
from orchestration.commands.common import add_bootstrap_server, add_target_arguments, connected, emit, fail, table


def _replica_assignment(text: str | None) -> list[list[int]] | None:
    """kafka-topics' form: partitions separated by commas, replicas by colons ("0:1,1:2")."""
    if not text:
        return None
    return [[int(b) for b in replicas.split(":")] for replicas in text.split(",")]


def _create(args: argparse.Namespace) -> int:
    assignment = _replica_assignment(args.replica_assignment)
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
            configs = {name: _overrides(cluster.describe_topic_config(name)) for name in names}
            partitions = [asdict(p) | {"configs": configs[name]} for name in names for p in cluster.describe_topic(name)]
        except Exception as exc:
            return fail(args, exc)
    if args.under_replicated_partitions:
        partitions = [p for p in partitions if len(p["isr"]) < len(p["replicas"])]
    if args.unavailable_partitions:
        partitions = [p for p in partitions if p["leader"] < 0]

    def text(rows: list[dict]) -> str:
        headers = [f"Topic: {name}\tPartitionCount: {sum(p['topic'] == name for p in rows)}\t"
                   f"ReplicationFactor: {next((len(p['replicas']) for p in rows if p['topic'] == name), 0)}\t"
                   f"Configs: {','.join(f'{k}={v}' for k, v in sorted(configs[name].items()))}"
                   for name in names if any(p["topic"] == name for p in rows)]
        return "\n".join(headers + [table(["Topic", "Partition", "Leader", "Replicas", "Isr", "LeaderEpoch", "HW", "LEO"], [
            [p["topic"], p["partition"], p["leader"] if p["leader"] >= 0 else "none",
             ",".join(map(str, p["replicas"])), ",".join(map(str, p["isr"])), p["leader_epoch"],
             p["high_watermark"], p["log_end_offset"]] for p in rows])])
    emit(args, partitions, text)
    return 0


def _overrides(described: dict[str, dict]) -> dict[str, str]:
    return {k: v["value"] for k, v in described.items() if v["source"] == "DYNAMIC_TOPIC_CONFIG"}


def _alter_config(args: argparse.Namespace) -> int:
    if not args.set and not args.delete:
        return fail(args, ValueError("nothing to alter: give --set key=value or --delete key"))
    with connected(args) as cluster:
        try:
            cluster.alter_topic_config(args.topic, set=parse_config(args.set), delete=args.delete)
            configs = _overrides(cluster.describe_topic_config(args.topic))
        except Exception as exc:
            return fail(args, exc)
    emit(args, {"topic": args.topic, "altered": True, "configs": configs},
         lambda a: f"Completed updating config for topic {a['topic']}: "
                   f"{','.join(f'{k}={v}' for k, v in sorted(a['configs'].items())) or '(no overrides)'}.")
    return 0


def _describe_config(args: argparse.Namespace) -> int:
    with connected(args) as cluster:
        try:
            described = cluster.describe_topic_config(args.topic)
        except Exception as exc:
            return fail(args, exc)
    emit(args, described, lambda d: f"Dynamic configs for topic {args.topic} are:\n" + table(
        ["Key", "Value", "Source"], [[k, v["value"], v["source"]] for k, v in sorted(d.items())]))
    return 0


def _alter(args: argparse.Namespace) -> int:
    with connected(args) as cluster:
        try:
            cluster.create_partitions(args.topic, args.partitions, _replica_assignment(args.replica_assignment))
        except Exception as exc:
            return fail(args, exc)
    emit(args, {"topic": args.topic, "partitions": args.partitions},
         lambda a: f"Topic {a['topic']} now has {a['partitions']} partitions.")
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
    create.add_argument("topic", help="the topic's name")
    create.add_argument("--partitions", type=int, default=1, help="the number of partitions")
    create.add_argument("--replication-factor", type=int, default=1, help="the replicas of each partition")
    create.add_argument("--replica-assignment", default=None, help="replicas per partition, e.g. 0:1,1:2")
    create.add_argument("--config", action="append", default=[], metavar="KEY=VALUE", help="a topic setting")
    create.set_defaults(run=_create)
    listed = sub.add_parser("list", help="every topic")
    listed.set_defaults(run=_list)
    describe = sub.add_parser("describe", help="leader, replicas, ISR, leader epoch, HW and LEO per partition")
    describe.add_argument("topic", nargs="?", default=None, help="one topic (default: every topic)")
    describe.add_argument("--under-replicated-partitions", action="store_true",
                          help="only partitions whose ISR is smaller than their replicas")
    describe.add_argument("--unavailable-partitions", action="store_true", help="only partitions with no leader")
    describe.add_argument("--include-internal", action="store_true", help="with every topic: __consumer_offsets too")
    describe.set_defaults(run=_describe)
    alter_topic = sub.add_parser("alter", help="add partitions to a topic (kafka-topics --alter --partitions)")
    alter_topic.add_argument("topic", help="the topic to grow")
    alter_topic.add_argument("--partitions", type=int, required=True, help="the new partition count")
    alter_topic.add_argument("--replica-assignment", default=None,
                             help="replicas of each new partition, e.g. 0:1,1:2 (default: the controller's)")
    alter_topic.set_defaults(run=_alter)
    delete = sub.add_parser("delete", help="delete a topic")
    delete.add_argument("topic", help="the topic to delete")
    delete.set_defaults(run=_delete)
    alter = sub.add_parser("alter-config", help="set or delete a topic's config overrides (kafka-configs --alter)")
    alter.add_argument("topic", help="the topic whose configs change")
    alter.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="set a topic config")
    alter.add_argument("--delete", action="append", default=[], metavar="KEY", help="back to the default")
    alter.set_defaults(run=_alter_config)
    describe_config = sub.add_parser("describe-config", help="every topic config with its value and source")
    describe_config.add_argument("topic", help="the topic to describe")
    describe_config.set_defaults(run=_describe_config)
    for parser in (create, listed, describe, alter_topic, delete, alter, describe_config):
        add_target_arguments(parser)
        add_bootstrap_server(parser)
