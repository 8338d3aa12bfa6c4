"""FindCoordinator on a broker: which broker's group coordinator owns a group.

A group lives on ``__consumer_offsets`` partition ``abs(java_string_hash(group_id)) %
offsets.topic.num.partitions``; its coordinator is that partition's leader. Any broker answers
from its metadata cache. If the topic does not exist yet, the broker asks the controller to create
it (Kafka's brokers create it on first use) with ``offsets.topic.replication.factor`` replicas, and
answers ``COORDINATOR_NOT_AVAILABLE`` until it has a leader; the client retries. While fewer brokers
are alive than that factor the broker refuses to create it and logs an error, as Kafka 2.4's
``KafkaApis.createInternalTopic`` does: an offsets topic created smaller would stay
under-replicated for good (a one-broker cluster sets the factor to 1). One creation request, or
one refusal's log line, per ``OFFSETS_TOPIC_CREATION_RETRY_MS``. A transaction coordinator (key type
1) is refused at once with the code stock clients treat as fatal, as transactions are not built.
A v4+ request's keys (``coordinator_keys``) are each answered as one key is, in one answer. An
answer without a coordinator names none as Kafka's ``Node.noNode()`` does: node -1, host "", port -1.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable

from actors.core.effects import Effect, LogEvent, Respond, Send
from actors.core.errors import ErrorCode
from actors.core.java_hash import java_string_hash, kafka_abs
from actors.core.messages.create_topics import CreatableTopic, CreateableTopicConfig, CreateTopicsRequest
from actors.core.messages.find_coordinator import (
    COORDINATOR_KEY_TYPE_GROUP, COORDINATOR_KEY_TYPE_TRANSACTION, Coordinator, FindCoordinatorRequest,
    FindCoordinatorResponse,
)
from actors.core.messages.init_producer_id import TRANSACTIONS_REFUSED_CODE, TRANSACTIONS_REFUSED_MESSAGE
from actors.core.broker.metadata_cache import MetadataCache
from actors.core.config import KafkaConfig
from actors.core.topics import OFFSETS_TOPIC

OFFSETS_TOPIC_CREATION_RETRY_MS = 5000
# Kafka's own settings for the offsets topic: compacted (so that a coordinator's load reads the
# live groups' latest records, not every commit ever made), with offsets.topic.segment.bytes segments.
OFFSETS_TOPIC_CONFIG = (("cleanup.policy", "compact"),)


class CoordinatorFinder:
    def __init__(self, broker_id: int, config: KafkaConfig, metadata_cache: MetadataCache,
                 coordinator_host: Callable[[int], str]) -> None:
        self.broker_id = broker_id
        self.metadata_cache = metadata_cache
        self.coordinator_host = coordinator_host
        self.num_partitions = config.get_int("offsets.topic.num.partitions", 1)
        self.replication_factor = config.get_int("offsets.topic.replication.factor", 1)
        self.topic_config = (*OFFSETS_TOPIC_CONFIG, ("segment.bytes", config.get_str("offsets.topic.segment.bytes")))
        self._creation_requested_ms: int | None = None

    def partition_for(self, group_id: str) -> int:
        return kafka_abs(java_string_hash(group_id)) % self.num_partitions

    def handle_find_coordinator(self, request_id: int, request: FindCoordinatorRequest,
                                now_ms: int) -> list[Effect]:
        if request.coordinator_keys is not None:
            return self._find_coordinators(request_id, request, now_ms)
        def answer(code: ErrorCode, message: str | None = None, node_id: int = -1) -> list[Effect]:
            # No coordinator is Kafka's Node.noNode(): node -1, host "" and port -1.
            host, port = (self.coordinator_host(node_id), 0) if node_id >= 0 else ("", -1)
            if node_id >= 0 and request.listener_name is not None:
                # A stock client reaches the coordinator through its broker's listener.
                endpoint = self.metadata_cache.endpoint(node_id, request.listener_name)
                if endpoint is None:
                    code, message, node_id = ErrorCode.COORDINATOR_NOT_AVAILABLE, None, -1
                    host, port = "", -1
                else:
                    host, port = endpoint
            return [Respond(request_id=request_id, response=FindCoordinatorResponse(
                error_code=code, error_message=message, node_id=node_id, host=host, port=port))]
        if request.key_type == COORDINATOR_KEY_TYPE_TRANSACTION:
            return answer(TRANSACTIONS_REFUSED_CODE, TRANSACTIONS_REFUSED_MESSAGE)
        if request.key_type != COORDINATOR_KEY_TYPE_GROUP:
            return answer(ErrorCode.INVALID_REQUEST, f"unknown coordinator key type {request.key_type}")
        if not isinstance(request.key, str) or not request.key:
            return answer(ErrorCode.INVALID_GROUP_ID)
        cache = self.metadata_cache
        if not cache.contains(OFFSETS_TOPIC):
            return self._request_creation(now_ms) + answer(ErrorCode.COORDINATOR_NOT_AVAILABLE,
                                                           f"{OFFSETS_TOPIC} is being created")
        leader, _ = cache.partition_leader(OFFSETS_TOPIC, self.partition_for(request.key))
        if leader < 0:
            return answer(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        return answer(ErrorCode.NONE, node_id=leader)

    def _find_coordinators(self, request_id: int, request: FindCoordinatorRequest, now_ms: int) -> list[Effect]:
        """Each of a v4+ request's keys found as a single key is: one ``Coordinator`` per key."""
        effects: list[Effect] = []
        coordinators = []
        for key in request.coordinator_keys:
            one = dataclasses.replace(request, key=key, coordinator_keys=None)
            for effect in self.handle_find_coordinator(request_id, one, now_ms):
                if not isinstance(effect, Respond):
                    effects.append(effect)
                    continue
                found = effect.response
                coordinators.append(Coordinator(
                    key=key, node_id=found.node_id, host=found.host, port=found.port,
                    error_code=found.error_code, error_message=found.error_message))
        return effects + [Respond(request_id=request_id, response=FindCoordinatorResponse(
            coordinators=tuple(coordinators)))]

    def _request_creation(self, now_ms: int) -> list[Effect]:
        if self._creation_requested_ms is not None and now_ms - self._creation_requested_ms < OFFSETS_TOPIC_CREATION_RETRY_MS:
            return []
        self._creation_requested_ms = now_ms
        live = len(self.metadata_cache.brokers)
        factor = max(1, self.replication_factor)
        if live < factor:
            return [LogEvent(level="error", message=(
                f"broker {self.broker_id}: number of alive brokers '{live}' does not meet the required "
                f"replication factor '{factor}' for {OFFSETS_TOPIC} (configured via "
                "'offsets.topic.replication.factor'); this can be ignored while the cluster is starting up "
                "and not all brokers are up yet"))]
        return [LogEvent(level="info", message=f"broker {self.broker_id} asks for {OFFSETS_TOPIC} "
                                                f"({self.num_partitions} partitions, replication factor {factor})"),
                Send(destination="controller", message=CreateTopicsRequest(topics=(CreatableTopic(
                    name=OFFSETS_TOPIC, num_partitions=self.num_partitions, replication_factor=factor,
                    configs=tuple(CreateableTopicConfig(name=k, value=v) for k, v in self.topic_config)),)))]

    def on_create_topics_response(self, response) -> list[Effect]:
        self._creation_requested_ms = None  # created, or already there: the next ask will see it
        return []
