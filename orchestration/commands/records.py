"""``raykafka delete-records --offset-json-file FILE``, as ``kafka-delete-records`` has it: the
records of each partition below its offset go (-1: below the high watermark), and each partition's
new low watermark is printed once every in-sync replica has moved its log start offset there.

The file is Kafka's: ``{"partitions": [{"topic": "t", "partition": 0, "offset": 5}], "version": 1}``
("version" may be left out; only 1 exists). A partition named twice is refused, as Kafka refuses it.
"""
from __future__ import annotations

import argparse
import json

from orchestration.commands.common import add_bootstrap_server, add_target_arguments, connected, emit, fail


def parse_offset_json(text: str) -> dict[tuple[str, int], int]:
    """Kafka's DeleteRecordsCommand.parseOffsetJsonStringWithoutDedup, then its duplicate check."""
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"the offset JSON file is not JSON: {exc}") from None
    if not isinstance(document, dict) or not isinstance(document.get("partitions"), list):
        raise ValueError('the offset JSON file has no "partitions" list')
    if document.get("version", 1) != 1:
        raise ValueError(f"Not supported version field value {document['version']}")
    offsets: dict[tuple[str, int], int] = {}
    for entry in document["partitions"]:
        try:
            topic, partition, offset = entry["topic"], entry["partition"], entry["offset"]
        except (KeyError, TypeError):
            raise ValueError(f'each partition needs "topic", "partition" and "offset": {entry!r}') from None
        if not isinstance(topic, str) or type(partition) is not int or type(offset) is not int:
            raise ValueError(f"topic must be a string, partition and offset integers: {entry!r}")
        if (topic, partition) in offsets:
            raise ValueError(f"Offset json file contains duplicate topic partitions: {topic}-{partition}")
        offsets[(topic, partition)] = offset
    return offsets


def _delete_records(args: argparse.Namespace) -> int:
    try:
        with open(args.offset_json_file, encoding="utf-8") as file:
            offsets = parse_offset_json(file.read())
    except (OSError, ValueError) as exc:
        return fail(args, exc)
    with connected(args) as cluster:
        try:
            low_watermarks = cluster.delete_records(offsets)
        except Exception as exc:
            return fail(args, exc)
    answer = [{"topic": topic, "partition": partition, "low_watermark": low_watermark}
              for (topic, partition), low_watermark in sorted(low_watermarks.items())]
    emit(args, answer, lambda rows: "Records delete operation completed:\n" + "\n".join(
        f"partition: {r['topic']}-{r['partition']}\tlow_watermark: {r['low_watermark']}" for r in rows))
    return 0


def add_parsers(commands) -> None:
    delete = commands.add_parser("delete-records", help="delete records below an offset (kafka-delete-records)")
    delete.add_argument("--offset-json-file", required=True,
                        help='{"partitions": [{"topic": ..., "partition": ..., "offset": ...}], "version": 1}; '
                             "offset -1 means the high watermark")
    delete.set_defaults(run=_delete_records)
    add_target_arguments(delete)
    add_bootstrap_server(delete)
