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


def test_an_unknown_coordinator_key_type_is_an_invalid_request():
    response, _, _ = find(finder_with_live_brokers(live=3, factor=3), key_type=7)
    assert response.error_code == ErrorCode.INVALID_REQUEST
