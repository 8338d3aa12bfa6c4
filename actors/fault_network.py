"""The fault network: faults on the links between actors, for fault injection.

Theory of operation. Every call one raykafka process makes to another goes through
``FaultNetwork.call`` in the calling shell: a broker asking the controller, a replica fetcher asking
its leader, a controller send thread calling its broker. Each side of such a call is a *node*:
``broker-<id>`` (a broker and everything it runs: its fetchers and its group coordinator) or
``controller`` (the controller and its send threads), as they would be hosts in a Kafka cluster.
The fault injector publishes ``LinkRule``s on the Ray cluster's key-value store; every shell
judges each call by a copy of them at most ``RULES_STALE_MAX_S`` old, on two legs:

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
The pure part (``LinkRule``, ``NetworkRules``) does no I/O; ``FaultNetwork`` reads the store.

Reading the store is a blocking call to Ray's GCS. A shell that calls often (a replica fetcher,
several calls per replicated batch) must not stall its event loop on it for every
``RULES_REFRESH_S``, so ``FaultNetwork`` given ``run_off_loop`` (the shells: the event loop's
executor) reads on another thread once its copy is ``RULES_REFRESH_S`` old, while calls go on
with the copy they have; only a copy ``RULES_STALE_MAX_S`` old (a call after a quiet spell, or a
read that has not come back) is read at once, on the calling path, as before. A copy dates from
when its read began, so no call judges by rules older than ``RULES_STALE_MAX_S``, and the fault
injector, which waits ``RULES_IN_FORCE_S`` after publishing, returns with a fault in force everywhere.
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
# The oldest copy a call is judged by: older, the call reads the store itself first. Well above
# RULES_REFRESH_S, so that a refresh on a busy machine comes back before a call must read itself.
RULES_STALE_MAX_S = 0.3
# How long after publishing the fault injector waits: by then every call is judged by the new rules.
RULES_IN_FORCE_S = RULES_STALE_MAX_S + RULES_REFRESH_S
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


class FaultNetwork:
    """One shell's side of the seam: ``await network.call(destination, lambda: handle.m.remote(x), timeout_s)``.

    ``load_rules`` reads the published rules (the Ray store in the shells; a test passes its own).
    ``run_off_loop(work)``, if given, runs ``work`` on another thread and returns a future of its
    result: refreshes then leave the calling path (see the module's docstring)."""

    def __init__(self, node: str, load_rules: Callable[[], NetworkRules], *,
                 clock: Callable[[], float] = time.monotonic, rng: random.Random | None = None,
                 run_off_loop: Callable[[Callable[[], NetworkRules]], Any] | None = None) -> None:
        self.node = node
        self._load_rules = load_rules
        self._clock = clock
        self._rng = rng or random.Random()
        self._run_off_loop = run_off_loop
        self._refreshing = False  # a read off the loop is under way
        self._rules = NetworkRules()
        self._loaded_at: float | None = None  # when the read that gave ``_rules`` began

    def rules(self) -> NetworkRules:
        now = self._clock()
        age_s = None if self._loaded_at is None else now - self._loaded_at
        if age_s is None or age_s >= RULES_STALE_MAX_S or (age_s >= RULES_REFRESH_S and self._run_off_loop is None):
            try:
                self._loaded(now, self._load_rules())
            except Exception:
                self._loaded_at = now  # the store unreachable for a moment: keep the rules we had
        elif age_s >= RULES_REFRESH_S and not self._refreshing:
            self._refreshing = True
            try:
                self._run_off_loop(self._load_rules).add_done_callback(lambda done: self._refreshed(now, done))
            except Exception:
                self._refreshing = False  # no thread to read on: the next stale call reads itself
        return self._rules

    def _loaded(self, started: float, rules: NetworkRules) -> None:
        # A read that began before the copy we hold (a blocking one overtook it) is older news.
        if self._loaded_at is None or started >= self._loaded_at:
            self._rules, self._loaded_at = rules, started

    def _refreshed(self, started: float, done: Any) -> None:
        self._refreshing = False
        if not done.cancelled() and done.exception() is None:
            self._loaded(started, done.result())

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


def _in_loop_executor(work: Callable[[], Any]) -> asyncio.Future:
    return asyncio.get_running_loop().run_in_executor(None, work)


def shell_fault_network(node: str, ray_namespace: str) -> FaultNetwork:
    """A shell's fault network: called on its event loop, it refreshes the rules off it."""
    return FaultNetwork(node, store_rules_loader(ray_namespace), run_off_loop=_in_loop_executor)
