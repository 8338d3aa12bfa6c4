"""Topic auto-creation from Metadata (Kafka 2.4's ``KafkaApis.getTopicMetadata``/``createTopic``).

Theory of operation. A Metadata request that names a topic the broker does not know, with
``allow_auto_topic_creation`` set (stock producers set it; Metadata v0-v3 always implies it), on a
broker configured with ``auto.create.topics.enable`` (Kafka's default, true), makes the broker ask
the controller to create the topic with the broker's ``num.partitions`` and
``default.replication.factor``, and answers that topic ``LEADER_NOT_AVAILABLE``: the client asks
again and finds the topic once the controller's UpdateMetadata reached this broker. A name Kafka
refuses is answered ``INVALID_TOPIC_EXCEPTION``, and a replication factor larger than the live
brokers ``INVALID_REPLICATION_FACTOR``, at once, as Kafka's synchronous creation reports them.
Without the flag or the config the topic is ``UNKNOWN_TOPIC_OR_PARTITION``, as before.

Limits. One CreateTopics per topic per ``CREATION_RETRY_MS`` (a client polling Metadata does not
flood the controller); at most ``PENDING_TOPICS_MAX`` topics wait at once, and past that a new one
is answered ``LEADER_NOT_AVAILABLE`` without a request until older ones expire.
"""
from __future__ import annotations

import dataclasses

from actors.core.config import KafkaConfig
from actors.core.effects import Effect, LogEvent, Send
from actors.core.errors import ErrorCode, KafkaProtocolError
from actors.core.messages.create_topics import CreatableTopic, CreateTopicsRequest
from actors.core.messages.metadata import MetadataRequest, MetadataResponse
from actors.core.topics import validate_topic_name

CREATION_RETRY_MS = 5000
PENDING_TOPICS_MAX = 1000


class TopicAutoCreation:
    def __init__(self, broker_id: int, config: KafkaConfig) -> None:
        self.broker_id = broker_id
        self.enabled = config.get_bool("auto.create.topics.enable")
        self.num_partitions = config.get_int("num.partitions", 1)
        self.replication_factor = config.get_int("default.replication.factor", 1)
        self._requested_ms: dict[str, int] = {}  # topic -> when its CreateTopics was sent

    def apply(self, request: MetadataRequest, response: MetadataResponse, live_brokers: int,
              now_ms: int) -> tuple[MetadataResponse, list[Effect]]:
        """``response`` with each unknown topic that may be created answered as Kafka does, and the
        CreateTopics requests to send."""
        if not (self.enabled and request.allow_auto_topic_creation and request.topics):
            return response, []
        self._requested_ms = {t: at for t, at in self._requested_ms.items() if now_ms - at < CREATION_RETRY_MS}
        effects: list[Effect] = []
        topics = []
        for topic in response.topics:
            if topic.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
                topic = dataclasses.replace(topic, error_code=self._create(topic.name, live_brokers, now_ms, effects))
            topics.append(topic)
        return dataclasses.replace(response, topics=tuple(topics)), effects

    def _create(self, name: str, live_brokers: int, now_ms: int, effects: list[Effect]) -> ErrorCode:
        try:
            validate_topic_name(name)
        except KafkaProtocolError as exc:
            return exc.error_code
        if live_brokers < self.replication_factor:
            return ErrorCode.INVALID_REPLICATION_FACTOR
        if name not in self._requested_ms and len(self._requested_ms) < PENDING_TOPICS_MAX:
            self._requested_ms[name] = now_ms
            effects.append(LogEvent(level="info", message=(
                f"broker {self.broker_id} auto-creates topic {name} ({self.num_partitions} partitions, "
                f"replication factor {self.replication_factor}) for a Metadata request")))
            effects.append(Send(destination="controller", message=CreateTopicsRequest(topics=(CreatableTopic(
                name=name, num_partitions=self.num_partitions, replication_factor=self.replication_factor),))))
        return ErrorCode.LEADER_NOT_AVAILABLE


__all__ = ["CREATION_RETRY_MS", "PENDING_TOPICS_MAX", "TopicAutoCreation"]
