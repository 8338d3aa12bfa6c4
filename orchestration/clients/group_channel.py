"""How a consumer's group membership reaches brokers and group coordinators through Ray.

``GroupMembership`` talks through a channel with two calls, both returning a
``concurrent.futures.Future`` of the response: ``find_coordinator(request)`` asks a broker (each
call the next known one, so a dead broker is not asked forever) and ``send(name, method, request,
**kwargs)`` calls a method of the coordinator actor that FindCoordinator named (its ``host``),
looked up in the cluster's Ray namespace. A failed call fails the future with the ``KafkaError`` a
Kafka client would see (``as_kafka_error``: a dead actor is ``NETWORK_EXCEPTION``, and its cached
handle is dropped, since Ray may start a new actor under the same name); a coordinator name Ray
does not know is ``COORDINATOR_NOT_AVAILABLE``. Tests replace this class with an in-process fake.
"""
from __future__ import annotations

import threading
from concurrent.futures import Future
from typing import Any

import ray
from ray.exceptions import ActorDiedError

from actors.core.errors import ErrorCode
from actors.core.messages.find_coordinator import FindCoordinatorRequest
from orchestration.clients.broker_directory import BrokerDirectory, as_kafka_error
from orchestration.errors import KafkaError


def _failed(error: KafkaError) -> Future:
    future: Future = Future()
    future.set_exception(error)
    return future


def _translated(ref, on_actor_died) -> Future:
    """A future of ``ref``'s value whose failures are Kafka errors."""
    result: Future = Future()

    def done(inner: Future, ref=ref) -> None:  # ``ref`` is kept alive until the answer is in
        try:
            result.set_result(inner.result())
        except BaseException as exc:  # every failure, cancellation included, becomes a KafkaError
            if isinstance(exc, ActorDiedError):
                on_actor_died()
            result.set_exception(as_kafka_error(exc))

    ref.future().add_done_callback(done)
    return result


class RayCoordinatorChannel:
    def __init__(self, directory: BrokerDirectory) -> None:
        self._directory = directory
        self._lock = threading.Lock()
        self._handles: dict[str, Any] = {}
        self._next_broker = 0

    def find_coordinator(self, request: FindCoordinatorRequest) -> Future:
        broker_ids = self._directory.known_broker_ids()
        with self._lock:
            start, self._next_broker = self._next_broker, self._next_broker + 1
        for attempt in range(len(broker_ids)):
            broker_id = broker_ids[(start + attempt) % len(broker_ids)]
            try:
                handle = self._directory.broker(broker_id)
            except KafkaError:
                continue  # no such actor right now: ask the next broker
            return _translated(handle.handle.remote(request),
                               lambda broker_id=broker_id: self._directory.forget(broker_id))
        return _failed(KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE, "no broker to ask FindCoordinator"))

    def send(self, coordinator_name: str, request: Any) -> Future:
        with self._lock:
            handle = self._handles.get(coordinator_name)
        if handle is None:
            try:
                handle = ray.get_actor(coordinator_name, namespace=self._directory.namespace)
            except ValueError:
                return _failed(KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE, f"no actor {coordinator_name!r}"))
            with self._lock:
                self._handles[coordinator_name] = handle
        return _translated(handle.handle.remote(request),
                           lambda: self._forget(coordinator_name))

    def _forget(self, coordinator_name: str) -> None:
        with self._lock:
            self._handles.pop(coordinator_name, None)
