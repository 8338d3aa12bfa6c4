"""``raykafka kill ROLE [ID] [--no-restart]``, ``raykafka restart-broker ID`` and ``raykafka
elect-leaders --type preferred|unclean``: breaking a running cluster on purpose, and moving
leadership back (or to an out-of-sync replica, losing what it lacks) as ``kafka-leader-election``.
"""
from __future__ import annotations

import argparse

from orchestration.commands.common import add_target_arguments, connected, emit, fail, table

ROLES = ("broker", "controller", "request-send-thread", "replica-fetcher", "group-coordinator",
         "log-cleaner")


def _kill(args: argparse.Namespace) -> int:
    if args.role != "controller" and args.id is None:
        print(f"error: kill {args.role} needs the broker id")
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


def _elect_leaders(args: argparse.Namespace) -> int:
    partitions = [args.partition] if args.partition is not None else None
    with connected(args) as cluster:
        try:
            outcome = cluster.elect_leaders(args.type, args.topic, partitions)
        except Exception as exc:
            return fail(args, exc)
    rows = [{"topic": t, "partition": p, "result": r} for (t, p), r in sorted(outcome.items())]
    emit(args, rows, lambda a: table(["TOPIC", "PARTITION", "RESULT"], [[r["topic"], r["partition"], r["result"]]
                                                                         for r in a]))
    return 0


def add_parsers(commands) -> None:
    kill = commands.add_parser("kill", help="kill an actor as a crash would")
    kill.add_argument("role", choices=ROLES)
    kill.add_argument("id", type=int, nargs="?", default=None, help="the broker id (not for controller)")
    kill.add_argument("--no-restart", action="store_true", help="Ray does not restart it (restart-broker does)")
    kill.set_defaults(run=_kill)
    restart = commands.add_parser("restart-broker", help="start a broker that was killed with --no-restart")
    restart.add_argument("id", type=int)
    restart.set_defaults(run=_restart_broker)
    elect = commands.add_parser("elect-leaders", help="preferred or unclean leader election (kafka-leader-election)")
    elect.add_argument("--type", choices=("preferred", "unclean"), default="preferred")
    elect.add_argument("--topic", default=None, help="one topic (default: every partition)")
    elect.add_argument("--partition", type=int, default=None, help="with --topic: one partition")
    elect.set_defaults(run=_elect_leaders)
    for parser in (kill, restart, elect):
        add_target_arguments(parser)
