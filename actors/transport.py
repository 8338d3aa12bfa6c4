"""The transport seam: network faults between actors, for fault injection.

Theory of operation. Every call one raykafka process makes to another goes through
``Transport.call`` in the calling shell: a broker asking the controller, a replica fetcher asking
its leader, a controller send thread calling its broker. Each side of such a call is a *node*:
``broker-<id>`` (a broker and everything it runs: its fetchers and its group coordinator) or
``controller`` (the controller and its send threads), as they would be hosts in a Kafka cluster.
The fault injector publishes ``LinkRule``s on the Ray cluster's key-value store; every shell reads
them at most every ``RULES_REFRESH_S`` and judges each call on two legs:

- the request leg (caller -> callee): ``cut`` and a ``drop`` that strikes mean the request never
  arrives; ``delay`` holds it back before it is sent.
- the response leg (callee -> caller), judged again when the answer arrives (a cut made while a
  call was in flight catches its answer): ``cut``/``drop`` mean the request *ran* but the answer
  is lost, which is the case that makes a write indeterminate; ``delay`` holds the answer back,
  and a cut made while it is held back catches it too.

A lost message on a ``cut`` link surfaces as ``LinkDown`` after ``CUT_DETECT_S`` (a connection
that fails to connect or resets, as Kafka's NetworkClient sees a partitioned peer); a ``drop``
surfaces as a timeout at the caller's own deadline (the packet vanished; nothing tells the caller
until its request times out). A rule on (A, B) affects only messages from A to B, so a one-way
partition is one rule and a full partition two. Rules name nodes or ``*``.

Clients (producers, consumers) do not go through the seam: partitions here are between servers.
The pure part (``LinkRule``, ``NetworkRules``) does no I/O; ``Transport`` reads the store.
"""
from __future__ import annotations

import asyncio
import json
import random
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import asdict, dataclass
from typing import Any

ACTIONS = ("cut", "drop", "delay")
NETWORK_RULES_KEY = "/network/rules"
# How stale a shell's copy of the rules may be; the fault injector waits this long (twice) after
# publishing, so a fault is in force everywhere when it returns.
RULES_REFRESH_S = 0.1
# How long a caller takes to notice that a cut link is down (a refused or reset connection).
CUT_DETECT_S = 0.5
CONTROLLER_NODE = "controller"


def broker_node(broker_id: int) -> str:
    return f"broker-{int(broker_id)}"


class LinkDown(ConnectionError):
    """The message could not cross a cut link; the call's outcome is unknown to the caller when
    it was the answer that was lost."""


@dataclass(frozen=True)
class LinkRule:
    """One fault on the messages from ``source`` to ``destination`` (node names or ``*``).

    ``probability`` applies to ``drop`` (each message is lost with it) and must be 1 for the
    others; ``delay_ms`` applies to ``delay``."""
    source: str
    destination: str
    action: str
    delay_ms: int = 0
    probability: float = 1.0

    def __post_init__(self) -> None:
        if self.action not in ACTIONS:
            raise ValueError(f"unknown link action {self.action!r}; actions are {', '.join(ACTIONS)}")
        if not self.source or not self.destination:
            raise ValueError("a link rule names a source and a destination node")
        if self.delay_ms < 0 or (self.action == "delay") != (self.delay_ms > 0):
            raise ValueError(f"delay_ms must be positive for 'delay' and 0 otherwise: {self}")
        if not 0.0 < self.probability <= 1.0 or (self.action != "drop" and self.probability != 1.0):
            raise ValueError(f"probability must be in (0, 1], and 1 except for 'drop': {self}")

    def matches(self, source: str, destination: str) -> bool:
        return self.source in ("*", source) and self.destination in ("*", destination)


@dataclass(frozen=True)
class Leg:
    """What happens to one message: lost (and how the loss shows) or delayed."""
    lost: str | None = None  # None, "cut" or "drop"
    delay_s: float = 0.0


class NetworkRules:
    """A set of link rules, and the fate of a message under them."""

    def __init__(self, rules: Iterable[LinkRule] = (), version: int = 0) -> None:
        self.rules = tuple(rules)
        self.version = version

    def leg(self, source: str, destination: str, rng: random.Random) -> Leg:
        """The fate of one message from ``source`` to ``destination``: a cut wins over a drop,
        delays add up."""
        lost, delay_s = None, 0.0
        for rule in self.rules:
            if not rule.matches(source, destination):
                continue
            if rule.action == "cut":
                lost = "cut"
            elif rule.action == "drop" and lost is None and rng.random() < rule.probability:
                lost = "drop"
            elif rule.action == "delay":
                delay_s += rule.delay_ms / 1000
        return Leg(lost, delay_s)

    def to_json(self) -> bytes:
        return json.dumps({"version": self.version, "rules": [asdict(r) for r in self.rules]}).encode()

    @classmethod
    def from_json(cls, raw: bytes | None) -> "NetworkRules":
        if not raw:
            return cls()
        data = json.loads(raw)
        return cls((LinkRule(**rule) for rule in data["rules"]), int(data["version"]))


class Transport:
    """One shell's side of the seam: ``await transport.call(destination, lambda: handle.m.remote(x), timeout_s)``.

    ``load_rules`` reads the published rules (the Ray store in the shells; a test passes its own)."""

    def __init__(self, node: str, load_rules: Callable[[], NetworkRules], *,
                 clock: Callable[[], float] = time.monotonic, rng: random.Random | None = None) -> None:
        self.node = node
        self._load_rules = load_rules
        self._clock = clock
        self._rng = rng or random.Random()
        self._rules = NetworkRules()
        self._loaded_at: float | None = None
        self.messages_lost = 0

    def rules(self) -> NetworkRules:
        now = self._clock()
        if self._loaded_at is None or now - self._loaded_at >= RULES_REFRESH_S:
            try:
                self._rules = self._load_rules()
            except Exception:
                pass  # the store unreachable for a moment: keep the rules we had
            self._loaded_at = now
        return self._rules

    async def call(self, destination: str, send: Callable[[], Awaitable[Any]], timeout_s: float) -> Any:
        """Send one request to ``destination`` and await its answer, as the links allow.

        Raises ``LinkDown`` (cut) or ``asyncio.TimeoutError`` (dropped, or no answer within
        ``timeout_s``); whatever the call itself raises passes through."""
        rules = self.rules()
        if not rules.rules:
            return await asyncio.wait_for(send(), timeout_s)
        started = self._clock()
        outbound = rules.leg(self.node, destination, self._rng)
        if outbound.delay_s:
            await asyncio.sleep(min(outbound.delay_s, timeout_s))
        if outbound.lost:
            await self._lose(outbound.lost, timeout_s - (self._clock() - started), "request", destination)
        answer = await asyncio.wait_for(send(), max(0.001, timeout_s - (self._clock() - started)))
        inbound = self.rules().leg(destination, self.node, self._rng)
        if inbound.lost:
            await self._lose(inbound.lost, timeout_s - (self._clock() - started), "answer", destination)
        if inbound.delay_s:
            await asyncio.sleep(inbound.delay_s)
            # An answer held back on the wire is lost if the link is cut before it arrives.
            if self.rules().leg(destination, self.node, self._rng).lost == "cut":
                await self._lose("cut", timeout_s - (self._clock() - started), "answer", destination)
        return answer

    async def _lose(self, how: str, remaining_s: float, what: str, destination: str) -> None:
        self.messages_lost += 1
        if how == "cut":
            await asyncio.sleep(max(0.0, min(CUT_DETECT_S, remaining_s)))
            raise LinkDown(f"{what} between {self.node} and {destination} lost: the link is cut")
        await asyncio.sleep(max(0.0, remaining_s))
        raise asyncio.TimeoutError(f"{what} between {self.node} and {destination} dropped")


def store_rules_loader(ray_namespace: str) -> Callable[[], NetworkRules]:
    """Reads the rules the fault injector published for this raykafka cluster (Ray's KV store)."""
    from actors.ray_metadata_store import RayKeyValueStore
    store = RayKeyValueStore(ray_namespace)
    return lambda: NetworkRules.from_json(store.get(NETWORK_RULES_KEY))


def publish_rules(ray_namespace: str, rules: Iterable[LinkRule]) -> NetworkRules:
    """Replace the published rules (an empty list heals every link); returns what was published."""
    from actors.ray_metadata_store import RayKeyValueStore
    store = RayKeyValueStore(ray_namespace)
    current = NetworkRules.from_json(store.get(NETWORK_RULES_KEY))
    published = NetworkRules(rules, current.version + 1)
    store.put(NETWORK_RULES_KEY, published.to_json())
    return published


def shell_transport(node: str, ray_namespace: str) -> Transport:
    return Transport(node, store_rules_loader(ray_namespace))
