"""A fetcher left with no partitions is kept, idle, for the next partitions of its leader.

Kafka stops an idle fetcher thread at once (``shutdownIdleFetcherThreads``) and starts a new one
in a millisecond. Here a fetcher is a Ray actor, a process of its own: starting one costs about a
second of CPU on a busy 2-core host, which a topic created to be written at once with acks=all
used to wait for each time. The broker keeps an idle fetcher for
``raykafka.replica.fetcher.idle.keep.ms``, following nothing, and stops it after that.
"""
from __future__ import annotations

import pytest
import ray

from orchestration.admin.wait import wait_until
from tests.support.clusters import running_cluster

KEEP_MS = 20_000
CONFIG = {"raykafka.replica.fetcher.idle.keep.ms": str(KEEP_MS), "auto.leader.rebalance.enable": "false",
          "replica.fetch.wait.max.ms": "100"}
FOLLOWER, LEADER = 1, 0


@pytest.fixture(scope="module")
def cluster(ray_session, tmp_path_factory):
    with running_cluster(tmp_path_factory, CONFIG, brokers=2) as started:
        yield started


def follower_fetchers(cluster) -> dict:
    return ray.get(cluster.broker(FOLLOWER).fetchers.remote(), timeout=30)


def write_and_replicate(cluster, topic: str) -> None:
    cluster.create_topic(topic, assignment=[[LEADER, FOLLOWER]], config={"min.insync.replicas": "2"})
    producer = cluster.producer({"acks": "all"})
    for i in range(20):
        producer.send(topic, value=f"{topic}-{i}".encode(), partition=0)
    producer.flush(timeout=60)
    wait_until(lambda: cluster.describe_topic(topic)[0].high_watermark == 20, 60, f"{topic}'s 20 records replicated")


def test_an_idle_fetcher_is_kept_following_nothing_then_reused_then_stopped(cluster):
    write_and_replicate(cluster, "first")
    fetcher = follower_fetchers(cluster)[(LEADER, 0)]["actor"]
    assert ray.get(fetcher.ping.remote(), timeout=30)["partitions"] == 1

    cluster.delete_topic("first")
    wait_until(lambda: (LEADER, 0) not in follower_fetchers(cluster), 60, "the follower's fetcher to go idle")
    # Kept, not killed: it answers, and follows nothing (it sends the leader no fetches for "first").
    assert ray.get(fetcher.ping.remote(), timeout=30)["partitions"] == 0

    write_and_replicate(cluster, "second")
    reused = follower_fetchers(cluster)[(LEADER, 0)]["actor"]
    assert reused._actor_id == fetcher._actor_id, "a new fetcher was started instead of the idle one"
    assert ray.get(reused.ping.remote(), timeout=30)["partitions"] == 1

    # Idle again, it is stopped once it has been kept for the configured time.
    cluster.delete_topic("second")
    wait_until(lambda: (LEADER, 0) not in follower_fetchers(cluster), 60, "the follower's fetcher to go idle again")

    def stopped() -> bool:
        try:
            ray.get(fetcher.ping.remote(), timeout=10)
            return False
        except ray.exceptions.RayActorError:
            return True
    wait_until(stopped, KEEP_MS / 1000 + 60, "the idle fetcher to be stopped after it was kept")
