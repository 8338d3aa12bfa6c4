"""What every client shares: finding broker actors, asking them, and caching cluster metadata.

Brokers are Ray actors named ``raykafka-broker-<id>`` in the cluster's Ray namespace. A client
knows a few bootstrap broker ids, asks any live one for Metadata, and routes partition requests to
the leader the metadata names. A call to a dead or restarting broker surfaces as
``NETWORK_EXCEPTION`` (the request may or may not have run, as with a dropped TCP connection), a
call that takes longer than ``request.timeout.ms`` as ``REQUEST_TIMED_OUT``.
"""
from __future__ import annotations

import threading
from concurrent.futures import Future
from typing import Any

import ray
from ray.exceptions import ActorDiedError, GetTimeoutError, RayActorError

from actors.broker import broker_actor_name
from actors.core.errors import ErrorCode
from actors.core.messages.metadata import MetadataRequest, MetadataResponse
from orchestration.errors import KafkaError


def as_kafka_error(exc: BaseException) -> KafkaError:
    """Map a failed Ray call to the error a Kafka client would see."""
    if isinstance(exc, KafkaError):
        return exc
    if isinstance(exc, GetTimeoutError):
        return KafkaError(ErrorCode.REQUEST_TIMED_OUT, str(exc))
    if isinstance(exc, RayActorError):
        return KafkaError(ErrorCode.NETWORK_EXCEPTION, f"broker unreachable: {type(exc).__name__}")
    return KafkaError(ErrorCode.UNKNOWN_SERVER_ERROR, f"{type(exc).__name__}: {exc}")


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

    def call(self, broker_id: int, method: str, request: Any, timeout_ms: int | None = None) -> Any:
        """Send one request and wait for its answer; Ray failures become Kafka errors."""
        timeout_s = (timeout_ms if timeout_ms is not None else self.request_timeout_ms) / 1000
        for attempt in range(2):
            try:
                return ray.get(getattr(self.broker(broker_id), method).remote(request), timeout=timeout_s)
            except ActorDiedError as exc:
                # That actor is gone for good; a broker started again under the same name is a new
                # actor, so look the name up once more before calling it unreachable.
                self.forget(broker_id)
                if attempt == 1:
                    raise as_kafka_error(exc) from exc
            except (RayActorError, GetTimeoutError) as exc:
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

    def refresh_metadata(self) -> MetadataResponse:
        last_error: KafkaError | None = None
        for broker_id in self.known_broker_ids():
            try:
                response = self.call(broker_id, "handle_metadata", MetadataRequest(topics=None),
                                     timeout_ms=min(self.request_timeout_ms, 5000))
            except KafkaError as exc:
                last_error = exc
                continue
            self._set_metadata(response)
            return response
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
            self.refresh_metadata()
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
