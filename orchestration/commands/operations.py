"""``raykafka kill ROLE [ID] [--no-restart]``, ``raykafka restart-broker ID`` and ``raykafka
leader-election --election-type preferred|unclean`` (alias ``elect-leaders``): breaking a running
cluster on purpose, and moving leadership back (or to an out-of-sync replica, losing what it lacks)
as ``kafka-leader-election`` does, with its scope options (``--topic T --partition P``,
``--all-topic-partitions`` or ``--path-to-json-file``, exactly one required) and its output lines.
"""
from __future__ import annotations

import argparse
import json
import sys

from orchestration.commands.common import add_bootstrap_server, add_target_arguments, connected, emit, fail, refuse

ROLES = ("broker", "controller", "request-send-thread", "replica-fetcher", "group-coordinator",
         "log-cleaner")


def _kill(args: argparse.Namespace) -> int:
    if args.role != "controller" and args.id is None:
        print(f"error: kill {args.role} needs the broker id", file=sys.stderr)
        return 2
    with connected(args) as cluster:
        try:
            cluster.kill(args.role, args.id, restart=not args.no_restart)
        except Exception as exc:
            return fail(args, exc)
    answer = {"role": args.role, "id": args.id, "restart": not args.no_restart}
    emit(args, answer, lambda a: f"killed {a['role']}" + (f" {a['id']}" if a["id"] is not None else "")
         + ("" if a["restart"] else " (stays down)"))
    return 0


def _restart_broker(args: argparse.Namespace) -> int:
    with connected(args) as cluster:
        try:
            cluster.restart_broker(args.id)
        except Exception as exc:
            return fail(args, exc)
    emit(args, {"broker_id": args.id, "restarted": True}, lambda a: f"broker {a['broker_id']} is back")
    return 0


def parse_election_json(text: str) -> list[tuple[str, int]]:
    """Kafka's LeaderElectionCommand.parseReplicaElectionData: ``{"partitions": [{"topic": "t",
    "partition": 0}, ...]}``, a partition named twice refused."""
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"the JSON file is not JSON: {exc}") from None
    if not isinstance(document, dict) or "partitions" not in document:
        raise ValueError('Replica election data is missing "partitions" field')
    partitions = []
    for entry in document["partitions"] if isinstance(document["partitions"], list) else [None]:
        if not isinstance(entry, dict) or not isinstance(entry.get("topic"), str) \
                or type(entry.get("partition")) is not int:
            raise ValueError(f'each partition needs a "topic" string and a "partition" integer: {entry!r}')
        partitions.append((entry["topic"], entry["partition"]))
    duplicates = sorted({tp for tp in partitions if partitions.count(tp) > 1})
    if duplicates:
        raise ValueError("Replica election data contains duplicate partitions: "
                         + ",".join(f"{t}-{p}" for t, p in duplicates))
    return sorted(set(partitions))


def election_scope(args: argparse.Namespace) -> list[tuple[str, int]] | None:
    """The partitions to elect (None: every partition), with LeaderElectionCommandOptions.validate's
    checks and words: an election type, and exactly one of --topic (with --partition),
    --all-topic-partitions and --path-to-json-file."""
    if args.election_type is None:
        raise ValueError("Missing required option(s): election-type")
    if sum([args.topic is not None, args.all_topic_partitions, args.path_to_json_file is not None]) != 1:
        raise ValueError("One and only one of the following options is required: topic, all-topic-partitions, "
                         "path-to-json-file")
    if args.topic is not None and args.partition is None:
        raise ValueError("Missing required option(s): partition")
    if args.topic is None and args.partition is not None:
        raise ValueError("Option partition is only allowed if topic is used")
    if args.path_to_json_file is not None:
        try:
            with open(args.path_to_json_file, encoding="utf-8") as file:
                return parse_election_json(file.read())
        except OSError as exc:
            raise ValueError(str(exc)) from None
    return None if args.all_topic_partitions else [(args.topic, args.partition)]


def election_lines(election_type: str, outcome: dict[tuple[str, int], str]) -> list[str]:
    """LeaderElectionCommand.electLeaders' lines: the partitions elected, those whose valid replica
    already led (ELECTION_NOT_NEEDED), then one line per partition that failed."""
    kind = election_type.upper()
    elected = [f"{t}-{p}" for (t, p), result in sorted(outcome.items()) if result == "NONE"]
    noop = [f"{t}-{p}" for (t, p), result in sorted(outcome.items()) if result == "ELECTION_NOT_NEEDED"]
    lines = []
    if elected:
        lines.append(f"Successfully completed leader election ({kind}) for partitions {', '.join(elected)}")
    if noop:
        lines.append(f"Valid replica already elected for partitions {', '.join(noop)}")
    lines += [f"Error completing leader election ({kind}) for partition: {t}-{p}: {result}"
              for (t, p), result in sorted(outcome.items()) if result not in ("NONE", "ELECTION_NOT_NEEDED")]
    return lines


def _leader_election(args: argparse.Namespace) -> int:
    try:
        scope = election_scope(args)
    except ValueError as exc:
        return refuse(args, str(exc))
    with connected(args) as cluster:
        try:
            if scope is None:
                outcome = cluster.elect_leaders(args.election_type)
            else:
                outcome = {}
                for topic in sorted({t for t, _ in scope}):
                    outcome.update(cluster.elect_leaders(args.election_type, topic,
                                                         [p for t, p in scope if t == topic]))
        except Exception as exc:
            return fail(args, exc)
    rows = [{"topic": t, "partition": p, "result": r} for (t, p), r in sorted(outcome.items())]
    emit(args, rows, lambda _: "\n".join(election_lines(args.election_type, outcome)))
    failed = [r for r in rows if r["result"] not in ("NONE", "ELECTION_NOT_NEEDED")]
    if failed:
        print(f"error: {len(failed)} replica(s) could not be elected", file=sys.stderr)
        return 1
    return 0


def add_parsers(commands) -> None:
    kill = commands.add_parser("kill", help="kill an actor as a crash would")
    kill.add_argument("role", choices=ROLES, help="which actor: " + ", ".join(ROLES))
    kill.add_argument("id", type=int, nargs="?", default=None, help="the broker id (not for controller)")
    kill.add_argument("--no-restart", action="store_true", help="Ray does not restart it (restart-broker does)")
    kill.set_defaults(run=_kill)
    restart = commands.add_parser("restart-broker", help="start a broker that was killed with --no-restart")
    restart.add_argument("id", type=int, help="the broker id")
    restart.set_defaults(run=_restart_broker)
    elect = commands.add_parser("leader-election", aliases=["elect-leaders"],
                                help="preferred or unclean leader election (kafka-leader-election)")
    elect.add_argument("--election-type", "--type", choices=("preferred", "unclean"), type=str.lower, default=None,
                       help="preferred: make each partition's preferred replica (the first of its replicas) its leader "
                            "where it is alive and in sync; "
                            "unclean: give a partition with no live in-sync replica an out-of-sync leader, "
                            "losing what it lacks. REQUIRED")
    scope = elect.add_argument_group("scope (exactly one is required)")
    scope.add_argument("--topic", default=None, help="one topic, with --partition")
    scope.add_argument("--partition", type=int, default=None, help="with --topic: the partition")
    scope.add_argument("--all-topic-partitions", action="store_true", help="every partition of every topic")
    scope.add_argument("--path-to-json-file", default=None,
                       help='the partitions, as {"partitions": [{"topic": "foo", "partition": 1}, ...]}')
    elect.set_defaults(run=_leader_election)
    for parser in (kill, restart, elect):
        add_target_arguments(parser)
    add_bootstrap_server(elect)  # kill and restart-broker act on Ray's actors: --namespace only
