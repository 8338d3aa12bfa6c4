"""Proves a client does not take a topic for unknown because the first broker it asks has just
restarted and has not yet been told the topics: it asks the other brokers before saying
UNKNOWN_TOPIC_OR_PARTITION. Driven with canned Metadata answers, no Ray."""
from __future__ import annotations

import pytest

from actors.core.errors import ErrorCode
from actors.core.messages.metadata import (
    MetadataResponse, MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
)
from orchestration.clients.broker_directory import BrokerDirectory
from orchestration.errors import KafkaError

BROKERS = tuple(MetadataResponseBroker(node_id=i, host=f"broker-{i}", port=0) for i in range(3))


def answer(*topics: str) -> MetadataResponse:
    return MetadataResponse(brokers=BROKERS, topics=tuple(MetadataResponseTopic(
        error_code=ErrorCode.NONE, name=name, partitions=(MetadataResponsePartition(
            error_code=ErrorCode.NONE, partition_index=0, leader_id=1, leader_epoch=3, replica_nodes=(0, 1, 2),
            isr_nodes=(0, 1, 2)),)) for name in topics))


class Canned(BrokerDirectory):
    def __init__(self, answers: dict[int, MetadataResponse]) -> None:
        super().__init__(namespace="unused", bootstrap_broker_ids=sorted(answers))
        self.answers = answers
        self.asked: list[int] = []

    def call(self, broker_id, request, timeout_ms=None):
        self.asked.append(broker_id)
        return self.answers[broker_id]


def test_a_topic_the_first_broker_does_not_know_yet_is_found_on_another():
    directory = Canned({0: answer(), 1: answer("events"), 2: answer("events")})  # broker 0 just restarted
    assert directory.partitions_for("events") == {0: (1, 3)}


def test_a_topic_no_broker_knows_is_unknown():
    directory = Canned({0: answer(), 1: answer("other"), 2: answer()})
    with pytest.raises(KafkaError) as raised:
        directory.partitions_for("events")
    assert raised.value.code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
