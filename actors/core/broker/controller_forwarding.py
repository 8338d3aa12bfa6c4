"""Requests a broker passes to the controller unchanged and answers with the controller's answer.

Theory of operation. A stock admin client sends ElectLeaders to any broker (Kafka 2.4's broker
ran it against ZooKeeper itself; raykafka's brokers have no ZooKeeper, so the broker forwards it to
the controller, as KRaft's brokers forward admin requests, KIP-590). ``forward`` numbers the request
(``forward_id``, raykafka's own field), remembers the client's request id and how to refuse the
request with one code, and sends it on; ``on_controller_response`` answers the client with the
controller's response, or, when the controller could not be reached, with ``NOT_CONTROLLER``,
which admin clients retry.

Limit: ``FORWARDED_MAX`` requests may wait for the controller at once; past that a request is
answered ``REQUEST_TIMED_OUT`` at once rather than queued without end.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from actors.core.effects import Effect, Respond, Send
from actors.core.errors import ErrorCode

FORWARDED_MAX = 1000
Refusal = Callable[[ErrorCode], Any]  # the request's response carrying one error code


class ControllerForwarder:
    def __init__(self) -> None:
        self._next_forward_id = 1
        self._forwarded: dict[int, tuple[int, Refusal]] = {}  # forward_id -> (client request id, refusal)

    def forward(self, request_id: int, request: Any, refusal: Refusal) -> list[Effect]:
        if len(self._forwarded) >= FORWARDED_MAX:
            return [Respond(request_id=request_id, response=refusal(ErrorCode.REQUEST_TIMED_OUT))]
        forward_id = self._next_forward_id
        self._next_forward_id += 1
        self._forwarded[forward_id] = (request_id, refusal)
        return [Send(destination="controller", message=dataclasses.replace(request, forward_id=forward_id))]

    def on_controller_response(self, request: Any, response: Any) -> list[Effect]:
        """The controller's answer to a forwarded request, or an ``ErrorCode`` if it was unreachable."""
        found = self._forwarded.pop(request.forward_id, None)
        if found is None:
            return []  # answered already; a duplicate delivery
        request_id, refusal = found
        if isinstance(response, ErrorCode):
            response = refusal(ErrorCode.NOT_CONTROLLER)
        return [Respond(request_id=request_id, response=response)]
