"""``raykafka log-dirs describe``, as ``kafka-log-dirs --describe`` has it: each broker's log
directories with, per partition, its size in bytes, its offset lag and whether it is a future
replica, printed as Kafka's tool prints them (two lines, then one JSON document:
``{"version": 1, "brokers": [{"broker": 0, "logDirs": [{"logDir": ..., "error": null,
"partitions": [{"partition": "t-0", "size": 0, "offsetLag": 0, "isFuture": false}]}]}]}``).
``--broker-list 0,1`` and ``--topic-list a,b`` narrow it; a broker the cluster does not have is
refused with Kafka's words. With ``--json`` only the document is printed.
"""
from __future__ import annotations

import argparse

from orchestration.commands.common import add_bootstrap_server, add_target_arguments, connected, emit, fail


def _ids(text: str) -> list[int]:
    try:
        return [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise ValueError(f"--broker-list {text!r}: broker ids must be integers, as 0,1,2") from None


def log_dirs_document(described: dict[int, dict[str, dict]], topics: set[str]) -> dict:
    """Kafka's LogDirsCommand.formatAsJson over ``AdminClient.describe_log_dirs``'s answer; a
    directory's error is its Kafka error name (Kafka prints the exception's class), else None."""
    return {"version": 1, "brokers": [{"broker": broker, "logDirs": [{
        "logDir": log_dir, "error": None if info["error"].name == "NONE" else info["error"].name,
        "partitions": [{"partition": f"{topic}-{partition}", "size": replica["size"],
                        "offsetLag": replica["offset_lag"], "isFuture": replica["is_future"]}
                       for (topic, partition), replica in sorted(info["partitions"].items())
                       if not topics or topic in topics]}
        for log_dir, info in sorted(dirs.items())]} for broker, dirs in sorted(described.items())]}


def _describe(args: argparse.Namespace) -> int:
    import json
    try:
        asked = _ids(args.broker_list)
    except ValueError as exc:
        return fail(args, exc)
    topics = {t for t in args.topic_list.split(",") if t}
    with connected(args) as cluster:
        try:
            existing = sorted(int(b) for b in cluster.describe_cluster()["brokers"])
            missing = sorted(set(asked) - set(existing))
            if missing:
                raise ValueError(f"ERROR: The given brokers do not exist from --broker-list: "
                                 f"{','.join(map(str, missing))}. Current existent brokers: "
                                 f"{','.join(map(str, existing))}")
            brokers = asked or existing
            document = log_dirs_document(cluster.describe_log_dirs(brokers), topics)
        except Exception as exc:
            return fail(args, exc)
    emit(args, document, lambda d: "Querying brokers for log directories information\n"
                                   f"Received log directory information from brokers {','.join(map(str, brokers))}\n"
                                   + json.dumps(d, separators=(",", ":")))
    return 0


def add_parsers(commands) -> None:
    log_dirs = commands.add_parser("log-dirs", help="the brokers' log directories (kafka-log-dirs)")
    sub = log_dirs.add_subparsers(dest="log_dirs_command", required=True)
    describe = sub.add_parser("describe", help="each log directory's partitions, sizes and offset lags")
    describe.add_argument("--broker-list", default="", help="the brokers to ask, as 0,1,2 (default: every one)")
    describe.add_argument("--topic-list", default="", help="the topics to show, as a,b (default: every one)")
    describe.set_defaults(run=_describe)
    add_target_arguments(describe)
    add_bootstrap_server(describe)
