"""What a group member is and knows, shared by its membership and its heartbeat thread.

The member's states and their transitions (Kafka's ``MemberState``), its generation and
coordinator, its configuration, the protocols of the seams it is built on (the channel to the
coordinator and the consumer's hooks), and the record of a request in flight. The membership
(group_membership.py) drives these; the heartbeat thread (group_heartbeat.py) reads them.
"""
from __future__ import annotations

import enum
import time
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, Protocol

from actors.core.errors import ErrorCode
from actors.core.messages.find_coordinator import FindCoordinatorRequest
from actors.core.messages.join_group import (
    UNKNOWN_GENERATION_ID, UNKNOWN_MEMBER_ID, JoinGroupRequestProtocol, JoinGroupResponseMember,
)
from orchestration.errors import KafkaError

# Answers (and transport failures) after which the member looks for its coordinator again.
COORDINATOR_GONE = frozenset({ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE,
                              ErrorCode.NETWORK_EXCEPTION, ErrorCode.REQUEST_TIMED_OUT})


class MemberState(enum.Enum):
    UNJOINED = "unjoined"
    REBALANCING = "rebalancing"
    STABLE = "stable"


MEMBER_STATE_TRANSITIONS: dict[MemberState, frozenset[MemberState]] = {
    MemberState.UNJOINED: frozenset({MemberState.UNJOINED, MemberState.REBALANCING}),
    MemberState.REBALANCING: frozenset({MemberState.REBALANCING, MemberState.STABLE, MemberState.UNJOINED}),
    MemberState.STABLE: frozenset({MemberState.REBALANCING, MemberState.UNJOINED}),
}


@dataclass(frozen=True, slots=True)
class Generation:
    generation_id: int = UNKNOWN_GENERATION_ID
    member_id: str = UNKNOWN_MEMBER_ID
    protocol_name: str | None = None


NO_GENERATION = Generation()


@dataclass(frozen=True, slots=True)
class Coordinator:
    node_id: int
    name: str  # the coordinator actor's name, FindCoordinator's ``host``


@dataclass(frozen=True, slots=True, kw_only=True)
class MembershipConfig:
    group_id: str
    session_timeout_ms: int = 10000
    heartbeat_interval_ms: int = 3000
    rebalance_timeout_ms: int = 300000  # the consumer's max.poll.interval.ms
    retry_backoff_ms: int = 100
    request_timeout_ms: int = 30000
    client_id: str = ""
    client_host: str = ""
    group_instance_id: str | None = None  # KIP-345: a static member; None for a dynamic one

    def __post_init__(self) -> None:
        if not self.group_id:
            raise KafkaError(ErrorCode.INVALID_GROUP_ID, "group management needs a non-empty group.id")
        if not 0 < self.heartbeat_interval_ms < self.session_timeout_ms:
            raise KafkaError(ErrorCode.INVALID_CONFIG, "heartbeat.interval.ms must be positive and lower than "
                                                       "session.timeout.ms")


class CoordinatorChannel(Protocol):
    def find_coordinator(self, request: FindCoordinatorRequest) -> Future: ...
    def send(self, coordinator_name: str, request: Any) -> Future: ...


class MembershipHooks(Protocol):
    """What the consumer protocol adds to membership (Kafka's abstract methods of AbstractCoordinator)."""

    def join_protocols(self) -> tuple[JoinGroupRequestProtocol, ...]: ...
    def on_join_prepare(self, generation: Generation) -> None: ...
    def perform_assignment(self, leader_id: str, protocol_name: str,
                           members: tuple[JoinGroupResponseMember, ...]) -> dict[str, bytes]: ...
    def on_join_complete(self, generation: Generation, assignment: bytes) -> None: ...
    def on_leave_prepare(self) -> None: ...
    def needs_rejoin(self) -> bool: ...


@dataclass(slots=True)
class InFlight:
    """A request sent and not yet handled; ``timeout_at_ms`` is when it counts as lost."""
    api: str
    future: Future
    timeout_at_ms: float
    generation: Generation
    coordinator: Coordinator | None


def monotonic_ms() -> float:
    return time.monotonic() * 1000


__all__ = [
    "COORDINATOR_GONE", "MEMBER_STATE_TRANSITIONS", "NO_GENERATION", "Coordinator", "CoordinatorChannel",
    "Generation", "InFlight", "MemberState", "MembershipConfig", "MembershipHooks", "monotonic_ms",
]
