"""``raykafka groups list|describe|delete|reset-offsets|delete-offsets``, as ``kafka-consumer-groups``
has them.

``describe`` prints one row per partition the group has committed or been assigned: topic,
partition, current (committed) offset, log end offset, LAG, and the consumer id, host and client id
of the member that owns it (``-`` when none does). ``reset-offsets`` computes new offsets
(``--to-earliest``, ``--to-latest``, ``--to-offset N``, ``--shift-by N``) and commits them only with
``--execute`` (a dry run otherwise, as Kafka's tool); the group must have no members.
``delete-offsets`` deletes the group's committed offsets of each ``--topic`` (``topic`` for all
its partitions, ``topic:0,2`` for some) with OffsetDelete (KIP-496) and prints Kafka's table of
each partition's status; a topic the group consumes is refused (``GROUP_SUBSCRIBED_TO_TOPIC``).
"""
from __future__ import annotations

import argparse

from orchestration.commands.common import add_bootstrap_server, add_target_arguments, connected, emit, fail, table
from orchestration.errors import KafkaError

# Kafka's ConsumerGroupCommand.deleteOffsets: its words for a group-level refusal.
_GROUP_REFUSALS = {
    "INVALID_GROUP_ID": "'{group}' is not valid.",
    "GROUP_ID_NOT_FOUND": "'{group}' does not exist.",
    "GROUP_AUTHORIZATION_FAILED": "Access to '{group}' is not authorized.",
    "NON_EMPTY_GROUP": "Deleting offsets of a consumer group '{group}' is forbidden if the group is not empty.",
    "GROUP_SUBSCRIBED_TO_TOPIC": "Encounter some partition level error, see the follow-up details:",
    "TOPIC_AUTHORIZATION_FAILED": "Encounter some partition level error, see the follow-up details:",
    "UNKNOWN_TOPIC_OR_PARTITION": "Encounter some partition level error, see the follow-up details:",
}


def _list(args: argparse.Namespace) -> int:
    with connected(args) as cluster:
        groups = [{"group": g, "state": s} for g, s in cluster.list_groups()]
    emit(args, groups, lambda a: "\n".join(g["group"] for g in a))
    return 0


def describe_rows(group) -> list[dict]:
    owners = {tp: m for m in group.members for tp in m.assignment}
    rows = []
    for (topic, partition), lag in sorted(group.offsets.items()):
        owner = owners.get((topic, partition))
        rows.append({"group": group.group_id, "topic": topic, "partition": partition,
                     "current_offset": lag.committed_offset if lag.committed_offset >= 0 else None,
                     "log_end_offset": lag.log_end_offset if lag.log_end_offset >= 0 else None,
                     "lag": lag.lag if lag.lag >= 0 else None, "consumer_id": owner.member_id if owner else None,
                     "host": owner.client_host if owner else None, "client_id": owner.client_id if owner else None})
    return rows


def _describe(args: argparse.Namespace) -> int:
    with connected(args) as cluster:
        try:
            group = cluster.describe_group(args.group)
        except Exception as exc:
            return fail(args, exc)
    answer = {"group": group.group_id, "state": group.state, "protocol": group.protocol,
              "generation_id": group.generation_id, "coordinator": group.coordinator, "partitions": describe_rows(group)}

    def text(a: dict) -> str:
        def cell(value):
            return "-" if value is None else value
        return f"GROUP {a['group']}: {a['state']}, coordinator {a['coordinator']}\n" + table(
            ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "HOST",
             "CLIENT-ID"],
            [[r["group"], r["topic"], r["partition"], cell(r["current_offset"]), cell(r["log_end_offset"]),
              cell(r["lag"]), cell(r["consumer_id"]), cell(r["host"]), cell(r["client_id"])] for r in a["partitions"]])
    emit(args, answer, text)
    return 0


def _delete(args: argparse.Namespace) -> int:
    with connected(args) as cluster:
        try:
            cluster.delete_group(args.group)
        except Exception as exc:
            return fail(args, exc)
    emit(args, {"group": args.group, "deleted": True}, lambda a: f"Deletion of group {a['group']} succeeded.")
    return 0


def _reset_offsets(args: argparse.Namespace) -> int:
    if args.to_offset is not None:
        to, offset = "offset", args.to_offset
    else:
        to, offset = ("latest" if args.to_latest else "current" if args.shift_by and not args.to_earliest
                      else "earliest"), None
    with connected(args) as cluster:
        try:
            planned = cluster.reset_offsets(args.group, args.topic, to=to, offset=offset, shift_by=args.shift_by or 0,
                                            execute=args.execute)
        except Exception as exc:
            return fail(args, exc)
    rows = [{"group": args.group, "topic": t, "partition": p, "new_offset": o} for (t, p), o in sorted(planned.items())]
    emit(args, {"executed": args.execute, "partitions": rows}, lambda a: table(
        ["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"], [[r["group"], r["topic"], r["partition"], r["new_offset"]]
                                                        for r in a["partitions"]])
        + ("" if a["executed"] else "\n(dry run: add --execute to commit these offsets)"))
    return 0


def parse_topic_partitions(specs: list[str]) -> tuple[list[str], list[tuple[str, int]]]:
    """``--topic`` values as Kafka's tool reads them: (topics meaning all their partitions, the
    (topic, partition) pairs ``topic:0,2`` names)."""
    whole, named = [], []
    for spec in specs:
        if ":" not in spec:
            whole.append(spec)
            continue
        topic, _, partitions = spec.partition(":")
        try:
            named += [(topic, int(p)) for p in partitions.split(",") if p.strip()]
        except ValueError:
            raise ValueError(f"--topic {spec!r}: partitions must be integers, as topic:0,1") from None
    return whole, named


def delete_offsets_report(group: str, topics: list[str], results: dict[tuple[str, int], str],
                          group_error: str | None = None) -> dict:
    """The answer ``delete-offsets`` prints: the first error (the group's, else a partition's) and
    each partition's status, Kafka's ``Successful`` or the error's name (partition -1: a topic
    whose partitions could not be listed)."""
    errors = [status for _, status in sorted(results.items()) if status != "NONE"]
    return {"group": group, "topics": topics, "error": group_error or (errors[0] if errors else None),
            "partitions": [{"topic": t, "partition": p, "status": "Successful" if status == "NONE" else status}
                           for (t, p), status in sorted(results.items())]}


def delete_offsets_text(report: dict) -> str:
    """Kafka's lines: the outcome, then TOPIC / PARTITION / STATUS in its column widths."""
    if report["error"] is None:
        head = f"Request succeed for deleting offsets with topic {', '.join(report['topics'])} group {report['group']}"
    else:
        head = "Error: " + _GROUP_REFUSALS.get(report["error"], "Encounter some unknown error: {error}").format(
            group=report["group"], error=report["error"])
    rows = [("TOPIC", "PARTITION", "STATUS")] + [
        (r["topic"], r["partition"] if r["partition"] >= 0 else "Not Provided",
         r["status"] if r["status"] == "Successful" else f"Error: :{r['status']}") for r in report["partitions"]]
    return head + "\n\n" + "\n".join(("%-30s %-15s %-15s" % row).rstrip() for row in rows)


def _delete_offsets(args: argparse.Namespace) -> int:
    try:
        whole, named = parse_topic_partitions(args.topic)
    except ValueError as exc:
        return fail(args, exc)
    results: dict[tuple[str, int], str] = {}
    group_error = None
    with connected(args) as cluster:
        try:
            partitions = list(named)
            for topic in whole:
                try:
                    partitions += [(topic, p.partition) for p in cluster.describe_topic(topic)]
                except KafkaError as exc:
                    results[(topic, -1)] = exc.error_code.name
            if partitions:
                results.update({tp: code.name for tp, code in cluster.delete_offsets(args.group, partitions).items()})
        except KafkaError as exc:
            if exc.error_code.name not in _GROUP_REFUSALS:
                return fail(args, exc)
            group_error = exc.error_code.name
        except Exception as exc:
            return fail(args, exc)
    report = delete_offsets_report(args.group, args.topic, results, group_error)
    emit(args, report, delete_offsets_text)
    return 0 if report["error"] is None else 1


def add_parsers(commands) -> None:
    groups = commands.add_parser("groups", help="list, describe, delete consumer groups; reset their offsets")
    sub = groups.add_subparsers(dest="groups_command", required=True)
    listed = sub.add_parser("list", help="every group the coordinators know")
    listed.set_defaults(run=_list)
    describe = sub.add_parser("describe", help="offsets, log end offsets, lag and owners per partition")
    describe.add_argument("group", help="the group id")
    describe.set_defaults(run=_describe)
    delete = sub.add_parser("delete", help="delete an empty group and its committed offsets")
    delete.add_argument("group", help="the group id")
    delete.set_defaults(run=_delete)
    reset = sub.add_parser("reset-offsets", help="set an inactive group's committed offsets")
    reset.add_argument("group", help="the group id")
    reset.add_argument("--topic", required=True, help="the topic whose offsets move")
    target = reset.add_mutually_exclusive_group()
    target.add_argument("--to-earliest", action="store_true", help="to each partition's log start offset")
    target.add_argument("--to-latest", action="store_true", help="to each partition's log end offset")
    target.add_argument("--to-offset", type=int, default=None, help="to this offset in every partition")
    reset.add_argument("--shift-by", type=int, default=None, help="move by N from the target (default: current)")
    reset.add_argument("--execute", action="store_true", help="commit them (default: a dry run)")
    reset.set_defaults(run=_reset_offsets)
    delete_offsets = sub.add_parser("delete-offsets", help="delete a group's committed offsets of topics it "
                                                           "does not consume (kafka-consumer-groups --delete-offsets)")
    delete_offsets.add_argument("group", help="the group id")
    delete_offsets.add_argument("--topic", action="append", required=True,
                                help="a topic (all its partitions) or topic:0,1; may be given again")
    delete_offsets.set_defaults(run=_delete_offsets)
    for parser in (listed, describe, delete, reset, delete_offsets):
        add_target_arguments(parser)
        add_bootstrap_server(parser)
