"""Coordinator failover time after a long history of offset commits, with the log cleaner on and off
in one run.

For each mode (``log.cleaner.enable`` true, then false) a 3-broker cluster is started and a few
groups commit offsets through confluent-kafka over raykafka's Kafka listener until
``__consumer_offsets`` holds ``--commits`` commit records (each commit request carries every
partition of a 100-partition topic). With the cleaner on, the run waits until the cleaner has
compacted the offsets partitions (their bytes on disk stop shrinking); then one group gets a live
member, and once it is Stable, its coordinator actor is killed (Ray restarts it, and it reloads its
``__consumer_offsets`` partitions). Measured: seconds from the kill until the group is Stable again
and every group's committed offsets read back exactly. Also printed: the offsets partitions' bytes
on disk and how long the commits took. Prints a table and saves JSON; asserts nothing.

    python benchmarks/coordinator_failover.py [--commits 1000000] [--out benchmarks/results/coordinator_failover.json]
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import uuid

import ray

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks._common import default_out, save_results  # noqa: E402
from orchestration import Cluster  # noqa: E402
from orchestration.admin.wait import wait_until  # noqa: E402

TOPIC = "committed"
TOPIC_PARTITIONS = 100
GROUPS = [f"group-{i}" for i in range(4)]
LIVE_GROUP = GROUPS[0]
OFFSETS_PARTITIONS = 5
# Kafka's defaults, but for the offsets topic's segment size (100 MiB by default, so that a short
# run would leave its whole history in the active segment, which no cleaner touches), the number
# of offsets partitions (5, not 50, so that three brokers on two cores start quickly) and the
# cleaner's backoff (15 s by default).
BASE_CONFIG = {"offsets.topic.segment.bytes": str(1024 * 1024), "offsets.topic.num.partitions": str(OFFSETS_PARTITIONS),
               "log.cleaner.backoff.ms": "1000"}
SETTLE_S = 10  # the offsets partitions' bytes unchanged this long: the cleaner has caught up
SETTLE_TIMEOUT_S = 600


def offsets_bytes(cluster: Cluster) -> int:
    total = 0
    for broker_id in cluster.broker_ids:
        root = cluster.broker_log_dir(broker_id)
        for partition in range(OFFSETS_PARTITIONS):
            directory = os.path.join(root, f"__consumer_offsets-{partition}")
            for name in os.listdir(directory) if os.path.isdir(directory) else ():
                try:
                    total += os.path.getsize(os.path.join(directory, name))
                except FileNotFoundError:
                    pass
    return total


def commit_history(bootstrap: str, commits: int) -> dict:
    """``commits`` commit records over GROUPS, each request committing every partition of TOPIC
    at the next offset; returns the last offsets committed per group and the time it took."""
    from confluent_kafka import Consumer, TopicPartition
    failures: list[str] = []

    def report(error, _partitions):
        if error is not None:
            failures.append(str(error))
    consumers = {group: Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
                                  "on_commit": report})
                 for group in GROUPS}
    requests = max(1, commits // TOPIC_PARTITIONS)
    started = time.monotonic()
    last: dict[str, int] = {}
    for i in range(requests):
        group = GROUPS[i % len(GROUPS)]
        offset = i // len(GROUPS) + 1
        offsets = [TopicPartition(TOPIC, p, offset) for p in range(TOPIC_PARTITIONS)]
        consumer = consumers[group]
        while True:
            try:
                consumer.commit(offsets=offsets, asynchronous=True)
                break
            except Exception as error:  # the client's queue is full: let it send
                if "QUEUE_FULL" not in str(error):
                    raise
                consumer.poll(0.05)
        last[group] = offset
        if i % 200 == 0:
            for each in consumers.values():
                each.poll(0)
    # A synchronous commit of the same offsets waits for every earlier one of its group.
    for group, consumer in consumers.items():
        consumer.commit(offsets=[TopicPartition(TOPIC, p, last[group]) for p in range(TOPIC_PARTITIONS)],
                        asynchronous=False)
        consumer.close()
    return {"commit_records": requests * TOPIC_PARTITIONS, "seconds": round(time.monotonic() - started, 2),
            "last_offsets": last, "failures": failures[:5]}


def settle(cluster: Cluster) -> dict:
    """Waits until the offsets partitions' bytes on disk have not changed for SETTLE_S."""
    started = time.monotonic()
    before = offsets_bytes(cluster)
    history = [(0.0, before)]
    stable_since = time.monotonic()
    while time.monotonic() - stable_since < SETTLE_S:
        if time.monotonic() - started > SETTLE_TIMEOUT_S:
            raise TimeoutError(f"the offsets partitions' bytes kept changing for {SETTLE_TIMEOUT_S} s: {history[-5:]}")
        time.sleep(1)
        now = offsets_bytes(cluster)
        if now != history[-1][1]:
            stable_since = time.monotonic()
            history.append((round(time.monotonic() - started, 1), now))
    return {"bytes_before": before, "bytes_after": history[-1][1], "seconds": round(time.monotonic() - started, 1)}


def failover(cluster: Cluster, bootstrap: str, last: dict[str, int]) -> dict:
    from confluent_kafka import Consumer, ConsumerGroupState, TopicPartition
    from confluent_kafka.admin import AdminClient
    admin = AdminClient({"bootstrap.servers": bootstrap})
    member = Consumer({"bootstrap.servers": bootstrap, "group.id": LIVE_GROUP, "enable.auto.commit": False,
                       "session.timeout.ms": 30000, "client.id": f"live-{uuid.uuid4().hex[:6]}"})
    member.subscribe([TOPIC])

    def described():
        return admin.describe_consumer_groups([LIVE_GROUP])[LIVE_GROUP].result(10)

    def stable() -> bool:
        member.poll(0.05)
        try:
            return described().state == ConsumerGroupState.STABLE
        except Exception:  # the coordinator is loading or moving: not Stable yet
            return False
    try:
        wait_until(stable, 120, f"{LIVE_GROUP} Stable with its live member")
        coordinator = described().coordinator.id
        expected = {group: {TopicPartition(TOPIC, p): last[group] for p in range(TOPIC_PARTITIONS)} for group in last}

        last_answer: dict[str, object] = {}

        def offsets_back() -> bool:
            for group, want in expected.items():
                try:
                    answer = admin.list_consumer_group_offsets([_request(group)])[group].result(10)
                except Exception as error:  # COORDINATOR_LOAD_IN_PROGRESS, NOT_COORDINATOR ...
                    last_answer[group] = repr(error)
                    return False
                got = {TopicPartition(tp.topic, tp.partition): tp.offset for tp in answer.topic_partitions}
                if got != want:
                    last_answer[group] = sorted({offset for offset in got.values()})[:10]
                    return False
            return True
        started = time.monotonic()
        cluster.kill("group-coordinator", coordinator, restart=True)
        wait_until(stable, 300, f"{LIVE_GROUP} Stable again after its coordinator's kill")
        stable_s = time.monotonic() - started
        try:
            wait_until(offsets_back, 300, "every group's committed offsets back after the kill")
        except TimeoutError as error:
            raise TimeoutError(f"{error}; expected {last}, last answers (distinct offsets) {last_answer}") from None
        return {"coordinator": coordinator, "stable_again_s": round(stable_s, 2),
                "offsets_back_s": round(time.monotonic() - started, 2)}
    finally:
        member.close()


def _request(group: str):
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
    return ConsumerGroupTopicPartitions(group, [TopicPartition(TOPIC, p) for p in range(TOPIC_PARTITIONS)])


def run_mode(cleaner: bool, commits: int) -> dict:
    config = {**BASE_CONFIG, "log.cleaner.enable": "true" if cleaner else "false"}
    with tempfile.TemporaryDirectory(prefix="raykafka-coordinator-failover-") as log_dir, \
            Cluster.start(brokers=3, log_dir=log_dir, config=config) as cluster:
        cluster.create_topic(TOPIC, partitions=TOPIC_PARTITIONS, replication_factor=1)
        bootstrap = cluster.bootstrap_servers
        history = commit_history(bootstrap, commits)
        settled = settle(cluster)
        timing = failover(cluster, bootstrap, history["last_offsets"])
        return {"log.cleaner.enable": cleaner, "commits": history, "offsets_topic": settled, "failover": timing}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commits", type=int, default=1_000_000, help="commit records written before the kill")
    parser.add_argument("--out", default=default_out("coordinator_failover"))
    args = parser.parse_args()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             namespace=f"raykafka-coordinator-failover-{os.getpid()}")
    results = {"commits": args.commits, "config": BASE_CONFIG, "groups": GROUPS, "topic_partitions": TOPIC_PARTITIONS,
               "rows": []}
    try:
        for cleaner in (True, False):
            results["rows"].append(run_mode(cleaner, args.commits))
    finally:
        ray.shutdown()
    print(f"\n{args.commits:,} offset commits from {len(GROUPS)} groups, then the coordinator of {LIVE_GROUP} killed:")
    print(f"{'log cleaner':>12} {'commits s':>10} {'offsets MiB':>12} {'after clean':>12} {'Stable again s':>15} "
          f"{'offsets back s':>15}")
    for row in results["rows"]:
        print(f"{'on' if row['log.cleaner.enable'] else 'off':>12} {row['commits']['seconds']:10.1f} "
              f"{row['offsets_topic']['bytes_before'] / 2**20:12.1f} {row['offsets_topic']['bytes_after'] / 2**20:12.1f} "
              f"{row['failover']['stable_again_s']:15.2f} {row['failover']['offsets_back_s']:15.2f}")
    save_results(args.out, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
