"""The simulator's network: every message in flight is an explicit object, delivered in a seeded order.

Theory of operation. Nodes are named (``controller``, ``broker:1``, ``fetcher:0:1:0``,
``channel:1``, ``client``) and each life of a node has an incarnation number. A message goes from
one node incarnation to a node name, optionally pinned to one incarnation of it (a reply goes to
the exact caller; a request to ``broker:1`` reaches whichever incarnation is up, as a Ray call by
actor name does). Messages on one link (source incarnation -> destination name) are delivered in
the order they were sent, unless a rule holds one back; across links the order is chosen by the
simulation's seeded random source among the messages that are due.

Calls: a request opens a ``Call`` that the reply closes. A call still open at its deadline is
failed to the caller (the shell's ``asyncio.wait_for`` timeout), and a reply that arrives after
that is dropped, as a Ray result nobody awaits any more.

Rules: ``hold`` keeps matching messages out of delivery until ``release`` (they are then due at
once, in their original order) or ``drop`` (they vanish, like lost packets); a rule with
``action="drop"`` drops matching messages as they are sent. A filter matches on source and
destination name prefixes (``fetcher:0`` matches ``fetcher:0:1:0``), the payload's type name, and
optional content predicates for fetch responses (carries records / carries a high watermark at
least N).

Indexes: the messages and calls are also kept in heaps by due time and deadline, and each link's
deliverable messages in a list by id, so that finding what is due costs what is due, not a scan of
everything in flight (at 10,000 partitions the scan was a large part of a run). They give exactly
the answers of the scans they replace, in the same order, so a seed's schedule does not change;
while any node is paused the scans themselves answer (pauses are rare and short).

Limits: ``IN_FLIGHT_MAX`` messages at once; past it the simulation is broken (a runaway loop), an
assertion.
"""
from __future__ import annotations

import bisect
import collections
import dataclasses
import heapq
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from actors.core.errors import ErrorCode
from actors.core.messages.fetch import FetchResponse

IN_FLIGHT_MAX = 100_000

REQUEST, RESPONSE, EVENT = "request", "response", "event"


@dataclass(eq=False)
class Message:
    """One message on the wire. ``call_id`` ties a request to its reply; events have none."""

    id: int
    source: str
    source_incarnation: int
    destination: str
    destination_incarnation: int | None  # None: whichever incarnation is up when it arrives
    kind: str  # REQUEST, RESPONSE or EVENT
    payload: Any
    sent_at_ms: int
    deliver_at_ms: int
    call_id: int | None = None
    held_by: str | None = None

    @property
    def link(self) -> tuple[str, int, str]:
        return self.source, self.source_incarnation, self.destination

    @property
    def type_name(self) -> str:
        if isinstance(self.payload, ErrorCode):
            return f"ErrorCode.{self.payload.name}"
        if isinstance(self.payload, tuple) and self.payload and isinstance(self.payload[0], str):
            return self.payload[0]  # internal events: ("add_partitions", ...), ("control_response", ...)
        return type(self.payload).__name__

    def describe(self) -> str:
        held = f" held by {self.held_by}" if self.held_by else ""
        return (f"#{self.id} {self.kind} {self.type_name} {self.source}@{self.source_incarnation} -> "
                f"{self.destination}{'' if self.destination_incarnation is None else f'@{self.destination_incarnation}'}"
                f" (sent {self.sent_at_ms} ms, due {self.deliver_at_ms} ms){held}")


@dataclass(eq=False)
class Call:
    """A request awaiting its reply; ``on_reply`` gets the response or an ``ErrorCode``."""

    id: int
    caller: str
    caller_incarnation: int
    request: Any
    callee: str
    deadline_ms: int
    timeout_error: ErrorCode
    on_reply: Callable[[Any], None]


def _fetch_high_watermarks(payload: Any) -> list[int]:
    if not isinstance(payload, FetchResponse):
        return []
    return [p.high_watermark for t in payload.responses for p in t.partitions]


def _fetch_has_records(payload: Any) -> bool:
    if not isinstance(payload, FetchResponse):
        return False
    return any(p.records is not None and len(p.records) > 0 for t in payload.responses for p in t.partitions)


def _name_matches(pattern: str | None, name: str) -> bool:
    return pattern is None or name == pattern or name.startswith(pattern + ":")


@dataclass
class MessageFilter:
    """Which messages a rule applies to; every given field must match."""

    source: str | None = None  # a node name or a prefix of one ("fetcher:0")
    destination: str | None = None
    message: str | None = None  # the payload's type name, e.g. "FetchResponse"
    with_records: bool | None = None  # fetch responses only: carrying records (True) or not (False)
    min_high_watermark: int | None = None  # fetch responses only: some partition's HW is at least this
    predicate: Callable[[Message], bool] | None = None

    @classmethod
    def from_spec(cls, spec: dict) -> MessageFilter:
        known = {f.name for f in dataclasses.fields(cls)} - {"predicate"}
        renamed = {"from": "source", "to": "destination"}
        values = {renamed.get(k, k): v for k, v in spec.items()}
        unknown = set(values) - known
        assert not unknown, f"unknown message filter keys {sorted(unknown)}"
        return cls(**values)

    def matches(self, message: Message) -> bool:
        if not (_name_matches(self.source, message.source) and _name_matches(self.destination, message.destination)):
            return False
        if self.message is not None and message.type_name != self.message:
            return False
        if self.with_records is not None and _fetch_has_records(message.payload) != self.with_records:
            return False
        if self.min_high_watermark is not None and not any(
                hw >= self.min_high_watermark for hw in _fetch_high_watermarks(message.payload)):
            return False
        return self.predicate is None or self.predicate(message)


@dataclass
class Rule:
    name: str
    filter: MessageFilter
    action: str  # "hold" or "drop"
    remaining: int | None = None  # how many more messages it may take; None: unlimited
    matched: int = 0


@dataclass
class Network:
    """In-flight messages, open calls and rules. The simulation decides when things happen."""

    messages: dict[int, Message] = field(default_factory=dict)
    calls: dict[int, Call] = field(default_factory=dict)
    rules: dict[str, Rule] = field(default_factory=dict)
    dropped: list[Message] = field(default_factory=list)
    _ids: itertools.count = field(default_factory=lambda: itertools.count(1))
    _link_tail_ms: dict[tuple[str, int, str], int] = field(default_factory=dict)
    # Node names (or prefixes: "fetcher:1" covers that broker's fetchers) whose process is paused:
    # nothing is delivered to them and their calls do not time out until they resume.
    paused: set[str] = field(default_factory=set)
    # The indexes (see the module docstring). Heap entries go stale when their message or call
    # changes or goes; a stale entry is skipped where it is met.
    _link_ids: dict[tuple[str, int, str], list[int]] = field(default_factory=dict)  # not held, by id
    _head_heap: list[tuple[int, int]] = field(default_factory=list)  # (due ms, id) of link heads
    _ready: list[int] = field(default_factory=list)  # ids of the link heads found due, ascending
    _due_heap: list[tuple[int, int]] = field(default_factory=list)  # (due ms, id), every message not held
    _deadline_heap: list[tuple[int, int]] = field(default_factory=list)  # (deadline ms, id) of calls
    # Requests and events sent, by payload type name (held and dropped ones included): what a
    # measurement counts, e.g. the LeaderAndIsr requests a controller failover costs.
    sent: collections.Counter = field(default_factory=collections.Counter)

    def is_paused(self, name: str) -> bool:
        return bool(self.paused) and any(_name_matches(p, name) for p in self.paused)

    # ------------------------------------------------------------------------------- sending
    def post(self, *, source: str, source_incarnation: int, destination: str, destination_incarnation: int | None,
             kind: str, payload: Any, now_ms: int, latency_ms: int, call_id: int | None = None) -> Message | None:
        assert len(self.messages) < IN_FLIGHT_MAX, f"{len(self.messages)} messages in flight: a runaway loop"
        link = (source, source_incarnation, destination)
        # FIFO per link: never due before the message sent ahead of it on the same link.
        deliver_at_ms = max(now_ms + latency_ms, self._link_tail_ms.get(link, 0))
        self._link_tail_ms[link] = deliver_at_ms
        message = Message(id=next(self._ids), source=source, source_incarnation=source_incarnation,
                          destination=destination, destination_incarnation=destination_incarnation, kind=kind,
                          payload=payload, sent_at_ms=now_ms, deliver_at_ms=deliver_at_ms, call_id=call_id)
        if kind != RESPONSE:
            self.sent[message.type_name] += 1
        for rule in self.rules.values():
            if rule.remaining == 0 or not rule.filter.matches(message):
                continue
            rule.matched += 1
            if rule.remaining is not None:
                rule.remaining -= 1
            if rule.action == "drop":
                self.dropped.append(message)
                return None
            message.held_by = rule.name
            break
        self.messages[message.id] = message
        if message.held_by is None:
            self._index(message)
        return message

    def _index(self, message: Message) -> None:
        """``message`` is deliverable (not held): add it to its link's list and the heaps."""
        ids = self._link_ids.setdefault(message.link, [])
        if not ids or ids[-1] < message.id:
            ids.append(message.id)
        else:
            bisect.insort(ids, message.id)
        if ids[0] == message.id:
            if len(ids) > 1:  # a released message goes ahead of the link's head: that one waits again
                self._unready(ids[1])
            heapq.heappush(self._head_heap, (message.deliver_at_ms, message.id))
        heapq.heappush(self._due_heap, (message.deliver_at_ms, message.id))

    def _unindex(self, message: Message) -> None:
        """``message`` left the network (or was never deliverable): its link's next one may be the head."""
        ids = self._link_ids.get(message.link)
        if not ids:
            return
        index = bisect.bisect_left(ids, message.id)
        if index == len(ids) or ids[index] != message.id:
            return
        del ids[index]
        if not ids:
            del self._link_ids[message.link]
        elif index == 0:
            head = self.messages[ids[0]]
            heapq.heappush(self._head_heap, (head.deliver_at_ms, head.id))

    def _is_head(self, message_id: int) -> bool:
        message = self.messages.get(message_id)
        if message is None or message.held_by is not None:
            return False
        ids = self._link_ids.get(message.link)
        return bool(ids) and ids[0] == message_id

    def _unready(self, message_id: int) -> None:
        index = bisect.bisect_left(self._ready, message_id)
        if index < len(self._ready) and self._ready[index] == message_id:
            del self._ready[index]

    def _ready_ids(self, now_ms: int) -> list[int]:
        """The ids of the messages ``due`` answers (no pause), ascending: heads now due join them."""
        heap, ready = self._head_heap, self._ready
        while heap and heap[0][0] <= now_ms:
            due_ms, message_id = heapq.heappop(heap)
            message = self.messages.get(message_id)
            if message is not None and message.deliver_at_ms == due_ms and self._is_head(message_id):
                index = bisect.bisect_left(ready, message_id)
                if index == len(ready) or ready[index] != message_id:
                    ready.insert(index, message_id)
        return ready

    def open_call(self, *, caller: str, caller_incarnation: int, request: Any, callee: str, now_ms: int,
                  timeout_ms: int, timeout_error: ErrorCode, on_reply: Callable[[Any], None]) -> Call:
        call = Call(id=next(self._ids), caller=caller, caller_incarnation=caller_incarnation, request=request,
                    callee=callee, deadline_ms=now_ms + timeout_ms, timeout_error=timeout_error, on_reply=on_reply)
        self.calls[call.id] = call
        heapq.heappush(self._deadline_heap, (call.deadline_ms, call.id))
        return call

    # ------------------------------------------------------------------------------ choosing
    def due(self, now_ms: int) -> list[Message]:
        """Messages that may be delivered now: not held, due, and first on their link; by id (send order)."""
        if self.paused:
            return self._due_by_scan(now_ms)
        return [self.messages[i] for i in self._ready_ids(now_ms)]

    def choose_due(self, now_ms: int, choose: Callable[[Any], Any]) -> Message | None:
        """``choose`` (a seeded ``random.choice``) applied to what ``due`` answers, without building
        that list: the same draw picks the same message. None when nothing is due."""
        if self.paused:
            due = self._due_by_scan(now_ms)
            return choose(due) if due else None
        ready = self._ready_ids(now_ms)
        return self.messages[choose(ready)] if ready else None

    def _due_by_scan(self, now_ms: int) -> list[Message]:
        heads: dict[tuple[str, int, str], Message] = {}
        for message in self.messages.values():  # insertion order is send order
            if message.held_by is None and message.link not in heads:
                heads[message.link] = message
        return [m for m in heads.values() if m.deliver_at_ms <= now_ms and not self.is_paused(m.destination)]

    def next_due_ms(self) -> int | None:
        if self.paused:
            return min((m.deliver_at_ms for m in self.messages.values()
                        if m.held_by is None and not self.is_paused(m.destination)), default=None)
        heap = self._due_heap
        while heap:
            due_ms, message_id = heap[0]
            message = self.messages.get(message_id)
            if message is not None and message.held_by is None and message.deliver_at_ms == due_ms:
                return due_ms
            heapq.heappop(heap)
        return None

    def next_call_deadline_ms(self) -> int | None:
        if self.paused:
            return min((c.deadline_ms for c in self.calls.values() if not self.is_paused(c.caller)), default=None)
        heap = self._deadline_heap
        while heap:
            deadline_ms, call_id = heap[0]
            call = self.calls.get(call_id)
            if call is not None and call.deadline_ms == deadline_ms:
                return deadline_ms
            heapq.heappop(heap)
        return None

    def timed_out_calls(self, now_ms: int) -> list[Call]:
        """The open calls past their deadline whose caller runs, by id (the order they were made)."""
        if self.paused:
            return [c for c in self.calls.values() if c.deadline_ms <= now_ms and not self.is_paused(c.caller)]
        heap, found = self._deadline_heap, {}
        while heap and heap[0][0] <= now_ms:
            deadline_ms, call_id = heapq.heappop(heap)
            call = self.calls.get(call_id)
            if call is not None and call.deadline_ms == deadline_ms:
                found[call_id] = call
        return [found[i] for i in sorted(found)]

    def take(self, message: Message) -> Message:
        self._unindex(message)
        self._unready(message.id)
        return self.messages.pop(message.id)

    # --------------------------------------------------------------------------------- rules
    def add_rule(self, name: str, message_filter: MessageFilter, *, action: str = "hold",
                 count: int | None = None, now_ms: int = 0) -> None:
        assert action in ("hold", "drop"), action
        assert name not in self.rules, f"a rule named {name!r} exists"
        self.rules[name] = Rule(name=name, filter=message_filter, action=action, remaining=count)

    def held(self, name: str | None = None) -> list[Message]:
        return [m for m in self.messages.values() if m.held_by is not None and (name is None or m.held_by == name)]

    def release(self, name: str, now_ms: int) -> list[Message]:
        """Remove the rule; its held messages become due now, in their original order."""
        self.rules.pop(name, None)
        released = self.held(name)
        for message in released:
            message.held_by = None
            message.deliver_at_ms = min(message.deliver_at_ms, now_ms)
            self._index(message)
        return released

    def drop_held(self, name: str) -> list[Message]:
        """Remove the rule and lose its held messages."""
        self.rules.pop(name, None)
        lost = self.held(name)
        for message in lost:
            self.dropped.append(self.messages.pop(message.id))
        return lost

    def remove_where(self, predicate: Callable[[Message], bool]) -> list[Message]:
        gone = [m for m in self.messages.values() if predicate(m)]
        for message in gone:
            self._unindex(message)
            self._unready(message.id)
            del self.messages[message.id]
        return gone
