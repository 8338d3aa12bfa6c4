"""BrokerHeartbeat (API key 63): a registered broker keeps its session with the controller alive.

A broker that misses heartbeats for the session timeout is fenced and its leaderships are moved
(KIP-631). The broker says how far it has applied the controller's metadata; the controller
unfences it once it has caught up and answers ``should_shut_down`` once a controlled shutdown
it asked for (``want_shut_down``) has moved all its leaderships away. A heartbeat with a stale
``broker_epoch`` is answered with ``STALE_BROKER_EPOCH``.
"""
from __future__ import annotations

from typing import ClassVar

from actors.core.errors import ErrorCode
from actors.core.messages._base import message


@message
class BrokerHeartbeatRequest:
    API_KEY: ClassVar[int] = 63
    broker_id: int
    broker_epoch: int
    current_metadata_offset: int  # the highest controller metadata update this broker applied
    want_fence: bool = False
    want_shut_down: bool = False


@message
class BrokerHeartbeatResponse:
    error_code: ErrorCode = ErrorCode.NONE
    is_caught_up: bool = False
    is_fenced: bool = True  # Kafka's default: a broker is fenced until the controller says not
    should_shut_down: bool = False
    throttle_time_ms: int = 0
