"""Which way a replica fetcher sends its Fetches (actors/replica_fetcher.py): over the leader's fetch
channel once the leader's actor has told it where, through Ray while the channel cannot be
reached (1 s, then twice as long each time, up to a minute), and back to asking the leader's actor
after a channel call failed midway. The leader's actor is a stand-in, its channel a real one on
127.0.0.1; no Ray runs."""
from __future__ import annotations

import asyncio
import socket
import types

import pytest

import actors.replica_fetcher as fetcher_module
from actors.broker_channel import ChannelError, ChannelServer
from actors.core.messages.fetch import FetchPartition, FetchRequest, FetchTopic
from actors.fault_network import FaultNetwork, NetworkRules
from actors.replica_fetcher import CHANNEL_RETRY_S, FETCH_CHANNEL_RETRY_MAX_S, ReplicaFetcherActor

FETCH = FetchRequest(max_wait_ms=0, min_bytes=1, max_bytes=1 << 20, replica_id=1, topics=(
    FetchTopic(topic="t", partitions=(FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=1 << 20),)),))


class Remote:
    """An actor method's stand-in: ``remote(...)`` gives an awaitable, as a Ray call does."""

    def __init__(self, answer) -> None:
        self._answer = answer

    def remote(self, *args):
        async def call():
            return await self._answer(*args)
        return call()


class Leader:
    """The leader broker's actor: tells its fetch channel's address, and answers Fetches through Ray."""

    def __init__(self) -> None:
        self.address = None
        self.asked_where = 0
        self.ray_fetches = 0
        self.fetch_channel = Remote(self._where)
        self.handle = Remote(self._fetch)

    async def _where(self):
        self.asked_where += 1
        return self.address

    async def _fetch(self, request):
        self.ray_fetches += 1
        return "through Ray"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def a_fetcher(leader: Leader, clock: Clock, monkeypatch) -> ReplicaFetcherActor:
    monkeypatch.setattr(fetcher_module.ray, "get_actor", lambda name, namespace=None: leader)
    monkeypatch.setattr(fetcher_module, "time", types.SimpleNamespace(monotonic=clock))  # this module's clock only
    fetcher = ReplicaFetcherActor.__new__(ReplicaFetcherActor)
    fetcher.broker_id, fetcher.leader_id, fetcher.fetcher_id = 1, 0, 0
    fetcher._leader_actor_name, fetcher._namespace, fetcher._leader = "raykafka-broker-0", "ns", None
    fetcher._fetch_channel_enabled = True
    fetcher._leader_channel, fetcher._leader_channel_retry_at, fetcher._leader_channel_unreachable = None, 0.0, 0
    fetcher._leader_calls = {"channel": 0, "ray": 0}
    fetcher._topic_times = {}
    fetcher._network = FaultNetwork("broker-1", NetworkRules)  # no rules: every call goes through
    return fetcher


async def a_channel() -> tuple[ChannelServer, list]:
    asked = []

    async def answer(request):
        asked.append(request)
        return "over the channel"
    server = ChannelServer("broker-0-fetch", answer, (FetchRequest,))
    assert server.listen_tcp("127.0.0.1")
    asyncio.get_running_loop().create_task(server.serve())
    return server, asked


def a_closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_fetches_go_over_the_channel_the_leader_names_asked_for_once(monkeypatch):
    async def run():
        leader, clock = Leader(), Clock()
        server, asked = await a_channel()
        leader.address = (server.address, server.secret)
        fetcher = a_fetcher(leader, clock, monkeypatch)
        answers = [await fetcher._send("leader", FETCH, 5.0) for _ in range(3)]
        server.close()
        return leader, fetcher, answers, asked
    leader, fetcher, answers, asked = asyncio.run(run())
    assert answers == ["over the channel"] * 3 and asked == [FETCH] * 3
    assert leader.asked_where == 1 and leader.ray_fetches == 0
    assert fetcher._leader_calls == {"channel": 3, "ray": 0}


def test_a_channel_out_of_reach_sends_fetches_through_ray_and_is_tried_again_later_and_later(monkeypatch):
    async def run():
        leader, clock = Leader(), Clock()
        leader.address = (("tcp", "127.0.0.1", a_closed_port()), b"s" * 32)
        fetcher = a_fetcher(leader, clock, monkeypatch)
        seen = []
        for step_s in (0.0, 0.5, CHANNEL_RETRY_S, 2 * CHANNEL_RETRY_S, 4 * CHANNEL_RETRY_S):
            clock.now += step_s
            seen.append((await fetcher._send("leader", FETCH, 5.0), leader.asked_where,
                         round(fetcher._leader_channel_retry_at - clock.now, 3)))
        # Then the leader's channel comes up (a new incarnation, say): used once the wait is over.
        server, asked = await a_channel()
        leader.address = (server.address, server.secret)
        clock.now += FETCH_CHANNEL_RETRY_MAX_S
        seen.append((await fetcher._send("leader", FETCH, 5.0), leader.asked_where, fetcher._leader_channel_unreachable))
        server.close()
        return leader, fetcher, seen
    leader, fetcher, seen = asyncio.run(run())
    assert [answer for answer, _, _ in seen[:5]] == ["through Ray"] * 5
    # Asked where at once, not again within the first second, then after 1 s (retry in 2), 2 s (4), 4 s (8).
    assert [(asked, wait) for _, asked, wait in seen[:5]] == [(1, 1.0), (1, 0.5), (2, 2.0), (3, 4.0), (4, 8.0)]
    assert seen[5] == ("over the channel", 5, 0)
    assert leader.ray_fetches == 5 and fetcher._leader_calls == {"channel": 1, "ray": 5}


def test_the_wait_stops_growing_at_a_minute(monkeypatch):
    async def run():
        leader, clock = Leader(), Clock()
        leader.address = (("tcp", "127.0.0.1", a_closed_port()), b"s" * 32)
        fetcher = a_fetcher(leader, clock, monkeypatch)
        waits = []
        for _ in range(9):
            await fetcher._send("leader", FETCH, 5.0)
            waits.append(round(fetcher._leader_channel_retry_at - clock.now, 3))
            clock.now = fetcher._leader_channel_retry_at
        return waits
    assert asyncio.run(run()) == [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 60.0, 60.0, 60.0]


def test_a_channel_that_fails_midway_fails_that_fetch_and_the_next_asks_the_leader_again(monkeypatch):
    async def run():
        leader, clock = Leader(), Clock()
        release = asyncio.Event()

        async def dies_midway(request):
            await release.wait()
            return "never sent"
        server = ChannelServer("broker-0-fetch", dies_midway, (FetchRequest,))
        assert server.listen_tcp("127.0.0.1")
        asyncio.get_running_loop().create_task(server.serve())
        leader.address = (server.address, server.secret)
        fetcher = a_fetcher(leader, clock, monkeypatch)
        pending = asyncio.get_running_loop().create_task(fetcher._send("leader", FETCH, 5.0))
        await asyncio.sleep(0.2)
        server.close()  # the leader goes away with the Fetch unanswered
        with pytest.raises(ChannelError):
            await asyncio.wait_for(pending, 5)
        after_failure = (fetcher._leader_channel, fetcher._leader, leader.asked_where)
        replacement, asked = await a_channel()  # the leader started again: a new channel
        leader.address = (replacement.address, replacement.secret)
        answer = await fetcher._send("leader", FETCH, 5.0)
        replacement.close()
        return leader, fetcher, after_failure, answer
    leader, fetcher, after_failure, answer = asyncio.run(run())
    assert after_failure == (None, None, 1), "the failed channel and the leader's handle are dropped"
    assert answer == "over the channel" and leader.asked_where == 2 and leader.ray_fetches == 0


def test_a_leader_without_a_fetch_channel_gets_fetches_through_ray_and_is_asked_again_after_a_minute(monkeypatch):
    async def run():
        leader, clock = Leader(), Clock()  # address None: its channel is off
        fetcher = a_fetcher(leader, clock, monkeypatch)
        answers = [await fetcher._send("leader", FETCH, 5.0) for _ in range(3)]
        asked_within = leader.asked_where
        clock.now += FETCH_CHANNEL_RETRY_MAX_S
        answers.append(await fetcher._send("leader", FETCH, 5.0))
        return leader, answers, asked_within
    leader, answers, asked_within = asyncio.run(run())
    assert answers == ["through Ray"] * 4 and asked_within == 1 and leader.asked_where == 2
