"""The broker's side of IncrementalAlterConfigs and AlterConfigs: check each resource, forward the
good ones to the controller, answer the client when the controller has answered.

Theory of operation. A client may send IncrementalAlterConfigs to any broker (Kafka's
``AdminClient`` picks the least loaded one). The broker checks every resource against what it
knows (a topic in its metadata cache; keys and values with ``topic_configs.check_alter_ops``; a
broker resource's dynamic keys with ``broker_configs.check_broker_alter_ops``) and
answers a bad one itself with Kafka's code; the rest go to the controller in one request, through
``controller_forwarding.ControllerForwarder``, with the answers so far. When the controller's
answer (or the news that it could not be reached) comes back, the two halves are put together in
the client's order and the client is answered. An unreachable controller answers the
forwarded resources ``NOT_CONTROLLER``, which an admin client retries; setting and deleting are
idempotent, so a retry after a lost answer does no harm.

Limit: ``controller_forwarding.FORWARDED_MAX`` requests may wait for the controller at once; past
that a request's forwarded resources are answered ``REQUEST_TIMED_OUT``, at once, rather than
queued without end.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Collection

from actors.core.broker.controller_forwarding import ControllerForwarder
from actors.core.broker_configs import RESOURCE_BROKER, check_broker_alter_ops
from actors.core.effects import Effect, Respond
from actors.core.errors import ErrorCode, KafkaProtocolError
from actors.core.messages.alter_configs import AlterConfigsRequest, AlterConfigsResponse
from actors.core.messages.incremental_alter_configs import (
    RESOURCE_TOPIC, AlterConfigsResourceResponse, IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse,
)
from actors.core.topic_configs import check_alter_ops

ConfigsRequest = IncrementalAlterConfigsRequest | AlterConfigsRequest
# Each request type's answer: the two APIs differ in how the controller merges, not in the answer's shape.
RESPONSE_TYPES = {IncrementalAlterConfigsRequest: IncrementalAlterConfigsResponse,
                  AlterConfigsRequest: AlterConfigsResponse}


class ConfigForwarder:
    def __init__(self, broker_id: int) -> None:
        self.broker_id = broker_id
        self._controller = ControllerForwarder()

    def handle_incremental_alter_configs(self, request_id: int, request: ConfigsRequest,
                                         known_topics: Collection[str]) -> list[Effect]:
        """IncrementalAlterConfigs or AlterConfigs (whose configs arrive as SET operations)."""
        response_type = RESPONSE_TYPES[type(request)]
        answers: list[AlterConfigsResourceResponse | None] = []
        names = [(r.resource_type, r.resource_name) for r in request.resources]
        for resource in request.resources:
            error = self._check(resource, known_topics, duplicate=names.count((resource.resource_type,
                                                                               resource.resource_name)) > 1)
            answers.append(None if error is None else AlterConfigsResourceResponse(
                resource_type=resource.resource_type, resource_name=resource.resource_name,
                error_code=error.error_code, error_message=error.message or None))
        forwarded = tuple(r for r, a in zip(request.resources, answers) if a is None)
        if not forwarded:
            return [self._respond(request_id, answers, response_type)]

        def answer(response) -> object:
            """The client's answer: this broker's own answers, and the controller's for the rest."""
            if response is ErrorCode.REQUEST_TIMED_OUT:
                return _merged(answers, forwarded, {}, ErrorCode.REQUEST_TIMED_OUT,
                               "too many config changes waiting for the controller", response_type)
            by_name = ({(r.resource_type, r.resource_name): r for r in response.responses}
                       if isinstance(response, (IncrementalAlterConfigsResponse, AlterConfigsResponse)) else {})
            return _merged(answers, forwarded, by_name, ErrorCode.NOT_CONTROLLER,
                           "the controller did not answer; retry", response_type)
        return self._controller.forward(request_id, dataclasses.replace(request, resources=forwarded), answer)

    @staticmethod
    def _check(resource, known_topics: Collection[str], *, duplicate: bool) -> KafkaProtocolError | None:
        if duplicate:
            return KafkaProtocolError(ErrorCode.INVALID_REQUEST, f"Duplicate resource {resource.resource_name}")
        if resource.resource_type == RESOURCE_BROKER:
            try:
                check_broker_alter_ops(resource.resource_name, resource.configs)
            except KafkaProtocolError as exc:
                return exc
            return None
        if resource.resource_type != RESOURCE_TOPIC:
            return KafkaProtocolError(ErrorCode.INVALID_REQUEST, f"resource type {resource.resource_type}: "
                                                                 f"only topic (2) and broker (4) configs can be altered")
        if resource.resource_name not in known_topics:
            return KafkaProtocolError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                      f"Topic {resource.resource_name} does not exist")
        try:
            check_alter_ops(resource.configs)
        except KafkaProtocolError as exc:
            return exc
        return None

    def on_controller_response(self, request: ConfigsRequest, response) -> list[Effect]:
        """The controller's answer to a forwarded request, or an ``ErrorCode`` if it was unreachable."""
        return self._controller.on_controller_response(request, response)

    @staticmethod
    def _respond(request_id: int, answers, response_type: type) -> Respond:
        return Respond(request_id=request_id, response=response_type(responses=tuple(answers)))


def _merged(answers, forwarded, by_name, missing_code: ErrorCode, missing_message: str, response_type):
    """The client's resources in its order: this broker's answer where it gave one, else the
    controller's (``by_name``), else ``missing_code``."""
    replies = iter(forwarded)
    merged = []
    for answer in answers:
        if answer is None:
            resource = next(replies)
            answer = by_name.get((resource.resource_type, resource.resource_name)) or _answer(
                resource, missing_code, missing_message)
        merged.append(answer)
    return response_type(responses=tuple(merged))


def _answer(resource, code: ErrorCode, message: str) -> AlterConfigsResourceResponse:
    return AlterConfigsResourceResponse(resource_type=resource.resource_type, resource_name=resource.resource_name,
                                        error_code=code, error_message=message)
