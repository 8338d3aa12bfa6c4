"""The admin APIs Kafka's tools call, driven over the wire by confluent-kafka's AdminClient against
one real 3-broker cluster, each checked through the cluster afterwards (a consumer's committed
offsets, describe_configs, metadata); every wait polls a condition with a bound."""
from __future__ import annotations

import uuid

import pytest

from orchestration.admin.wait import wait_until

pytestmark = pytest.mark.integration

WAIT_S = 60


@pytest.fixture(scope="module")
def cluster(ray_session, tmp_path_factory):
    from tests.support.clusters import running_cluster
    with running_cluster(tmp_path_factory) as started:
        yield started


@pytest.fixture(scope="module")
def admin(cluster):
    from confluent_kafka.admin import AdminClient
    return AdminClient({"bootstrap.servers": cluster.bootstrap_servers})


def _consumer(servers: str, group: str):
    from confluent_kafka import Consumer
    return Consumer({"bootstrap.servers": servers, "group.id": group, "enable.auto.commit": False,
                     "auto.offset.reset": "earliest"})


def _committed(servers: str, group: str, topic: str) -> int:
    from confluent_kafka import TopicPartition
    consumer = _consumer(servers, group)
    try:
        return consumer.committed([TopicPartition(topic, 0)], timeout=30)[0].offset
    finally:
        consumer.close()


def _error_name(future) -> str:
    from confluent_kafka import KafkaException
    with pytest.raises(KafkaException) as raised:
        future.result(30)
    return raised.value.args[0].name()


def test_delete_consumer_groups(cluster, admin):
    from confluent_kafka import TopicPartition
    servers = cluster.bootstrap_servers
    cluster.create_topic("grouped", partitions=1, replication_factor=3)
    idle, busy = f"idle-{uuid.uuid4().hex[:6]}", f"busy-{uuid.uuid4().hex[:6]}"
    committer = _consumer(servers, idle)
    committer.commit(offsets=[TopicPartition("grouped", 0, 5)], asynchronous=False)
    committer.close()
    assert _committed(servers, idle, "grouped") == 5

    member = _consumer(servers, busy)
    member.subscribe(["grouped"])
    wait_until(lambda: member.poll(0.5) is None and bool(member.assignment()), WAIT_S,
               f"a member of {busy} to get its assignment")
    try:
        futures = admin.delete_consumer_groups([idle, busy, "never-was"], request_timeout=30)
        futures[idle].result(30)
        assert _error_name(futures[busy]) == "NON_EMPTY_GROUP"
        assert _error_name(futures["never-was"]) == "GROUP_ID_NOT_FOUND"
    finally:
        member.close()
    assert _committed(servers, idle, "grouped") < 0, "the deleted group's offsets went with it"
