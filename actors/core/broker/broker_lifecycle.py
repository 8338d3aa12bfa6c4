"""A broker's life as the controller sees it: register, heartbeat, shut down in a controlled way.

Theory of operation. A broker process starts NOT_REGISTERED and asks the controller to register
it (with a new ``incarnation_id`` per process start); the answer carries its ``broker_epoch``,
which the replica manager then uses to refuse control requests meant for an earlier incarnation.
RUNNING, it heartbeats every ``broker.heartbeat.interval.ms``; a heartbeat answered
``STALE_BROKER_EPOCH`` or ``BROKER_ID_NOT_REGISTERED`` (the controller fenced it, or a new
controller does not know it) sends it back to registration. A controlled shutdown asks the
controller to move its leaderships away, retrying up to ``controlled.shutdown.max.retries`` times
``controlled.shutdown.retry.backoff.ms`` apart while leaderships remain, then lets it stop.

States and moves (checked against ``_TRANSITIONS``):
NOT_REGISTERED -> REGISTERING -> RUNNING -> PENDING_CONTROLLED_SHUTDOWN -> SHUTTING_DOWN,
RUNNING -> REGISTERING (fenced), and PENDING_CONTROLLED_SHUTDOWN -> REGISTERING (fenced mid-way).

Inputs: ``start``, ``tick``, ``on_controller_response`` (with the request it answers, or an
error code when the controller could not be reached), ``begin_controlled_shutdown``. Outputs:
``Send(destination="controller", ...)`` effects, ``Respond`` for the controlled-shutdown request,
``LogEvent``.
"""
from __future__ import annotations

import enum
from typing import Any

from actors.core.config import KafkaConfig
from actors.core.effects import Effect, LogEvent, Respond, Send
from actors.core.errors import ErrorCode
from actors.core.messages.broker_heartbeat import BrokerHeartbeatRequest, BrokerHeartbeatResponse
from actors.core.messages.broker_registration import (
    BrokerRegistrationRequest, BrokerRegistrationResponse,
)
from actors.core.messages.controlled_shutdown import ControlledShutdownRequest, ControlledShutdownResponse

CONTROLLER = "controller"

LIFECYCLE_DEFAULTS = {
    "broker.heartbeat.interval.ms": "2000",
    "controlled.shutdown.max.retries": "3",
    "controlled.shutdown.retry.backoff.ms": "5000",
    "raykafka.registration.retry.backoff.ms": "200",
}


class BrokerState(enum.Enum):
    NOT_REGISTERED = "not registered: started, has not asked the controller yet"
    REGISTERING = "registering: waiting for the controller to give it a broker epoch"
    RUNNING = "running: registered, heartbeating, serving"
    PENDING_CONTROLLED_SHUTDOWN = "pending controlled shutdown: asking the controller to move leaderships"
    SHUTTING_DOWN = "shutting down: done with the controller; the process may stop"


_TRANSITIONS = {
    BrokerState.NOT_REGISTERED: {BrokerState.REGISTERING},
    BrokerState.REGISTERING: {BrokerState.RUNNING, BrokerState.REGISTERING},
    BrokerState.RUNNING: {BrokerState.REGISTERING, BrokerState.PENDING_CONTROLLED_SHUTDOWN},
    BrokerState.PENDING_CONTROLLED_SHUTDOWN: {BrokerState.SHUTTING_DOWN, BrokerState.REGISTERING},
    BrokerState.SHUTTING_DOWN: set(),
}


class BrokerLifecycle:
    def __init__(self, *, broker_id: int, host: str, incarnation_id: str, cluster_id: str,
                 config: KafkaConfig, now_ms: int, directory_id: str | None = None,
                 listeners: tuple = ()) -> None:
        settings = config.with_overrides({k: v for k, v in LIFECYCLE_DEFAULTS.items() if k not in config})
        self.broker_id = broker_id
        self.host = host
        self.listeners = tuple(listeners)  # BrokerEndpoints: the Kafka listeners to register
        self.incarnation_id = incarnation_id
        self.cluster_id = cluster_id
        self.directory_id = directory_id
        self.state = BrokerState.NOT_REGISTERED
        self.broker_epoch = -1
        self.heartbeat_interval_ms = settings.get_int("broker.heartbeat.interval.ms", 1)
        self.registration_backoff_ms = settings.get_int("raykafka.registration.retry.backoff.ms", 1)
        self.shutdown_retries_max = settings.get_int("controlled.shutdown.max.retries")
        self.shutdown_backoff_ms = settings.get_int("controlled.shutdown.retry.backoff.ms")
        self._in_flight = False  # one controller request at a time, like one connection
        self._next_attempt_ms = now_ms
        self._shutdown_request_id: int | None = None
        self._shutdown_attempts = 0

    def _move(self, target: BrokerState) -> None:
        assert target in _TRANSITIONS[self.state], f"broker {self.broker_id}: {self.state.name} -> {target.name}"
        self.state = target

    def start(self, now_ms: int) -> list[Effect]:
        self._move(BrokerState.REGISTERING)
        return self._send_registration(now_ms)

    def _send_registration(self, now_ms: int) -> list[Effect]:
        self._in_flight = True
        return [Send(destination=CONTROLLER, message=BrokerRegistrationRequest(
            broker_id=self.broker_id, cluster_id=self.cluster_id, incarnation_id=self.incarnation_id,
            host=self.host, log_dirs=(self.directory_id,) if self.directory_id else (),
            listeners=self.listeners))]

    def tick(self, now_ms: int) -> list[Effect]:
        if self._in_flight or now_ms < self._next_attempt_ms:
            return []
        if self.state == BrokerState.REGISTERING:
            return self._send_registration(now_ms)
        if self.state == BrokerState.RUNNING:
            self._in_flight = True
            return [Send(destination=CONTROLLER, message=BrokerHeartbeatRequest(
                broker_id=self.broker_id, broker_epoch=self.broker_epoch, current_metadata_offset=-1))]
        if self.state == BrokerState.PENDING_CONTROLLED_SHUTDOWN:
            return self._send_controlled_shutdown()
        return []

    def begin_controlled_shutdown(self, request_id: int, now_ms: int) -> list[Effect]:
        if self.state != BrokerState.RUNNING:
            # Not registered (or already stopping): there is nothing to hand over.
            return [Respond(request_id=request_id, response=ErrorCode.BROKER_NOT_AVAILABLE)]
        self._move(BrokerState.PENDING_CONTROLLED_SHUTDOWN)
        self._shutdown_request_id = request_id
        self._shutdown_attempts = 0
        self._next_attempt_ms = now_ms
        return [] if self._in_flight else self._send_controlled_shutdown()

    def _send_controlled_shutdown(self) -> list[Effect]:
        self._in_flight = True
        self._shutdown_attempts += 1
        return [Send(destination=CONTROLLER, message=ControlledShutdownRequest(
            broker_id=self.broker_id, broker_epoch=self.broker_epoch))]

    def on_controller_response(self, request: Any, response: Any, now_ms: int) -> list[Effect]:
        """``response`` is the controller's answer, or an ``ErrorCode`` if it could not be reached."""
        self._in_flight = False
        if isinstance(response, ErrorCode):
            self._next_attempt_ms = now_ms + self.registration_backoff_ms
            if isinstance(request, ControlledShutdownRequest):
                return self._after_shutdown_attempt(now_ms, done=False)
            return []
        if isinstance(response, BrokerRegistrationResponse):
            return self._on_registration(response, now_ms)
        if isinstance(response, BrokerHeartbeatResponse):
            return self._on_heartbeat(response, now_ms)
        if isinstance(response, ControlledShutdownResponse):
            done = response.error_code == ErrorCode.NONE and not response.remaining_partitions
            if response.error_code in (ErrorCode.STALE_BROKER_EPOCH, ErrorCode.BROKER_NOT_AVAILABLE):
                done = True  # the controller no longer counts this incarnation: nothing to move
            return self._after_shutdown_attempt(now_ms, done=done)
        raise AssertionError(f"unexpected controller response {response!r}")

    def _on_registration(self, response: BrokerRegistrationResponse, now_ms: int) -> list[Effect]:
        if self.state != BrokerState.REGISTERING:
            return []
        if response.error_code != ErrorCode.NONE:
            self._next_attempt_ms = now_ms + self.registration_backoff_ms
            return [LogEvent(level="warning", message=f"broker {self.broker_id} registration refused: "
                                                      f"{ErrorCode(response.error_code).name}")]
        self.broker_epoch = response.broker_epoch
        self._move(BrokerState.RUNNING)
        self._next_attempt_ms = now_ms + self.heartbeat_interval_ms
        return [LogEvent(level="info", message=f"broker {self.broker_id} registered with epoch {self.broker_epoch}")]

    def _on_heartbeat(self, response: BrokerHeartbeatResponse, now_ms: int) -> list[Effect]:
        # A controlled shutdown requested while this heartbeat was out goes next, without waiting.
        pending_shutdown = self.state == BrokerState.PENDING_CONTROLLED_SHUTDOWN
        self._next_attempt_ms = now_ms if pending_shutdown else now_ms + self.heartbeat_interval_ms
        if response.error_code in (ErrorCode.STALE_BROKER_EPOCH, ErrorCode.BROKER_ID_NOT_REGISTERED) \
                and self.state == BrokerState.RUNNING:
            self._move(BrokerState.REGISTERING)
            self._next_attempt_ms = now_ms
            return [LogEvent(level="warning", message=f"broker {self.broker_id} was fenced "
                                                      f"({ErrorCode(response.error_code).name}); registering again")]
        return []

    def _after_shutdown_attempt(self, now_ms: int, *, done: bool) -> list[Effect]:
        if self.state != BrokerState.PENDING_CONTROLLED_SHUTDOWN:
            return []
        if not done and self._shutdown_attempts <= self.shutdown_retries_max:
            self._next_attempt_ms = now_ms + self.shutdown_backoff_ms
            return []
        self._move(BrokerState.SHUTTING_DOWN)
        result = ErrorCode.NONE if done else ErrorCode.REQUEST_TIMED_OUT
        effects: list[Effect] = [LogEvent(level="info", message=(
            f"broker {self.broker_id} controlled shutdown "
            f"{'complete' if done else 'gave up after retries; stopping anyway'}"))]
        if self._shutdown_request_id is not None:
            effects.append(Respond(request_id=self._shutdown_request_id, response=result))
            self._shutdown_request_id = None
        return effects
