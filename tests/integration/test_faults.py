"""Fault primitives on a real cluster: a paused leader (a long GC pause) is fenced after the
broker session timeout, its partitions move, and after resuming it rejoins as a follower and
catches up; a broker restarted with a wiped disk rejoins as a new replica and catches up; both
faults are written to the history, and the checker finds no anomaly in the run."""
from __future__ import annotations

import pytest

from orchestration.checker import check
from orchestration.cluster import wait_until
from orchestration.faults import Faults
from orchestration.history import HistoryWriter, read_history
from tests.support.clusters import running_cluster

pytestmark = [pytest.mark.integration, pytest.mark.chaos]

CONFIG = {"broker.session.timeout.ms": "4000", "broker.heartbeat.interval.ms": "500",
          "replica.lag.time.max.ms": "3000", "replica.fetch.wait.max.ms": "100",
          "auto.leader.rebalance.enable": "false"}


@pytest.fixture(scope="module")
def cluster(ray_session, tmp_path_factory):
    with running_cluster(tmp_path_factory, CONFIG) as started:
        yield started


def produce_and_record(cluster, history: HistoryWriter, topic: str, first: int, count: int) -> None:
    producer = cluster.producer({"acks": "all", "retries": "1000", "linger.ms": "5"})
    sends = []
    for i in range(first, first + count):
        value = f"v{i}"
        history.invoke("producer", topic, 0, value)
        sends.append((value, producer.send(topic, value=value.encode(), partition=0)))
    producer.flush(timeout=120)
    for value, future in sends:
        try:
            metadata = future.result(timeout=1)
        except Exception as exc:
            history.info("producer", value, exc)  # may or may not have been written
            continue
        history.ok("producer", topic, metadata.partition, metadata.offset, value)
    producer.close()


def read_everything(cluster, history: HistoryWriter, topic: str) -> None:
    consumer = cluster.consumer({"auto.offset.reset": "earliest"})
    consumer.assign([(topic, 0)])
    end = cluster.describe_topic(topic)[0].high_watermark
    for _ in range(400):  # bounded
        position = consumer.position((topic, 0))
        if position >= end:
            break
        records = consumer.poll(timeout_ms=200)
        if records:
            history.poll("consumer", records, {f"{topic}-0": position})
    consumer.close()


def test_paused_leader_and_lost_disk_heal_without_anomalies(cluster, tmp_path):
    path = tmp_path / "history.jsonl"
    cluster.create_topic("faults", partitions=1, replication_factor=3, config={"min.insync.replicas": "2"})
    with HistoryWriter(str(path)) as history:
        faults = Faults(cluster, history)
        produce_and_record(cluster, history, "faults", 0, 500)

        leader = cluster.describe_topic("faults")[0].leader
        faults.pause("broker", leader)
        wait_until(lambda: cluster.describe_topic("faults")[0].leader not in (leader, -1), 30,
                   "the paused leader to be fenced and replaced")
        produce_and_record(cluster, history, "faults", 500, 500)
        faults.resume("broker", leader)
        wait_until(lambda: len(cluster.describe_topic("faults")[0].isr) == 3, 60,
                   "the resumed broker back in the ISR")

        follower = next(r for r in cluster.describe_topic("faults")[0].replicas
                        if r != cluster.describe_topic("faults")[0].leader)
        faults.lose_disk(follower)
        produce_and_record(cluster, history, "faults", 1000, 500)
        wait_until(lambda: len(cluster.describe_topic("faults")[0].isr) == 3, 60,
                   "the wiped replica caught up and back in the ISR")
        digests = cluster.replica_digests("faults", 0, cluster.describe_topic("faults")[0].high_watermark)
        assert len(digests) == 3 and len({tuple(d) for d in digests.values()}) == 1, "replicas agree below HW"
        read_everything(cluster, history, "faults")

    events = list(read_history(str(path)))
    assert [e["value"]["name"] for e in events if e["f"] == "fault"] == ["pause", "resume", "lose-disk"]
    report = check(events, unseen_is_anomaly=True)
    assert report.valid, report.table()
