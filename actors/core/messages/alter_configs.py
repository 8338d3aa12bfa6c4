"""AlterConfigs (API key 33): replace a topic's configuration overrides with the request's set.

The older form of IncrementalAlterConfigs (``incremental_alter_configs``), served the same way (the
broker checks, the controller stores and tells every broker), with Kafka's whole-set semantics: the
overrides after it are exactly the resource's configs, so an override it does not name is removed.
Each config is carried as a SET operation so that one check (``topic_configs.check_alter_ops``)
serves both APIs. ``forward_id`` is raykafka's own field, as in IncrementalAlterConfigs.
"""
from __future__ import annotations

from typing import ClassVar

from actors.core.messages._base import message
from actors.core.messages.incremental_alter_configs import AlterConfigsResource, AlterConfigsResourceResponse


@message
class AlterConfigsRequest:
    API_KEY: ClassVar[int] = 33
    resources: tuple[AlterConfigsResource, ...]
    validate_only: bool = False
    forward_id: int = 0


@message
class AlterConfigsResponse:
    responses: tuple[AlterConfigsResourceResponse, ...]
    throttle_time_ms: int = 0
