"""Named listeners on a real raykafka cluster: brokers bind an internal listener on loopback and an
external one on every interface, advertise the external one at their own node's address through the
``{node_ip}`` placeholder (resolved on the node each broker runs on), and a confluent-kafka client
bootstrapped on either listener is told that listener's addresses and produces and consumes through
it; a configuration that would advertise 0.0.0.0 is refused before anything starts."""
from __future__ import annotations

import pytest
import ray
from confluent_kafka.admin import AdminClient

from actors.core.errors import ErrorCode
from orchestration.admin.cluster import Cluster
from orchestration.errors import KafkaError
from tests.support.clusters import running_cluster
from tests.support.kafka_clients import LIBRARIES

pytestmark = pytest.mark.integration

CONFIG = {"listeners": "INTERNAL://127.0.0.1:0,EXTERNAL://0.0.0.0:0",
          "advertised.listeners": "INTERNAL://127.0.0.1:0,EXTERNAL://{node_ip}:0",
          "listener.security.protocol.map": "INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT"}


@pytest.fixture(scope="module")
def cluster(ray_session, tmp_path_factory):
    with running_cluster(tmp_path_factory, config=CONFIG, brokers=2) as started:
        yield started


def test_each_listener_is_advertised_and_serves_clients(cluster):
    node_ip = ray.util.get_node_ip_address()
    internal, external = cluster.listener_addresses("INTERNAL"), cluster.listener_addresses("EXTERNAL")
    assert all(address.startswith("127.0.0.1:") for address in internal.split(",")), internal
    assert all(address.startswith(f"{node_ip}:") for address in external.split(",")), (external, node_ip)
    assert cluster.bootstrap_servers == internal, "no PLAINTEXT listener: clients get the first advertised one"
    for bootstrap, name in ((internal, "internal"), (external, "external")):
        brokers = AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=30).brokers
        assert sorted(f"{b.host}:{b.port}" for b in brokers.values()) == sorted(bootstrap.split(",")), \
            f"a client on the {name} listener is told that listener's addresses"
        topic = f"listeners-{name}"
        cluster.create_topic(topic, partitions=2, replication_factor=2)
        values = [b"%s-%d" % (name.encode(), i) for i in range(40)]
        client = LIBRARIES["confluent-kafka"]
        acked = client["produce"](bootstrap, topic, values, client["acks"]["all"])
        read = client["consume"](bootstrap, topic, [0, 1], len(values))
        assert {(p, o): v for p, o, v in acked} == {(p, o): v for p, o, v in read}


def test_a_nonroutable_advertised_address_is_refused_before_anything_starts(tmp_path):
    with pytest.raises(KafkaError) as refused:
        Cluster.start(brokers=1, log_dir=str(tmp_path), config={"listeners": "PLAINTEXT://0.0.0.0:0"})
    assert refused.value.error_code == ErrorCode.INVALID_CONFIG
    assert "advertised.listeners cannot use the nonroutable meta-address 0.0.0.0" in str(refused.value)
