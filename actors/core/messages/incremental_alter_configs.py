"""IncrementalAlterConfigs (API key 44): set or delete a topic's configuration overrides.

A client sends it to any broker. The broker checks each resource (a topic it knows, keys Kafka's
topic configuration has, values of the right type and range) and answers a bad one with
``INVALID_CONFIG``, ``UNKNOWN_TOPIC_OR_PARTITION`` or ``INVALID_REQUEST`` itself; the good ones it
forwards to the controller, which merges the operations into the topic's stored overrides, checks
the result again, persists it and tells every broker (Kafka 2.4's broker wrote
``/config/topics/<topic>`` and a change notification; raykafka brokers have no ZooKeeper, so the
controller, the one writer of the metadata store, does it for them, as KRaft's does).

``forward_id`` is raykafka's own field: the broker's number for a forwarded request, so it can
answer its client when the controller's answer comes back (0 in a client's request).
"""
from __future__ import annotations

from typing import ClassVar

from actors.core.errors import ErrorCode
from actors.core.messages._base import message

# Kafka's AlterConfigOp.OpType.
OP_SET = 0
OP_DELETE = 1
OP_APPEND = 2
OP_SUBTRACT = 3
RESOURCE_TOPIC = 2  # Kafka's ConfigResource.Type.TOPIC


@message
class AlterableConfig:
    name: str
    config_operation: int = OP_SET
    value: str | None = None


@message
class AlterConfigsResource:
    resource_type: int
    resource_name: str
    configs: tuple[AlterableConfig, ...]


@message
class IncrementalAlterConfigsRequest:
    API_KEY: ClassVar[int] = 44
    resources: tuple[AlterConfigsResource, ...]
    validate_only: bool = False
    forward_id: int = 0


@message
class AlterConfigsResourceResponse:
    resource_type: int
    resource_name: str
    error_code: ErrorCode = ErrorCode.NONE
    error_message: str | None = None


@message
class IncrementalAlterConfigsResponse:
    responses: tuple[AlterConfigsResourceResponse, ...]
    throttle_time_ms: int = 0
