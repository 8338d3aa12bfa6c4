"""Apache Kafka as the throughput benchmark's peer, without a JVM: which Kafka measurement each
point is set beside, that a row carries Kafka's figures and raykafka ÷ Kafka only where Kafka did
the point, that Kafka's perf tools' summary lines (as Kafka 4.4 prints them) parse into figures,
that a Kafka catch-up is timed off its follower's log growing on disk, and that the picture draws
a ratio bar only where the peer did the point."""
from __future__ import annotations

import types

import pytest

from benchmarks import _kafka_peer as kafka_peer
from benchmarks import _perf_test as perf_test
from benchmarks import _profiles as profiles
from benchmarks import _report as report
from benchmarks.throughput import Runner

# What kafka-producer-perf-test and kafka-consumer-perf-test 4.4.0 printed against a 3-node Kafka.
PRODUCER_OUT = ("1000 records sent, 878.734622 records/sec (0.86 MB/sec), 330.86 ms avg latency, 778.00 ms max "
                "latency.\n"
                "20000 records sent, 11918.951132 records/sec (11.64 MB/sec), 216.92 ms avg latency, 697.00 ms max "
                "latency, 241 ms 50th, 335 ms 95th, 342 ms 99th, 348 ms 99.9th.\n")
CONSUMER_OUT = ("start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, "
                "rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec\n"
                "2026-11-28 15:37:39:046, 2026-11-28 15:37:41:150, 0.9766, 0.4641, 1000, 475.2852, 1908, 196, "
                "4.9825, 5102.0408\n")


def test_each_point_is_set_beside_the_kafka_measurement_of_its_shape():
    produce_rf3 = profiles.Point("produce", "python", 8, 1024, "all", 3)
    assert kafka_peer.peer_key(produce_rf3) == ("produce", 8, 1024, "all", 3)
    for op in ("consume", "consume-batches", "consume-arrow", "fetch"):
        assert kafka_peer.peer_key(profiles.Point(op, "python", 1, 100)) == ("consume", 1, 100, "-", 1)
    assert kafka_peer.peer_key(profiles.Point("catchup", "replica", 1, 1024, "1", 2)) == ("catchup", 1, 1024, "1", 2)
    assert kafka_peer.kafka_plan(profiles.PROFILES["smoke"]) == {
        (1, 1024, 1): {("produce", "1"), ("consume", "-")}, (1, 1024, 3): {("produce", "all")}}
    default = kafka_peer.kafka_plan(profiles.PROFILES["default"])
    assert default[(64, 1024, 3)] == {("produce", "all")}
    assert default[(1, 1024, 1)] == {("produce", "0"), ("produce", "1"), ("produce", "all"), ("consume", "-")}


def test_perf_tests_are_in_every_profile_and_follow_the_filters():
    assert profiles.PROFILES["smoke"].perf_tests == (profiles.PerfTest(1, 1024, 1, "1"),)
    default = profiles.PROFILES["default"]
    assert {(t.replication_factor, t.acks) for t in default.perf_tests} == {(1, "1"), (3, "all")}
    assert profiles.select(default, replication_factors={3}).perf_tests == (
        profiles.PerfTest(8, 1024, 3, "all"),)
    assert profiles.select(default, ops={"produce"}).perf_tests == ()
    assert profiles.select(default, ops={profiles.PERF_TEST_OP}).perf_tests == default.perf_tests
    assert profiles.select(default, ops={profiles.PERF_TEST_OP}).points == ()


def _row(runner: Runner, point: profiles.Point) -> dict:
    probe = types.SimpleNamespace(cpu_seconds=0.1, rss_peak_bytes=1, process_count=1)
    return runner.row(point, {"records": 1000, "seconds": 1.0}, probe, expected=1000)


def test_a_row_carries_kafka_and_the_ratio_to_it_only_where_kafka_did_the_point():
    runner = Runner(profiles.PROFILES["smoke"], display=types.SimpleNamespace(done=lambda line: None), out=print)
    runner.ceilings = types.SimpleNamespace(mb_per_s=lambda *args: 500.0)
    figures = {"records": 1000, "seconds": 0.5, "mb_per_s": 2.048, "records_per_s": 2000.0,
               "cpu_s_per_gb": 10.0, "rss_peak_mb": 900.0, "replication_factor": 1}
    runner.kafka[("produce", 1, 1024, "1", 1)] = figures
    produced = _row(runner, profiles.Point("produce", "confluent", 1, 1024, "1", 1))
    assert produced["kafka"] == figures
    assert produced["ratios"]["to_kafka"] == pytest.approx(1.024 / 2.048)
    replicated = _row(runner, profiles.Point("produce", "confluent", 1, 1024, "1", 3))
    assert "kafka" not in replicated and "to_kafka" not in replicated["ratios"]
    line = report.table([produced, replicated]).splitlines()
    assert len(line[0]) == len(line[1]) == len(line[2])
    assert "0.50" in line[1] and "0.50" not in line[2]


def test_the_perf_tools_summaries_parse_into_figures():
    producer = perf_test.parse_producer(PRODUCER_OUT)  # the last total, with percentiles
    assert producer == {"records": 20000, "records_per_s": 11918.951132, "mib_per_s": 11.64,
                        "latency_avg_ms": 216.92, "latency_max_ms": 697.0, "latency_p50_ms": 241.0,
                        "latency_p95_ms": 335.0, "latency_p99_ms": 342.0, "latency_p999_ms": 348.0}
    consumer = perf_test.parse_consumer("[main] INFO org.apache.kafka.tools.ConsumerPerformance - Starting\n"
                                        + CONSUMER_OUT)
    assert consumer == {"mib": 0.9766, "mib_per_s": 0.4641, "records": 1000, "records_per_s": 475.2852,
                        "rebalance_ms": 1908, "fetch_ms": 196, "fetch_mib_per_s": 4.9825,
                        "fetch_records_per_s": 5102.0408}
    with pytest.raises(perf_test.PerfTestFailed):
        perf_test.parse_producer("Exception in thread main\n")
    with pytest.raises(perf_test.PerfTestFailed):
        perf_test.parse_consumer("WARN could not connect\n")


def test_perf_tests_pair_into_one_row_with_raykafka_over_kafka():
    test = profiles.PerfTest(1, 1024)
    ours = {"producer": perf_test.parse_producer(PRODUCER_OUT), "consumer": perf_test.parse_consumer(CONSUMER_OUT)}
    theirs = {"producer": dict(ours["producer"], records_per_s=23837.902264),
              "consumer": dict(ours["consumer"], fetch_records_per_s=2551.0204)}
    rows = kafka_peer.pair_perf_tests([kafka_peer.perf_test_entry("raykafka", test, ours),
                                       kafka_peer.perf_test_entry("kafka", test, theirs)])
    assert len(rows) == 1 and rows[0]["label"] == test.label
    assert rows[0]["ratios"]["producer_records_per_s"] == pytest.approx(0.5)
    assert rows[0]["ratios"]["consumer_fetch_records_per_s"] == pytest.approx(2.0)
    assert rows[0]["ratios"]["consumer_records_per_s"] == pytest.approx(1.0)
    assert len(report.perf_table(rows).splitlines()) == 4  # header, raykafka, kafka, the ratios
    failed = kafka_peer.pair_perf_tests([kafka_peer.perf_test_entry("raykafka", test, ours),
                                         kafka_peer.perf_test_entry("kafka", test, {"error": "no summary"})])
    assert "ratios" not in failed[0]
    assert len(report.perf_table(failed).splitlines()) == 3  # the failed side has no line of figures


def test_the_picture_draws_a_ratio_only_where_the_peer_did_the_point(tmp_path):
    rows = [{"label": "produce a", "op": "produce", "ratios": {"to_kafka": 0.5, "to_tansu": 1.5}},
            {"label": "produce b", "op": "produce", "ratios": {"to_tansu": 0.9}},
            {"label": "catch-up", "op": "catchup", "ratios": {}},
            {"label": "poll_arrow", "op": "consume-arrow", "ratios": {"to_kafka": 2.0}}]
    perf = [{"label": "perf-test p=1", "ratios": {"producer_records_per_s": 0.25}}]
    panels = dict(report.ratio_panels(rows, perf))
    assert panels["produce"] == [("produce a", 0.5, 1.5), ("produce b", None, 0.9)]
    assert panels["follower catch-up"] == [("catch-up", None, None)]
    assert panels["consume"] == [("poll_arrow", 2.0, None)]
    assert panels["kafka-producer-perf-test, records/s"] == [("perf-test p=1", 0.25, None)]
    assert panels["kafka-consumer-perf-test, records/s"] == [("perf-test p=1", None, None)]
    path = report.draw_ratios(str(tmp_path / "ratios.png"), rows, perf, "title")
    assert (tmp_path / "ratios.png").stat().st_size > 0 and path.endswith("ratios.png")


def test_a_kafka_catch_up_is_timed_from_the_first_growth_seen_to_the_whole_log(tmp_path):
    growth = kafka_peer.LogGrowth(tmp_path, "t", target=1000)
    growth.samples = [(10.0, 0), (10.5, 0), (11.0, 200), (11.5, 700), (12.0, 1000), (12.5, 1000)]
    fraction, seconds, coarse = growth.timing()
    assert fraction == pytest.approx(0.8) and seconds == pytest.approx(1.0)  # 800 bytes from 11.0 to 12.0
    assert not coarse
    growth.samples = [(10.0, 0), (10.5, 0), (10.51, 1000)]  # whole at the first growth seen
    fraction, seconds, coarse = growth.timing()
    assert fraction == 1.0 and seconds == pytest.approx(0.01) and coarse  # the whole copy, over that interval
    growth.samples = [(10.0, 0), (10.5, 300)]  # never whole
    assert growth.timing() is None
    growth.samples = [(10.0, 0), (10.5, 0)]  # never grew
    assert growth.timing() is None
    # The sampler reads the segments of the topic's partitions only, and stops once the log is whole.
    for name in ("t-0", "t-1", "tx-0", "t-x"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "00000000000000000000.log").write_bytes(b"x" * 500)
    (tmp_path / "t-0" / "00000000000000000000.index").write_bytes(b"x" * 4096)
    sampler = kafka_peer.LogGrowth(tmp_path, "t", target=1000).start()
    sampler.wait(10)
    assert sampler.samples[-1][1] == 1000 and len(sampler.samples) == 1


def test_a_kafka_catch_up_counts_the_cpu_of_the_copy_only(tmp_path):
    """CPU is read at the first growth seen and at the whole log seen; what the restart spent
    before the copy is not the copy's."""
    (tmp_path / "t-0").mkdir()
    segment = tmp_path / "t-0" / "00000000000000000000.log"
    segment.write_bytes(b"")
    readings = iter([5.0, 7.5])  # seconds of CPU at the growth, then at the whole log
    sampler = kafka_peer.LogGrowth(tmp_path, "t", target=1000, cpu=lambda: next(readings)).start()
    deadline = 100
    while not sampler.samples and deadline:  # bounded: until its first look at the empty log
        deadline -= 1
        sampler._stop.wait(0.05)
    segment.write_bytes(b"x" * 400)
    while len(sampler._cpu_marks) < 1 and deadline:  # bounded: until it has seen the growth
        deadline -= 1
        sampler._stop.wait(0.05)
    segment.write_bytes(b"x" * 1000)
    sampler.wait(10)
    assert sampler.cpu_seconds == pytest.approx(2.5)
    assert sampler.timing()[2] is False
