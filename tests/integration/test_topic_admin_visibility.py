"""A topic that CreateTopics (from confluent-kafka, KafkaJS or raykafka's own admin) reported created
is at once listed, with a leader for every partition, by every broker of a real 3-broker cluster, and
one that DeleteTopics reported deleted is at once listed by none: each admin call is followed
immediately, with no wait in between, by Metadata requests to each broker."""
from __future__ import annotations

import pytest

from orchestration.admin.wait import wait_until
from tests.support.kafkajs import run_node

pytestmark = pytest.mark.integration

PARTITIONS = 3
ROUNDS = 3  # topics created (or deleted) one after another: each is one chance for the race
NODE_TIMEOUT_S = 120
KAFKAJS_PARTITIONS = 24


@pytest.fixture(scope="module")
def addresses(cluster):
    servers = cluster.bootstrap_servers.split(",")
    assert len(servers) == 3, f"three brokers' listeners expected, got {servers!r}"
    return servers


@pytest.fixture(scope="module")
def listers(addresses):
    """One confluent-kafka admin client per broker, bootstrapped at that broker alone and already
    connected, so a list_topics right after an admin call is not slowed by a connection set-up."""
    from confluent_kafka.admin import AdminClient
    admins = [AdminClient({"bootstrap.servers": address}) for address in addresses]
    for admin in admins:
        admin.list_topics(timeout=30)
    return admins


def _listings(listers, topic: str) -> list[str]:
    """What each client's list_topics() (every topic) says of ``topic``: 'led' when listed with
    every partition led, else what it saw."""
    seen = []
    for admin in listers:
        metadata = admin.list_topics(timeout=30).topics.get(topic)
        if metadata is None:
            seen.append("missing")
        elif metadata.error is not None:
            seen.append(f"error {metadata.error}")
        elif len(metadata.partitions) != PARTITIONS or any(p.leader < 0 for p in metadata.partitions.values()):
            seen.append(f"partitions {sorted((p.id, p.leader) for p in metadata.partitions.values())}")
        else:
            seen.append("led")
    return seen


def _confluent_create(addresses, topic: str) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic
    # Bootstrapped at the last broker: the CreateTopics goes to the one Metadata names controller
    # (the lowest id), so the brokers listing the topic afterwards are not only the one that answered.
    admin = AdminClient({"bootstrap.servers": addresses[-1]})
    admin.create_topics([NewTopic(topic, num_partitions=PARTITIONS, replication_factor=2)])[topic].result(60)


def _confluent_delete(addresses, topic: str) -> None:
    from confluent_kafka.admin import AdminClient
    admin = AdminClient({"bootstrap.servers": addresses[-1]})  # kept: a dropped client fails its futures
    admin.delete_topics([topic])[topic].result(60)


CREATORS = {
    "confluent-kafka": lambda cluster, addresses, topic: _confluent_create(addresses, topic),
    "raykafka": lambda cluster, addresses, topic: cluster.create_topic(topic, partitions=PARTITIONS,
                                                                       replication_factor=2),
}
DELETERS = {
    "confluent-kafka": lambda cluster, addresses, topic: _confluent_delete(addresses, topic),
    "raykafka": lambda cluster, addresses, topic: cluster.delete_topic(topic),
}


@pytest.mark.parametrize("creator", sorted(CREATORS))
def test_every_broker_lists_a_created_topic_as_soon_as_create_topics_answers(cluster, addresses, listers, creator):
    seen = {}
    for index in range(ROUNDS):
        topic = f"visible-{creator}-{index}"
        CREATORS[creator](cluster, addresses, topic)
        seen[topic] = _listings(listers, topic)
    assert seen == {topic: ["led"] * len(listers) for topic in seen}, \
        "a broker did not list a topic that CreateTopics had reported created"


@pytest.mark.parametrize("deleter", sorted(DELETERS))
def test_no_broker_lists_a_deleted_topic_once_delete_topics_answers(cluster, addresses, listers, deleter):
    topics = [f"deleted-{deleter}-{index}" for index in range(ROUNDS)]
    for topic in topics:
        cluster.create_topic(topic, partitions=PARTITIONS, replication_factor=2)
        wait_until(lambda: _listings(listers, topic) == ["led"] * len(listers), 60,
                   f"every broker to list {topic} before it is deleted")
    seen = {}
    for topic in topics:
        DELETERS[deleter](cluster, addresses, topic)
        seen[topic] = _listings(listers, topic)
    assert seen == {topic: ["missing"] * len(listers) for topic in topics}, \
        "a broker still listed a topic that DeleteTopics had reported deleted"


def test_kafkajs_create_topics_waits_for_leaders_then_deletes(cluster, addresses):
    """KafkaJS's createTopics asks the broker it sent CreateTopics to for the topics' metadata at
    once, and gives up on UNKNOWN_TOPIC_OR_PARTITION (it retries only LEADER_NOT_AVAILABLE)."""
    topics = [f"kafkajs-{index}" for index in range(ROUNDS)]
    # Many replicas per broker: the LeaderAndIsr that precedes each broker's UpdateMetadata takes longer.
    seen = run_node("create_topics.js", ",".join(addresses), str(KAFKAJS_PARTITIONS), "3", *topics,
                    timeout_s=NODE_TIMEOUT_S)
    assert seen["created"] == [True] * len(topics)
    assert {t: sorted(p for p, leader in partitions if leader >= 0) for t, partitions in seen["leaders"].items()} == \
        {t: list(range(KAFKAJS_PARTITIONS)) for t in topics}
    assert set(topics) <= set(seen["listedAfterCreate"])
    assert not set(topics) & set(seen["listedAfterDelete"])
