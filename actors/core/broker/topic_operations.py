"""CreateTopics and DeleteTopics on the broker a client sent them to: Kafka 2.4's
``DelayedCreatePartitions`` and ``DelayedDeleteTopics``.

Theory of operation. A client may send CreateTopics or DeleteTopics to any broker. The broker
forwards the request to the controller (numbered ``forward_id``, remembered with the client's
request id and the deadline ``timeout_ms`` after arrival), which creates or queues the topics and
answers once every live broker applied the UpdateMetadata that carries the change. The controller's
answer is not yet the client's: as Kafka's broker does, this one parks it in the topic purgatory,
watched by the topic names, until its own metadata cache agrees with it:

- CreateTopics: every partition of every created topic is in the cache with a leader;
- DeleteTopics: no deleted topic is in the cache.

Each UpdateMetadata this broker accepts tries the operations watching the topics it named; ``tick``
expires the ones past their deadline, and a topic the cache still disagrees on then gets
``REQUEST_TIMED_OUT`` (the others keep the controller's answer). Topics the controller refused and
a ``validate_only`` request are answered at once, as in Kafka; so is a ``timeout_ms`` of 0 or less,
with each topic created or deleted ``REQUEST_TIMED_OUT`` (Kafka's "not waited for"). So
a client that asks this broker for the topics' metadata right after the answer finds them (KafkaJS
does exactly that, and gives up on UNKNOWN_TOPIC_OR_PARTITION).

An unreachable controller answers every topic ``NOT_CONTROLLER``, which admin clients retry.

Limits: ``FORWARDED_MAX`` requests may wait for the controller at once, and the purgatory holds
``DELAYED_MAX`` answers. Past the first a request is answered ``REQUEST_TIMED_OUT`` at once for
every topic; past the second the controller's answer is given at once, unparked, which is correct,
only less patient.
"""
from __future__ import annotations

import dataclasses
from typing import Any

from actors.core.effects import ArmTimer, Effect, Respond, Send
from actors.core.errors import ErrorCode
from actors.core.messages import create_topics, delete_topics
from actors.core.messages.create_topics import CreateTopicsRequest, CreateTopicsResponse
from actors.core.messages.delete_topics import DeleteTopicsRequest, DeleteTopicsResponse
from actors.core.broker.metadata_cache import MetadataCache
from actors.core.replica.purgatory import DelayedOperation, Purgatory

FORWARDED_MAX = 1000
DELAYED_MAX = 1000
# How long the controller may take to answer beyond the request's own timeout_ms: it holds its
# answer for at most timeout_ms, and a lost answer must not hold the client forever.
CONTROLLER_ANSWER_SLACK_MS = 5000

TopicRequest = CreateTopicsRequest | DeleteTopicsRequest


@dataclasses.dataclass(slots=True, kw_only=True)
class DelayedTopicOperation(DelayedOperation):
    """A forwarded CreateTopics or DeleteTopics waiting for this broker's metadata to agree with
    the controller's ``response`` on the topics it watches (Kafka's ``DelayedCreatePartitions``)."""
    response: Any


class TopicOperations:
    def __init__(self, broker_id: int, metadata_cache: MetadataCache) -> None:
        self.broker_id = broker_id
        self.metadata_cache = metadata_cache
        self._next_forward_id = 1
        # forward_id -> (client request id, deadline_ms), while the controller's answer is awaited.
        self._forwarded: dict[int, tuple[int, int]] = {}
        # Parked answers: the controller's response, keyed by the topic names it succeeded for.
        self.purgatory = Purgatory("topic operations", max_size=DELAYED_MAX)

    # ------------------------------------------------------------------------------ requests
    def handle_create_topics(self, request_id: int, request: CreateTopicsRequest, now_ms: int) -> list[Effect]:
        return self._forward(request_id, request, now_ms)

    def handle_delete_topics(self, request_id: int, request: DeleteTopicsRequest, now_ms: int) -> list[Effect]:
        return self._forward(request_id, request, now_ms)

    def _forward(self, request_id: int, request: TopicRequest, now_ms: int) -> list[Effect]:
        if len(self._forwarded) >= FORWARDED_MAX:
            return [Respond(request_id=request_id, response=_refused(request, ErrorCode.REQUEST_TIMED_OUT))]
        forward_id = self._next_forward_id
        self._next_forward_id += 1
        self._forwarded[forward_id] = (request_id, now_ms + max(request.timeout_ms, 0))
        return [Send(destination="controller", message=dataclasses.replace(request, forward_id=forward_id),
                     timeout_ms=max(request.timeout_ms, 0) + CONTROLLER_ANSWER_SLACK_MS)]

    def on_controller_response(self, request: TopicRequest, response: Any, now_ms: int) -> list[Effect]:
        """The controller's answer to a forwarded request, or an ``ErrorCode`` if it was unreachable."""
        found = self._forwarded.pop(request.forward_id, None)
        if found is None:
            return []  # answered already: a duplicate delivery
        request_id, deadline_ms = found
        if isinstance(response, ErrorCode):
            return [Respond(request_id=request_id, response=_refused(request, ErrorCode.NOT_CONTROLLER))]
        succeeded = tuple(sorted({name for name, code in _results(response) if code == ErrorCode.NONE}))
        operation = DelayedTopicOperation(request_id=request_id, deadline_ms=deadline_ms, keys=succeeded,
                                          response=response)
        validate_only = getattr(request, "validate_only", False)
        if succeeded and request.timeout_ms <= 0 and not validate_only:
            # Kafka's AdminManager: created (or deleted) and not waited for, so REQUEST_TIMED_OUT,
            # with no message (librdkafka reports it as success for a non-blocking call).
            return [Respond(request_id=request_id, response=_timed_out(response, set(succeeded), message=None))]
        if not succeeded or validate_only or self.purgatory.is_full:
            return [Respond(request_id=request_id, response=response)]
        effects = self._try_complete(operation, now_ms, parked=False)
        if effects:
            return effects
        self.purgatory.add(operation)
        return [ArmTimer(deadline_ms=deadline_ms)]

    # ------------------------------------------------------------------- completion and expiry
    def on_metadata_updated(self, topics, now_ms: int) -> list[Effect]:
        """This broker's metadata cache applied an UpdateMetadata naming ``topics``."""
        effects: list[Effect] = []
        for topic in sorted(set(topics)):
            for operation in self.purgatory.watching(topic):
                effects += self._try_complete(operation, now_ms, parked=True)
        return effects

    def tick(self, now_ms: int) -> list[Effect]:
        effects: list[Effect] = []
        for operation in self.purgatory.expired(now_ms):
            effects += self._try_complete(operation, now_ms, parked=True)
        return effects

    def _try_complete(self, operation: DelayedTopicOperation, now_ms: int, *, parked: bool) -> list[Effect]:
        waiting = {topic for topic in operation.keys if not self._agrees(operation.response, topic)}
        if waiting and now_ms < operation.deadline_ms:
            return []
        if parked:
            self.purgatory.remove(operation.request_id)
        response = operation.response if not waiting else _timed_out(operation.response, waiting)
        return [Respond(request_id=operation.request_id, response=response)]

    def _agrees(self, response: Any, topic: str) -> bool:
        """Whether the metadata cache shows what the controller answered for ``topic``."""
        partitions = self.metadata_cache.topics.get(topic)
        if isinstance(response, DeleteTopicsResponse):
            return partitions is None
        result = next(r for r in response.topics if r.name == topic)
        # Kafka's DelayedCreatePartitions.isMissingLeader: absent, or no leader.
        return partitions is not None and all(
            partitions.get(index) is not None and partitions[index].leader >= 0
            for index in range(result.num_partitions))


def _results(response: Any) -> list[tuple[str, ErrorCode]]:
    if isinstance(response, CreateTopicsResponse):
        return [(r.name, r.error_code) for r in response.topics]
    return [(r.name, r.error_code) for r in response.responses]


def _timed_out(response: Any, topics: set[str],
               message: str | None = "the topic's metadata did not reach this broker within timeout_ms") -> Any:
    if isinstance(response, CreateTopicsResponse):
        # Kafka's handleCreateTopicsRequest: a topic answered with an error has no counts or configs.
        return dataclasses.replace(response, topics=tuple(
            dataclasses.replace(r, error_code=ErrorCode.REQUEST_TIMED_OUT, error_message=message,
                                num_partitions=-1, replication_factor=-1, configs=())
            if r.name in topics else r for r in response.topics))
    return dataclasses.replace(response, responses=tuple(
        dataclasses.replace(r, error_code=ErrorCode.REQUEST_TIMED_OUT, error_message=message)
        if r.name in topics else r for r in response.responses))


def _refused(request: TopicRequest, code: ErrorCode) -> Any:
    module = create_topics if isinstance(request, CreateTopicsRequest) else delete_topics
    return module.refused(request, code)
