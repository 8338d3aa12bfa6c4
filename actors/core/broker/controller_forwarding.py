"""Requests a broker passes to the controller unchanged and answers with the controller's answer.

Theory of operation. A stock admin client sends ElectLeaders to any broker (Kafka 2.4's broker
ran it against ZooKeeper itself; raykafka's brokers have no ZooKeeper, so the broker forwards it to
the controller, as KRaft's brokers forward admin requests, KIP-590). ``forward`` numbers the request
(``forward_id``, raykafka's own field), remembers the client's request id and how to make the
client's answer, and sends it on; ``on_controller_response`` answers the client with what the
controller answered, or, when the controller could not be reached, with ``NOT_CONTROLLER``, which
admin clients retry. The config APIs forward this way too (``config_forwarding``), answering with
their own checks merged in.

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
# The client's response from the controller's response, or from ``NOT_CONTROLLER`` (unreachable)
# or ``REQUEST_TIMED_OUT`` (too many waiting) when there is none.
Answer = Callable[[Any], Any]


class ControllerForwarder:
    def __init__(self) -> None:
        self._next_forward_id = 1
        self._forwarded: dict[int, tuple[int, Answer]] = {}  # forward_id -> (client request id, answer)

    def forward(self, request_id: int, request: Any, answer: Answer) -> list[Effect]:
        if len(self._forwarded) >= FORWARDED_MAX:
            return [Respond(request_id=request_id, response=answer(ErrorCode.REQUEST_TIMED_OUT))]
        forward_id = self._next_forward_id
        self._next_forward_id += 1
        self._forwarded[forward_id] = (request_id, answer)
        return [Send(destination="controller", message=dataclasses.replace(request, forward_id=forward_id))]

    def on_controller_response(self, request: Any, response: Any) -> list[Effect]:
        """The controller's answer to a forwarded request, or an ``ErrorCode`` if it was unreachable."""
        found = self._forwarded.pop(request.forward_id, None)
        if found is None:
            return []  # answered already; a duplicate delivery
        request_id, answer = found
        return [Respond(request_id=request_id,
                        response=answer(ErrorCode.NOT_CONTROLLER if isinstance(response, ErrorCode) else response))]
