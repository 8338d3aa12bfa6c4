"""A consumer in a group, as a simulated client: Kafka 2.4's AbstractCoordinator protocol, scripted.

Theory of operation. A ``GroupMember`` is a node of the simulation (``consumer:<name>``) that keeps
itself in its group the way Kafka's consumer does, over simulated calls with deadlines:

- no coordinator known: FindCoordinator to a live broker (the brokers in turn), retried after
  ``RETRY_BACKOFF_MS`` until one answers with a coordinator;
- joining: JoinGroup (the first answer of a new member is MEMBER_ID_REQUIRED with the id to use,
  KIP-394), then SyncGroup; the leader computes the range assignment from the members'
  subscriptions and the partition counts the simulation knows;
- stable: a Heartbeat every ``heartbeat_interval_ms``.

Errors, as the consumer treats them: NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE and a failed call
forget the coordinator (find it again); COORDINATOR_LOAD_IN_PROGRESS retries after the backoff;
REBALANCE_IN_PROGRESS rejoins; UNKNOWN_MEMBER_ID and ILLEGAL_GENERATION rejoin as a new member.
One call is in flight at a time. ``commit`` and ``fetch_committed`` are calls the story makes;
their outcomes are kept (``commits``) for the story to check.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from actors.core.errors import ErrorCode
from actors.core.group.assignors import leader_assignments, subscription_metadata
from actors.core.group.consumer_protocol import decode_assignment
from actors.core.messages.find_coordinator import FindCoordinatorRequest, FindCoordinatorResponse
from actors.core.messages.heartbeat import HeartbeatRequest
from actors.core.messages.join_group import JoinGroupRequest, JoinGroupRequestProtocol, JoinGroupResponse
from actors.core.messages.offset_commit import (
    OffsetCommitRequest, OffsetCommitRequestPartition, OffsetCommitRequestTopic, OffsetCommitResponse,
)
from actors.core.messages.offset_fetch import OffsetFetchRequest, OffsetFetchRequestTopic, OffsetFetchResponse
from actors.core.messages.sync_group import SyncGroupRequest, SyncGroupRequestAssignment, SyncGroupResponse

RETRY_BACKOFF_MS = 100
CALL_TIMEOUT_MS = 5_000
PROTOCOL = "range"
FORGET_COORDINATOR = {ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE,
                      ErrorCode.NETWORK_EXCEPTION, ErrorCode.REQUEST_TIMED_OUT}
REJOIN_AS_NEW = {ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.ILLEGAL_GENERATION}


@dataclass
class GroupMember:
    sim: Any
    node: Any
    group_id: str
    topics: tuple[str, ...]
    session_timeout_ms: int = 3_000
    rebalance_timeout_ms: int = 5_000
    heartbeat_interval_ms: int = 300
    state: str = "unjoined"  # unjoined -> joining -> syncing -> stable
    coordinator: str | None = None
    member_id: str = ""
    generation_id: int = -1
    assignment: tuple[tuple[str, int], ...] = ()
    in_flight: bool = False
    next_action_ms: int = 0
    stopped: bool = False
    commits: list = field(default_factory=list)  # (offsets asked, {tp: error name}) per commit
    _brokers_asked: int = 0

    # -------------------------------------------------------------------------------- driving
    def on_wakeup(self) -> None:
        if self.stopped or self.in_flight or self.sim.now_ms < self.next_action_ms:
            return
        if self.coordinator is None:
            self._find_coordinator()
        elif self.state in ("unjoined", "joining"):
            self._join()
        elif self.state == "stable":
            self._heartbeat()

    def _call(self, destination: str, request: Any, on_reply, timeout_ms: int = CALL_TIMEOUT_MS) -> None:
        self.in_flight = True

        def reply(response: Any) -> None:
            self.in_flight = False
            on_reply(response)
        self.sim.call(self.node, destination, None, request, reply, timeout_ms=timeout_ms,
                      timeout_error=ErrorCode.REQUEST_TIMED_OUT)

    def _later(self, delay_ms: int) -> None:
        self.next_action_ms = self.sim.now_ms + delay_ms
        self.node.timers.add(self.next_action_ms)

    def _error(self, response: Any) -> ErrorCode:
        return response if isinstance(response, ErrorCode) else ErrorCode(response.error_code)

    def _on_error(self, error: ErrorCode) -> None:
        if error in FORGET_COORDINATOR:
            self.coordinator = None
        elif error in REJOIN_AS_NEW:
            self.member_id, self.generation_id = "", -1
        self.state = "joining"
        self._later(RETRY_BACKOFF_MS)

    # ---------------------------------------------------------------------- the protocol
    def _find_coordinator(self) -> None:
        live = [b for b in self.sim.broker_ids if self.sim.is_up(b)]
        if not live:
            self._later(RETRY_BACKOFF_MS)
            return
        broker = live[self._brokers_asked % len(live)]
        self._brokers_asked += 1
        self._call(f"broker:{broker}", FindCoordinatorRequest(key=self.group_id), self._on_coordinator)

    def _on_coordinator(self, response: Any) -> None:
        if isinstance(response, FindCoordinatorResponse) and response.error_code == ErrorCode.NONE:
            self.coordinator = f"coordinator:{response.node_id}"
            self.state = "joining" if self.state != "stable" else "stable"
            self._later(0)
        else:
            self._later(RETRY_BACKOFF_MS)

    def _join(self) -> None:
        self.state = "joining"
        request = JoinGroupRequest(
            group_id=self.group_id, protocol_type="consumer", member_id=self.member_id,
            session_timeout_ms=self.session_timeout_ms, rebalance_timeout_ms=self.rebalance_timeout_ms,
            protocols=(JoinGroupRequestProtocol(name=PROTOCOL, metadata=subscription_metadata(PROTOCOL, self.topics)),))
        self._call(self.coordinator, request, self._on_joined, timeout_ms=self.rebalance_timeout_ms + CALL_TIMEOUT_MS)

    def _on_joined(self, response: Any) -> None:
        error = self._error(response)
        if error == ErrorCode.MEMBER_ID_REQUIRED:
            self.member_id = response.member_id
            self._later(0)
            return
        if error != ErrorCode.NONE:
            self._on_error(error)
            return
        assert isinstance(response, JoinGroupResponse)
        self.member_id, self.generation_id, self.state = response.member_id, response.generation_id, "syncing"
        assignments = ()
        if response.leader == self.member_id:
            partitions = {t: self.sim.partition_count(t) for t in self.topics}
            assignments = tuple(SyncGroupRequestAssignment(member_id=m, assignment=a) for m, a in sorted(
                leader_assignments(PROTOCOL, response.members, partitions).items()))
        self._call(self.coordinator, SyncGroupRequest(group_id=self.group_id, generation_id=self.generation_id,
                                                      member_id=self.member_id, assignments=assignments),
                   self._on_synced, timeout_ms=self.rebalance_timeout_ms + CALL_TIMEOUT_MS)

    def _on_synced(self, response: Any) -> None:
        error = self._error(response)
        if error != ErrorCode.NONE:
            self._on_error(error)
            return
        assert isinstance(response, SyncGroupResponse)
        self.assignment = tuple(sorted(decode_assignment(response.assignment).partitions)) \
            if response.assignment else ()
        self.state = "stable"
        self._later(self.heartbeat_interval_ms)

    def _heartbeat(self) -> None:
        self._call(self.coordinator, HeartbeatRequest(group_id=self.group_id, generation_id=self.generation_id,
                                                      member_id=self.member_id), self._on_heartbeat)

    def _on_heartbeat(self, response: Any) -> None:
        error = self._error(response)
        if error == ErrorCode.NONE:
            self._later(self.heartbeat_interval_ms)
        else:
            self._on_error(error)

    # ---------------------------------------------------------------------- story calls
    def commit(self, offsets: dict[tuple[str, int], int]) -> dict:
        """OffsetCommit in this member's generation; the outcome (per partition, an error name) is
        filled in when the coordinator answers (``{"pending": ...}`` until then)."""
        outcome: dict = {"offsets": dict(offsets), "errors": None}
        topics = sorted({t for t, _ in offsets})
        request = OffsetCommitRequest(group_id=self.group_id, generation_id=self.generation_id,
                                      member_id=self.member_id, topics=tuple(OffsetCommitRequestTopic(
                                          name=t, partitions=tuple(OffsetCommitRequestPartition(
                                              partition_index=p, committed_offset=o)
                                              for (topic, p), o in sorted(offsets.items()) if topic == t))
                                          for t in topics))

        def on_reply(response: Any) -> None:
            if isinstance(response, OffsetCommitResponse):
                outcome["errors"] = {(t.name, p.partition_index): ErrorCode(p.error_code).name
                                     for t in response.topics for p in t.partitions}
            else:
                outcome["errors"] = {tp: self._error(response).name for tp in offsets}
        self.sim.call(self.node, self.coordinator or "coordinator:-1", None, request, on_reply,
                      timeout_ms=CALL_TIMEOUT_MS, timeout_error=ErrorCode.REQUEST_TIMED_OUT)
        self.commits.append(outcome)
        return outcome

    def fetch_committed(self, partitions: list[tuple[str, int]]) -> dict:
        """OffsetFetch; ``result["offsets"]`` maps each partition to its committed offset (-1: none),
        or ``result["error"]`` names what went wrong."""
        result: dict = {"offsets": None, "error": None}
        request = OffsetFetchRequest(group_id=self.group_id, topics=tuple(
            OffsetFetchRequestTopic(name=t, partition_indexes=tuple(sorted(p for topic, p in partitions if topic == t)))
            for t in sorted({t for t, _ in partitions})))

        def on_reply(response: Any) -> None:
            if isinstance(response, OffsetFetchResponse) and response.error_code == ErrorCode.NONE:
                result["offsets"] = {(t.name, p.partition_index): p.committed_offset
                                     for t in response.topics for p in t.partitions}
            else:
                result["error"] = self._error(response).name
        self.sim.call(self.node, self.coordinator or "coordinator:-1", None, request, on_reply,
                      timeout_ms=CALL_TIMEOUT_MS, timeout_error=ErrorCode.REQUEST_TIMED_OUT)
        return result
