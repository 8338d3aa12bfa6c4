"""CreateTopics (API key 19): an admin client asks the controller to create topics.

A topic gives either ``num_partitions`` and ``replication_factor`` (-1 takes the broker's
``num.partitions`` and ``default.replication.factor``, KIP-464) or explicit ``assignments``, not
both (``INVALID_REQUEST``). ``validate_only`` checks everything and creates nothing. The
controller answers once the topics exist, or with ``REQUEST_TIMED_OUT`` after ``timeout_ms``.
"""
from __future__ import annotations

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
    topics: tuple[CreatableTopic, ...]
    timeout_ms: int = 60000
    validate_only: bool = False


@message
class CreatableTopicResult:
    name: str
    error_code: ErrorCode = ErrorCode.NONE
    error_message: str | None = None
    num_partitions: int = -1
    replication_factor: int = -1


@message
class CreateTopicsResponse:
    topics: tuple[CreatableTopicResult, ...]
    throttle_time_ms: int = 0
