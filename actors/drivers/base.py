"""What every driver shares: answering requests, and the effects every core may return.

Theory of operation. A request reaches a driver as ``handle(request, respond)``: the API table
(actors/core/apis.py) names, by ``type(request)``, the handler on this driver's kind of core; a
request of a type this kind does not serve, or not of its type field by field, never reaches the
core: ``KafkaProtocolError(INVALID_REQUEST)`` is raised to the caller (Kafka closes the connection
on a request it cannot parse) and the core is untouched. The request then gets an id, and the
core is stepped with it (``request``). A ``Respond`` effect, at once or later (a request parked
in a purgatory), hands the answer to the ``respond`` callback the host passed (a Ray future, a
simulated reply), exactly once.
``ArmTimer`` becomes ``clock.wake_at``; ``LogEvent`` and ``Metric`` go to the event log. Each
driver interprets the rest of its core's effects itself, in the order the core returned them,
with nothing else run in between.

Limits: at most ``REQUESTS_PENDING_MAX`` requests awaiting an answer; past it a request is refused
with a broken invariant, since every core answers or expires what it parks.
"""
from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

from actors.core.apis import ActorKind, Api, Handler, handler_for
from actors.core.effects import ArmTimer, LogEvent, Metric, Respond
from actors.core.errors import ErrorCode, KafkaProtocolError
from actors.core.messages.validation import request_schema_error
from actors.drivers.seams import Clock, EventLog, Reply, Messenger

REQUESTS_PENDING_MAX = 1_000_000


class Driver:
    """A core's effects interpreted through the seams; subclasses add their actor kind's effects."""

    kind: ActorKind  # which handlers of the API table this driver's core serves
    core: Any

    def __init__(self, name: str, messenger: Messenger, clock: Clock, log: EventLog) -> None:
        self.name = name
        self.messenger = messenger
        self.clock = clock
        self.log = log
        self._answers: dict[int, Reply] = {}
        self._request_ids = itertools.count()

    # ----------------------------------------------------------------------------- requests
    def handle(self, request: Any, respond: Reply) -> None:
        """Step the handler the API table names for ``type(request)`` on this kind's core."""
        api, handler = self.handler_of(request)
        self.request(lambda request_id, asked, now_ms: self.step(handler, request_id, asked, now_ms), request,
                     respond, request_type=api.request_type)

    def handler_of(self, request: Any) -> tuple[Api, Handler]:
        """The table's entry and handler for ``request``; ``KafkaProtocolError(INVALID_REQUEST)``
        for a request of a type this kind does not serve (the core is untouched)."""
        found = handler_for(self.kind, request)
        if found is None:
            self.log.log("warning", f"{self.name} refused a {type(request).__name__}: the {self.kind.value} serves "
                                    f"no such request")
            raise KafkaProtocolError(ErrorCode.INVALID_REQUEST,
                                     f"the {self.kind.value} serves no {type(request).__name__}")
        return found

    def step(self, handler: Handler, request_id: int, request: Any, now_ms: int) -> list:
        """Step ``handler`` on this driver's core (a kind may wrap the core's step)."""
        return handler(self.core, request_id, request, now_ms)

    def request(self, handler: Callable, request: Any, respond: Reply, *, request_type: type | None = None) -> None:
        """Check ``request`` against ``request_type`` (if given), step ``handler`` with a new
        request id and apply its effects; the answer goes to ``respond`` when the core gives it."""
        if request_type is not None:
            self.check_request(request, request_type)
        assert len(self._answers) < REQUESTS_PENDING_MAX, f"{self.name}: {len(self._answers)} requests unanswered"
        request_id = next(self._request_ids)
        self._answers[request_id] = respond
        try:
            effects = handler(request_id, request, self.clock.now_ms())
        except Exception:
            self._answers.pop(request_id, None)
            raise
        self.apply(effects)

    def check_request(self, request: Any, request_type: type) -> None:
        """Raise ``KafkaProtocolError(INVALID_REQUEST)`` unless ``request`` is a well-formed ``request_type``."""
        error = request_schema_error(request, request_type)
        if error is not None:
            self.log.log("warning", f"{self.name} refused a request it cannot parse as "
                                    f"{request_type.__name__}: {error}")
            raise KafkaProtocolError(ErrorCode.INVALID_REQUEST, f"not a valid {request_type.__name__}: {error}")

    @property
    def requests_pending(self) -> int:
        return len(self._answers)

    # ------------------------------------------------------------------------------ effects
    def apply(self, effects: list) -> None:
        for effect in effects:
            if not self.apply_common(effect):
                self.apply_own(effect)

    def apply_common(self, effect: Any) -> bool:
        if isinstance(effect, Respond):
            respond = self._answers.pop(effect.request_id, None)
            if respond is not None:
                respond(effect.response)
        elif isinstance(effect, ArmTimer):
            self.clock.wake_at(effect.deadline_ms)
        elif isinstance(effect, LogEvent):
            self.log.log(effect.level, effect.message)
        elif isinstance(effect, Metric):
            self.log.metric(effect.name, effect.value, effect.tags)
        else:
            return False
        return True

    def apply_own(self, effect: Any) -> None:
        raise AssertionError(f"{self.name} cannot apply {effect!r}")

    def now_ms(self) -> int:
        return self.clock.now_ms()
