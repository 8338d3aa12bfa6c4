"""The group member's heartbeat: Kafka 2.4's ``Heartbeat`` timers and its ``HeartbeatThread``.

Theory of operation. While the member is STABLE in a generation, a daemon thread sends Heartbeat
every ``heartbeat.interval.ms`` with the generation id and member id (at most one in flight), and
reads the answers: REBALANCE_IN_PROGRESS marks that the next poll must rejoin, ILLEGAL_GENERATION
and UNKNOWN_MEMBER_ID that the member was fenced (it leaves the generation and rejoins at the next
poll), NOT_COORDINATOR (or a lost answer) that the coordinator must be found again, which the
thread then does itself. It also watches two clocks: no successful heartbeat for
``session.timeout.ms`` makes the coordinator unknown; no ``poll`` for ``max.poll.interval.ms``
makes the member send LeaveGroup (Kafka's poll timeout), so its partitions go to members that
still consume. The thread pauses while a rebalance is in flight and stops on close.

All state lives under the membership's lock; ``step`` is one pass of the thread, callable
directly (tests pass their own ``now_ms``).
"""
from __future__ import annotations

import threading
from typing import Any, Protocol

from loguru import logger

from actors.core.errors import ErrorCode
from actors.core.messages.heartbeat import HeartbeatRequest
from orchestration.clients.group_member import COORDINATOR_GONE, Coordinator, Generation, InFlight, MembershipConfig
from orchestration.errors import KafkaError

# Answers the thread cannot act on: the next poll raises them to the application.
_FATAL = frozenset({ErrorCode.FENCED_INSTANCE_ID, ErrorCode.GROUP_AUTHORIZATION_FAILED})


class HeartbeatTimers:
    """Kafka's ``Heartbeat``: when the next heartbeat is due and when the session or the poll
    interval has run out. Times are the membership clock's milliseconds."""

    def __init__(self, config: MembershipConfig, now_ms: float) -> None:
        self.config = config
        self.reset(now_ms)

    def reset(self, now_ms: float) -> None:
        self.last_receive_ms = now_ms
        self.last_poll_ms = now_ms
        self.next_heartbeat_ms = now_ms + self.config.heartbeat_interval_ms

    def sent(self, now_ms: float) -> None:
        self.next_heartbeat_ms = now_ms + self.config.heartbeat_interval_ms

    def received(self, now_ms: float) -> None:
        self.last_receive_ms = now_ms

    def failed(self, now_ms: float) -> None:
        self.next_heartbeat_ms = now_ms + self.config.retry_backoff_ms

    def polled(self, now_ms: float) -> None:
        self.last_poll_ms = now_ms

    def session_expired(self, now_ms: float) -> bool:
        return now_ms - self.last_receive_ms > self.config.session_timeout_ms

    def poll_expired(self, now_ms: float) -> bool:
        return now_ms - self.last_poll_ms > self.config.rebalance_timeout_ms

    def until_next_heartbeat_ms(self, now_ms: float) -> float:
        return max(0.0, self.next_heartbeat_ms - now_ms)


class HeartbeatMember(Protocol):
    """What the heartbeat thread uses of the membership (``GroupMembership`` provides it)."""

    config: MembershipConfig
    lock: Any  # a reentrant lock that guards every field of the membership
    generation: Generation
    coordinator: Coordinator | None

    def clock_ms(self) -> float: ...
    def is_stable(self) -> bool: ...
    def send(self, request: Any, *, timeout_ms: int | None = None) -> InFlight | None: ...
    def outcome(self, inflight: InFlight) -> tuple[Any, KafkaError | None]: ...
    def request_rejoin(self) -> None: ...
    def reset_generation(self, *, reset_member_id: bool, generation: Generation | None = None) -> None: ...
    def mark_coordinator_unknown(self, reason: str, coordinator: Coordinator | None = None) -> None: ...
    def ensure_coordinator_ready(self, deadline_ms: float) -> bool: ...
    def maybe_leave_group(self, reason: str) -> InFlight | None: ...


class HeartbeatThread:
    def __init__(self, membership: HeartbeatMember, *, start_thread: bool = True) -> None:
        """``start_thread=False`` leaves the passes to whoever calls ``step`` (tests)."""
        self._membership = membership
        self.config = membership.config
        self.timers = HeartbeatTimers(membership.config, membership.clock_ms())
        self.enabled = False  # True only while the member is STABLE
        self._in_flight: InFlight | None = None
        self._failure: KafkaError | None = None
        self._wakeup = threading.Event()  # wakes the thread early: an answer, enable, close
        self._start_thread = start_thread
        self._thread: threading.Thread | None = None
        self._closed = False

    # --------------------------------------------------------- called under the membership lock
    def enable(self, now_ms: float) -> None:
        self.timers.reset(now_ms)
        self.enabled = True
        self._wakeup.set()

    def disable(self) -> None:
        self.enabled = False

    def forget_in_flight(self) -> None:
        self._in_flight = None

    def polled(self, now_ms: float) -> None:
        """The consumer polled: restart the poll clock; raise what the thread could not handle."""
        failure, self._failure = self._failure, None
        self.timers.polled(now_ms)
        if failure is not None:
            raise failure

    # ------------------------------------------------------------------------------- a pass
    def step(self, now_ms: float | None = None) -> float:
        """Send a due Heartbeat, handle its answer, or act on an expired session or poll interval;
        returns how many milliseconds the thread may sleep before the next pass."""
        membership = self._membership
        now_ms = membership.clock_ms() if now_ms is None else now_ms
        backoff_ms = float(self.config.retry_backoff_ms)
        with membership.lock:
            if self._closed or not self.enabled:
                return float(self.config.heartbeat_interval_ms)
            if not membership.is_stable():
                self.enabled = False
                return backoff_ms
            if membership.coordinator is None:
                action = "find"
            elif self.timers.session_expired(now_ms):
                membership.mark_coordinator_unknown("no successful heartbeat within session.timeout.ms")
                return backoff_ms
            elif self.timers.poll_expired(now_ms):
                action = "leave"
            elif self._in_flight is not None:
                inflight = self._in_flight
                if not inflight.future.done() and now_ms < inflight.timeout_at_ms:
                    return min(inflight.timeout_at_ms - now_ms, float(self.config.heartbeat_interval_ms))
                self._handle(inflight, now_ms)
                return 0.0
            elif self.timers.until_next_heartbeat_ms(now_ms) > 0:
                return self.timers.until_next_heartbeat_ms(now_ms)
            else:
                self._send(now_ms)
                if self._in_flight is not None and self._in_flight.future.done():
                    self._handle(self._in_flight, now_ms)
                return self.timers.until_next_heartbeat_ms(now_ms)
        if action == "find":
            membership.ensure_coordinator_ready(deadline_ms=now_ms)  # starts or checks a lookup, no waiting
        else:
            logger.warning("group {}: no poll within max.poll.interval.ms ({} ms); leaving the group so that its "
                           "partitions move to members that consume", self.config.group_id,
                           self.config.rebalance_timeout_ms)
            membership.maybe_leave_group("consumer poll timeout has expired")
        return backoff_ms

    def _send(self, now_ms: float) -> None:
        generation = self._membership.generation
        request = HeartbeatRequest(group_id=self.config.group_id, generation_id=generation.generation_id,
                                   member_id=generation.member_id, group_instance_id=self.config.group_instance_id)
        self.timers.sent(now_ms)
        self._in_flight = self._membership.send(request)
        if self._in_flight is not None:
            self._in_flight.future.add_done_callback(lambda _: self._wakeup.set())

    def _handle(self, inflight: InFlight, now_ms: float) -> None:
        membership = self._membership
        self._in_flight = None
        response, error = membership.outcome(inflight)
        if inflight.generation != membership.generation:
            return  # about a generation this member has left already
        code = error.error_code if error is not None else ErrorCode(response.error_code)
        if code in (ErrorCode.NONE, ErrorCode.REBALANCE_IN_PROGRESS):
            self.timers.received(now_ms)
            if code == ErrorCode.REBALANCE_IN_PROGRESS:
                logger.info("group {}: a rebalance began; rejoining at the next poll", self.config.group_id)
                membership.request_rejoin()
        elif code in (ErrorCode.ILLEGAL_GENERATION, ErrorCode.UNKNOWN_MEMBER_ID):
            logger.info("group {}: Heartbeat answered {}; rejoining at the next poll", self.config.group_id, code.name)
            membership.reset_generation(reset_member_id=code == ErrorCode.UNKNOWN_MEMBER_ID)
        elif code in COORDINATOR_GONE:
            membership.mark_coordinator_unknown(f"Heartbeat: {code.name}", inflight.coordinator)
        elif code in _FATAL:
            self._failure = KafkaError(code, "Heartbeat")
            self.enabled = False
        else:
            self.timers.failed(now_ms)

    # ------------------------------------------------------------------------------ the thread
    def start_if_needed(self) -> None:
        with self._membership.lock:
            if not self._start_thread or self._thread is not None or self._closed:
                return
            self._thread = threading.Thread(target=self._run, daemon=True,
                                            name=f"raykafka-heartbeat-{self.config.group_id}")
            self._thread.start()

    def _run(self) -> None:
        # Runs until close. Each pass sends at most one Heartbeat and then sleeps at most one
        # heartbeat interval. A failure is kept for the next poll to raise (Kafka's
        # HeartbeatThread.failed) and the thread goes on after a backoff.
        while True:
            with self._membership.lock:
                if self._closed:
                    return
            self._wakeup.clear()
            try:
                wait_ms = self.step()
            except Exception as exc:
                logger.warning("group {}: heartbeat thread: {!r}", self.config.group_id, exc)
                with self._membership.lock:
                    self._failure = exc if isinstance(exc, KafkaError) else KafkaError(
                        ErrorCode.UNKNOWN_SERVER_ERROR, f"heartbeat thread: {exc!r}")
                wait_ms = float(self.config.retry_backoff_ms)
            self._wakeup.wait(min(wait_ms, self.config.heartbeat_interval_ms) / 1000)

    def close(self, timeout_s: float) -> None:
        with self._membership.lock:
            self._closed = True
            self.enabled = False
        self._wakeup.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=timeout_s)

    @property
    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()
