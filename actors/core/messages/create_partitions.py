"""CreatePartitions (API key 37): an admin client asks the controller to add partitions to topics.

Each topic names its new total ``count`` and, optionally, the replicas of each new partition
(``assignments``, one entry per added partition, in order); without them the controller continues
Kafka's rack-unaware assignment from the existing partitions. A client sends it to any broker,
which forwards it to the controller (``actors/core/broker/controller_forwarding.py``);
``forward_id`` is raykafka's own field, the broker's number for the forwarded request (0 in a
client's). The controller answers once every live broker knows the new partitions' leaders, or
``timeout_ms`` passed (as for CreateTopics, actors/core/controller/metadata_propagation.py).
"""
from __future__ import annotations

from typing import ClassVar

from actors.core.errors import ErrorCode
from actors.core.messages._base import message


@message
class CreatePartitionsAssignment:
    broker_ids: tuple[int, ...]


@message
class CreatePartitionsTopic:
    name: str
    count: int  # the topic's partition count after the request, not the number added
    assignments: tuple[CreatePartitionsAssignment, ...] | None = None


@message
class CreatePartitionsRequest:
    API_KEY: ClassVar[int] = 37
    topics: tuple[CreatePartitionsTopic, ...]
    timeout_ms: int = 60000
    validate_only: bool = False
    forward_id: int = 0


@message
class CreatePartitionsTopicResult:
    name: str
    error_code: ErrorCode = ErrorCode.NONE
    error_message: str | None = None


@message
class CreatePartitionsResponse:
    results: tuple[CreatePartitionsTopicResult, ...]
    throttle_time_ms: int = 0


def refused(request: CreatePartitionsRequest, code: ErrorCode) -> CreatePartitionsResponse:
    """The answer that gives every topic of ``request`` the one error ``code``."""
    return CreatePartitionsResponse(results=tuple(CreatePartitionsTopicResult(name=t.name, error_code=code)
                                                  for t in request.topics))
