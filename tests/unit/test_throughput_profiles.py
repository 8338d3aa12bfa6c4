"""The throughput benchmark's profiles and filters: each profile covers what its help promises,
filters narrow it as documented, a result row prints as one table line, and a bare fetch is set
beside Ray call for call (no Ray, no brokers)."""
from __future__ import annotations

import os
import types

import psutil
import pytest

from benchmarks import _profiles as profiles
from benchmarks import _report as report
from benchmarks._probe import BrokerProbe
from benchmarks.throughput import Runner, call_bytes, catch_up_records, consumed_records, tansu_plan


@pytest.mark.parametrize("name", ["default", "full"])
def test_every_dimension_is_covered_at_least_once(name):
    points = profiles.PROFILES[name].points
    assert {p.op for p in points} == set(profiles.OPS)
    assert {p.client for p in points if p.op != "catchup"} == set(profiles.CLIENTS)
    assert {p.partitions for p in points} == set(profiles.PARTITIONS)
    assert {p.record_bytes for p in points} == set(profiles.SIZES)
    assert {p.acks for p in points if p.op == "produce"} == set(profiles.ACKS)
    assert {p.replication_factor for p in points if p.op == "produce"} == {1, 3}
    for op in profiles.OPS:  # every operation at every partition count and record size
        assert {p.partitions for p in points if p.op == op} == set(profiles.PARTITIONS)
        assert {p.record_bytes for p in points if p.op == op} == set(profiles.SIZES)
    assert len(set(points)) == len(points), "a point measured twice"


def test_the_full_profile_is_the_cross_product():
    points = profiles.PROFILES["full"].points
    per_cell = len(profiles.CLIENTS) * len(profiles.PARTITIONS) * len(profiles.SIZES)
    assert sum(p.op == "produce" for p in points) == per_cell * 5  # acks 0/1/all at RF=1, 1/all at RF=3
    assert sum(p.op == "consume" for p in points) == per_cell
    assert sum(p.op == "catchup" for p in points) == len(profiles.PARTITIONS) * len(profiles.SIZES)


def test_smoke_has_each_kind_of_point_and_its_tansu_ceilings():
    smoke = profiles.PROFILES["smoke"]
    assert {(p.op, p.client) for p in smoke.points} == {
        ("produce", "python"), ("produce", "confluent"), ("consume", "python"), ("consume", "confluent"),
        ("consume-batches", "python"), ("consume-arrow", "python"), ("fetch", "python"),
        ("catchup", "replica")}
    assert tansu_plan(smoke) == {(1, 1024): {("produce", "1"), ("produce", "all"), ("consume", "-")}}


def test_filters_narrow_the_profile_and_keep_catch_up_client_free():
    default = profiles.PROFILES["default"]
    chosen = profiles.select(default, ops={"produce", "catchup"}, clients={"confluent"}, partitions={1},
                             sizes={1024}, acks={"all"}, megabytes=2)
    assert chosen.megabytes == 2
    assert {(p.op, p.client, p.acks, p.replication_factor) for p in chosen.points} == {
        ("produce", "confluent", "all", 1), ("produce", "confluent", "all", 3), ("catchup", "replica", "1", 2)}
    assert profiles.select(default, sizes={7}).points == ()


@pytest.mark.parametrize("text,expected", [("100", 100), ("100B", 100), ("1KiB", 1024), ("1k", 1024),
                                           ("10KiB", 10240)])
def test_sizes_parse(text, expected):
    assert profiles.parse_size(text) == expected


def test_records_per_point_are_bounded():
    default = profiles.PROFILES["default"]
    assert profiles.records_for(default, 10240) == int(default.megabytes * profiles.MIB) // 10240
    assert profiles.records_for(default, 100) == default.records_max


def test_a_ceiling_moves_what_one_call_of_the_point_carries_at_most():
    produce = profiles.Point("produce", "python", 8, 1024, "1", 1)
    consume = profiles.Point("consume", "python", 1, 1024)
    catch_up = profiles.Point("catchup", "replica", 64, 1024, "1", 2)
    assert call_bytes(produce, 50_000_000) == 1_000_000
    assert call_bytes(produce, 1000) == 1000
    assert call_bytes(consume, 50_000_000) == 10_485_760
    # The followers fetch with the consumer's limits: 10 MiB per partition, 50 MiB per request.
    assert call_bytes(catch_up, 60_000_000) == 52_428_800
    assert call_bytes(profiles.Point("catchup", "replica", 1, 1024, "1", 2), 50_000_000) == 10_485_760


def test_a_row_prints_as_one_line_under_the_header():
    row = {"label": "produce RF=1 acks=1 python p=1 1KiB", "records": 1000, "mb_per_s": 12.5,
           "records_per_s": 12207.0, "ceilings": {"ray_bytes_mb_per_s": 900.0, "ray_numpy_mb_per_s": 1200.0},
           "ratios": {"to_ray_bytes": 0.014, "to_ray_numpy": 0.01}, "broker_cpu_s_per_gb": 80.0,
           "broker_rss_peak_mb": 700.0}
    lines = report.table([row]).splitlines()
    assert len(lines) == 2 and lines[1].startswith(row["label"])
    assert len(lines[0]) == len(lines[1])


def test_the_probe_counts_cpu_and_memory_of_the_processes_it_is_given():
    with BrokerProbe(lambda: [os.getpid()]) as probe:
        work = sum(range(3_000_000))  # some CPU work of this process
    assert work > 0
    assert probe.cpu_seconds > 0
    assert probe.rss_peak_bytes >= psutil.Process().memory_info().rss // 2
    assert probe.process_count == 1


def test_the_probe_splits_memory_into_heap_files_and_shared_memory():
    import mmap
    shared = mmap.mmap(-1, 32 * 1024 * 1024)  # anonymous shared memory, as Ray's object store is
    with BrokerProbe(lambda: [os.getpid()]) as probe:
        shared.write(b"x" * len(shared))  # touched: it counts in this process's RSS, as shmem
    shared.close()
    _, kinds = probe.rss_kinds_series[-1]
    assert set(kinds) == {"anon", "file", "shmem"}
    assert kinds["anon"] > 0 and kinds["shmem"] >= 32 * 1024 * 1024
    assert sum(kinds.values()) <= probe.rss_series[-1][1] * 1.01 + 4096


def test_a_catch_up_copies_the_same_backlog_at_every_partition_count_of_its_record_size():
    default = profiles.PROFILES["default"]
    per_point = profiles.records_for(default, 1024)
    # At 1 partition and 1 KiB the Python consume reads what acks 0, 1 and all wrote at RF=1; at 8, one point's.
    assert consumed_records(default, profiles.Point("catchup", "replica", 1, 1024, "1", 2)) == 3 * per_point
    assert consumed_records(default, profiles.Point("catchup", "replica", 8, 1024, "1", 2)) == per_point
    # The catch-ups of 1 KiB records at 1, 8 and 64 partitions all copy the largest of those.
    for partitions in (1, 8, 64):
        point = profiles.Point("catchup", "replica", partitions, 1024, "1", 2)
        assert point in default.points
        assert catch_up_records(default, point) == 3 * per_point
    # A run with no produce point fills the topic with one point's worth, and the catch-up copies as much.
    narrowed = profiles.select(default, ops={"consume", "catchup"}, partitions={1}, sizes={1024})
    assert catch_up_records(narrowed, profiles.Point("catchup", "replica", 1, 1024, "1", 2)) == per_point


def test_each_point_starts_once_the_topic_is_fully_replicated(monkeypatch):
    """A point's clock starts only when every replica holds what the points before it wrote: an
    acks=all point after an acks=1 one would otherwise wait for that backlog's replication and
    report it as its own slowness (and its CPU as its own)."""
    import contextlib
    from types import SimpleNamespace

    from benchmarks import _python_api as api
    from benchmarks import _wire as wire
    from benchmarks import throughput

    events: list[str] = []

    class BehindCluster:
        """The followers hold everything only from the third look on."""
        bootstrap_servers = "unused"
        looks = 0

        def describe_topic(self, topic):
            self.looks += 1
            events.append("describe")
            high_watermark = 10 if self.looks >= 3 else 5
            return [SimpleNamespace(replicas=[0, 1, 2], isr=[0, 1, 2], high_watermark=high_watermark,
                                    log_end_offset=10)]

        def delete_topic(self, topic):
            pass

    def produce(cluster, topic, partitions, records, size, acks, progress):
        events.append(f"produce acks={acks}")
        return {"records": records, "failed": 0, "seconds": 1.0}

    monkeypatch.setattr(api, "create_topic", lambda *args: None)
    monkeypatch.setattr(api, "produce", produce)
    monkeypatch.setattr(wire, "first_acknowledged_writes", lambda *args: events.append("first writes") or 0.5)
    display = SimpleNamespace(step=lambda *a: None, detail=lambda *a: None, say=lambda *a: None, done=lambda *a: None)
    runner = throughput.Runner(profiles.PROFILES["smoke"], display, print)
    monkeypatch.setattr(runner, "probe", lambda pids: contextlib.nullcontext(SimpleNamespace()))
    monkeypatch.setattr(runner, "row", lambda *args, **kwargs: None)
    points = [profiles.Point("produce", "python", 1, 1024, acks, 3) for acks in ("1", "all")]
    runner.run_group(BehindCluster(), points)
    first_acks_all = events.index("produce acks=all")
    # The third look is the first to find the followers caught up: no point may start before it.
    assert events[:first_acks_all].count("describe") >= 3, f"acks=all started before the followers caught up: {events}"
    # A replicated topic gets its first acks=all writes (every follower fetching) before any point.
    assert events.index("first writes") < events.index("produce acks=1"), events


class _Ceilings:
    """Ray's ceiling as 500 MB/s at any size, remembering the sizes asked for."""

    def __init__(self) -> None:
        self.sizes: list[int] = []

    def mb_per_s(self, direction: str, kind: str, size: int) -> float:
        self.sizes.append(size)
        return 500.0


def test_a_bare_fetch_is_set_beside_ray_moving_the_payload_its_calls_carried():
    # 10 calls of whole batches: 994,000 bytes each (a 1 MiB fetch filled to its last whole batch),
    # holding 960 records of 1 KiB each, in one second.
    runner = Runner(profiles.PROFILES["smoke"], display=types.SimpleNamespace(done=lambda line: None), out=print)
    runner.ceilings = _Ceilings()
    probe = types.SimpleNamespace(cpu_seconds=0.1, rss_peak_bytes=1, process_count=1)
    point = profiles.Point("fetch", "python", 1, 1024, "-", 1)
    row = runner.row(point, {"records": 9600, "seconds": 1.0, "bytes": 9_940_000, "calls": 10}, probe,
                     expected=9600)
    assert runner.ceilings.sizes == [994_000, 994_000]
    assert row["call_bytes"] == 994_000
    assert row["payload_mb_per_s"] == pytest.approx(9.94)
    assert row["ratios"]["to_ray_numpy"] == pytest.approx(9.94 / 500)
    assert row["mb_per_s"] == pytest.approx(9600 * 1024 / 1e6)  # the record values, as for every point
