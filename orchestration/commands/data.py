"""``raykafka produce`` (``console-producer``) and ``raykafka consume`` (``console-consumer``), as
Kafka's kafka-console-producer and kafka-console-consumer: the topic as ``--topic T`` (or the first
argument), lines from stdin become records and records are printed one a line, both shaped by
Kafka's ``--property`` keys (with ``--json``, one JSON object a record).

The producer reads lines as Kafka's LineMessageReader: ``parse.key=true`` splits a key off each line
at ``key.separator`` (a tab), ``parse.headers=true`` headers before it (``h1:v1,h2:v2`` then
``headers.delimiter``, a tab), ``null.marker`` stands for null; a line without the separator it
needs is refused (``ignore.error=true``: taken whole). It waits for every record's acknowledgement
(``--request-required-acks``, Kafka's default -1) and says how many on stderr.

The consumer prints as Kafka's DefaultMessageFormatter (``print.timestamp``, ``print.partition``,
``print.offset``, ``print.headers``, ``print.key``, ``print.value``, ``key.separator``,
``line.separator``, ``headers.separator``, ``null.literal``). It reads with a group (``--group``:
committed offsets, else ``--from-beginning`` or the end; it commits what it printed) or without one:
every partition, or ``--partition`` from ``--offset``. It runs until interrupted (Ctrl-C or SIGTERM),
until ``--max-messages`` records, or until nothing came for ``--timeout-ms``; then it says
"Processed a total of N messages" on stderr and exits 0, as Kafka's does.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import signal
import sys
import time

from orchestration.commands.cluster import parse_config
from orchestration.commands.common import add_bootstrap_server, add_target_arguments, connected, fail, refuse

POLL_MS = 500  # how long one poll waits: also how soon an interrupt is noticed

# Kafka's defaults for the properties each tool reads (LineMessageReader, DefaultMessageFormatter).
READER_PROPERTIES = {"parse.key": "false", "key.separator": "\t", "parse.headers": "false",
                     "headers.delimiter": "\t", "headers.separator": ",", "headers.key.separator": ":",
                     "ignore.error": "false", "null.marker": None}
FORMATTER_PROPERTIES = {"print.timestamp": "false", "print.key": "false", "print.offset": "false",
                        "print.partition": "false", "print.headers": "false", "print.value": "true",
                        "key.separator": "\t", "line.separator": "\n", "headers.separator": ",",
                        "null.literal": "null"}


def tool_properties(pairs: list[str], known: dict[str, str | None]) -> dict[str, str | None]:
    """``--property key=value`` over Kafka's defaults; a key the tool does not read is refused."""
    given = {}
    for pair in pairs:
        key, found, value = pair.partition("=")  # the value kept as given: a separator may be a space
        if not found or not key.strip():
            raise ValueError(f"--property takes key=value, not {pair!r}")
        given[key.strip()] = value
    unknown = sorted(set(given) - set(known))
    if unknown:
        raise ValueError(f"unknown --property {', '.join(unknown)}; known: {', '.join(known)}")
    return {**known, **given}


def _true(value: str | None) -> bool:
    return (value or "").strip().lower() == "true"


class LineReader:
    """Kafka's ConsoleProducer.LineMessageReader: one line to (headers, key, value)."""

    def __init__(self, properties: dict[str, str | None]) -> None:
        self.p = properties
        self.line_number = 0
        marker, separators = properties["null.marker"], [properties[k] for k in (
            "key.separator", "headers.separator", "headers.delimiter", "headers.key.separator")]
        if properties["headers.delimiter"] == properties["headers.separator"]:
            raise ValueError("headers.delimiter and headers.separator may not be equal")
        if properties["headers.delimiter"] == properties["headers.key.separator"]:
            raise ValueError("headers.delimiter and headers.key.separator may not be equal")
        if properties["headers.separator"] == properties["headers.key.separator"]:
            raise ValueError("headers.separator and headers.key.separator may not be equal")
        if marker is not None and marker in separators:
            raise ValueError("null.marker may not equal a separator")

    def _split(self, enabled: bool, line: str, start: int, separator: str, name: str) -> str | None:
        if not enabled:
            return None
        index = line.find(separator, start)
        if index < 0:
            if _true(self.p["ignore.error"]):
                return None
            raise ValueError(f"No {name} found on line number {self.line_number}: '{line}'")
        return line[start:index]

    def _bytes(self, text: str | None) -> bytes | None:
        return None if text is None or text == self.p["null.marker"] else text.encode()

    def read(self, line: str) -> tuple[list[tuple[str, bytes | None]], bytes | None, bytes | None]:
        self.line_number += 1
        headers = self._split(_true(self.p["parse.headers"]), line, 0, self.p["headers.delimiter"],
                              "headers delimiter")
        header_end = 0 if headers is None else len(headers) + len(self.p["headers.delimiter"])
        key = self._split(_true(self.p["parse.key"]), line, header_end, self.p["key.separator"], "key separator")
        key_end = 0 if key is None else len(key) + len(self.p["key.separator"])
        value = line[header_end + key_end:]
        parsed = []
        if headers is not None and headers != self.p["null.marker"]:
            for pair in headers.split(self.p["headers.separator"]):
                name, found, header_value = pair.partition(self.p["headers.key.separator"])
                if not found and not _true(self.p["ignore.error"]):
                    raise ValueError(f"No header key separator found in pair '{pair}' on line number "
                                     f"{self.line_number}")
                if name == self.p["null.marker"]:
                    raise ValueError(f"Header keys should not be equal to the null marker '{name}' as they can't "
                                     "be null")
                parsed.append((name, self._bytes(header_value) if found else None))
        return parsed, self._bytes(key), self._bytes(value)


def _produce(args: argparse.Namespace) -> int:
    try:
        topic = _topic(args)
        properties = tool_properties(args.property, READER_PROPERTIES)
        if args.key_separator is not None:  # the old flag: a key before this separator
            properties.update({"parse.key": "true", "key.separator": args.key_separator})
        reader = LineReader(properties)
    except ValueError as exc:
        return refuse(args, str(exc))
    acks = "all" if args.request_required_acks == "-1" else args.request_required_acks
    sent = []
    with connected(args) as cluster:
        producer = cluster.producer({"acks": acks, "linger.ms": "5", **parse_config(args.producer_property)})
        try:
            for line in sys.stdin:
                headers, key, value = reader.read(line.rstrip("\n"))
                sent.append(producer.send(topic, value=value, key=key, partition=args.partition,
                                          headers=headers or None))
            producer.flush(timeout=120)
            acknowledged = [future.result(timeout=60) for future in sent]
        except Exception as exc:
            return fail(args, exc)
    if args.json:
        print(json.dumps({"topic": topic, "acknowledged": len(acknowledged), "offsets": [
            {"partition": m.partition, "offset": m.offset} for m in acknowledged]}))
    else:
        print(f"{len(acknowledged)} records acknowledged (acks={args.request_required_acks})", file=sys.stderr)
    return 0


def format_record(record, p: dict[str, str | None]) -> str:
    """Kafka's DefaultMessageFormatter.writeTo, as text (without the record's last line separator)."""
    def text(data: bytes | None) -> str:
        return p["null.literal"] if data is None else data.decode(errors="replace")
    columns = []
    if _true(p["print.timestamp"]):
        columns.append(f"CreateTime:{record.timestamp}" if record.timestamp >= 0 else "NO_TIMESTAMP")
    if _true(p["print.partition"]):
        columns.append(f"Partition:{record.partition}")
    if _true(p["print.offset"]):
        columns.append(f"Offset:{record.offset}")
    if _true(p["print.headers"]):
        columns.append(p["headers.separator"].join(f"{name}:{text(value)}" for name, value in record.headers)
                       or "NO_HEADERS")
    if _true(p["print.key"]):
        columns.append(text(record.key))
    if _true(p["print.value"]):
        columns.append(text(record.value))
    return p["key.separator"].join(columns)


def _record_json(record) -> str:
    def text(data: bytes | None) -> str | None:
        return None if data is None else data.decode(errors="replace")
    return json.dumps({"topic": record.topic, "partition": record.partition, "offset": record.offset,
                       "timestamp": record.timestamp, "key": text(record.key), "value": text(record.value),
                       "headers": [[name, text(value)] for name, value in record.headers]})


@contextlib.contextmanager
def interruptible():
    """While inside, Ctrl-C and SIGTERM ask the loop to stop (``stop["asked"]``) instead of
    ending the process, so that the consumer commits, closes and reports as Kafka's does."""
    stop = {"asked": False}

    def ask(signum, frame):
        stop["asked"] = True
    previous = {s: signal.signal(s, ask) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield stop
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def _start_position(args, cluster, consumer, topic: str) -> None:
    if args.partition is not None:
        consumer.assign([(topic, args.partition)])
        if args.offset == "earliest" or (args.offset is None and args.from_beginning):
            consumer.seek_to_beginning()
        elif args.offset == "latest" or args.offset is None:
            consumer.seek_to_end()
        else:
            consumer.seek((topic, args.partition), int(args.offset))
    elif args.group:
        consumer.subscribe([topic])
    else:
        consumer.assign([(topic, p.partition) for p in cluster.describe_topic(topic)])
        (consumer.seek_to_beginning if args.from_beginning else consumer.seek_to_end)()


def _consume(args: argparse.Namespace) -> int:
    try:
        topic = _topic(args)
        properties = tool_properties(args.property, FORMATTER_PROPERTIES)
        if args.print_key:
            properties["print.key"] = "true"
        if args.key_separator is not None:
            properties["key.separator"] = args.key_separator
        if args.offset is not None and args.partition is None:
            raise ValueError("The partition is required when offset is specified.")
        if args.offset not in (None, "earliest", "latest") and not args.offset.lstrip("-").isdigit():
            raise ValueError(f"--offset is earliest, latest or a number, not {args.offset!r}")
    except ValueError as exc:
        return refuse(args, str(exc))
    config = {"auto.offset.reset": "earliest" if args.from_beginning else "latest", "enable.auto.commit": "false",
              **parse_config(args.consumer_property)}
    if args.group:
        config["group.id"] = args.group
    count = 0
    with connected(args) as cluster, interruptible() as stop:
        consumer = cluster.consumer(config)
        try:
            _start_position(args, cluster, consumer, topic)
            quiet_until = None if args.timeout_ms is None else time.monotonic() + args.timeout_ms / 1000
            while not stop["asked"] and (quiet_until is None or time.monotonic() < quiet_until) \
                    and (args.max_messages is None or count < args.max_messages):
                unprinted: dict[tuple[str, int], int] = {}
                for record in consumer.poll(timeout_ms=POLL_MS):
                    if args.max_messages is not None and count >= args.max_messages:
                        tp = (record.topic, record.partition)
                        unprinted[tp] = min(unprinted.get(tp, record.offset), record.offset)
                        continue
                    sys.stdout.write(_record_json(record) + "\n" if args.json
                                     else format_record(record, properties) + properties["line.separator"])
                    count += 1
                    if args.timeout_ms is not None:
                        quiet_until = time.monotonic() + args.timeout_ms / 1000
                sys.stdout.flush()
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


def _topic(args: argparse.Namespace) -> str:
    if args.topic and args.topic_option and args.topic != args.topic_option:
        raise ValueError(f"two topics given: {args.topic} and --topic {args.topic_option}")
    if not (args.topic or args.topic_option):
        raise ValueError("Missing required argument \"[topic]\"")
    return args.topic or args.topic_option


def _add_topic(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("topic", nargs="?", default=None, help="the topic (or --topic)")
    parser.add_argument("--topic", dest="topic_option", metavar="TOPIC", default=None,
                        help="the topic, as Kafka's tool takes it")


def add_parsers(commands) -> None:
    produce = commands.add_parser("produce", aliases=["console-producer"],
                                  help="records from stdin, one a line (kafka-console-producer)")
    _add_topic(produce)
    produce.add_argument("--request-required-acks", "--acks", default="-1", choices=["0", "1", "all", "-1"],
                         help="the producer's acks")
    produce.add_argument("--property", action="append", default=[], metavar="KEY=VALUE",
                         help="how lines are read, as Kafka's LineMessageReader: parse.key=false, key.separator=TAB, "
                              "parse.headers=false (h1:v1,h2:v2 then headers.delimiter=TAB), headers.separator=',', "
                              "headers.key.separator=':', ignore.error=false, null.marker (default: none)")
    produce.add_argument("--key-separator", default=None,
                         help="the same as --property parse.key=true --property key.separator=SEP")
    produce.add_argument("--partition", type=int, default=None,
                         help="write every record to this partition (default: the partitioner's choice)")
    produce.add_argument("--producer-property", action="append", default=[], metavar="KEY=VALUE",
                         help="a producer setting, e.g. delivery.timeout.ms=5000")
    produce.set_defaults(run=_produce)
    consume = commands.add_parser("consume", aliases=["console-consumer"],
                                  help="print records, one a line (kafka-console-consumer)")
    _add_topic(consume)
    consume.add_argument("--group", default=None, help="read with this consumer group, from its committed offsets")
    consume.add_argument("--from-beginning", action="store_true", help="with no committed offset, start at the start")
    consume.add_argument("--partition", type=int, default=None, help="read only this partition (without a group)")
    consume.add_argument("--offset", default=None,
                         help="with --partition: earliest, latest or the first offset to read (default: latest, "
                              "or earliest with --from-beginning)")
    consume.add_argument("--max-messages", type=int, default=None,
                         help="stop after this many records (default: run until interrupted)")
    consume.add_argument("--timeout-ms", type=int, default=None,
                         help="stop when nothing came for this long (default: run until interrupted)")
    consume.add_argument("--property", action="append", default=[], metavar="KEY=VALUE",
                         help="how records are printed, as Kafka's DefaultMessageFormatter: print.timestamp, "
                              "print.partition, print.offset, print.headers, print.key (each false), print.value=true, "
                              "key.separator=TAB, line.separator=NEWLINE, headers.separator=',', null.literal=null "
                              "(default: the value only)")
    consume.add_argument("--consumer-property", action="append", default=[], metavar="KEY=VALUE",
                         help="a consumer setting, e.g. fetch.max.wait.ms=100")
    consume.add_argument("--print-key", action="store_true", help="the same as --property print.key=true")
    consume.add_argument("--key-separator", default=None, help="the same as --property key.separator=SEP")
    consume.set_defaults(run=_consume)
    for parser in (produce, consume):
        add_target_arguments(parser)
        add_bootstrap_server(parser)
