"""One consumer's membership in a group: Kafka 2.4's ``AbstractCoordinator``, client side.

Theory of operation. A ``GroupMembership`` owns what a member knows about its group: the
coordinator (found with FindCoordinator), the generation (id, member id and protocol of the last
JoinGroup), the member state, whether it must rejoin, and the heartbeat thread. What a consumer
puts into a group (subscriptions, assignors, rebalance listeners, offsets) sits behind
``MembershipHooks``, implemented by ``ConsumerCoordinator``.

Inputs: the consumer's thread calls ``ensure_coordinator_ready``, ``ensure_active_group``,
``poll_heartbeat``, ``maybe_leave_group`` and ``close`` from its poll loop, each bounded by a
deadline; the heartbeat thread calls ``heartbeat_step``; answers come back from the coordinator.
A rebalance is JoinGroup (twice for a new member: the first is answered MEMBER_ID_REQUIRED with the
id to use, KIP-394), the leader's assignment, then SyncGroup. A JoinGroup still parked at the
coordinator when the caller's deadline comes stays in flight, and the next call picks it up, as
Kafka's consumer does; nothing here blocks past a deadline.

Member states (Kafka's ``MemberState``), checked against ``MEMBER_STATE_TRANSITIONS`` (group_member.py):

- UNJOINED: in no generation (at the start, after LeaveGroup, after the coordinator fenced us);
  may go to REBALANCING.
- REBALANCING: a JoinGroup or SyncGroup is in flight; heartbeats pause. May go to STABLE (SyncGroup
  answered), UNJOINED, or REBALANCING again (a retried JoinGroup).
- STABLE: in a generation with an assignment; the heartbeat thread keeps the session alive. May
  go to REBALANCING or UNJOINED.

Requests travel through ``channel`` (the seam tests replace): ``find_coordinator(request)`` asks any
broker, ``send(coordinator_name, method, request, **kwargs)`` calls the coordinator actor named by
FindCoordinator's ``host``. Both return a ``concurrent.futures.Future`` of the response that fails
with ``KafkaError`` when the transport fails. Both threads share this object; ``lock`` guards
every field, and neither thread holds it while waiting for an answer.
"""
from __future__ import annotations

import concurrent.futures
import threading
import time
from collections.abc import Callable
from typing import Any

from loguru import logger

from actors.core.apis import api_of
from actors.core.errors import ErrorCode
from actors.core.group.consumer_protocol import CONSUMER_PROTOCOL_TYPE
from actors.core.messages.find_coordinator import FindCoordinatorRequest
from actors.core.messages.join_group import UNKNOWN_GENERATION_ID, UNKNOWN_MEMBER_ID, JoinGroupRequest
from actors.core.messages.leave_group import LeaveGroupRequest, MemberIdentity
from actors.core.messages.sync_group import SyncGroupRequest, SyncGroupRequestAssignment
from orchestration.clients.group_heartbeat import HeartbeatThread
from orchestration.clients.group_member import (
    COORDINATOR_GONE, MEMBER_STATE_TRANSITIONS, NO_GENERATION, Coordinator, CoordinatorChannel, Generation, InFlight,
    MembershipConfig, MembershipHooks, MemberState, monotonic_ms,
)
from orchestration.errors import KafkaError

# Bounds on the loops below; each pass sends a request or waits for one, so a caller's deadline
# ends them long before these limits in practice. At a limit the call returns False ("not yet"),
# and the next poll continues where this one stopped.
COORDINATOR_LOOKUPS_PER_CALL_MAX = 1000
JOIN_ROUNDS_PER_CALL_MAX = 1000
# Kafka gives a JoinGroup the rebalance timeout plus this much before it counts as lost.
JOIN_GROUP_TIMEOUT_EXTRA_MS = 5000
# JoinGroup errors after which the member rejoins at once, without backing off.
_REJOIN_AT_ONCE = frozenset({ErrorCode.MEMBER_ID_REQUIRED, ErrorCode.UNKNOWN_MEMBER_ID,
                             ErrorCode.ILLEGAL_GENERATION, ErrorCode.REBALANCE_IN_PROGRESS})


class GroupMembership:
    def __init__(self, config: MembershipConfig, hooks: MembershipHooks, channel: CoordinatorChannel, *,
                 clock_ms: Callable[[], float] = monotonic_ms, heartbeat_thread: bool = True) -> None:
        """``heartbeat_thread=False`` leaves heartbeats to whoever calls ``heartbeat.step`` (tests)."""
        self.config = config
        self._hooks = hooks
        self._channel = channel
        self.clock_ms = clock_ms
        self.lock = threading.RLock()
        self.state = MemberState.UNJOINED
        self.generation = NO_GENERATION
        self.coordinator: Coordinator | None = None
        self.rejoin_needed = True
        self._needs_join_prepare = True
        self._rebalance: InFlight | None = None  # the JoinGroup or SyncGroup in flight
        self._lookup: InFlight | None = None  # the FindCoordinator in flight
        self._lookup_not_before_ms = 0.0  # backoff after a failed lookup
        self.heartbeat = HeartbeatThread(self, start_thread=heartbeat_thread)
        self._closed = False

    # ------------------------------------------------------------------------------ state
    def _transition(self, state: MemberState) -> None:
        assert state in MEMBER_STATE_TRANSITIONS[self.state], f"member state {self.state.name} -> {state.name}"
        self.state = state

    def is_stable(self) -> bool:
        with self.lock:
            return self.state is MemberState.STABLE

    def rebalancing(self) -> bool:
        with self.lock:
            return self.state is MemberState.REBALANCING

    def generation_if_stable(self) -> Generation | None:
        """The generation to commit offsets in; None while rebalancing or out of the group."""
        with self.lock:
            return self.generation if self.state is MemberState.STABLE else None

    def coordinator_unknown(self) -> bool:
        with self.lock:
            return self.coordinator is None

    def rejoin_needed_or_pending(self) -> bool:
        with self.lock:
            return self.rejoin_needed or self._rebalance is not None or self._hooks.needs_rejoin()

    def request_rejoin(self) -> None:
        with self.lock:
            self.rejoin_needed = True

    def mark_coordinator_unknown(self, reason: str, coordinator: Coordinator | None = None) -> None:
        """Forget the coordinator (only ``coordinator``, if given, so a late answer from an old
        one cannot unset a newer one). A rebalance in flight to it is abandoned, as Kafka's
        disconnect fails it."""
        with self.lock:
            if self.coordinator is None or (coordinator is not None and coordinator != self.coordinator):
                return
            logger.info("group {}: coordinator {} unknown: {}", self.config.group_id, self.coordinator.name, reason)
            self.coordinator = None
            self._rebalance = None
            self.heartbeat.forget_in_flight()

    def reset_generation(self, *, reset_member_id: bool, generation: Generation | None = None) -> None:
        """Leave the generation (only ``generation``, if given) and rejoin; UNKNOWN_MEMBER_ID also
        costs the member id, ILLEGAL_GENERATION keeps it so the coordinator knows the member."""
        with self.lock:
            if generation is not None and generation != self.generation:
                return
            member_id = UNKNOWN_MEMBER_ID if reset_member_id else self.generation.member_id
            self.generation = Generation(UNKNOWN_GENERATION_ID, member_id, None)
            self.rejoin_needed = True
            self.heartbeat.disable()
            self._transition(MemberState.UNJOINED)

    # -------------------------------------------------------------------- waiting for answers
    def sleep_until(self, until_ms: float, deadline_ms: float) -> bool:
        """Sleep until ``until_ms`` but not past ``deadline_ms``; True if ``until_ms`` was reached."""
        wake_ms = min(until_ms, deadline_ms)
        remaining_ms = wake_ms - self.clock_ms()
        if remaining_ms > 0:
            time.sleep(remaining_ms / 1000)
        return until_ms <= deadline_ms

    def wait(self, inflight: InFlight, deadline_ms: float) -> bool:
        """Wait for an answer; True once it came or the request timed out, False at ``deadline_ms``."""
        until_ms = min(deadline_ms, inflight.timeout_at_ms)
        concurrent.futures.wait([inflight.future], timeout=max(0.0, until_ms - self.clock_ms()) / 1000)
        return inflight.future.done() or self.clock_ms() >= inflight.timeout_at_ms

    def outcome(self, inflight: InFlight) -> tuple[Any, KafkaError | None]:
        """(response, None) or (None, error) for a request ``wait`` finished; a transport failure
        makes its coordinator unknown, as a broken connection to it does in Kafka."""
        if not inflight.future.done():
            error = KafkaError(ErrorCode.REQUEST_TIMED_OUT, f"{inflight.api} got no answer in time")
        else:
            try:
                return inflight.future.result(), None
            except KafkaError as exc:
                error = exc
            except Exception as exc:  # a fake or a transport that does not speak KafkaError
                error = KafkaError(ErrorCode.UNKNOWN_SERVER_ERROR, f"{type(exc).__name__}: {exc}")
        if error.error_code in COORDINATOR_GONE and inflight.coordinator is not None:
            self.mark_coordinator_unknown(f"{inflight.api}: {error}", inflight.coordinator)
        return None, error

    def send(self, request: Any, *, timeout_ms: int | None = None) -> InFlight | None:
        """Send ``request`` to the coordinator; None if it is unknown right now."""
        with self.lock:
            if self.coordinator is None:
                return None
            future = self._channel.send(self.coordinator.name, request)
            timeout_ms = self.config.request_timeout_ms if timeout_ms is None else timeout_ms
            return InFlight(api_of(request).name, future, self.clock_ms() + timeout_ms, self.generation, self.coordinator)

    # -------------------------------------------------------------------------- coordinator
    def ensure_coordinator_ready(self, deadline_ms: float) -> bool:
        """Find the coordinator, waiting no later than ``deadline_ms``; False if it is still unknown
        then. A FindCoordinator answer that retrying cannot fix raises ``KafkaError``."""
        for _ in range(COORDINATOR_LOOKUPS_PER_CALL_MAX):
            with self.lock:
                if self.coordinator is not None:
                    return True
                if self._lookup is None and self.clock_ms() >= self._lookup_not_before_ms:
                    future = self._channel.find_coordinator(FindCoordinatorRequest(key=self.config.group_id))
                    self._lookup = InFlight("FindCoordinator", future,
                                            self.clock_ms() + self.config.request_timeout_ms, self.generation, None)
                lookup, not_before_ms = self._lookup, self._lookup_not_before_ms
            if lookup is None:
                if not self.sleep_until(not_before_ms, deadline_ms):
                    return False
                continue
            if not self.wait(lookup, deadline_ms):
                return False
            self._finish_lookup(lookup)
        return not self.coordinator_unknown()

    def _finish_lookup(self, lookup: InFlight) -> None:
        response, error = self.outcome(lookup)
        with self.lock:
            if self._lookup is not lookup:
                return  # the other thread handled this answer already
            self._lookup = None
            if error is None and response.error_code != ErrorCode.NONE:
                error = KafkaError(response.error_code, response.error_message or "FindCoordinator")
            if error is None:
                self.coordinator = Coordinator(response.node_id, response.host)
                self.heartbeat.timers.received(self.clock_ms())  # a new coordinator: a new session clock
                logger.info("group {}: coordinator is {} (broker {})", self.config.group_id, response.host,
                            response.node_id)
                return
            self._lookup_not_before_ms = self.clock_ms() + self.config.retry_backoff_ms
        if not error.retriable:
            raise error
        logger.debug("group {}: FindCoordinator failed, retrying: {}", self.config.group_id, error)

    # ----------------------------------------------------------------------------- rebalance
    def ensure_active_group(self, deadline_ms: float) -> bool:
        """Be a member of the current generation with an assignment by ``deadline_ms``; False if
        the rebalance has not finished then (the next call continues it)."""
        if not self.ensure_coordinator_ready(deadline_ms):
            return False
        self.heartbeat.start_if_needed()
        for _ in range(JOIN_ROUNDS_PER_CALL_MAX):
            if not self.rejoin_needed_or_pending():
                return True
            if not self.ensure_coordinator_ready(deadline_ms):
                return False
            if self._needs_join_prepare:
                # Cleared first: a listener that raises must not be revoked from twice.
                self._needs_join_prepare = False
                self._hooks.on_join_prepare(self.generation)
            inflight = self._rebalance or self._send_join_group()
            if inflight is None:
                continue  # the coordinator went away meanwhile
            if not self.wait(inflight, deadline_ms):
                return False
            assignment, error = self._advance(inflight)
            if error is None and assignment is not None:
                self._needs_join_prepare = True
                self._hooks.on_join_complete(self.generation, assignment)
            elif error is not None and error.error_code not in _REJOIN_AT_ONCE:
                if not error.retriable:
                    raise error
                logger.info("group {}: rebalance failed, retrying: {}", self.config.group_id, error)
                if not self.sleep_until(self.clock_ms() + self.config.retry_backoff_ms, deadline_ms):
                    return False
        return False

    def _send_join_group(self) -> InFlight | None:
        with self.lock:
            if self.coordinator is None:
                return None
            self._transition(MemberState.REBALANCING)
            self.heartbeat.disable()
            request = JoinGroupRequest(group_id=self.config.group_id, protocol_type=CONSUMER_PROTOCOL_TYPE,
                                       protocols=self._hooks.join_protocols(), member_id=self.generation.member_id,
                                       group_instance_id=self.config.group_instance_id,
                                       session_timeout_ms=self.config.session_timeout_ms,
                                       rebalance_timeout_ms=self.config.rebalance_timeout_ms,
                                       client_id=self.config.client_id, client_host=self.config.client_host)
            logger.info("group {}: joining as {!r}", self.config.group_id, self.generation.member_id)
            timeout_ms = max(self.config.request_timeout_ms,
                             self.config.rebalance_timeout_ms + JOIN_GROUP_TIMEOUT_EXTRA_MS)
            self._rebalance = self.send(request, timeout_ms=timeout_ms)
            return self._rebalance

    def _advance(self, inflight: InFlight) -> tuple[bytes | None, KafkaError | None]:
        """Handle the JoinGroup or SyncGroup answer ``wait`` got: (assignment, None) when SyncGroup
        succeeded, (None, None) when a SyncGroup went out, (None, error) otherwise."""
        with self.lock:
            if self._rebalance is not inflight:
                return None, KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE, "the rebalance was abandoned")
            self._rebalance = None
        response, error = self.outcome(inflight)
        if error is not None:
            return None, error
        with self.lock:
            if inflight.api == "sync_group":
                return self._on_sync_group_response(response, inflight)
            error = self._on_join_group_response(response)
            if error is not None:
                return None, error
            generation = self.generation
        leader = response.leader == response.member_id
        try:
            assignments = (self._hooks.perform_assignment(response.leader, response.protocol_name, response.members)
                           if leader else {})
        except KafkaError as exc:
            self.request_rejoin()
            return None, exc
        return None, self._send_sync_group(generation, assignments)

    def _on_join_group_response(self, response) -> KafkaError | None:
        code = ErrorCode(response.error_code)
        if code == ErrorCode.NONE:
            if self.state is not MemberState.REBALANCING:
                return KafkaError(ErrorCode.REBALANCE_IN_PROGRESS, "left the group while the JoinGroup was parked")
            self.generation = Generation(response.generation_id, response.member_id, response.protocol_name)
            logger.info("group {}: joined generation {} as {!r} ({}), protocol {}", self.config.group_id,
                        response.generation_id, response.member_id,
                        "leader" if response.leader == response.member_id else "follower", response.protocol_name)
            return None
        if code == ErrorCode.MEMBER_ID_REQUIRED:
            self.generation = Generation(UNKNOWN_GENERATION_ID, response.member_id, None)
        elif code in (ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.ILLEGAL_GENERATION):
            self.reset_generation(reset_member_id=code == ErrorCode.UNKNOWN_MEMBER_ID)
        elif code in (ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE):
            self.mark_coordinator_unknown(f"JoinGroup answered {code.name}")
        return KafkaError(code, "JoinGroup")

    def _send_sync_group(self, generation: Generation, assignments: dict[str, bytes]) -> KafkaError | None:
        with self.lock:
            if self.generation != generation or self.state is not MemberState.REBALANCING:
                return KafkaError(ErrorCode.REBALANCE_IN_PROGRESS, "the generation changed before SyncGroup")
            request = SyncGroupRequest(
                group_id=self.config.group_id, generation_id=generation.generation_id, member_id=generation.member_id,
                group_instance_id=self.config.group_instance_id, protocol_type=CONSUMER_PROTOCOL_TYPE,
                protocol_name=generation.protocol_name,
                assignments=tuple(SyncGroupRequestAssignment(member_id=member, assignment=data)
                                  for member, data in sorted(assignments.items())))
            self._rebalance = self.send(request)
            if self._rebalance is None:
                return KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE, "no coordinator for SyncGroup")
            return None

    def _on_sync_group_response(self, response, inflight: InFlight) -> tuple[bytes | None, KafkaError | None]:
        code = ErrorCode(response.error_code)
        if code == ErrorCode.NONE:
            if self.generation != inflight.generation or self.state is not MemberState.REBALANCING:
                return None, KafkaError(ErrorCode.REBALANCE_IN_PROGRESS, "the generation changed during SyncGroup")
            self._transition(MemberState.STABLE)
            self.rejoin_needed = False
            self.heartbeat.enable(self.clock_ms())
            return response.assignment, None
        self.rejoin_needed = True
        if code in (ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.ILLEGAL_GENERATION):
            self.reset_generation(reset_member_id=code == ErrorCode.UNKNOWN_MEMBER_ID)
        elif code in (ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE):
            self.mark_coordinator_unknown(f"SyncGroup answered {code.name}")
        return None, KafkaError(code, "SyncGroup")

    # ----------------------------------------------------------------------------- heartbeat
    def poll_heartbeat(self, now_ms: float | None = None) -> None:
        """The consumer polled: restart the max.poll.interval.ms clock; raise what the heartbeat
        thread could not handle."""
        with self.lock:
            self.heartbeat.polled(self.clock_ms() if now_ms is None else now_ms)

    # -------------------------------------------------------------------------------- leaving
    def maybe_leave_group(self, reason: str) -> InFlight | None:
        """Send LeaveGroup if this member is in the group, and forget the generation either way. A
        static member never sends it (Kafka's consumer since 2.3): only its session timeout ends its
        membership, so that a restart takes its place back without a rebalance."""
        with self.lock:
            inflight = None
            if self.config.group_instance_id is None and self.coordinator is not None and \
                    self.state is not MemberState.UNJOINED and self.generation.member_id:
                logger.info("group {}: member {!r} leaves: {}", self.config.group_id, self.generation.member_id, reason)
                request = LeaveGroupRequest(group_id=self.config.group_id,
                                            members=(MemberIdentity(member_id=self.generation.member_id),))
                inflight = self.send(request)
            self._rebalance = None
            self.reset_generation(reset_member_id=True)
            return inflight

    def close(self, deadline_ms: float) -> None:
        """Stop the heartbeat thread, run the hooks' leave step, send LeaveGroup and wait for its
        answer until ``deadline_ms``. A listener's exception is raised after the member has left."""
        with self.lock:
            if self._closed:
                return
            self._closed = True
        self.heartbeat.close(timeout_s=max(0.0, deadline_ms - self.clock_ms()) / 1000)
        try:
            self._hooks.on_leave_prepare()
        finally:
            inflight = self.maybe_leave_group("the consumer is being closed")
            if inflight is not None and self.wait(inflight, deadline_ms):
                response, error = self.outcome(inflight)
                if error is not None or response.error_code != ErrorCode.NONE:
                    logger.info("group {}: LeaveGroup: {}", self.config.group_id,
                                error or ErrorCode(response.error_code).name)
