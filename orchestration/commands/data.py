"""``raykafka produce TOPIC`` and ``raykafka consume TOPIC``, as Kafka's console producer and
consumer: lines from stdin become records (``--key-separator`` splits a key off each line), and
records are printed one a line (with ``--json``, one JSON object a line).

``consume`` reads with a group (``--group``: committed offsets, else ``--from-beginning`` or the
end; it commits what it printed) or without one: every partition, or ``--partition`` from
``--offset``. It stops after ``--max-messages`` records, or when nothing came for ``--timeout-ms``.
"""
from __future__ import annotations

import argparse
import json
import sys
import time

from orchestration.commands.cluster import parse_config
from orchestration.commands.common import add_target_arguments, connected, fail


def _produce(args: argparse.Namespace) -> int:
    sent = []
    with connected(args) as cluster:
        producer = cluster.producer({"acks": args.acks, "linger.ms": "5", **parse_config(args.producer_property)})
        try:
            for line in sys.stdin:
                line = line.rstrip("\n")
                key = None
                if args.key_separator and args.key_separator in line:
                    key_text, line = line.split(args.key_separator, 1)
                    key = key_text.encode()
                sent.append(producer.send(args.topic, value=line.encode(), key=key, partition=args.partition))
            producer.flush(timeout=120)
            acknowledged = [future.result(timeout=60) for future in sent]
        except Exception as exc:
            return fail(args, exc)
    if args.json:
        print(json.dumps({"topic": args.topic, "acknowledged": len(acknowledged), "offsets": [
            {"partition": m.partition, "offset": m.offset} for m in acknowledged]}))
    else:
        print(f"{len(acknowledged)} records acknowledged (acks={args.acks})", file=sys.stderr)
    return 0


def _print_record(args: argparse.Namespace, record) -> None:
    value = record.value.decode(errors="replace") if record.value is not None else None
    key = record.key.decode(errors="replace") if record.key is not None else None
    if args.json:
        print(json.dumps({"topic": record.topic, "partition": record.partition, "offset": record.offset,
                          "key": key, "value": value}))
    elif args.print_key:
        print(f"{key}{args.key_separator or chr(9)}{value}")
    else:
        print(value)


def _consume(args: argparse.Namespace) -> int:
    config = {"auto.offset.reset": "earliest" if args.from_beginning else "latest", "enable.auto.commit": "false"}
    if args.group:
        config["group.id"] = args.group
    count = 0
    with connected(args) as cluster:
        consumer = cluster.consumer(config)
        try:
            if args.partition is not None:
                consumer.assign([(args.topic, args.partition)])
                if args.offset is not None:
                    consumer.seek((args.topic, args.partition), args.offset)
            elif args.group:
                consumer.subscribe([args.topic])
            else:
                consumer.assign([(args.topic, p.partition) for p in cluster.describe_topic(args.topic)])
                (consumer.seek_to_beginning if args.from_beginning else consumer.seek_to_end)()
            quiet_until = time.monotonic() + args.timeout_ms / 1000
            while time.monotonic() < quiet_until and (args.max_messages is None or count < args.max_messages):
                unprinted: dict[tuple[str, int], int] = {}
                for record in consumer.poll(timeout_ms=500):
                    if args.max_messages is not None and count >= args.max_messages:
                        tp = (record.topic, record.partition)
                        unprinted[tp] = min(unprinted.get(tp, record.offset), record.offset)
                        continue
                    _print_record(args, record)
                    count += 1
                    quiet_until = time.monotonic() + args.timeout_ms / 1000
                # Records past --max-messages were not printed: the position (and the group's
                # commit) goes back to the first of them in each partition.
                for tp, offset in unprinted.items():
                    consumer.seek(tp, offset)
            if args.group:
                consumer.commit()
            consumer.close()
        except Exception as exc:
            return fail(args, exc)
    sys.stdout.flush()
    print(f"Processed a total of {count} messages", file=sys.stderr)
    return 0


def add_parsers(commands) -> None:
    produce = commands.add_parser("produce", help="records from stdin, one a line (kafka-console-producer)")
    produce.add_argument("topic")
    produce.add_argument("--acks", default="all", choices=["0", "1", "all", "-1"])
    produce.add_argument("--key-separator", default=None, help="split each line into key and value at this string")
    produce.add_argument("--partition", type=int, default=None, help="write every record to this partition")
    produce.add_argument("--producer-property", action="append", default=[], metavar="KEY=VALUE",
                         help="a producer setting, e.g. delivery.timeout.ms=5000")
    produce.set_defaults(run=_produce)
    consume = commands.add_parser("consume", help="print records, one a line (kafka-console-consumer)")
    consume.add_argument("topic")
    consume.add_argument("--group", default=None, help="read with this consumer group, from its committed offsets")
    consume.add_argument("--from-beginning", action="store_true", help="with no committed offset, start at the start")
    consume.add_argument("--partition", type=int, default=None)
    consume.add_argument("--offset", type=int, default=None, help="with --partition: the first offset to read")
    consume.add_argument("--max-messages", type=int, default=None)
    consume.add_argument("--timeout-ms", type=int, default=10000, help="stop when nothing came for this long")
    consume.add_argument("--print-key", action="store_true")
    consume.add_argument("--key-separator", default=None)
    consume.set_defaults(run=_consume)
    for parser in (produce, consume):
        add_target_arguments(parser)
