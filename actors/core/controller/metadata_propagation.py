"""The controller's CreateTopics, CreatePartitions and DeleteTopics answers, held until every live
broker knows (a CreatePartitions answer waits, as a CreateTopics one, for the new partitions' leaders).

Theory of operation. Kafka 2.4's broker holds a CreateTopics answer until its own metadata cache
shows the new partitions led, and a DeleteTopics answer until the topic left it (raykafka's broker
does too: actors/core/broker/topic_operations.py). That makes the broker that answered agree with
the answer, not the others: a client that lists topics right after, on another broker, may still
miss a new topic (librdkafka's ``list_topics`` asks any broker). So the controller, which alone
knows when each broker applied an UpdateMetadata (its send threads hand every answer back), holds
its own answer first, until every live broker answered, without error, an UpdateMetadata that
carries the change:

- for a created topic, each partition with a leader (leader >= 0);
- for a deleted topic, each partition marked deleted (leader -2, ``LEADER_DURING_DELETE``).

The brokers waited for are those live when the answer was held; one that dies or is fenced meanwhile
is no longer waited for (a broker that comes back gets the full state when it registers). The
send threads deliver each broker's requests in order, so the UpdateMetadata that carries the
change is the one answered after it was sent; an answer to an older one carries older states.

This wait goes beyond Kafka, which answers when the receiving broker agrees, so it is bounded
tighter than the request: ``tick`` answers a held request after ``PROPAGATION_WAIT_MAX_MS`` or its
``timeout_ms``, whichever is less, with the controller's answer as it was (the topics exist, or
are queued for deletion, either way). A broker that is slow to hear from the controller (a stalled
channel, a broker dead and not yet fenced) so delays topic creation by that bound at most, and the
broker that answers the client still waits for its own metadata for the whole ``timeout_ms``. A
``timeout_ms`` of 0 or less, ``validate_only``, or an answer with nothing created or deleted is
not held. A controller that resigns answers everything it held.

Limit: ``HELD_MAX`` answers at once; past it an answer is given at once, as before this existed.
"""
from __future__ import annotations

import dataclasses
from typing import Any

from actors.core.controller.context import ControllerContext
from actors.core.controller.state import LEADER_DURING_DELETE
from actors.core.effects import Effect, Respond
from actors.core.errors import ErrorCode
from actors.core.messages import create_topics, delete_topics
from actors.core.messages.create_topics import CreateTopicsRequest, CreateTopicsResponse
from actors.core.messages.delete_topics import DeleteTopicsResponse
from actors.core.messages.update_metadata import UpdateMetadataRequest

HELD_MAX = 1000
PROPAGATION_WAIT_MAX_MS = 3000


@dataclasses.dataclass(slots=True, kw_only=True)
class _Held:
    response: Any
    deadline_ms: int
    deleting: bool
    # (broker id, topic, partition) whose applied UpdateMetadata has not been seen yet.
    unseen: set[tuple[int, str, int]]


class MetadataPropagation:
    def __init__(self, context: ControllerContext) -> None:
        self.context = context
        self._held: dict[int, _Held] = {}

    def __len__(self) -> int:
        return len(self._held)

    def partitions_of(self, topics) -> dict[str, list[int]]:
        """The partitions of each of ``topics`` the controller knows, by topic."""
        return {name: sorted(self.context.topics[name].assignment) for name in topics if name in self.context.topics}

    def hold(self, effects: list[Effect], request_id: int, request: Any, now_ms: int,
             partitions: dict[str, list[int]] | None = None) -> list[Effect]:
        """``effects`` of a CreateTopics, CreatePartitions or DeleteTopics step, with its answer taken out and held
        when there is something to wait for; ``partitions``: each topic's, if not the current ones."""
        answer = next((e for e in effects if isinstance(e, Respond) and e.request_id == request_id), None)
        if (answer is None or request.timeout_ms <= 0 or getattr(request, "validate_only", False)
                or len(self._held) >= HELD_MAX):
            return effects
        deleting = isinstance(answer.response, DeleteTopicsResponse)
        results = (answer.response.responses if deleting else answer.response.topics
                   if isinstance(answer.response, CreateTopicsResponse) else answer.response.results)
        named = [r.name for r in results if r.error_code == ErrorCode.NONE]
        partitions = self.partitions_of(named) if partitions is None else partitions
        unseen = {(broker_id, name, partition) for name in named for partition in partitions.get(name, ())
                  for broker_id in self.context.live_or_shutting_down_broker_ids}
        if not unseen:
            return effects
        self._held[request_id] = _Held(response=answer.response,
                                       deadline_ms=now_ms + min(request.timeout_ms, PROPAGATION_WAIT_MAX_MS),
                                       deleting=deleting, unseen=unseen)
        return [e for e in effects if e is not answer]

    def on_control_response(self, broker_id: int, request: Any, response: Any) -> list[Effect]:
        """A broker answered one of the controller's requests."""
        if not self._held or not isinstance(request, UpdateMetadataRequest):
            return []
        if getattr(response, "error_code", None) != ErrorCode.NONE:
            return []
        carried = {(topic.topic_name, state.partition_index, state.leader)
                   for topic in request.topic_states for state in topic.partition_states}
        created = {(t, p) for t, p, leader in carried if leader >= 0}
        deleted = {(t, p) for t, p, leader in carried if leader == LEADER_DURING_DELETE}
        for held in self._held.values():
            seen = deleted if held.deleting else created
            held.unseen = {u for u in held.unseen if u[0] != broker_id or (u[1], u[2]) not in seen}
        return self._release(now_ms=None)

    def tick(self, now_ms: int) -> list[Effect]:
        return self._release(now_ms) if self._held else []

    def release_all(self) -> list[Effect]:
        held, self._held = self._held, {}
        return [Respond(request_id=request_id, response=h.response) for request_id, h in sorted(held.items())]

    def _release(self, now_ms: int | None) -> list[Effect]:
        live = self.context.live_or_shutting_down_broker_ids
        effects: list[Effect] = []
        for request_id in sorted(self._held):
            held = self._held[request_id]
            held.unseen = {u for u in held.unseen if u[0] in live}
            if not held.unseen or (now_ms is not None and now_ms >= held.deadline_ms):
                del self._held[request_id]
                effects.append(Respond(request_id=request_id, response=held.response))
        return effects


def refusal(request: Any):
    """The answer to ``request`` (CreateTopics or DeleteTopics) that gives every topic one error code."""
    module = create_topics if isinstance(request, CreateTopicsRequest) else delete_topics
    return lambda code: module.refused(request, code)
