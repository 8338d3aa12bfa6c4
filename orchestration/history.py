"""The history of a test run: every client operation, fault and invariant sample, as JSON lines.

Theory of operation. Clients, the fault injector and the invariant sampler all hand their events
to one ``HistoryWriter``, which stamps each with the run's clock and appends it as one JSON object
per line, flushed at once so that a run that dies still leaves a readable history.
``read_history`` yields the events back as dicts, checked against the format below, for
``orchestration.chaos.checker``. Nothing here knows about Ray: the clients turn their results into the
plain values below (``error_name`` turns an exception into the name the history records).

Every line has these keys:
- ``time``: seconds (float) since the writer was created, from a monotonic clock. Events are
  written in the order they are handed in; an event may carry an earlier ``time`` than the line
  before it (a sample stamps the moment it started collecting), so readers sort by ``time``.
- ``process``: who did it: a client id, ``"nemesis"`` for faults, ``"sampler"`` for samples.
- ``type``: Jepsen's vocabulary: ``invoke`` (the call started), ``ok`` (it definitely happened),
  ``fail`` (it definitely did not happen) or ``info`` (indeterminate: a timeout or a dead actor,
  so it may or may not have happened).
- ``f``: ``send``, ``poll``, ``fault`` or ``sample``.
- ``value``: depends on ``f`` and ``type``, one example line of each kind:

  {"time": 0.12, "process": "producer-0", "type": "invoke", "f": "send", "value": {"topic": "t", "partition": null, "value": "producer-0:17"}}
  {"time": 0.15, "process": "producer-0", "type": "ok", "f": "send", "value": {"topic": "t", "partition": 1, "offset": 8, "value": "producer-0:17"}}
  {"time": 0.31, "process": "producer-0", "type": "fail", "f": "send", "value": {"value": "producer-0:18", "error": "NOT_ENOUGH_REPLICAS"}}
  {"time": 5.02, "process": "producer-0", "type": "info", "f": "send", "value": {"value": "producer-0:19", "error": "RayActorError"}}
  {"time": 0.40, "process": "consumer-0", "type": "ok", "f": "poll", "value": {"records": [["t", 1, 8, "producer-0:17"]], "positions_before": {"t-1": 8}}}
  {"time": 2.00, "process": "nemesis", "type": "info", "f": "fault", "value": {"name": "kill", "target": "broker-2", "detail": {"signal": "SIGKILL"}}}
  {"time": 2.10, "process": "sampler", "type": "ok", "f": "sample", "value": {"topic": "t", "partition": 1, "leader": 0, "leader_epoch": 3, "isr": [0, 1], "replicas": {"0": {"log_end_offset": 9, "high_watermark": 9}, "1": {"log_end_offset": 9, "high_watermark": 8}}, "digests_agree_below_hw": true}}

A send to a compacted topic also carries its record's ``key`` in the invocation (and
``"tombstone": true`` when the record's value is null, its ``value`` then only naming the send):

  {"time": 0.12, "process": "producer-0", "type": "invoke", "f": "send", "value": {"topic": "c", "partition": 0, "value": "producer-0:17", "key": "k3"}}

Send values must be unique across the run: the checker traces every record by its value, and an
acknowledgement or failure is matched to its invocation by value. A send's ``partition`` is null
in its invocation when the partitioner chooses it. ``positions_before`` holds the consumer's
position for each assigned partition ("topic-partition" as Kafka prints a TopicPartition) just
before the poll, so the checker can tell a seek or rebalance from a consumer going backwards.
``replicas`` keys are broker ids as strings (JSON object keys are strings). A sample's ``time``
should be the moment collection started, so it is no later than any state it reports.
"""
from __future__ import annotations

import json
import threading
import time as time_module
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

TYPES = frozenset({"invoke", "ok", "fail", "info"})
FUNCTIONS = frozenset({"send", "poll", "fault", "sample"})
NEMESIS_PROCESS = "nemesis"
SAMPLER_PROCESS = "sampler"
# Keys each kind of value must carry, by (f, type); "*" matches any type.
_REQUIRED_VALUE_KEYS: dict[tuple[str, str], frozenset[str]] = {
    ("send", "invoke"): frozenset({"topic", "partition", "value"}),
    ("send", "ok"): frozenset({"topic", "partition", "offset", "value"}),
    ("send", "fail"): frozenset({"value", "error"}),
    ("send", "info"): frozenset({"value", "error"}),
    ("poll", "ok"): frozenset({"records", "positions_before"}),
    ("fault", "*"): frozenset({"name", "target", "detail"}),
    ("sample", "*"): frozenset({"topic", "partition", "leader", "leader_epoch", "isr", "replicas",
                                "digests_agree_below_hw"}),
}


def topic_partition_key(topic: str, partition: int) -> str:
    """Kafka's own spelling of a TopicPartition, the key of ``positions_before``."""
    return f"{topic}-{int(partition)}"


def split_topic_partition(key: str) -> tuple[str, int]:
    """Inverse of ``topic_partition_key``; topic names may themselves contain '-'."""
    topic, _, partition = key.rpartition("-")
    if not topic or not partition.lstrip("-").isdigit():
        raise ValueError(f"not a topic-partition: {key!r}")
    return topic, int(partition)


def error_name(error: BaseException | str) -> str:
    """The name a history records for an error: Kafka's error name for a Kafka error (anything
    with a string ``name``, like ``orchestration.errors.KafkaError``), else the exception type."""
    if isinstance(error, str):
        return error
    name = getattr(error, "name", None)
    return name if isinstance(name, str) else type(error).__name__


def _text(value: Any) -> str:
    return value.decode("utf-8", errors="backslashreplace") if isinstance(value, (bytes, bytearray)) else str(value)


def _record_row(record: Any) -> list:
    """[topic, partition, offset, value] from a 4-sequence or a ConsumerRecord-like object."""
    if hasattr(record, "topic"):  # a ConsumerRecord (a named tuple) or another record-like object
        topic, partition, offset, value = record.topic, record.partition, record.offset, record.value
    else:
        topic, partition, offset, value = record
    return [str(topic), int(partition), int(offset), _text(value)]


class HistoryWriter:
    """Appends events to a JSON-lines history; safe to share between threads.

    Each write takes the lock, stamps the time (unless given), writes one line and flushes, so
    lines never interleave and the file is complete up to the last event even if the run dies.
    ``clock`` is injectable so tests can drive time.
    """

    def __init__(self, path: str | Path, clock: Callable[[], float] = time_module.monotonic) -> None:
        self.path = Path(path)
        self._clock = clock
        self._start = clock()
        self._lock = threading.Lock()
        self._file = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 (closed by close())
        self.events_written = 0

    def now(self) -> float:
        """Seconds since the writer was created, on the history's clock."""
        return self._clock() - self._start

    def write(self, process: str, type: str, f: str, value: Mapping[str, Any], time: float | None = None) -> dict:
        """Writes one event and returns it; the typed helpers below are the usual way in."""
        assert type in TYPES, f"unknown event type {type!r}"
        assert f in FUNCTIONS, f"unknown event function {f!r}"
        with self._lock:
            event = {"time": round(self.now() if time is None else float(time), 6), "process": str(process),
                     "type": type, "f": f, "value": dict(value)}
            line = json.dumps(event, ensure_ascii=False)
            if self._file.closed:
                raise ValueError(f"history {self.path} is closed")
            self._file.write(line + "\n")
            self._file.flush()
            self.events_written += 1
        return event

    def invoke(self, process: str, topic: str, partition: int | None, value: str, time: float | None = None, *,
               key: str | None = None, tombstone: bool = False) -> dict:
        """A send is about to be called; ``partition`` is None when the partitioner chooses.
        ``key`` is the record's key, for a compacted topic's "latest value per key" rule;
        ``tombstone`` marks a send whose record carries a null value (``value`` then only names
        the send)."""
        event = {"topic": topic, "partition": None if partition is None else int(partition), "value": _text(value)}
        if key is not None:
            event["key"] = _text(key)
        if tombstone:
            event["tombstone"] = True
        return self.write(process, "invoke", "send", event, time)

    def ok(self, process: str, topic: str, partition: int, offset: int, value: str, time: float | None = None) -> dict:
        """A send was acknowledged at ``offset`` of ``topic``-``partition``."""
        return self.write(process, "ok", "send",
                          {"topic": topic, "partition": int(partition), "offset": int(offset), "value": _text(value)},
                          time)

    def fail(self, process: str, value: str, error: BaseException | str, time: float | None = None) -> dict:
        """A send definitely did not happen (a non-retriable Kafka error, or retries exhausted on
        an error that proves the write was not appended)."""
        return self.write(process, "fail", "send", {"value": _text(value), "error": error_name(error)}, time)

    def info(self, process: str, value: str, error: BaseException | str, time: float | None = None) -> dict:
        """A send's outcome is unknown: a timeout or a RayActorError; it may have been written."""
        return self.write(process, "info", "send", {"value": _text(value), "error": error_name(error)}, time)

    def poll(self, process: str, records: Iterable[Any], positions_before: Mapping[str, int],
             time: float | None = None) -> dict:
        """A poll returned ``records`` (4-sequences or ConsumerRecord-like objects); the consumer's
        positions just before the poll are keyed by ``topic_partition_key``."""
        return self.write(process, "ok", "poll",
                          {"records": [_record_row(record) for record in records],
                           "positions_before": {str(key): int(offset) for key, offset in positions_before.items()}},
                          time)

    def fault(self, name: str, target: str, detail: Mapping[str, Any] | None = None,
              process: str = NEMESIS_PROCESS, time: float | None = None) -> dict:
        """The fault injector did something (kill, pause, partition, heal ...) to ``target``."""
        return self.write(process, "info", "fault",
                          {"name": name, "target": str(target), "detail": dict(detail or {})}, time)

    def sample(self, topic: str, partition: int, leader: int | None, leader_epoch: int, isr: Iterable[int],
               replicas: Mapping[Any, Mapping[str, int]], digests_agree_below_hw: bool,
               process: str = SAMPLER_PROCESS, time: float | None = None) -> dict:
        """A snapshot of one partition's replication state; pass ``time=writer.now()`` taken
        before collecting, so the sample is stamped no later than the state it holds."""
        return self.write(process, "ok", "sample", {
            "topic": topic, "partition": int(partition), "leader": None if leader is None else int(leader),
            "leader_epoch": int(leader_epoch), "isr": sorted(int(broker) for broker in isr),
            "replicas": {str(broker): {"log_end_offset": int(state["log_end_offset"]),
                                       "high_watermark": int(state["high_watermark"])}
                         for broker, state in replicas.items()},
            "digests_agree_below_hw": bool(digests_agree_below_hw),
        }, time)

    def close(self) -> None:
        with self._lock:
            self._file.close()

    def __enter__(self) -> HistoryWriter:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def validate_event(event: Any) -> dict:
    """Returns ``event`` if it has the shape described above, else raises ValueError."""
    if not isinstance(event, dict):
        raise ValueError(f"event is not an object: {event!r}")
    missing = {"time", "process", "type", "f", "value"} - event.keys()
    if missing:
        raise ValueError(f"event lacks {sorted(missing)}: {event!r}")
    if event["type"] not in TYPES or event["f"] not in FUNCTIONS:
        raise ValueError(f"unknown type or f: {event!r}")
    if not isinstance(event["time"], (int, float)) or not isinstance(event["value"], dict):
        raise ValueError(f"bad time or value: {event!r}")
    required = _REQUIRED_VALUE_KEYS.get((event["f"], event["type"])) or _REQUIRED_VALUE_KEYS.get((event["f"], "*"))
    if required is None:
        raise ValueError(f"no {event['type']} events for f={event['f']}: {event!r}")
    missing = required - event["value"].keys()
    if missing:
        raise ValueError(f"{event['f']} {event['type']} value lacks {sorted(missing)}: {event!r}")
    return event


def read_history(path: str | Path) -> Iterator[dict]:
    """Yields the events of a history file in file order, each validated; blank lines are
    skipped. A torn last line (the run died mid-write) is an error, with its line number."""
    with open(path, encoding="utf-8") as file:
        for line_number, line in enumerate(file, start=1):
            if not line.strip():
                continue
            try:
                yield validate_event(json.loads(line))
            except ValueError as error:  # json.JSONDecodeError is a ValueError
                raise ValueError(f"{path}:{line_number}: {error}") from error
