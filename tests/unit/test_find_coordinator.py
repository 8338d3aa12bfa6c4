"""FindCoordinator before ``__consumer_offsets`` exists: the broker asks the controller to create it
with ``offsets.topic.replication.factor`` replicas, and refuses (COORDINATOR_NOT_AVAILABLE, with an
error in the log) while fewer brokers are alive than that factor, as Kafka 2.4's
``KafkaApis.createInternalTopic`` does, rather than creating an offsets topic that stays
under-replicated for good; and a transaction coordinator is refused at once with the code stock
clients treat as fatal. No Ray."""
from __future__ import annotations

from actors.core.effects import LogEvent, Send
from actors.core.errors import ErrorCode
from actors.core.messages.find_coordinator import (
    COORDINATOR_KEY_TYPE_GROUP, COORDINATOR_KEY_TYPE_TRANSACTION, FindCoordinatorRequest,
)
from actors.core.messages.metadata import MetadataResponseBroker
from actors.core.broker.find_coordinator import OFFSETS_TOPIC_CREATION_RETRY_MS, CoordinatorFinder
from actors.core.broker.metadata_cache import MetadataCache
from actors.core.config import KafkaConfig


def finder_with_live_brokers(live: int, factor: int) -> CoordinatorFinder:
    config = KafkaConfig({"offsets.topic.replication.factor": str(factor), "offsets.topic.num.partitions": "3"})
    cache = MetadataCache()
    cache.brokers = {b: MetadataResponseBroker(node_id=b, host=f"broker-{b}", port=0, rack=None) for b in range(live)}
    return CoordinatorFinder(0, config, cache, coordinator_host=lambda b: f"broker-{b}")


def find(finder: CoordinatorFinder, now_ms: int = 0, key_type: int = COORDINATOR_KEY_TYPE_GROUP):
    effects = finder.handle_find_coordinator(7, FindCoordinatorRequest(key="orders-readers", key_type=key_type), now_ms)
    sends = [e.message for e in effects if isinstance(e, Send)]
    logs = [e for e in effects if isinstance(e, LogEvent)]
    response = next(e.response for e in effects if hasattr(e, "response"))
    return response, sends, logs


def test_the_offsets_topic_is_created_with_its_configured_replication_factor():
    response, sends, _ = find(finder_with_live_brokers(live=3, factor=3))
    assert response.error_code == ErrorCode.COORDINATOR_NOT_AVAILABLE  # until it has a leader
    (create,) = sends
    (topic,) = create.topics
    assert (topic.name, topic.num_partitions, topic.replication_factor) == ("__consumer_offsets", 3, 3)


def test_fewer_live_brokers_than_the_replication_factor_is_refused_and_nothing_is_created():
    finder = finder_with_live_brokers(live=2, factor=3)
    response, sends, logs = find(finder)
    assert response.error_code == ErrorCode.COORDINATOR_NOT_AVAILABLE
    assert sends == []
    assert [log.level for log in logs] == ["error"]
    assert "does not meet the required replication factor" in logs[0].message
    # The log line is not repeated on every retry of every client; once per retry interval.
    assert find(finder, now_ms=10)[2] == []
    assert len(find(finder, now_ms=OFFSETS_TOPIC_CREATION_RETRY_MS)[2]) == 1


def test_once_enough_brokers_are_alive_the_topic_is_created():
    finder = finder_with_live_brokers(live=2, factor=3)
    find(finder)
    finder.metadata_cache.brokers[2] = MetadataResponseBroker(node_id=2, host="broker-2", port=0, rack=None)
    _, sends, _ = find(finder, now_ms=OFFSETS_TOPIC_CREATION_RETRY_MS)
    assert [t.replication_factor for t in sends[0].topics] == [3]


def test_a_transaction_coordinator_is_refused_at_once_with_a_fatal_code_and_nothing_is_created():
    """librdkafka's init_transactions() retried any other answer until its timeout (30 s seen)."""
    response, sends, _ = find(finder_with_live_brokers(live=3, factor=3), key_type=COORDINATOR_KEY_TYPE_TRANSACTION)
    assert response.error_code == ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    assert "does not support transactions" in response.error_message and response.node_id == -1
    assert sends == [], "no offsets (or transaction state) topic is created for it"


def test_an_errored_single_key_answer_names_no_node_as_kafka_does():
    """Kafka answers an error below v4 with Node.noNode(): node -1, host "" and port -1."""
    finder = finder_with_live_brokers(live=3, factor=3)
    for key_type in (COORDINATOR_KEY_TYPE_GROUP, COORDINATOR_KEY_TYPE_TRANSACTION, 7):
        for listener_name in (None, "PLAINTEXT"):
            effects = finder.handle_find_coordinator(7, FindCoordinatorRequest(
                key="orders-readers", key_type=key_type, listener_name=listener_name), 0)
            response = next(e.response for e in effects if hasattr(e, "response"))
            assert response.error_code != ErrorCode.NONE
            assert (response.node_id, response.host, response.port) == (-1, "", -1), (key_type, listener_name)


def test_an_unknown_coordinator_key_type_is_an_invalid_request():
    response, _, _ = find(finder_with_live_brokers(live=3, factor=3), key_type=7)
    assert response.error_code == ErrorCode.INVALID_REQUEST


def test_v4_answers_each_key_as_a_single_key_is_answered():
    """KIP-699's batched lookup, as Kafka's handleFindCoordinatorRequestV4AndAbove: one Coordinator
    per key in the request's order; a key without one has node -1, host "" and port -1."""
    from actors.core.messages.find_coordinator import Coordinator, FindCoordinatorResponse
    from actors.core.messages.update_metadata import UpdateMetadataPartitionState
    finder = finder_with_live_brokers(live=3, factor=3)
    finder.metadata_cache.endpoints = {b: {"PLAINTEXT": ("127.0.0.1", 9090 + b)} for b in range(2)}
    finder.metadata_cache.topics["__consumer_offsets"] = {p: UpdateMetadataPartitionState(
        partition_index=p, controller_epoch=1, leader=p if p < 2 else -1, leader_epoch=0, isr=(p,),
        partition_epoch=0, replicas=(p,)) for p in range(3)}
    keys = ("a", "b", "c", "d")
    led = {key: finder.partition_for(key) for key in keys}
    request = FindCoordinatorRequest(key="", coordinator_keys=keys, listener_name="PLAINTEXT")
    (answer,) = finder.handle_find_coordinator(7, request, 0)
    assert answer.request_id == 7 and isinstance(answer.response, FindCoordinatorResponse)
    expected = tuple(
        Coordinator(key=key, node_id=p, host="127.0.0.1", port=9090 + p) if p < 2 else
        Coordinator(key=key, error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE) for key, p in led.items())
    assert answer.response.coordinators == expected
    assert {p < 2 for p in led.values()} == {True, False}, "the keys cover a led and a leaderless partition"
    (refused,) = finder.handle_find_coordinator(8, FindCoordinatorRequest(
        key="", key_type=COORDINATOR_KEY_TYPE_TRANSACTION, coordinator_keys=("t1", "t2")), 0)
    assert [(c.key, c.error_code, c.node_id, c.port) for c in refused.response.coordinators] == [
        ("t1", ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, -1, -1),
        ("t2", ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, -1, -1)]


def test_v4_before_the_offsets_topic_exists_asks_for_it_once():
    finder = finder_with_live_brokers(live=3, factor=3)
    effects = finder.handle_find_coordinator(7, FindCoordinatorRequest(key="", coordinator_keys=("a", "b")), 0)
    assert len([e for e in effects if isinstance(e, Send)]) == 1
    (response,) = [e.response for e in effects if hasattr(e, "response")]
    assert [c.error_code for c in response.coordinators] == [ErrorCode.COORDINATOR_NOT_AVAILABLE] * 2
