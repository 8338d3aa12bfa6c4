"""``raykafka load run --bootstrap-server HOST:PORT``: the load pipeline against any Kafka listener
(raykafka's, Apache Kafka's), not a raykafka cluster on Ray.

Spark still runs on Ray (a local one, or the Ray at ``--address``), and the jobs' progress actor in
a Ray namespace of the run; everything that speaks to the brokers speaks Kafka's protocol: the
topics are made through confluent-kafka's AdminClient, and the load and
consume jobs use confluent-kafka's clients whatever the workload's ``client`` says. What needs
raykafka's actors is left out: a workload with ``faults`` is refused (use ``--namespace``), and the
invariant sampler does not run (the checker judges the clients' histories alone).
"""
from __future__ import annotations

import dataclasses
import time
from pathlib import Path

from orchestration.spark.workload import Workload, WorkloadError

LISTENER_CLIENT = "confluent-kafka"
ADMIN_TIMEOUT_S = 30  # one DescribeCluster or CreateTopics, as Kafka's tools wait
LEADER_POLL_S = 0.2  # between two metadata reads while a new topic's leaders are elected


class ListenerCluster:
    """What the load pipeline asks of a cluster, answered by a Kafka listener: ``create_topic``, the
    brokers' ids (DescribeCluster) and bootstrap servers for the Spark tasks, and the Ray namespace
    of the run for its progress actor; ``samples_replicas`` False, as there are no replica actors."""

    samples_replicas = False

    def __init__(self, bootstrap_servers: str, namespace: str) -> None:
        from confluent_kafka.admin import AdminClient
        self.bootstrap_servers = bootstrap_servers
        self.namespace = namespace
        self._admin = AdminClient({"bootstrap.servers": bootstrap_servers})
        self.broker_ids = sorted(node.id for node in self._admin.describe_cluster().result(timeout=ADMIN_TIMEOUT_S).nodes)

    def create_topic(self, name: str, partitions: int = 1, replication_factor: int = 1, config=None) -> None:
        from confluent_kafka.admin import NewTopic
        topic = NewTopic(name, num_partitions=partitions, replication_factor=replication_factor, config=config or {})
        self._admin.create_topics([topic], operation_timeout=ADMIN_TIMEOUT_S)[name].result(timeout=ADMIN_TIMEOUT_S)
        # As Cluster.create_topic: the load starts once every partition has a leader (its producers do not retry).
        deadline = time.monotonic() + ADMIN_TIMEOUT_S
        while not self._all_led(name, partitions):
            if time.monotonic() > deadline:
                raise TimeoutError(f"the partitions of {name!r} had no leader after {ADMIN_TIMEOUT_S}s")
            time.sleep(LEADER_POLL_S)

    def _all_led(self, name: str, partitions: int) -> bool:
        described = self._admin.list_topics(name, timeout=ADMIN_TIMEOUT_S).topics.get(name)
        return (described is not None and described.error is None and len(described.partitions) == partitions
                and all(p.leader >= 0 for p in described.partitions.values()))

    def close(self) -> None:
        pass


def listener_workload(workload: Workload) -> Workload:
    """``workload`` with confluent-kafka producers and consumers; one with faults is refused."""
    if workload.faults:
        raise WorkloadError(f"{workload.name}: 'faults' kill and restart raykafka's actors, which a Kafka listener "
                            "does not have: run it with --namespace on a raykafka cluster, or without faults")
    return dataclasses.replace(workload, client=LISTENER_CLIENT, consumer_client=LISTENER_CLIENT)


def run_on_listener(workload: Workload, bootstrap_servers: str, output: Path, show_progress: bool, spark_sizing,
                    out, run_on):
    """``workload`` against the listener at ``bootstrap_servers``, from this process's Ray (already
    connected), on topics named for the run (a listener's cluster keeps earlier runs' topics), by
    ``run_on`` (pipeline.run_on, handed in: the pipeline imports this module)."""
    import ray

    from orchestration.spark.session import run_on_a_running_cluster
    workload = listener_workload(workload)
    cluster = ListenerCluster(bootstrap_servers, ray.get_runtime_context().namespace)
    return run_on_a_running_cluster(
        cluster, f"Kafka listener {bootstrap_servers}: {len(cluster.broker_ids)} broker(s); producers and consumers "
                 f"are {LISTENER_CLIENT}'s, the workload's broker settings are not applied",
        workload, output, show_progress, spark_sizing, out, run_on)
