"""Checks a run's history (``orchestration.history``) for the anomalies Jepsen's Kafka workload
names, and for broken replication invariants in the cluster samples.

Theory of operation. ``check(events)`` sorts the events by time (stably, so file order breaks
ties), then builds, per partition ("topic-partition"), what was observed at each offset from
acknowledged sends and polls together, and runs one pass per anomaly kind over that. It returns a
``Report``: anomalies grouped by partition, counts per kind, and ``valid``. Nothing here does I/O
except ``main``, the command line (``python -m orchestration.chaos.checker HISTORY``).

Send outcomes: ``ok`` is acknowledged at an offset, ``fail`` definitely did not happen, ``info``
(and an invocation that never completed) is indeterminate: neither lost nor acknowledged, and its
value may legitimately be read. Anomalies, per partition, as implemented:
- lost-write: acknowledged at offset o; some poll (at any time) returned an offset >= o, so the
  log was read at or past o; yet no poll returned the value at o.
- inconsistent-offsets: two different values observed at one offset (acks and polls together).
- duplicate: one value observed at two or more offsets (reported once, under its first partition),
  with ``acknowledged_offsets``, where its send was acknowledged: a retry of a non-idempotent send
  whose first attempt landed writes the record twice and is acknowledged at one of the two.
- non-monotonic-poll: a process's poll returns, for a partition, a first offset below where it
  should start: its ``positions_before`` entry when that differs from the previous poll's last
  offset + 1 (a seek or rebalance moved the consumer, which is legitimate), else the previous
  poll's last offset + 1. Also an offset at or below its predecessor within one poll.
- poll-skip: the same expected start, but the poll starts above it (or a poll has a gap inside)
  and the offsets jumped over hold a value somewhere in the history.
- non-monotonic-send: a process's send invoked later (same partition) is acknowledged at a lower
  offset than one it invoked earlier.
- aborted-read: a poll returned a value whose send completed with ``fail``.
- unseen: acknowledged, never read anywhere, and not a lost write (no poll reached its offset).
  Counted always; it makes the run invalid only with ``unseen_is_anomaly=True``, since a run can
  end before its consumers catch up.
- read-above-commit: a poll at time t returned offset o, and o >= every high watermark reported
  in any sample up to the first sample at or after t, where that sample and the last sample
  before t show the same leader epoch. The brief asked for the nearest earlier sample, but the HW
  legitimately rises between that sample and the poll, so that test would flag correct runs;
  committed offsets never go back, so a read that was committed at t must be below the HW of a
  later sample. Requiring no election between the two samples keeps a new leader's lagging HW
  from looking like a read above commit. Without samples on both sides nothing is claimed.
Compacted topics (``check(..., compacted_topics=...)``): the log cleaner legitimately removes a
value once a later record of the same key sits above it, so on those topics a value is
"superseded" when some record of its key (from the sends' ``key``, acknowledged or polled) was
observed at a higher offset of its partition, and a tombstone (``"tombstone": true``) may vanish
once ``delete.retention.ms`` has passed. Superseded values and tombstones are neither lost nor
unseen, and a poll may skip them. The rule that remains is Kafka's compaction guarantee:
- latest-value-lost: a compacted topic's acknowledged value at offset o that nothing of its key
  supersedes; some poll read the partition at or past o; no poll returned it. (lost-write keeps
  its meaning for keyless values on those topics, which a compacted topic refuses anyway.)
Topics under time retention (``check(..., retention_ms={topic: ms})``, cleanup.policy with
``delete``): retention deletes whole segments whose newest record is more than retention.ms old,
so a record can be gone by time t only if its timestamp, which is no earlier than its send's
invoke, is more than retention.ms before t. A value is "expired" when its send was invoked more
than retention.ms (in the history's seconds) before the latest poll that passed its offset
(returned a higher one, or started above it); an expired value is neither lost nor unseen, and a
poll may skip it. Everything retention keeps is held to lost-write and unseen as usual, so a log
start offset that moved past a record retention still had to keep is a lost write.
Invariant anomalies from the samples: multiple-leaders-in-epoch (two brokers seen leading one
leader epoch), leader-not-in-isr, hw-above-leo (per replica), hw-moved-back (the leader's HW
dropped within its epoch), replicas-diverge-below-hw (the sample's digest flag is false). Repeats
of one invariant anomaly are folded into one entry with a ``samples`` count.
"""
from __future__ import annotations

import bisect
import itertools
import json
import sys
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from orchestration.history import read_history, split_topic_partition, topic_partition_key, validate_event

HISTORY_KINDS = ("lost-write", "latest-value-lost", "inconsistent-offsets", "duplicate", "non-monotonic-poll", "poll-skip",
                 "non-monotonic-send", "aborted-read", "unseen", "read-above-commit")
INVARIANT_KINDS = ("multiple-leaders-in-epoch", "leader-not-in-isr", "hw-above-leo", "hw-moved-back",
                   "replicas-diverge-below-hw")
ANOMALY_KINDS = HISTORY_KINDS + INVARIANT_KINDS
# A poll-skip lists at most this many skipped offsets; the full number is in ``skipped_count``.
SKIPPED_LISTED_MAX = 50
# ``Report.table`` prints at most this many rows per partition and kind, then says how many more.
TABLE_ROWS_MAX = 20


@dataclass
class Anomaly:
    """One anomaly. ``offset`` and ``value`` say where, when the kind has one place; ``detail``
    holds the rest (process, times, the other values or offsets involved)."""
    kind: str
    topic_partition: str
    offset: int | None = None
    value: str | None = None
    detail: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "topic_partition": self.topic_partition, "offset": self.offset,
                "value": self.value, "detail": self.detail}


@dataclass
class Report:
    """What ``check`` found. ``anomalies`` maps each partition to its anomalies (kinds in
    ``ANOMALY_KINDS`` order, then by offset); ``counts`` has every kind, zeros included."""
    anomalies: dict[str, list[Anomaly]]
    counts: dict[str, int]
    valid: bool
    unseen_is_anomaly: bool
    stats: dict[str, int]
    faults: list[dict[str, Any]]

    def of_kind(self, kind: str) -> list[Anomaly]:
        assert kind in ANOMALY_KINDS, f"unknown anomaly kind {kind!r}"
        return [a for found in self.anomalies.values() for a in found if a.kind == kind]

    def kinds(self) -> set[str]:
        """The kinds with at least one anomaly."""
        return {kind for kind, count in self.counts.items() if count}

    def summary(self) -> dict[str, Any]:
        return {"valid": self.valid, "counts": self.counts, "unseen_is_anomaly": self.unseen_is_anomaly,
                "stats": self.stats}

    def to_json(self, indent: int | None = None) -> str:
        return json.dumps({**self.summary(), "faults": self.faults,
                           "anomalies": {tp: [a.to_dict() for a in found] for tp, found in self.anomalies.items()}},
                          indent=indent, sort_keys=False)

    def table(self) -> str:
        """A fixed-width text table, one row per anomaly, then the summary."""
        rows = [("partition", "kind", "offset", "value", "detail")]
        for tp, found in self.anomalies.items():
            shown: dict[str, int] = defaultdict(int)
            for anomaly in found:
                shown[anomaly.kind] += 1
                if shown[anomaly.kind] <= TABLE_ROWS_MAX:
                    detail = " ".join(f"{k}={json.dumps(v)}" for k, v in anomaly.detail.items())
                    rows.append((tp, anomaly.kind, "" if anomaly.offset is None else str(anomaly.offset),
                                 anomaly.value or "", detail[:160]))
            for kind, count in shown.items():
                if count > TABLE_ROWS_MAX:
                    rows.append((tp, kind, "", "", f"... and {count - TABLE_ROWS_MAX} more"))
        widths = [max(len(row[i]) for row in rows) for i in range(4)]
        lines = ["  ".join(cell.ljust(width) for cell, width in zip(row[:4], widths)) + "  " + row[4] for row in rows]
        counts = ", ".join(f"{kind}={count}" for kind, count in self.counts.items() if count) or "none"
        stats = ", ".join(f"{key}={value}" for key, value in self.stats.items())
        lines += ["", f"valid: {self.valid}   anomalies: {counts}", f"history: {stats}"]
        if len(rows) == 1:
            lines[0:1] = ["no anomalies"]
        return "\n".join(lines)


@dataclass
class _Ack:
    process: str
    tp: str
    offset: int
    value: str
    time: float
    order: tuple[float, int]  # (invoke time, position in history) orders one process's sends


@dataclass
class _Poll:
    process: str
    time: float
    records: list[tuple[str, int, str]]  # (topic-partition, offset, value) in returned order
    positions_before: dict[str, int]


class _Checker:
    """One pass over one history; ``check`` is the public entry."""

    def __init__(self, events: Iterable[dict], compacted_topics: Iterable[str] = (),
                 retention_ms: Mapping[str, float] | None = None) -> None:
        self.compacted_topics = frozenset(compacted_topics)
        self.retention_s = {topic: float(ms) / 1000 for topic, ms in (retention_ms or {}).items()}
        self.key_of: dict[str, str] = {}
        self.tombstones: set[str] = set()
        ordered = sorted(enumerate(validate_event(e) for e in events), key=lambda pair: (pair[1]["time"], pair[0]))
        self.found: list[Anomaly] = []
        self.folded: dict[tuple, Anomaly] = {}
        self.invokes: dict[str, tuple[float, int]] = {}
        self.outcomes: dict[str, str] = {}
        self.failed: dict[str, str] = {}
        self.acks: list[_Ack] = []
        self.polls: list[_Poll] = []
        self.samples: dict[str, list[dict]] = defaultdict(list)
        self.faults: list[dict] = []
        for index, event in ordered:
            self._collect(index, event)
        # offset -> values observed there, per partition; value -> every (partition, offset).
        self.values_at: dict[str, dict[int, set[str]]] = defaultdict(lambda: defaultdict(set))
        self.locations: dict[str, set[tuple[str, int]]] = defaultdict(set)
        self.read_at: set[tuple[str, int, str]] = set()
        self.read_values: set[str] = set()
        self.polled_offset_max: dict[str, int] = {}
        self.acknowledged_at: dict[str, list[list]] = defaultdict(list)
        for ack in self.acks:
            self._observe(ack.tp, ack.offset, ack.value)
            self.acknowledged_at[ack.value].append([ack.tp, ack.offset])
        for poll in self.polls:
            for tp, offset, value in poll.records:
                self._observe(tp, offset, value)
                self.read_at.add((tp, offset, value))
                self.read_values.add(value)
                self.polled_offset_max[tp] = max(offset, self.polled_offset_max.get(tp, offset))
        self.offsets_with_values = {tp: sorted(at) for tp, at in self.values_at.items()}
        # The highest offset any record of a key was observed at, per compacted partition.
        self.key_latest: dict[tuple[str, str], int] = {}
        for value, places in self.locations.items():
            key = self.key_of.get(value)
            for tp, offset in places:
                if key is not None and self._compacted(tp):
                    self.key_latest[(tp, key)] = max(offset, self.key_latest.get((tp, key), offset))
        # Per partition under retention, the polls by how far they passed (the highest offset each
        # returned, or the offset before where it started) and, from each on, the latest poll time
        # among those that passed at least as far: when a value's offset was last passed.
        self.passed: dict[str, tuple[list[int], list[float]]] = {}
        if self.retention_s:
            reach: dict[str, list[tuple[int, float]]] = defaultdict(list)
            for poll in self.polls:
                highest: dict[str, int] = {tp: position - 1 for tp, position in poll.positions_before.items()}
                for tp, offset, _ in poll.records:
                    highest[tp] = max(offset, highest.get(tp, offset))
                for tp, offset in highest.items():
                    if split_topic_partition(tp)[0] in self.retention_s:
                        reach[tp].append((offset, poll.time))
            for tp, pairs in reach.items():
                pairs.sort()
                latest = list(itertools.accumulate((t for _, t in reversed(pairs)), max))[::-1]
                self.passed[tp] = ([offset for offset, _ in pairs], latest)

    def _collect(self, index: int, event: dict) -> None:
        value, kind, f, t = event["value"], event["type"], event["f"], float(event["time"])
        if f == "send":
            if kind == "invoke":
                self.invokes.setdefault(value["value"], (t, index))
                if value.get("key") is not None:
                    self.key_of[value["value"]] = str(value["key"])
                if value.get("tombstone"):
                    self.tombstones.add(value["value"])
                return
            self.outcomes.setdefault(value["value"], kind)
            if kind == "ok":
                tp = topic_partition_key(value["topic"], value["partition"])
                order = self.invokes.get(value["value"], (t, index))
                self.acks.append(_Ack(event["process"], tp, int(value["offset"]), value["value"], t, order))
            elif kind == "fail":
                self.failed[value["value"]] = value["error"]
        elif f == "poll" and kind == "ok":
            records = [(topic_partition_key(topic, partition), int(offset), str(v))
                       for topic, partition, offset, v in value["records"]]
            self.polls.append(_Poll(event["process"], t, records, dict(value["positions_before"])))
        elif f == "sample":
            self.samples[topic_partition_key(value["topic"], value["partition"])].append({**value, "time": t})
        elif f == "fault":
            self.faults.append({"time": t, **value})

    def _compacted(self, tp: str) -> bool:
        return split_topic_partition(tp)[0] in self.compacted_topics

    def _expired(self, tp: str, offset: int, value: str) -> bool:
        """True when time retention may legitimately have deleted ``value`` at ``offset`` before
        the last poll that passed it (see the module docstring)."""
        retention_s = self.retention_s.get(split_topic_partition(tp)[0])
        if retention_s is None or value not in self.invokes or tp not in self.passed:
            return False
        offsets, latest = self.passed[tp]
        at = bisect.bisect_left(offsets, offset)
        return at < len(offsets) and self.invokes[value][0] + retention_s < latest[at]

    def _may_be_cleaned(self, tp: str, offset: int, value: str) -> bool:
        """True when the log's own upkeep may legitimately have removed ``value`` at ``offset``:
        time retention's deletion (``_expired``), or, on a compacted topic, a tombstone or a value a
        later record of its key supersedes."""
        if self._expired(tp, offset, value):
            return True
        if not self._compacted(tp):
            return False
        if value in self.tombstones:
            return True
        key = self.key_of.get(value)
        return key is not None and self.key_latest.get((tp, key), offset) > offset

    def _observe(self, tp: str, offset: int, value: str) -> None:
        self.values_at[tp][offset].add(value)
        self.locations[value].add((tp, offset))

    def _add(self, kind: str, tp: str, offset: int | None = None, value: str | None = None, **detail: Any) -> None:
        self.found.append(Anomaly(kind, tp, offset, value, detail))

    def _add_folded(self, key: tuple, kind: str, tp: str, offset: int | None = None, **detail: Any) -> None:
        """Adds an invariant anomaly once per key; repeats only raise its ``samples`` count."""
        if key in self.folded:
            self.folded[key].detail["samples"] += 1
            return
        anomaly = Anomaly(kind, tp, offset, None, {**detail, "samples": 1})
        self.folded[key] = anomaly
        self.found.append(anomaly)

    def check_offsets_and_values(self) -> None:
        for tp, at in self.values_at.items():
            for offset, values in at.items():
                if len(values) > 1:
                    self._add("inconsistent-offsets", tp, offset, None, values=sorted(values))
        for value, places in self.locations.items():
            if len(places) > 1:
                first_tp, first_offset = min(places)
                self._add("duplicate", first_tp, first_offset, value, offsets=sorted([tp, o] for tp, o in places),
                          acknowledged_offsets=self.acknowledged_at.get(value, []))

    def check_acknowledged(self) -> None:
        for ack in self.acks:
            if self._may_be_cleaned(ack.tp, ack.offset, ack.value):
                continue
            polled_max = self.polled_offset_max.get(ack.tp)
            read_past = polled_max is not None and polled_max >= ack.offset
            if read_past and (ack.tp, ack.offset, ack.value) not in self.read_at:
                others = sorted(self.values_at[ack.tp][ack.offset] - {ack.value})
                keyed = self._compacted(ack.tp) and ack.value in self.key_of
                detail = {"key": self.key_of[ack.value]} if keyed else {}
                self._add("latest-value-lost" if keyed else "lost-write", ack.tp, ack.offset, ack.value,
                          process=ack.process, ack_time=ack.time, polled_offset_max=polled_max, seen_there=others,
                          **detail)
            elif ack.value not in self.read_values:
                self._add("unseen", ack.tp, ack.offset, ack.value, process=ack.process, ack_time=ack.time)

    def check_sends_monotonic(self) -> None:
        by_producer: dict[tuple[str, str], list[_Ack]] = defaultdict(list)
        for ack in self.acks:
            by_producer[(ack.process, ack.tp)].append(ack)
        for (process, tp), acks in by_producer.items():
            highest: _Ack | None = None
            for ack in sorted(acks, key=lambda a: a.order):
                if highest is not None and ack.offset < highest.offset:
                    self._add("non-monotonic-send", tp, ack.offset, ack.value, process=process,
                              earlier_offset=highest.offset, earlier_value=highest.value)
                if highest is None or ack.offset > highest.offset:
                    highest = ack

    def _skipped(self, tp: str, start: int, end: int) -> list[list]:
        """[offset, value] for each offset in [start, end) known to hold a value."""
        offsets = self.offsets_with_values.get(tp, [])
        low, high = bisect.bisect_left(offsets, start), bisect.bisect_left(offsets, end)
        return [[o, v] for o in offsets[low:high] for v in sorted(self.values_at[tp][o])
                if not self._may_be_cleaned(tp, o, v)]

    def _check_step(self, poll: _Poll, tp: str, expected: int, offset: int, value: str, **context: Any) -> None:
        if offset < expected:
            self._add("non-monotonic-poll", tp, offset, value, process=poll.process, time=poll.time,
                      expected_offset=expected, **context)
        elif offset > expected:
            skipped = self._skipped(tp, expected, offset)
            if skipped:
                self._add("poll-skip", tp, skipped[0][0], skipped[0][1], process=poll.process, time=poll.time,
                          expected_offset=expected, next_offset_read=offset, skipped_count=len(skipped),
                          skipped=skipped[:SKIPPED_LISTED_MAX], **context)

    def check_polls(self) -> None:
        last_read: dict[tuple[str, str], int] = {}
        for poll in self.polls:
            by_tp: dict[str, list[tuple[int, str]]] = defaultdict(list)
            for tp, offset, value in poll.records:
                by_tp[tp].append((offset, value))
            for tp, rows in by_tp.items():
                previous = last_read.get((poll.process, tp))
                position = poll.positions_before.get(tp)
                if position is not None and (previous is None or position != previous + 1):
                    expected: int | None = position  # a seek or rebalance moved the consumer
                else:
                    expected = None if previous is None else previous + 1
                if expected is not None:
                    self._check_step(poll, tp, expected, rows[0][0], rows[0][1], previous_offset=previous,
                                     position_before=position)
                for (before, _), (offset, value) in itertools.pairwise(rows):
                    self._check_step(poll, tp, before + 1, offset, value, previous_offset=before, within_poll=True)
                last_read[(poll.process, tp)] = rows[-1][0]

    def check_aborted_reads(self) -> None:
        for poll in self.polls:
            for tp, offset, value in poll.records:
                if value in self.failed and self.outcomes.get(value) == "fail":
                    self._add("aborted-read", tp, offset, value, process=poll.process, time=poll.time,
                              error=self.failed[value])

    def check_reads_above_commit(self) -> None:
        for tp, samples in self.samples.items():
            times = [s["time"] for s in samples]
            # The largest HW any replica reported up to and including each sample: a committed
            # offset never goes back, so this is a floor on what was committed by then.
            floor, floors = -1, []
            for sample in samples:
                floor = max([floor] + [r["high_watermark"] for r in sample["replicas"].values()])
                floors.append(floor)
            for poll in self.polls:
                after = bisect.bisect_left(times, poll.time)
                before = bisect.bisect_right(times, poll.time) - 1
                if before < 0 or after >= len(samples):
                    continue  # no samples on both sides: nothing to claim
                if samples[before]["leader_epoch"] != samples[after]["leader_epoch"]:
                    continue  # an election in between: the new leader's HW may lag
                for record_tp, offset, value in poll.records:
                    if record_tp == tp and offset >= floors[after]:
                        self._add("read-above-commit", tp, offset, value, process=poll.process, time=poll.time,
                                  high_watermark=floors[after], sample_time=samples[after]["time"],
                                  leader_epoch=samples[after]["leader_epoch"])

    def check_invariants(self) -> None:
        leaders: dict[tuple[str, int], dict[int, float]] = defaultdict(dict)
        leader_hw: dict[tuple[str, int, int], int] = {}
        for tp, samples in self.samples.items():
            for s in samples:
                epoch, leader, t = s["leader_epoch"], s["leader"], s["time"]
                if leader is not None:
                    leaders[(tp, epoch)].setdefault(leader, t)
                    if leader not in s["isr"]:
                        self._add_folded(("isr", tp, epoch, leader), "leader-not-in-isr", tp, leader=leader,
                                         leader_epoch=epoch, isr=s["isr"], time=t)
                for broker, replica in sorted(s["replicas"].items()):
                    hw, leo = replica["high_watermark"], replica["log_end_offset"]
                    if hw > leo:
                        self._add_folded(("leo", tp, epoch, broker), "hw-above-leo", tp, hw, broker=int(broker),
                                         high_watermark=hw, log_end_offset=leo, leader_epoch=epoch, time=t)
                if leader is not None and str(leader) in s["replicas"]:
                    hw = s["replicas"][str(leader)]["high_watermark"]
                    key = (tp, epoch, leader)
                    if key in leader_hw and hw < leader_hw[key]:
                        self._add("hw-moved-back", tp, hw, None, broker=leader, leader_epoch=epoch,
                                  previous_high_watermark=leader_hw[key], time=t)
                    leader_hw[key] = max(hw, leader_hw.get(key, hw))
                if not s["digests_agree_below_hw"]:
                    self._add_folded(("digest", tp, epoch), "replicas-diverge-below-hw", tp, leader_epoch=epoch,
                                     time=t, replicas=s["replicas"])
        for (tp, epoch), seen in leaders.items():
            if len(seen) > 1:
                self._add("multiple-leaders-in-epoch", tp, None, None, leader_epoch=epoch, leaders=sorted(seen),
                          first_seen={str(b): t for b, t in sorted(seen.items())})

    def report(self, unseen_is_anomaly: bool) -> Report:
        for check in (self.check_offsets_and_values, self.check_acknowledged, self.check_sends_monotonic,
                      self.check_polls, self.check_aborted_reads, self.check_reads_above_commit,
                      self.check_invariants):
            check()
        rank = {kind: i for i, kind in enumerate(ANOMALY_KINDS)}
        by_tp: dict[str, list[Anomaly]] = defaultdict(list)
        for anomaly in sorted(self.found, key=lambda a: (a.topic_partition, rank[a.kind], a.offset is None,
                                                          a.offset or 0, a.value or "")):
            by_tp[anomaly.topic_partition].append(anomaly)
        counts = {kind: 0 for kind in ANOMALY_KINDS}
        for anomaly in self.found:
            counts[anomaly.kind] += 1
        failing = set(ANOMALY_KINDS) - ({"unseen"} if not unseen_is_anomaly else set())
        stats = {
            "sends_invoked": len(self.invokes),
            "sends_ok": sum(1 for o in self.outcomes.values() if o == "ok"),
            "sends_failed": sum(1 for o in self.outcomes.values() if o == "fail"),
            "sends_indeterminate": sum(1 for o in self.outcomes.values() if o == "info")
            + sum(1 for v in self.invokes if v not in self.outcomes),
            "polls": len(self.polls),
            "records_read": sum(len(p.records) for p in self.polls),
            "faults": len(self.faults),
            "samples": sum(len(s) for s in self.samples.values()),
        }
        return Report(dict(sorted(by_tp.items())), counts, not any(counts[k] for k in failing), unseen_is_anomaly,
                      stats, self.faults)


def check(events: Iterable[dict], unseen_is_anomaly: bool = False, compacted_topics: Iterable[str] = (),
          retention_ms: Mapping[str, float] | None = None) -> Report:
    """Checks a history (dicts in the ``orchestration.history`` format, in any order);
    ``compacted_topics`` names the topics whose values the log cleaner may remove, and
    ``retention_ms`` the topics whose old segments time retention deletes, with their retention.ms."""
    return _Checker(events, compacted_topics, retention_ms).report(unseen_is_anomaly)


def main(argv: list[str] | None = None) -> int:
    """``python -m orchestration.chaos.checker HISTORY [--json] [--unseen-is-anomaly]``; exits 1 if invalid."""
    import argparse
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("history")
    parser.add_argument("--json", action="store_true", help="print the report as JSON, not a table")
    parser.add_argument("--unseen-is-anomaly", action="store_true", help="unseen acknowledged writes fail the run")
    parser.add_argument("--compacted-topic", action="append", default=[], metavar="TOPIC",
                        help="a topic with cleanup.policy=compact: the latest value per key rule (repeatable)")
    parser.add_argument("--retention", action="append", default=[], metavar="TOPIC=MS",
                        help="a topic under retention.ms=MS: values older than that may be gone (repeatable)")
    args = parser.parse_args(argv)
    retention = {}
    for item in args.retention:
        topic, _, ms = item.rpartition("=")
        if not topic or not ms.isdigit():
            parser.error(f"--retention takes TOPIC=MS, not {item!r}")
        retention[topic] = int(ms)
    report = check(read_history(args.history), unseen_is_anomaly=args.unseen_is_anomaly,
                   compacted_topics=args.compacted_topic, retention_ms=retention)
    print(report.to_json(indent=2) if args.json else report.table())
    return 0 if report.valid else 1


if __name__ == "__main__":
    sys.exit(main())
