"""Proves the history checker names each anomaly exactly where it is, and nothing in clean
histories, by running it on small hand-written histories, and that the history writer's JSON
lines read back intact, also when threads write at once; on compacted topics, that values a later
record of their key supersedes may vanish while every key's latest acknowledged value may not; on
topics under time retention, that values older than retention.ms at the read that passed them may
vanish while every value retention still had to keep may not."""
from __future__ import annotations

import json
import random
import threading
from types import SimpleNamespace

import pytest

from orchestration.chaos.checker import ANOMALY_KINDS, check, main
from orchestration.history import (
    HistoryWriter,
    read_history,
    split_topic_partition,
    topic_partition_key,
)


# Hand-written events, in the history's format. Times are distinct so file order never matters.
def invoke(time, process, value, partition=0, topic="t"):
    return {"time": time, "process": process, "type": "invoke", "f": "send",
            "value": {"topic": topic, "partition": partition, "value": value}}


def ok(time, process, value, offset, partition=0, topic="t"):
    return {"time": time, "process": process, "type": "ok", "f": "send",
            "value": {"topic": topic, "partition": partition, "offset": offset, "value": value}}


def fail(time, process, value, error="NOT_LEADER_FOR_PARTITION"):
    return {"time": time, "process": process, "type": "fail", "f": "send", "value": {"value": value, "error": error}}


def info(time, process, value, error="RayActorError"):
    return {"time": time, "process": process, "type": "info", "f": "send", "value": {"value": value, "error": error}}


def poll(time, process, records, position=None, partition=0, topic="t"):
    positions = {} if position is None else {f"{topic}-{partition}": position}
    return {"time": time, "process": process, "type": "ok", "f": "poll",
            "value": {"records": [[topic, partition, o, v] for o, v in records], "positions_before": positions}}


def keyed(time, process, value, key, offset, topic="c", tombstone=False):
    """Invoke (with the record's key) + ok at ``offset`` of ``topic``-0, a compacted topic here."""
    event = invoke(time, process, value, 0, topic)
    event["value"]["key"] = key
    if tombstone:
        event["value"]["tombstone"] = True
    return [event, ok(time + 0.5, process, value, offset, 0, topic)]


# On compacted topic c: a (k1) at 0 is superseded by b (k1) at 1; c (k2) at 2 and d (k3) at 3 are
# each their key's latest value.
KEYED = keyed(0, "p0", "a", "k1", 0) + keyed(1, "p0", "b", "k1", 1) + keyed(2, "p0", "c", "k2", 2) \
    + keyed(3, "p0", "d", "k3", 3)


def fault(time, name="kill", target="broker-1"):
    return {"time": time, "process": "nemesis", "type": "info", "f": "fault",
            "value": {"name": name, "target": target, "detail": {}}}


def sample(time, epoch, leader, isr, replicas, agree=True, partition=0, topic="t"):
    """``replicas`` maps broker -> (log_end_offset, high_watermark)."""
    return {"time": time, "process": "sampler", "type": "ok", "f": "sample",
            "value": {"topic": topic, "partition": partition, "leader": leader, "leader_epoch": epoch,
                      "isr": isr, "digests_agree_below_hw": agree,
                      "replicas": {str(b): {"log_end_offset": leo, "high_watermark": hw}
                                   for b, (leo, hw) in replicas.items()}}}


def sent(process, values, start_time=0.0, partition=0):
    """Invoke + ok for each value in turn, at offsets 0, 1, 2, ..."""
    events = []
    for offset, value in enumerate(values):
        time = start_time + offset
        events += [invoke(time, process, value, partition), ok(time + 0.5, process, value, offset, partition)]
    return events


ABC = sent("p0", ["a", "b", "c"])

# (name, history, kind, partition, offset, value): each history holds exactly one anomaly.
ONE_ANOMALY = [
    # c1 reads offset 0; c2 starts at position 2 and reads 2; nobody ever reads b at offset 1.
    ("lost-write", ABC + [poll(10, "c1", [(0, "a")], 0), poll(11, "c2", [(2, "c")], 2)],
     "lost-write", "t-0", 1, "b"),
    ("inconsistent-offsets", [invoke(0, "p0", "x"), info(1, "p0", "x"), invoke(2, "p1", "y"), info(3, "p1", "y"),
                              poll(10, "c1", [(0, "x")], 0), poll(11, "c2", [(0, "y")], 0)],
     "inconsistent-offsets", "t-0", 0, None),
    ("duplicate", sent("p0", ["a"]) + [poll(10, "c1", [(0, "a"), (1, "a")], 0)], "duplicate", "t-0", 0, "a"),
    ("non-monotonic-poll", ABC + [poll(10, "c1", [(0, "a"), (1, "b")], 0), poll(11, "c1", [(1, "b"), (2, "c")])],
     "non-monotonic-poll", "t-0", 1, "b"),
    ("non-monotonic-poll: records before the stated position",
     ABC + [poll(10, "c1", [(0, "a"), (1, "b")], 0), poll(11, "c1", [(1, "b"), (2, "c")], 2)],
     "non-monotonic-poll", "t-0", 1, "b"),
    ("poll-skip", ABC + [poll(10, "c1", [(0, "a")], 0), poll(11, "c1", [(2, "c")], 1),
                         poll(12, "c2", [(0, "a"), (1, "b"), (2, "c")], 0)],
     "poll-skip", "t-0", 1, "b"),
    ("poll-skip inside one poll", ABC + [poll(10, "c1", [(0, "a"), (2, "c")], 0),
                                         poll(12, "c2", [(0, "a"), (1, "b"), (2, "c")], 0)],
     "poll-skip", "t-0", 1, "b"),
    ("non-monotonic-send", [invoke(0, "p0", "a"), invoke(1, "p0", "b"), ok(2, "p0", "b", 0), ok(3, "p0", "a", 1),
                            poll(10, "c1", [(0, "b"), (1, "a")], 0)],
     "non-monotonic-send", "t-0", 0, "b"),
    ("aborted-read", [invoke(0, "p0", "a"), fail(1, "p0", "a"), poll(10, "c1", [(0, "a")], 0)],
     "aborted-read", "t-0", 0, "a"),
    ("unseen", sent("p0", ["a", "b"]) + [poll(10, "c1", [(0, "a")], 0)], "unseen", "t-0", 1, "b"),
    # Leader 0 reports HW 1 before and after the poll, in one epoch, yet the poll returned offset 1.
    ("read-above-commit", sent("p0", ["a", "b"]) + [
        sample(5, 1, 0, [0, 1], {0: (2, 1), 1: (2, 1)}), poll(6, "c1", [(0, "a"), (1, "b")], 0),
        sample(7, 1, 0, [0, 1], {0: (2, 1), 1: (2, 1)})],
     "read-above-commit", "t-0", 1, "b"),
    ("multiple-leaders-in-epoch", [sample(1, 3, 0, [0, 1], {0: (5, 5), 1: (5, 5)}),
                                   sample(2, 3, 1, [0, 1], {0: (5, 5), 1: (5, 5)})],
     "multiple-leaders-in-epoch", "t-0", None, None),
    ("leader-not-in-isr", [sample(1, 1, 0, [1], {0: (5, 5), 1: (5, 5)})], "leader-not-in-isr", "t-0", None, None),
    ("hw-above-leo", [sample(1, 1, 0, [0, 1], {0: (5, 5), 1: (4, 5)})], "hw-above-leo", "t-0", 5, None),
    ("hw-moved-back", [sample(1, 2, 0, [0, 1], {0: (5, 5), 1: (5, 5)}),
                       sample(2, 2, 0, [0, 1], {0: (5, 3), 1: (5, 3)})],
     "hw-moved-back", "t-0", 3, None),
    ("replicas-diverge-below-hw", [sample(1, 1, 0, [0, 1], {0: (5, 5), 1: (5, 5)}, agree=False)],
     "replicas-diverge-below-hw", "t-0", None, None),
    # Compacted topic c: a reader from 0 gets b (a was cleaned: fine); another seeks to 3 and reads
    # d; c, k2's latest value, was never read although the log was read past it.
    ("latest-value-lost", KEYED + [poll(10, "c1", [(1, "b")], 0, topic="c"), poll(11, "c2", [(3, "d")], 3, topic="c")],
     "latest-value-lost", "c-0", 2, "c"),
]


@pytest.mark.parametrize("name, history, kind, partition, offset, value", ONE_ANOMALY,
                         ids=[case[0] for case in ONE_ANOMALY])
def test_each_history_shows_exactly_its_anomaly(name, history, kind, partition, offset, value):
    report = check(history, compacted_topics={"c"})
    found = [a for anomalies in report.anomalies.values() for a in anomalies]
    assert [(a.kind, a.topic_partition, a.offset, a.value) for a in found] == [(kind, partition, offset, value)]
    assert report.kinds() == {kind}
    assert report.counts[kind] == 1 and sum(report.counts.values()) == 1
    assert report.valid is (kind == "unseen")
    # File order does not matter: the checker orders events by time.
    assert check(list(reversed(history)), compacted_topics={"c"}).to_json() == report.to_json()


def test_every_kind_has_a_one_anomaly_history():
    assert {case[2] for case in ONE_ANOMALY} == set(ANOMALY_KINDS)


def test_anomaly_details_name_the_other_party():
    inconsistent = check(ONE_ANOMALY[1][1]).of_kind("inconsistent-offsets")[0]
    assert inconsistent.detail["values"] == ["x", "y"]
    duplicate = check(ONE_ANOMALY[2][1]).of_kind("duplicate")[0]
    assert duplicate.detail["offsets"] == [["t-0", 0], ["t-0", 1]]
    skip = check(ONE_ANOMALY[5][1]).of_kind("poll-skip")[0]
    assert skip.detail["process"] == "c1" and skip.detail["skipped"] == [[1, "b"]]
    send = check(ONE_ANOMALY[7][1]).of_kind("non-monotonic-send")[0]
    assert (send.detail["earlier_offset"], send.detail["earlier_value"]) == (1, "a")
    assert check(ONE_ANOMALY[8][1]).of_kind("aborted-read")[0].detail["error"] == "NOT_LEADER_FOR_PARTITION"
    leaders = check(ONE_ANOMALY[11][1]).of_kind("multiple-leaders-in-epoch")[0]
    assert (leaders.detail["leader_epoch"], leaders.detail["leaders"]) == (3, [0, 1])


def test_lost_write_is_also_named_when_its_offset_was_read_with_another_value():
    history = sent("p0", ["a", "b"]) + [poll(10, "c1", [(0, "a"), (1, "z")], 0)]
    report = check(history)
    assert report.kinds() == {"lost-write", "inconsistent-offsets"}
    lost = report.of_kind("lost-write")[0]
    assert (lost.offset, lost.value, lost.detail["seen_there"]) == (1, "b", ["z"])


def test_unseen_fails_the_run_only_when_asked():
    history = ONE_ANOMALY[9][1]
    assert check(history).valid
    assert not check(history, unseen_is_anomaly=True).valid


def test_clean_history_with_indeterminate_and_failed_sends_is_valid():
    history = [
        fault(0.1, "pause", "broker-2"),
        *sent("p0", ["a", "b"]),
        # Indeterminate: timed out, but the write happened; its value is read at offset 2.
        invoke(3, "p0", "c"), info(4, "p0", "c", "GetTimeoutError"),
        # Indeterminate and never written; and one that definitely failed, never read.
        invoke(5, "p1", "d", partition=None), info(6, "p1", "d"),
        invoke(7, "p1", "e", partition=None), fail(8, "p1", "e", "NOT_ENOUGH_REPLICAS"),
        invoke(8.5, "p1", "f", partition=None),  # never completed: the client died
        sample(9, 1, 0, [0, 1], {0: (3, 3), 1: (3, 2)}),
        poll(10, "c1", [(0, "a"), (1, "b")], 0),
        poll(11, "c1", [(2, "c")], 2),
        poll(12, "c1", [], 3),
        sample(13, 1, 0, [0, 1], {0: (3, 3), 1: (3, 3)}),
    ]
    report = check(history)
    assert report.valid and report.kinds() == set(), report.table()
    assert report.stats["sends_indeterminate"] == 3 and report.stats["sends_failed"] == 1
    assert report.stats["sends_ok"] == 2 and report.stats["records_read"] == 3
    assert [f["name"] for f in report.faults] == ["pause"]
    assert report.table().startswith("no anomalies")


def test_read_above_an_earlier_samples_hw_is_fine_when_a_later_sample_covers_it():
    # The HW rose between the first sample and the poll; a later sample shows it covered offset 1.
    history = sent("p0", ["a", "b"]) + [
        sample(5, 1, 0, [0, 1], {0: (2, 1), 1: (2, 1)}), poll(6, "c1", [(0, "a"), (1, "b")], 0),
        sample(7, 1, 0, [0, 1], {0: (2, 2), 1: (2, 2)})]
    assert check(history).valid


def test_no_read_above_commit_is_claimed_across_an_election():
    # Epoch 2's leader starts with a lagging HW; the read may have come from epoch 1's leader.
    history = sent("p0", ["a", "b"]) + [
        sample(5, 1, 0, [0, 1], {0: (2, 1), 1: (2, 1)}), poll(6, "c1", [(0, "a"), (1, "b")], 0),
        sample(7, 2, 1, [1], {1: (2, 1)})]
    assert check(history).kinds() == set()


@pytest.mark.parametrize("position, legitimate", [(0, True), (1, True), (3, False)])
def test_a_seek_makes_a_re_read_legitimate(position, legitimate):
    # c1 reads 0..2, then its position says where it is: a seek to 0 or 1 (or a rebalance that
    # fetched an older committed offset) makes re-reading legitimate; position 3 does not.
    rereads = [(o, v) for o, v in [(0, "a"), (1, "b"), (2, "c")] if o >= min(position, 1)]
    history = ABC + [poll(10, "c1", [(0, "a"), (1, "b"), (2, "c")], 0), poll(11, "c1", rereads, position)]
    report = check(history)
    assert report.valid is legitimate
    assert report.kinds() == (set() if legitimate else {"non-monotonic-poll"})


def test_partitions_are_checked_apart():
    history = (sent("p0", ["a", "b"], partition=0) + sent("p1", ["x", "y"], start_time=5, partition=1)
               + [poll(10, "c1", [(0, "a"), (1, "b")], 0, partition=0),
                  poll(11, "c1", [(0, "x")], 0, partition=1), poll(12, "c1", [(0, "x")], 0, partition=1)])
    report = check(history)
    assert list(report.anomalies) == ["t-1"]
    assert {(a.kind, a.offset) for a in report.anomalies["t-1"]} == {("unseen", 1)}
    assert report.of_kind("unseen")[0].value == "y"


def test_report_renders_as_json_and_table():
    report = check(ONE_ANOMALY[0][1])
    as_json = json.loads(report.to_json())
    assert as_json["valid"] is False and as_json["counts"]["lost-write"] == 1
    assert as_json["anomalies"]["t-0"][0] == {
        "kind": "lost-write", "topic_partition": "t-0", "offset": 1, "value": "b",
        "detail": {"process": "p0", "ack_time": 1.5, "polled_offset_max": 2, "seen_there": []}}
    table = report.table()
    assert "lost-write" in table and "valid: False" in table and "t-0" in table


def test_writer_and_reader_round_trip_every_kind(tmp_path):
    path = tmp_path / "history.jsonl"
    ticks = iter([100.0] + [100.0 + 0.25 * i for i in range(1, 20)])
    record = SimpleNamespace(topic="t", partition=1, offset=8, value=b"p0:17")
    with HistoryWriter(path, clock=lambda: next(ticks)) as writer:
        written = [
            writer.invoke("p0", "t", None, "p0:17"),
            writer.ok("p0", "t", 1, 8, "p0:17"),
            writer.fail("p0", "p0:18", SimpleNamespace(name="NOT_ENOUGH_REPLICAS")),
            writer.info("p0", "p0:19", TimeoutError("no answer")),
            writer.poll("c0", [record, ("t", 1, 9, "p0:19")], {topic_partition_key("t", 1): 8}),
            writer.fault("kill", "broker-2", {"signal": "SIGKILL"}),
            writer.sample("t", 1, 0, 3, [1, 0], {0: {"log_end_offset": 10, "high_watermark": 10},
                                                 1: {"log_end_offset": 10, "high_watermark": 9}}, True, time=0.1),
        ]
    events = list(read_history(path))
    assert events == written
    assert [e["time"] for e in events] == [0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 0.1]
    assert [(e["type"], e["f"]) for e in events] == [("invoke", "send"), ("ok", "send"), ("fail", "send"),
                                                      ("info", "send"), ("ok", "poll"), ("info", "fault"),
                                                      ("ok", "sample")]
    assert events[2]["value"]["error"] == "NOT_ENOUGH_REPLICAS" and events[3]["value"]["error"] == "TimeoutError"
    assert events[4]["value"] == {"records": [["t", 1, 8, "p0:17"], ["t", 1, 9, "p0:19"]],
                                  "positions_before": {"t-1": 8}}
    assert events[6]["value"]["isr"] == [0, 1] and events[6]["value"]["replicas"]["1"]["high_watermark"] == 9
    report = check(events)
    assert report.valid and report.kinds() == set(), report.table()


def test_concurrent_writers_produce_whole_lines_in_each_threads_order(tmp_path):
    path = tmp_path / "history.jsonl"
    threads_count, sends_count = 8, 200
    writer = HistoryWriter(path)

    def produce(thread):
        rng = random.Random(thread)
        for offset in range(sends_count):
            value = f"p{thread}:{offset}"
            writer.invoke(f"p{thread}", "t", thread, value)
            writer.ok(f"p{thread}", "t", thread, offset, value)
            if rng.random() < 0.1:
                writer.sample("t", thread, 0, 1, [0], {0: {"log_end_offset": offset + 1, "high_watermark": offset + 1}},
                              True)
        writer.poll(f"c{thread}", [("t", thread, o, f"p{thread}:{o}") for o in range(sends_count)],
                    {f"t-{thread}": 0})

    threads = [threading.Thread(target=produce, args=(i,)) for i in range(threads_count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    writer.close()
    events = list(read_history(path))
    assert len(events) == writer.events_written
    for thread in range(threads_count):
        acks = [e["value"]["offset"] for e in events if e["process"] == f"p{thread}" and e["type"] == "ok"]
        assert acks == list(range(sends_count))
    report = check(events)
    assert report.valid and report.kinds() == set(), report.table()
    assert report.stats["sends_ok"] == threads_count * sends_count


def test_reader_rejects_torn_and_malformed_lines(tmp_path):
    torn = tmp_path / "torn.jsonl"
    torn.write_text(json.dumps(ok(1, "p0", "a", 0)) + "\n" + '{"time": 2, "proc')
    with pytest.raises(ValueError, match=":2:"):
        list(read_history(torn))
    missing = tmp_path / "missing.jsonl"
    missing.write_text(json.dumps({"time": 1, "process": "p0", "type": "ok", "f": "send",
                                   "value": {"topic": "t", "partition": 0, "value": "a"}}) + "\n")
    with pytest.raises(ValueError, match="offset"):
        list(read_history(missing))


def test_topic_partition_keys_round_trip_through_dashed_topics():
    assert split_topic_partition(topic_partition_key("orders-eu", 12)) == ("orders-eu", 12)
    with pytest.raises(ValueError):
        split_topic_partition("no_partition")


def test_command_line_exits_nonzero_on_an_invalid_history(tmp_path, capsys):
    path = tmp_path / "history.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in ONE_ANOMALY[0][1]))
    assert main([str(path)]) == 1
    assert "lost-write" in capsys.readouterr().out
    assert main([str(path), "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["counts"]["lost-write"] == 1


def test_a_retried_non_idempotent_send_written_twice_is_a_duplicate():
    """The retries=N, enable.idempotence=false case: the first attempt of "a" lands at offset 0 but
    its answer is lost (the request times out), the retry lands it again at 1 and is acknowledged
    there. The producer's history shows one send, acknowledged once; the log holds it twice. With
    an idempotent producer the leader answers the retry with offset 0 and nothing is flagged."""
    written_twice = [invoke(0, "p0", "a"), ok(2, "p0", "a", 1), invoke(3, "p0", "b"), ok(4, "p0", "b", 2),
                     poll(10, "c1", [(0, "a"), (1, "a"), (2, "b")], 0)]
    report = check(written_twice)
    assert not report.valid and report.kinds() == {"duplicate"}
    (duplicate,) = report.of_kind("duplicate")
    assert (duplicate.value, duplicate.detail["offsets"]) == ("a", [["t-0", 0], ["t-0", 1]])
    assert duplicate.detail["acknowledged_offsets"] == [["t-0", 1]]
    answered_with_the_original_offset = [invoke(0, "p0", "a"), ok(2, "p0", "a", 0), invoke(3, "p0", "b"),
                                         ok(4, "p0", "b", 1), poll(10, "c1", [(0, "a"), (1, "b")], 0)]
    assert check(answered_with_the_original_offset).valid


def test_a_duplicate_read_twice_from_one_offset_is_not_a_duplicate():
    """Two consumers (or one after a seek) reading the same offset see one record, not two."""
    history = sent("p0", ["a"]) + [poll(10, "c1", [(0, "a")], 0), poll(11, "c2", [(0, "a")], 0)]
    assert check(history).counts["duplicate"] == 0


def test_a_compacted_log_may_lose_superseded_values_but_not_a_keys_latest():
    # A reader from the beginning after cleaning: a (k1) is gone, its key's later value b is there.
    cleaned = KEYED + [poll(10, "c1", [(1, "b"), (2, "c"), (3, "d")], 0, topic="c")]
    report = check(cleaned, compacted_topics={"c"}, unseen_is_anomaly=True)
    assert report.valid and not report.kinds(), report.table()
    # The same history on a topic not declared compacted: a was lost, and the poll skipped it.
    assert check(cleaned, unseen_is_anomaly=True).kinds() == {"lost-write", "poll-skip"}
    # A cleaned log that lost b, k1's latest value, is caught however the reader got past it.
    broken = KEYED + [poll(10, "c1", [(2, "c"), (3, "d")], 0, topic="c")]
    report = check(broken, compacted_topics={"c"})
    assert [(a.kind, a.offset, a.value, a.detail.get("key")) for a in report.of_kind("latest-value-lost")] \
        == [("latest-value-lost", 1, "b", "k1")]
    assert [a.offset for a in report.of_kind("poll-skip")] == [1] and not report.valid


def test_tombstones_and_indeterminate_sends_supersede_a_keys_earlier_values():
    # k1's a is followed by a tombstone, and the tombstone itself is gone after delete.retention.ms;
    # k2's b is followed by x, whose send timed out but which a poll saw at offset 3.
    history = keyed(0, "p0", "a", "k1", 0) + keyed(1, "p0", "t1", "k1", 1, tombstone=True) \
        + keyed(2, "p0", "b", "k2", 2) + [invoke(3, "p0", "x"), info(4, "p0", "x")]
    history[-2]["value"].update(topic="c", key="k2")
    history.append(poll(10, "c1", [(3, "x")], 0, topic="c"))
    report = check(history, compacted_topics={"c"}, unseen_is_anomaly=True)
    assert report.valid and not report.kinds(), report.table()
    # Without x seen anywhere, b is k2's latest value and its absence is a loss.
    without_x = history[:-3] + [poll(10, "c1", [(4, "y")], 0, topic="c"), invoke(3.5, "p1", "y"), info(3.6, "p1", "y")]
    without_x[-2]["value"].update(topic="c", key="k3")
    assert check(without_x, compacted_topics={"c"}).kinds() >= {"latest-value-lost"}


def test_the_history_writer_records_a_sends_key_and_tombstone(tmp_path):
    writer = HistoryWriter(tmp_path / "h.jsonl")
    writer.invoke("p0", "c", 0, "v1", key="k1")
    writer.invoke("p0", "c", 0, "v2", key=b"k1", tombstone=True)
    writer.invoke("p0", "t", None, "v3")
    writer.close()
    values = [event["value"] for event in read_history(tmp_path / "h.jsonl")]
    assert values == [{"topic": "c", "partition": 0, "value": "v1", "key": "k1"},
                      {"topic": "c", "partition": 0, "value": "v2", "key": "k1", "tombstone": True},
                      {"topic": "t", "partition": None, "value": "v3"}]


# Topic r under retention.ms=10000 (10 s of history time): a at 0 (sent at 0 s), b at 1 (sent at
# 30 s), c at 2 (sent at 35 s). A read at 40 s passes all three.
RETAINED = [invoke(0, "p0", "a", topic="r"), ok(0.5, "p0", "a", 0, topic="r"),
            invoke(30, "p0", "b", topic="r"), ok(30.5, "p0", "b", 1, topic="r"),
            invoke(35, "p0", "c", topic="r"), ok(35.5, "p0", "c", 2, topic="r")]


def test_retention_lets_a_value_older_than_retention_ms_vanish():
    # The log start moved to 1 (a's segment deleted: a was 40 s old at the read).
    history = RETAINED + [poll(40, "reader", [(1, "b"), (2, "c")], 1, topic="r")]
    report = check(history, unseen_is_anomaly=True, retention_ms={"r": 10_000})
    assert report.valid and not report.kinds(), report.table()
    # Without retention the same history is a lost write: the read passed offset 0.
    assert check(history, unseen_is_anomaly=True).kinds() == {"lost-write"}


def test_retention_never_excuses_a_value_younger_than_retention_ms():
    # The log start moved to 2: b (sent at 30 s, 10 s old at the read) had to be kept.
    history = RETAINED + [poll(40, "reader", [(2, "c")], 2, topic="r")]
    report = check(history, unseen_is_anomaly=True, retention_ms={"r": 10_000})
    assert [(a.kind, a.offset, a.value) for a in report.of_kind("lost-write")] == [("lost-write", 1, "b")]
    assert not report.valid


def test_retention_judges_a_value_by_the_latest_read_that_passed_it():
    # An early read at 12 s skipped a (then 12 s old: fine); b was never read though a read at 40 s
    # started above it, and b was only 10 s old then.
    history = RETAINED + [poll(12, "c1", [], 1, topic="r"), poll(40, "c2", [], 3, topic="r")]
    report = check(history, unseen_is_anomaly=True, retention_ms={"r": 10_000})
    assert {(a.kind, a.value) for anomalies in report.anomalies.values() for a in anomalies} == \
        {("unseen", "b"), ("unseen", "c")}
    # Had the empty read come 50 s in, all three were old enough to be gone.
    late = RETAINED + [poll(50, "c2", [], 3, topic="r")]
    assert check(late, unseen_is_anomaly=True, retention_ms={"r": 10_000}).valid


def test_retention_applies_to_its_topics_only():
    other = [invoke(0, "p0", "x"), ok(0.5, "p0", "x", 0), invoke(1, "p0", "y"), ok(1.5, "p0", "y", 1),
             poll(40, "reader", [(1, "y")], 1)]
    report = check(RETAINED + other + [poll(40, "reader", [(1, "b"), (2, "c")], 1, topic="r")],
                   retention_ms={"r": 10_000})
    assert [(a.kind, a.topic_partition, a.value) for a in report.of_kind("lost-write")] == [("lost-write", "t-0", "x")]


def test_the_command_line_takes_a_topics_retention(tmp_path, capsys):
    path = tmp_path / "history.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in RETAINED + [poll(40, "r", [(1, "b"), (2, "c")], 1, topic="r")]))
    assert main([str(path), "--unseen-is-anomaly"]) == 1
    assert main([str(path), "--unseen-is-anomaly", "--retention", "r=10000"]) == 0
    with pytest.raises(SystemExit):
        main([str(path), "--retention", "r"])
    capsys.readouterr()
