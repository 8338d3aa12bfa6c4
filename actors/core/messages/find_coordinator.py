"""FindCoordinator (API key 10): which broker coordinates a consumer group.

The coordinator is the leader of the ``__consumer_offsets`` partition the group id hashes to.
``host`` carries that broker actor's name in the cluster's Ray namespace and ``port`` is 0;
``COORDINATOR_NOT_AVAILABLE`` means the partition has no leader yet and the client retries.
From v4 (KIP-699) a request names several keys (``coordinator_keys``, ``key`` then unused) and the
answer is one ``Coordinator`` per key, each found as a single key is (Kafka's
``handleFindCoordinatorRequestV4AndAbove``).
"""
from __future__ import annotations

from typing import ClassVar

from actors.core.errors import ErrorCode
from actors.core.messages._base import message

# Kafka's CoordinatorType values for ``key_type``.
COORDINATOR_KEY_TYPE_GROUP = 0
COORDINATOR_KEY_TYPE_TRANSACTION = 1


@message
class FindCoordinatorRequest:
    API_KEY: ClassVar[int] = 10
    key: str  # the group id
    key_type: int = COORDINATOR_KEY_TYPE_GROUP  # only groups are implemented
    # The Kafka listener the request came in on: the coordinator is then the broker's endpoint on
    # it (a stock client talks to the coordinator through that broker); None gives the
    # coordinator actor's name, for raykafka's own clients.
    listener_name: str | None = None
    coordinator_keys: tuple[str, ...] | None = None  # v4+: the keys asked for at once


@message
class Coordinator:
    """One key's answer at v4+; a key without a coordinator has node -1, host "" and port -1
    (Kafka's ``Node.noNode``)."""
    key: str
    node_id: int = -1
    host: str = ""
    port: int = -1
    error_code: ErrorCode = ErrorCode.NONE
    error_message: str | None = None


@message
class FindCoordinatorResponse:
    error_code: ErrorCode = ErrorCode.NONE
    error_message: str | None = None
    node_id: int = -1
    host: str = ""
    port: int = 0
    throttle_time_ms: int = 0
    coordinators: tuple[Coordinator, ...] = ()  # v4+: one per requested key, in the request's order
