"""What every client shares: finding broker actors, asking them, and caching cluster metadata.

Brokers are Ray actors named ``raykafka-broker-<id>`` in the cluster's Ray namespace. A client
knows a few bootstrap broker ids, asks any live one for Metadata, and routes partition requests to
the leader the metadata names. A call to a dead or restarting broker surfaces as
``NETWORK_EXCEPTION`` (the request may or may not have run, as with a dropped TCP connection), a
call that takes longer than ``request.timeout.ms`` as ``REQUEST_TIMED_OUT``, and an error the actor
itself raised (Ray hands it over wrapped in a ``RayTaskError``) as the broker's own error code.

``MetadataRefresher`` decides when a client asks for metadata again (Kafka's ``Metadata`` timing),
and ``call_with_retries`` retries a call's retriable errors until a timeout (with tenacity).
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

import ray
import tenacity
from loguru import logger
from ray.exceptions import ActorDiedError, GetTimeoutError, RayActorError, RayError, RayTaskError

from actors.broker import broker_actor_name
from actors.core.errors import ErrorCode
from actors.core.messages.metadata import MetadataRequest, MetadataResponse
from orchestration.errors import KafkaError


T = TypeVar("T")
# How deep ``as_kafka_error`` looks into RayTaskErrors wrapping each other (an actor that re-raised
# what an actor it called raised); deeper than any chain of calls raykafka makes.
_CAUSE_DEPTH_MAX = 8


def as_kafka_error(exc: BaseException) -> KafkaError:
    """Map a failed Ray call to the error a Kafka client would see.

    An exception the actor raised reaches the caller as a ``RayTaskError`` whose ``cause`` is that
    exception. One that carries a Kafka error code (the core's ``KafkaProtocolError``, a client's
    ``KafkaError``) is that error code, so a request the broker refused as ``INVALID_REQUEST`` is
    seen as ``INVALID_REQUEST``; any other failure inside the actor (a bug, or a call the actor
    made failing) is ``UNKNOWN_SERVER_ERROR``, as Kafka answers an unexpected exception in a
    request handler."""
    if isinstance(exc, RayTaskError):
        cause: BaseException = exc
        for _ in range(_CAUSE_DEPTH_MAX):
            if not isinstance(cause, RayTaskError) or cause.cause is None or cause.cause is cause:
                break
            cause = cause.cause
        if isinstance(cause, KafkaError):
            return cause
        error_code = getattr(cause, "error_code", None)
        if isinstance(error_code, ErrorCode):
            return KafkaError(error_code, str(getattr(cause, "message", "") or ""))
        return KafkaError(ErrorCode.UNKNOWN_SERVER_ERROR, f"{type(cause).__name__}: {cause}")
    if isinstance(exc, KafkaError):
        return exc
    if isinstance(exc, GetTimeoutError):
        return KafkaError(ErrorCode.REQUEST_TIMED_OUT, str(exc))
    if isinstance(exc, RayActorError):
        return KafkaError(ErrorCode.NETWORK_EXCEPTION, f"broker unreachable: {type(exc).__name__}")
    return KafkaError(ErrorCode.UNKNOWN_SERVER_ERROR, f"{type(exc).__name__}: {exc}")


def call_with_retries(attempt: Callable[[float], T], *, timeout_ms: float, what: str,
                      retry_backoff_ms: float = 100, retry_backoff_max_ms: float = 1000,
                      is_retriable: Callable[[KafkaError], bool] = lambda error: error.retriable) -> T:
    """``attempt(deadline)`` until it returns, as Kafka's clients run a call: an error that
    ``is_retriable`` accepts is retried after a backoff (``retry_backoff_ms``, doubling up to
    ``retry_backoff_max_ms``) until ``timeout_ms`` has passed since the first attempt, and only then
    raised (the last one); any other error is raised at once. ``deadline`` is on ``time.monotonic``'s
    clock, for the attempt's own waits. A Ray failure an attempt lets through is mapped with
    ``as_kafka_error`` first, so an actor restarting (``NETWORK_EXCEPTION``) is retried too."""
    deadline = time.monotonic() + timeout_ms / 1000
    backoff = tenacity.wait_exponential(multiplier=retry_backoff_ms / 1000, min=retry_backoff_ms / 1000,
                                        max=retry_backoff_max_ms / 1000)

    def run_once() -> T:
        try:
            return attempt(deadline)
        except RayError as exc:
            raise as_kafka_error(exc) from exc

    def log_retry(state: tenacity.RetryCallState) -> None:
        logger.debug("{}: retrying after {}", what, state.outcome.exception())

    retrying = tenacity.Retrying(
        retry=tenacity.retry_if_exception(lambda exc: isinstance(exc, KafkaError) and is_retriable(exc)),
        stop=tenacity.stop_after_delay(timeout_ms / 1000),
        # The last wait ends at the deadline, so the last attempt is made then rather than skipped.
        wait=lambda state: min(backoff(state), max(0.0, deadline - time.monotonic())),
        before_sleep=log_retry, reraise=True)
    return retrying(run_once)


def as_future(ref: Any) -> Future:
    """A broker call's answer as a ``concurrent.futures.Future``: Ray's ``ObjectRef.future()``,
    whose failures are Ray's exceptions, as ``ray.get`` raises them. Clients wait on these with
    ``concurrent.futures.wait``, so an in-process broker (in tests) may answer with a Future."""
    return ref if isinstance(ref, Future) else ref.future()


def cancel_quietly(ref: Any) -> None:
    """Ask Ray to cancel a call the client has given up on. A call already running may finish
    anyway (cancelling only interrupts an async actor at its next await), and a Future from an
    in-process broker is just cancelled; nothing here raises."""
    try:
        if isinstance(ref, Future):
            ref.cancel()
        else:
            ray.cancel(ref)
    except Exception:  # already finished, its owner gone, or Ray shut down: nothing to cancel
        pass


def monotonic_ms() -> float:
    return time.monotonic() * 1000


class MetadataRefresher:
    """When a client asks the cluster for metadata again: Kafka's ``Metadata`` update timing.

    A refresh is due once something asked for one (``request_update``: a partition the client must
    reach has no known leader, or an answer said the leader moved) or once the last successful
    refresh is ``metadata.max.age.ms`` old; either way no sooner than ``retry.backoff.ms`` after the
    last attempt, so a partition that has no leader for a while is asked about at that pace, never
    in a busy loop, and never forgotten. ``update_if_due`` refreshes through the client's
    ``BrokerDirectory`` when due; a failed refresh leaves the request standing for the next one.
    Safe to share between a client's threads; a refresh runs outside the lock."""

    def __init__(self, directory, *, retry_backoff_ms: float, metadata_max_age_ms: float,
                 clock_ms: Callable[[], float] = monotonic_ms) -> None:
        self._directory = directory
        self._retry_backoff_ms = float(retry_backoff_ms)
        self._metadata_max_age_ms = float(metadata_max_age_ms)
        self._clock_ms = clock_ms
        self._lock = threading.Lock()
        self._update_requested = False
        self._last_attempt_ms: float | None = None
        # The directory fetched metadata when the client first needed it; the age counts from here.
        self._last_success_ms = clock_ms()

    def request_update(self) -> None:
        with self._lock:
            self._update_requested = True

    def time_to_next_update_ms(self, now_ms: float | None = None) -> float:
        now_ms = self._clock_ms() if now_ms is None else now_ms
        with self._lock:
            return self._time_to_next_update_ms(now_ms)

    def _time_to_next_update_ms(self, now_ms: float) -> float:
        to_expiry_ms = 0.0 if self._update_requested else self._last_success_ms + self._metadata_max_age_ms - now_ms
        to_allowed_ms = (0.0 if self._last_attempt_ms is None
                         else self._last_attempt_ms + self._retry_backoff_ms - now_ms)
        return max(0.0, to_expiry_ms, to_allowed_ms)

    def update_if_due(self) -> bool:
        """Refresh metadata if it is due; True if a refresh succeeded. Never raises a KafkaError:
        with no broker answering, the update stays requested and is tried again after the backoff."""
        now_ms = self._clock_ms()
        with self._lock:
            if self._time_to_next_update_ms(now_ms) > 0:
                return False
            self._last_attempt_ms = now_ms
        try:
            self._directory.refresh_metadata()
        except KafkaError as exc:
            logger.debug("metadata refresh failed, retrying after retry.backoff.ms: {}", exc)
            with self._lock:
                self._update_requested = True
            return False
        with self._lock:
            self._update_requested = False
            self._last_success_ms = self._clock_ms()
        return True

    def refresh_now(self) -> bool:
        """Request an update and make it now if the backoff allows (after an answer that says the
        leader moved); otherwise it is made as soon as the backoff has passed."""
        self.request_update()
        return self.update_if_due()


class BrokerDirectory:
    def __init__(self, *, namespace: str, bootstrap_broker_ids: list[int], request_timeout_ms: int = 30000) -> None:
        assert bootstrap_broker_ids, "a client needs at least one bootstrap broker"
        self.namespace = namespace
        self.request_timeout_ms = request_timeout_ms
        self._bootstrap = list(bootstrap_broker_ids)
        self._handles: dict[int, Any] = {}
        self._lock = threading.Lock()
        self._metadata: MetadataResponse | None = None
        # topic -> partition -> (leader id, leader epoch)
        self._leaders: dict[str, dict[int, tuple[int, int]]] = {}

    def broker(self, broker_id: int):
        with self._lock:
            handle = self._handles.get(broker_id)
        if handle is None:
            try:
                handle = ray.get_actor(broker_actor_name(broker_id), namespace=self.namespace)
            except ValueError as exc:
                raise KafkaError(ErrorCode.BROKER_NOT_AVAILABLE, f"no broker {broker_id}") from exc
            with self._lock:
                self._handles[broker_id] = handle
        return handle

    def call(self, broker_id: int, request: Any, timeout_ms: int | None = None) -> Any:
        """Send one request to the broker (its ``handle``, which dispatches by the request's type) and wait
        for its answer; Ray failures become Kafka errors."""
        timeout_s = (timeout_ms if timeout_ms is not None else self.request_timeout_ms) / 1000
        for attempt in range(2):
            try:
                return ray.get(self.broker(broker_id).handle.remote(request), timeout=timeout_s)
            except ActorDiedError as exc:
                # That actor is gone for good; a broker started again under the same name is a new
                # actor, so look the name up once more before calling it unreachable.
                self.forget(broker_id)
                if attempt == 1:
                    raise as_kafka_error(exc) from exc
            except (RayActorError, GetTimeoutError, RayTaskError) as exc:
                raise as_kafka_error(exc) from exc
        raise AssertionError("unreachable")

    def forget(self, broker_id: int) -> None:
        """Drop a cached actor handle (its actor died); the next call looks the name up again."""
        with self._lock:
            self._handles.pop(broker_id, None)

    def known_broker_ids(self) -> list[int]:
        ids = list(self._bootstrap)
        if self._metadata is not None:
            ids = [b.node_id for b in self._metadata.brokers] + [i for i in ids if i not in
                                                                 {b.node_id for b in self._metadata.brokers}]
        return ids

    def refresh_metadata(self, knowing: str | None = None) -> MetadataResponse:
        """Metadata from the first broker that answers; with ``knowing``, the brokers after it are
        asked too until one knows that topic: a broker that has just restarted answers before the
        controller's UpdateMetadata has told it the topics, so a topic is unknown only when no
        broker that answers knows it."""
        last_error: KafkaError | None = None
        first: MetadataResponse | None = None
        for broker_id in self.known_broker_ids():
            try:
                response = self.call(broker_id, MetadataRequest(topics=None),
                                     timeout_ms=min(self.request_timeout_ms, 5000))
            except KafkaError as exc:
                last_error = exc
                continue
            known = knowing is None or any(t.name == knowing and t.error_code == ErrorCode.NONE
                                           for t in response.topics)
            if first is None or known:
                self._set_metadata(response)
                first = first or response
            if known:
                return response
        if first is not None:
            return first
        raise last_error or KafkaError(ErrorCode.BROKER_NOT_AVAILABLE, "no broker answered Metadata")

    def _set_metadata(self, response: MetadataResponse) -> None:
        leaders = {}
        for topic in response.topics:
            if topic.error_code == ErrorCode.NONE:
                leaders[topic.name] = {p.partition_index: (p.leader_id, p.leader_epoch) for p in topic.partitions}
        with self._lock:
            self._metadata = response
            self._leaders = leaders

    def partitions_for(self, topic: str, *, refresh_if_missing: bool = True) -> dict[int, tuple[int, int]]:
        partitions = self._leaders.get(topic)
        if partitions is None and refresh_if_missing:
            self.refresh_metadata(knowing=topic)
            partitions = self._leaders.get(topic)
        if partitions is None:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic {topic!r} is not in the cluster's metadata")
        return partitions

    def leader_for(self, topic: str, partition: int) -> tuple[int, int]:
        """(leader id, leader epoch); leader -1 while the partition has none."""
        partitions = self.partitions_for(topic)
        if partition not in partitions:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"{topic}-{partition}")
        return partitions[partition]
