"""The fault network decides each message's fate from the link rules: cut and dropped requests
never run, lost answers come after the request ran, delays hold messages back, and rules that
change while a call is in flight catch its answer (driven with fake sends, no Ray)."""
from __future__ import annotations

import asyncio
import random

import pytest

from actors.fault_network import LinkDown, LinkRule, NetworkRules, FaultNetwork


def rules(*items: LinkRule) -> NetworkRules:
    return NetworkRules(items, version=1)


@pytest.mark.parametrize("rule, source, destination, expected", [
    (LinkRule("broker-1", "broker-2", "cut"), "broker-1", "broker-2", "cut"),
    (LinkRule("broker-1", "broker-2", "cut"), "broker-2", "broker-1", None),  # one way only
    (LinkRule("*", "controller", "cut"), "broker-0", "controller", "cut"),
    (LinkRule("broker-1", "*", "cut"), "broker-1", "controller", "cut"),
    (LinkRule("broker-1", "broker-2", "drop", probability=1.0), "broker-1", "broker-2", "drop"),
    (LinkRule("broker-1", "broker-2", "delay", delay_ms=200), "broker-1", "broker-2", None),
])
def test_a_rule_applies_to_its_direction_only(rule, source, destination, expected):
    assert rules(rule).leg(source, destination, random.Random(0)).lost == expected


def test_delays_add_up_and_a_cut_wins_over_a_drop():
    leg = rules(LinkRule("a", "b", "delay", delay_ms=100), LinkRule("*", "b", "delay", delay_ms=50),
                LinkRule("a", "b", "drop", probability=1.0), LinkRule("a", "b", "cut")).leg("a", "b", random.Random(0))
    assert leg.lost == "cut" and leg.delay_s == pytest.approx(0.15)


def test_a_drop_strikes_with_its_probability():
    network, rng = rules(LinkRule("a", "b", "drop", probability=0.25)), random.Random(7)
    lost = sum(network.leg("a", "b", rng).lost == "drop" for _ in range(4000))
    assert 800 < lost < 1200


@pytest.mark.parametrize("kwargs", [
    dict(action="explode"), dict(action="delay"), dict(action="cut", delay_ms=5),
    dict(action="cut", probability=0.5), dict(action="drop", probability=0.0), dict(action="drop", probability=1.5),
])
def test_bad_rules_are_refused(kwargs):
    with pytest.raises(ValueError):
        LinkRule("a", "b", **kwargs)


def test_rules_round_trip_through_json():
    published = NetworkRules([LinkRule("a", "b", "delay", delay_ms=30), LinkRule("b", "*", "drop", probability=0.5)], 4)
    again = NetworkRules.from_json(published.to_json())
    assert again.rules == published.rules and again.version == 4
    assert NetworkRules.from_json(None).rules == ()


class FakePeer:
    """The callee: counts the requests that reached it; answers after ``latency_s``."""

    def __init__(self, latency_s: float = 0.0) -> None:
        self.received = 0
        self.latency_s = latency_s

    async def handle(self, value):
        self.received += 1
        await asyncio.sleep(self.latency_s)
        return value * 2


def network_with(current: list[NetworkRules]) -> FaultNetwork:
    return FaultNetwork("a", lambda: current[0], rng=random.Random(1))


def run(coroutine):
    return asyncio.run(coroutine)


def test_without_rules_the_call_goes_through():
    peer = FakePeer()
    assert run(network_with([NetworkRules()]).call("b", lambda: peer.handle(21), 1.0)) == 42
    assert peer.received == 1


def test_a_cut_request_never_reaches_the_peer_and_fails_fast():
    peer, network = FakePeer(), network_with([rules(LinkRule("a", "b", "cut"))])

    async def scenario():
        loop = asyncio.get_running_loop()
        started = loop.time()
        with pytest.raises(LinkDown):
            await network.call("b", lambda: peer.handle(1), 30.0)
        return loop.time() - started

    assert run(scenario()) < 5.0 and peer.received == 0


def test_a_cut_answer_comes_after_the_request_ran():
    peer, network = FakePeer(), network_with([rules(LinkRule("b", "a", "cut"))])
    with pytest.raises(LinkDown):
        run(network.call("b", lambda: peer.handle(1), 30.0))
    assert peer.received == 1, "the request ran: only its answer was lost (an indeterminate outcome)"


def test_a_dropped_request_times_out_at_the_callers_deadline():
    peer, network = FakePeer(), network_with([rules(LinkRule("a", "b", "drop", probability=1.0))])
    with pytest.raises(asyncio.TimeoutError):
        run(network.call("b", lambda: peer.handle(1), 0.2))
    assert peer.received == 0


def test_a_delay_holds_the_request_back():
    peer, network = FakePeer(), network_with([rules(LinkRule("a", "b", "delay", delay_ms=150))])

    async def scenario():
        loop = asyncio.get_running_loop()
        started = loop.time()
        assert await network.call("b", lambda: peer.handle(2), 5.0) == 4
        return loop.time() - started

    assert run(scenario()) >= 0.15


def test_a_cut_made_while_the_call_is_in_flight_catches_its_answer():
    current = [NetworkRules()]
    peer, network = FakePeer(latency_s=0.3), network_with(current)

    async def scenario():
        call = asyncio.ensure_future(network.call("b", lambda: peer.handle(1), 5.0))
        await asyncio.sleep(0.05)
        current[0] = rules(LinkRule("b", "a", "cut"))
        network._loaded_at = None  # as if the refresh interval had passed
        with pytest.raises(LinkDown):
            await call

    current[0] = rules(LinkRule("x", "y", "cut"))  # some rule, so the seam is armed
    run(scenario())
    assert peer.received == 1


def test_a_cut_made_while_an_answer_is_held_back_by_a_delay_catches_it():
    """The answer left the callee and sits on a slow link; the link is cut before it arrives."""
    delayed = rules(LinkRule("b", "a", "delay", delay_ms=300))
    current = [delayed]
    peer, network = FakePeer(), network_with(current)

    async def scenario():
        call = asyncio.ensure_future(network.call("b", lambda: peer.handle(1), 5.0))
        await asyncio.sleep(0.1)
        assert peer.received == 1 and not call.done(), "the request ran; its answer is held back"
        current[0] = NetworkRules(delayed.rules + (LinkRule("b", "a", "cut"),), 2)
        network._loaded_at = None  # as if the refresh interval had passed
        with pytest.raises(LinkDown):
            await call

    run(scenario())


# ------------------------------------------------------------- refreshing the rules off the loop
EPSILON_S = 1e-6  # past a bound, whatever the float sums round to


class Clock:
    def __init__(self) -> None:
        self.now_s = 100.0

    def __call__(self) -> float:
        return self.now_s


class Store:
    """The published rules, and every read of them: on the calling path or off it."""

    def __init__(self) -> None:
        self.current = rules(LinkRule("x", "y", "cut"))
        self.reads = 0

    def load(self) -> NetworkRules:
        self.reads += 1
        return self.current


class OffLoop:
    """``run_off_loop`` whose works run when the test says, as a thread would finish them."""

    def __init__(self) -> None:
        self.works: list[tuple] = []

    def __call__(self, work):
        import concurrent.futures
        future = concurrent.futures.Future()
        self.works.append((work, future))
        return future

    def finish(self) -> None:
        works, self.works = self.works, []
        for work, future in works:
            future.set_result(work())


def off_loop_network():
    clock, store, off_loop = Clock(), Store(), OffLoop()
    return FaultNetwork("a", store.load, clock=clock, rng=random.Random(1), run_off_loop=off_loop), clock, store, off_loop


def test_a_refresh_of_rules_read_recently_runs_off_the_calling_path():
    """A fetcher calls its leader many times a second: once its copy is RULES_REFRESH_S old the
    store is read on another thread while calls go on with the copy they have, and the calls
    after that read came back judge by what it read."""
    from actors.fault_network import RULES_REFRESH_S
    network, clock, store, off_loop = off_loop_network()
    first = network.rules()
    assert store.reads == 1, "the first call has no copy: it reads at once"
    clock.now_s += RULES_REFRESH_S + EPSILON_S
    store.current = rules(LinkRule("a", "b", "cut"))
    assert network.rules() is first and store.reads == 1, "the call went on with its copy"
    assert len(off_loop.works) == 1
    assert network.rules() is first and len(off_loop.works) == 1, "one refresh at a time"
    off_loop.finish()
    assert store.reads == 2 and network.rules() is store.current


def test_rules_older_than_the_staleness_bound_are_read_on_the_calling_path():
    """A call after a quiet spell, or while a refresh has not come back, never judges by rules
    older than RULES_STALE_MAX_S: it reads them itself, as the fault injector's wait counts on."""
    from actors.fault_network import RULES_IN_FORCE_S, RULES_REFRESH_S, RULES_STALE_MAX_S
    assert RULES_STALE_MAX_S < RULES_IN_FORCE_S, "the fault injector's wait puts a fault in force everywhere"
    network, clock, store, off_loop = off_loop_network()
    network.rules()
    clock.now_s += RULES_STALE_MAX_S + EPSILON_S
    store.current = rules(LinkRule("a", "b", "cut"))
    assert network.rules() is store.current and store.reads == 2 and not off_loop.works
    clock.now_s += RULES_REFRESH_S + EPSILON_S
    network.rules()  # starts a refresh that does not come back in time
    clock.now_s += RULES_STALE_MAX_S - RULES_REFRESH_S
    newest = store.current = rules(LinkRule("b", "a", "cut"))
    assert network.rules() is newest, "the stale copy was read again on the calling path"
    store.current = rules()
    off_loop.finish()  # the late refresh began before the read that overtook it: older news
    assert network.rules() is newest


def test_a_cut_published_while_calls_flow_catches_them_within_the_staleness_bound():
    from actors.fault_network import RULES_STALE_MAX_S
    peer, (network, clock, store, off_loop) = FakePeer(), off_loop_network()
    assert run(network.call("b", lambda: peer.handle(1), 1.0)) == 2
    store.current = rules(LinkRule("a", "b", "cut"))
    clock.now_s += RULES_STALE_MAX_S + EPSILON_S
    with pytest.raises(LinkDown):
        run(network.call("b", lambda: peer.handle(1), 0.01))
    assert peer.received == 1
