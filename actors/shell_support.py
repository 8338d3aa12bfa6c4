"""What every actor shell shares: answering requests through futures, and keeping call order.

``PendingRequests`` is the purgatory's shell half. A request gets an id and a future; the core is
stepped with that id and may answer at once or later with a ``Respond`` effect, which resolves the
future the caller is awaiting. Before that, the request is parsed as Kafka parses one off the wire:
a request that is not the handler's request type, field by field (``check_request``), never
reaches the core; its caller gets ``KafkaProtocolError(INVALID_REQUEST)`` (Kafka closes the
connection) and the actor's state is untouched. The request type is the one ``REQUEST_TYPES``
names for the handler (every Kafka API handler is ``handle_<api>``), or the one the shell passes.

``OrderedInbox`` and ``CallNumbers`` put one caller's calls back in order. Ray does not promise
that an async actor runs one caller's calls in the order they were sent (observed here: a new
send-thread actor ran a later batch before an earlier one), so callers that need order number
their calls per target, and the target applies them strictly in that order.
"""
from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Callable
from typing import Any

from loguru import logger

from actors.core.effects import Respond
from actors.core.errors import ErrorCode, KafkaProtocolError
from actors.core.group.messages import DeleteGroupsRequest
from actors.core.messages import (
    AlterPartitionRequest, BrokerHeartbeatRequest, BrokerRegistrationRequest, ControlledShutdownRequest,
    CreateTopicsRequest, DeleteTopicsRequest, DescribeGroupsRequest, ElectLeadersRequest, FetchRequest,
    FindCoordinatorRequest, HeartbeatRequest, JoinGroupRequest, LeaderAndIsrRequest, LeaveGroupRequest,
    ListGroupsRequest, ListOffsetsRequest, MetadataRequest, OffsetCommitRequest, OffsetFetchRequest,
    OffsetForLeaderEpochRequest, ProduceRequest, StopReplicaRequest, SyncGroupRequest, UpdateMetadataRequest,
)
from actors.core.messages.validation import request_schema_error
from actors.core.replica.follower_messages import FollowerAppendRequest, FollowerTruncateRequest

# The request type of every handler a shell steps through ``PendingRequests``, by handler name.
REQUEST_TYPES: dict[str, type] = {
    "handle_produce": ProduceRequest,
    "handle_internal_produce": ProduceRequest,
    "handle_fetch": FetchRequest,
    "handle_list_offsets": ListOffsetsRequest,
    "handle_metadata": MetadataRequest,
    "handle_offset_for_leader_epoch": OffsetForLeaderEpochRequest,
    "handle_find_coordinator": FindCoordinatorRequest,
    "handle_follower_truncate": FollowerTruncateRequest,
    "handle_follower_append": FollowerAppendRequest,
    "handle_leader_and_isr": LeaderAndIsrRequest,
    "handle_update_metadata": UpdateMetadataRequest,
    "handle_stop_replica": StopReplicaRequest,
    "handle_broker_registration": BrokerRegistrationRequest,
    "handle_broker_heartbeat": BrokerHeartbeatRequest,
    "handle_controlled_shutdown": ControlledShutdownRequest,
    "handle_alter_partition": AlterPartitionRequest,
    "handle_create_topics": CreateTopicsRequest,
    "handle_delete_topics": DeleteTopicsRequest,
    "handle_elect_leaders": ElectLeadersRequest,
    "handle_join_group": JoinGroupRequest,
    "handle_sync_group": SyncGroupRequest,
    "handle_heartbeat": HeartbeatRequest,
    "handle_leave_group": LeaveGroupRequest,
    "handle_offset_commit": OffsetCommitRequest,
    "handle_offset_fetch": OffsetFetchRequest,
    "handle_describe_groups": DescribeGroupsRequest,
    "handle_list_groups": ListGroupsRequest,
    "handle_delete_groups": DeleteGroupsRequest,
}


def monotonic_ms() -> int:
    return int(time.monotonic() * 1000)


def check_request(request: Any, request_type: type, owner: str) -> None:
    """Raise ``KafkaProtocolError(INVALID_REQUEST)`` unless ``request`` is a well-formed
    ``request_type``: the shell's stand-in for Kafka's request parser."""
    error = request_schema_error(request, request_type)
    if error is not None:
        logger.warning("{} refused a request it cannot parse as {}: {}", owner, request_type.__name__, error)
        raise KafkaProtocolError(ErrorCode.INVALID_REQUEST, f"not a valid {request_type.__name__}: {error}")


class PendingRequests:
    def __init__(self, owner: str) -> None:
        self._owner = owner
        self._pending: dict[int, asyncio.Future] = {}
        self._ids = itertools.count()

    async def call(self, handler: Callable, request: Any, apply: Callable[[list], None], *,
                   request_type: type | None = None) -> Any:
        """Check ``request`` (see the module docstring), step ``handler`` with a new request id,
        apply its effects, await the answer."""
        name = getattr(handler, "__name__", "")
        if request_type is None and name.startswith("handle_"):
            assert name in REQUEST_TYPES, f"{name} has no request type in shell_support.REQUEST_TYPES"
            request_type = REQUEST_TYPES[name]
        if request_type is not None:
            check_request(request, request_type, self._owner)
        request_id = next(self._ids)
        future = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        try:
            effects = handler(request_id, request, monotonic_ms())
        except Exception:
            self._pending.pop(request_id, None)
            logger.exception("{} failed on {}", self._owner, type(request).__name__)
            raise
        apply(effects)
        return await future

    def respond(self, effect: Respond) -> None:
        future = self._pending.pop(effect.request_id, None)
        if future is not None and not future.done():
            future.set_result(effect.response)


class OrderedInbox:
    """Receiving side: items numbered 0, 1, 2, ... come out in that order, however they arrive."""

    def __init__(self, early_max: int = 100_000) -> None:
        self._early: dict[int, Any] = {}
        self._next = 0
        self._early_max = early_max

    def offer(self, sequence: int, item: Any) -> list[Any]:
        """Accept ``item``; returns the items now deliverable, in order (possibly none)."""
        assert sequence >= self._next and sequence not in self._early, f"call {sequence} seen twice"
        assert len(self._early) < self._early_max, "a gap in the caller's numbering never filled"
        self._early[sequence] = item
        ready = []
        while self._next in self._early:
            ready.append(self._early.pop(self._next))
            self._next += 1
        return ready


class CallNumbers:
    """Sending side: the next number for each target; a new target (actor) starts again at 0."""

    def __init__(self) -> None:
        self._next: dict[Any, int] = {}

    def reset(self, target: Any) -> None:
        self._next[target] = 0

    def next(self, target: Any) -> int:
        number = self._next[target]
        self._next[target] = number + 1
        return number

    def forget(self, target: Any) -> None:
        self._next.pop(target, None)
