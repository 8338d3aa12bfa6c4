"""What a replica fetcher (``fetcher.FetcherCore``) keeps: each partition's fetch state and the
table of its transitions, the pending local or ListOffsets steps, and the one request in flight.

State table (``TRANSITIONS``; ``FetcherCore`` checks every change against it):
- TRUNCATING: asked about in OffsetForLeaderEpoch; the answer becomes a local TO_LEADER_EPOCH_END
  truncate. Complete -> FETCHING at the new LEO; not complete (the leader's epoch is unknown
  here) -> TRUNCATING with the new latest epoch; error -> DELAYED; fenced -> removed.
- FETCHING: in Fetch with last_fetched_epoch. Records -> local append -> FETCHING at the new LEO;
  diverging epoch -> local truncate -> FETCHING (or TRUNCATING if not complete);
  OFFSET_OUT_OF_RANGE -> ListOffsets (+ local truncate) -> FETCHING; error -> DELAYED; fenced ->
  removed.
- DELAYED: in no request until ``delayed_until_ms``; then ``tick`` -> ``resume_state``.
Entering TRUNCATING with no epoch in the log (latest_epoch -1: nothing to compare) means FETCHING.
Under ``raykafka.truncation.policy=high-watermark`` (pre-KIP-101, kept to reproduce its bugs) no
partition is ever TRUNCATING and fetches carry last_fetched_epoch -1, so the leader cannot see
divergence; the broker truncated to its high watermark before adding the partition.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from actors.core.messages._base import NO_EPOCH
from actors.core.fetcher.follower_messages import FollowerAppendPartition, FollowerTruncatePartition

__all__ = ["FetchState", "InFlight", "PartitionFetchState", "Step", "StepKind", "TRANSITIONS"]

TopicPartition = tuple[str, int]


class FetchState(enum.Enum):
    TRUNCATING = "truncating"
    FETCHING = "fetching"
    DELAYED = "delayed"


_TRUNCATING, _FETCHING, _DELAYED = FetchState.TRUNCATING, FetchState.FETCHING, FetchState.DELAYED
TRANSITIONS: dict[FetchState, frozenset[FetchState]] = {
    _TRUNCATING: frozenset({_TRUNCATING, _FETCHING, _DELAYED}),
    _FETCHING: frozenset({_FETCHING, _TRUNCATING, _DELAYED}),
    _DELAYED: frozenset({_TRUNCATING, _FETCHING}),  # in no request, so only its timer moves it
}


@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionFetchState:
    """Where the fetcher is with one partition."""

    fetch_offset: int  # >= 0: the follower's log end offset as this fetcher last learned it
    current_leader_epoch: int  # the epoch of the LeaderAndIsr this fetcher works under
    latest_epoch: int = NO_EPOCH  # the follower log's latest epoch (-1: none)
    state: FetchState = FetchState.FETCHING
    delayed_until_ms: int = -1  # >= 0 exactly when state is DELAYED
    resume_state: FetchState = FetchState.FETCHING  # DELAYED's next state; == state otherwise
    leader_high_watermark: int = -1  # the leader HW last handed to the local broker
    leader_log_start_offset: int = -1  # the leader log start last handed to the local broker
    # The local log's start as the local broker last reported it; each fetch tells the leader
    # (Fetch's log_start_offset), whose DeleteRecords waits for it (-1: not known yet).
    log_start_offset: int = -1

    def __post_init__(self) -> None:
        assert self.fetch_offset >= 0, f"fetch offset {self.fetch_offset} is negative"
        assert self.resume_state is not FetchState.DELAYED, self
        assert (self.state is FetchState.DELAYED) == (self.delayed_until_ms >= 0), self
        assert self.state is FetchState.DELAYED or self.resume_state is self.state, self


class StepKind(enum.Enum):
    """A pending step; the values name the in-flight request kinds, in the order steps are drained."""
    APPEND = "append"
    TRUNCATE = "truncate"
    LIST_LATEST = "latest"
    LIST_EARLIEST = "earliest"


@dataclass(frozen=True, slots=True)
class Step:
    kind: StepKind
    item: FollowerAppendPartition | FollowerTruncatePartition | None = None


@dataclass(frozen=True, slots=True)
class InFlight:
    request: Any
    destination: str  # "leader" or "local"
    kind: str  # a StepKind value, "epochs" or "fetch": the key into FetcherCore._ANSWERS
    deadline_ms: int
    asked: dict[TopicPartition, Any]  # the per-partition item of the request (None for ListOffsets)
    incarnations: dict[TopicPartition, int]
