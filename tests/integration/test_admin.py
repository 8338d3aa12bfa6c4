"""On a real 3-broker cluster, admin calls ride out what Kafka's AdminClient rides out (a group
described right after its consumers subscribe, while __consumer_offsets is still being created;
a topic created while the controller restarts), and a client sees the broker's own error code
for a request the broker refused, whichever client path the call took."""
from __future__ import annotations

import pytest
import ray

from actors.broker import group_coordinator_actor_name
from actors.core.errors import ErrorCode
from orchestration import KafkaError
from orchestration.clients.broker_directory import as_future, as_kafka_error
from orchestration.admin.wait import wait_until
from orchestration.clients.group_channel import RayCoordinatorChannel

pytestmark = pytest.mark.integration

ANSWER_TIMEOUT_S = 60
GROUP_CONFIG = {"auto.offset.reset": "earliest", "enable.auto.commit": "false"}


def test_describe_group_right_after_consumers_subscribe_waits_for_the_coordinator(cluster):
    """The first group of a new cluster: its consumers' FindCoordinator makes a broker ask for
    __consumer_offsets, and until that topic has leaders every broker answers
    COORDINATOR_NOT_AVAILABLE. describe_group retries that, as Kafka's AdminClient does."""
    assert "__consumer_offsets" not in cluster.topics(), "this test needs a cluster whose first group this is"
    cluster.create_topic("orders", partitions=3, replication_factor=3)
    consumers = [cluster.consumer({**GROUP_CONFIG, "group.id": "g"}) for _ in range(2)]
    try:
        for consumer in consumers:
            consumer.subscribe(["orders"])
            consumer.poll(timeout_ms=0)  # sends FindCoordinator, which starts __consumer_offsets' creation

        description = cluster.describe_group("g")

        assert description.group_id == "g"
        assert description.coordinator in cluster.broker_ids
    finally:
        for consumer in consumers:
            consumer.close(timeout_ms=10000)


def test_a_topic_created_while_the_controller_restarts(cluster):
    epoch = cluster.controller_epoch()
    cluster.kill("controller")  # Ray restarts it; until then there is no controller to ask
    cluster.create_topic("after-restart", partitions=2, replication_factor=3)
    assert [p.partition for p in cluster.describe_topic("after-restart")] == [0, 1]
    assert cluster.controller_epoch() > epoch


def test_a_refused_request_reaches_every_client_path_as_the_brokers_own_error_code(cluster):
    """The broker refuses a request it cannot parse with INVALID_REQUEST (Kafka closes the
    connection); Ray hands the caller that exception wrapped in a RayTaskError."""
    cluster.create_topic("refusals", partitions=1, replication_factor=3)
    leader = wait_until(lambda: [p.leader for p in cluster.describe_topic("refusals") if p.leader >= 0], 60,
                        "a leader of refusals")[0]

    # A blocking call through the client's broker directory (Metadata, ListOffsets, FindCoordinator).
    with pytest.raises(KafkaError) as raised:
        cluster.directory.call(leader, "not a ProduceRequest")
    assert raised.value.error_code == ErrorCode.INVALID_REQUEST

    # A pipelined call, as the producer and the consumer make them: the answer's future fails.
    answer = as_future(cluster.broker(leader).handle.remote(None))
    error = answer.exception(timeout=ANSWER_TIMEOUT_S)
    assert as_kafka_error(error).error_code == ErrorCode.INVALID_REQUEST

    # A group member's call to a coordinator.
    channel = RayCoordinatorChannel(cluster.directory)
    refused = channel.send(group_coordinator_actor_name(leader), "Stable")
    error = refused.exception(timeout=ANSWER_TIMEOUT_S)
    assert isinstance(error, KafkaError) and error.error_code == ErrorCode.INVALID_REQUEST
    assert ray.get(cluster.broker(leader).ping.remote(), timeout=ANSWER_TIMEOUT_S), "the broker keeps serving"
