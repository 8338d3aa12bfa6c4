"""CreateTopics (API key 19): an admin client asks the controller to create topics.

A topic gives either ``num_partitions`` and ``replication_factor`` (-1 takes the broker's
``num.partitions`` and ``default.replication.factor``, KIP-464) or explicit ``assignments``, not
both (``INVALID_REQUEST``). ``validate_only`` checks everything and creates nothing.

A client sends it to any broker, which forwards it to the controller. The controller answers once
every live broker has applied the UpdateMetadata that carries the new partitions (or
``timeout_ms`` passed); the broker then holds the answer until its own metadata cache shows every
new partition with a leader, as Kafka 2.4's ``DelayedCreatePartitions`` does, and answers a topic
whose partitions still lack one after ``timeout_ms`` with ``REQUEST_TIMED_OUT``. A ``timeout_ms``
of 0 or less is answered as soon as the controller has created the topics, each created one
``REQUEST_TIMED_OUT`` (Kafka's "not waited for", which librdkafka reports as success).

``forward_id`` is raykafka's own field: the forwarding broker's number for the request, so it can
answer its client when the controller's answer comes back (0 in a client's request).

From v5 (KIP-525) each created topic's answer carries its partition count, replication factor and
every topic config with its value and source, as Kafka 2.4's ``AdminManager.createTopics`` fills
them (for ``validate_only`` too); a topic refused or timed out gets -1, -1 and no configs.
"""
from __future__ import annotations

from typing import ClassVar

from actors.core.errors import ErrorCode
from actors.core.messages._base import message


@message
class CreatableReplicaAssignment:
    partition_index: int
    broker_ids: tuple[int, ...]  # the first is the preferred leader


@message
class CreateableTopicConfig:  # sic: Kafka's schema spells it "Createable"
    name: str  # a Kafka topic configuration key, e.g. "min.insync.replicas"
    value: str | None


@message
class CreatableTopic:
    name: str
    num_partitions: int = -1
    replication_factor: int = -1
    assignments: tuple[CreatableReplicaAssignment, ...] = ()
    configs: tuple[CreateableTopicConfig, ...] = ()


@message
class CreateTopicsRequest:
    API_KEY: ClassVar[int] = 19
    topics: tuple[CreatableTopic, ...]
    timeout_ms: int = 60000
    validate_only: bool = False
    forward_id: int = 0


@message
class CreatableTopicConfigs:
    """One config of a created topic, in the v5+ answer (KIP-525), as DescribeConfigs describes it."""
    name: str
    value: str | None
    read_only: bool = False
    config_source: int = -1  # Kafka's ConfigSource id (topic_config_synonyms.SOURCE_*)
    is_sensitive: bool = False


@message
class CreatableTopicResult:
    name: str
    error_code: ErrorCode = ErrorCode.NONE
    error_message: str | None = None
    num_partitions: int = -1
    replication_factor: int = -1
    # v5+: every topic config with its value and source; empty for a topic not created (Kafka's
    # handleCreateTopicsRequest resets them, with the counts, on any error).
    configs: tuple[CreatableTopicConfigs, ...] = ()


@message
class CreateTopicsResponse:
    topics: tuple[CreatableTopicResult, ...]
    throttle_time_ms: int = 0


def refused(request: CreateTopicsRequest, code: ErrorCode) -> CreateTopicsResponse:
    """The answer that gives every topic of ``request`` the one error ``code``."""
    return CreateTopicsResponse(topics=tuple(CreatableTopicResult(name=t.name, error_code=code) for t in request.topics))
