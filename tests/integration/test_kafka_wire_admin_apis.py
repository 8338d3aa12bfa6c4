"""The admin APIs Kafka's tools call, driven over the wire by confluent-kafka's AdminClient against
one real 3-broker cluster, each checked through the cluster afterwards (a consumer's committed
offsets, describe_configs, metadata); every wait polls a condition with a bound."""
from __future__ import annotations

import uuid

import pytest

from orchestration.admin.wait import wait_until

pytestmark = pytest.mark.integration

WAIT_S = 60
# No automatic preferred-leader rebalance: ElectLeaders alone moves a leadership back here.
BROKER_CONFIG = {"auto.leader.rebalance.enable": "false"}


@pytest.fixture(scope="module")
def cluster(ray_session, tmp_path_factory):
    from tests.support.clusters import running_cluster
    with running_cluster(tmp_path_factory, config=BROKER_CONFIG) as started:
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


def _described(admin, topic: str) -> dict[str, str]:
    from confluent_kafka.admin import ConfigResource
    (future,) = admin.describe_configs([ConfigResource("topic", topic)], request_timeout=30).values()
    return {name: entry.value for name, entry in future.result(30).items()}


@pytest.mark.filterwarnings("ignore:alter_configs has been deprecated:DeprecationWarning")
def test_incremental_alter_configs_and_alter_configs(cluster, admin):
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource
    cluster.create_topic("configured", partitions=1, replication_factor=3)
    incremental = ConfigResource("topic", "configured", incremental_configs=[
        ConfigEntry("retention.ms", "123456", incremental_operation=AlterConfigOpType.SET),
        ConfigEntry("min.insync.replicas", "2", incremental_operation=AlterConfigOpType.SET)])
    next(iter(admin.incremental_alter_configs([incremental], request_timeout=30).values())).result(30)
    wait_until(lambda: _described(admin, "configured")["retention.ms"] == "123456", WAIT_S,
               "describe_configs to show the incremental change")
    assert _described(admin, "configured")["min.insync.replicas"] == "2"

    checked = ConfigResource("topic", "configured", set_config={"segment.bytes": "1048576"})
    next(iter(admin.alter_configs([checked], request_timeout=30, validate_only=True).values())).result(30)
    assert _described(admin, "configured")["segment.bytes"] != "1048576", "validate_only changes nothing"
    bad = ConfigResource("topic", "configured", set_config={"no.such.key": "1"})
    assert _error_name(next(iter(admin.alter_configs([bad], request_timeout=30).values()))) == "INVALID_CONFIG"

    # AlterConfigs replaces the whole override set: retention.ms and min.insync.replicas go back.
    whole = ConfigResource("topic", "configured", set_config={"segment.bytes": "1048576"})
    next(iter(admin.alter_configs([whole], request_timeout=30).values())).result(30)
    wait_until(lambda: _described(admin, "configured")["segment.bytes"] == "1048576", WAIT_S,
               "describe_configs to show the replaced overrides")
    described = _described(admin, "configured")
    assert described["retention.ms"] == "604800000" and described["min.insync.replicas"] == "1"


def _leader(servers: str, topic: str) -> int:
    from confluent_kafka.admin import AdminClient
    metadata = AdminClient({"bootstrap.servers": servers}).list_topics(topic, timeout=30)
    return metadata.topics[topic].partitions[0].leader


def test_elect_leaders_preferred_and_unclean(cluster, admin):
    from confluent_kafka import TopicPartition
    from confluent_kafka import ElectionType
    servers = cluster.bootstrap_servers
    cluster.create_topic("elected", partitions=1, replication_factor=3, assignment=[[2, 0, 1]])
    wait_until(lambda: _leader(servers, "elected") == 2, WAIT_S, "the preferred replica 2 to lead elected-0")
    partition = TopicPartition("elected", 0)
    results = admin.elect_leaders(ElectionType.PREFERRED, [partition]).result(30)
    assert results[partition].name() == "ELECTION_NOT_NEEDED"

    cluster.kill("broker", 2)  # Ray restarts it from its log directory; leadership moves away
    wait_until(lambda: _leader(servers, "elected") in (0, 1), WAIT_S, "elected-0 to get a leader other than 2")
    wait_until(lambda: 2 in cluster.describe_topic("elected")[0].isr, WAIT_S, "broker 2 to rejoin the ISR")
    assert _leader(servers, "elected") != 2, "nothing but ElectLeaders moves it back"
    results = admin.elect_leaders(ElectionType.PREFERRED, [partition]).result(30)
    assert results[partition] is None
    wait_until(lambda: _leader(servers, "elected") == 2, WAIT_S, "metadata to show the preferred leader 2")
    results = admin.elect_leaders(ElectionType.UNCLEAN, [partition, TopicPartition("nowhere", 0)]).result(30)
    assert results[partition].name() == "ELECTION_NOT_NEEDED"
    assert results[TopicPartition("nowhere", 0)].name() == "UNKNOWN_TOPIC_OR_PART"


def test_create_partitions_leads_and_replicates_the_new_partitions(cluster, admin):
    from confluent_kafka import Producer
    from confluent_kafka.admin import NewPartitions
    cluster.create_topic("grown", partitions=1, replication_factor=2)
    next(iter(admin.create_partitions([NewPartitions("grown", 3)], request_timeout=30).values())).result(30)
    cluster.create_partitions("grown", 4)  # the Ray admin client's path to the same API
    assert _error_name(next(iter(admin.create_partitions(
        [NewPartitions("grown", 2)], request_timeout=30).values()))) == "INVALID_PARTITIONS"
    partitions = admin.list_topics("grown", timeout=30).topics["grown"].partitions
    assert sorted(partitions) == [0, 1, 2, 3]
    assert all(p.leader >= 0 and len(p.replicas) == 2 for p in partitions.values())
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all"})
    delivered = []
    producer.produce("grown", b"to the newest partition", partition=3, on_delivery=lambda e, m: delivered.append(e))
    producer.flush(30)
    assert delivered == [None], "acks=all on a new partition: its follower replicates it"
    wait_until(lambda: all(sorted(p.isr) == sorted(p.replicas) and p.high_watermark == (1 if p.partition == 3 else 0)
                           for p in cluster.describe_topic("grown")), WAIT_S, "every new partition fully replicated")
