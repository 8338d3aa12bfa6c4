"""The local channel between a broker and its replica fetchers (actors/local_channel.py): calls go
and come back in order, the broker's own failure reaches the caller, and nothing a peer sends
without the secret, or badly, is unpickled or ends the server."""
from __future__ import annotations

import asyncio
import pickle
import socket
import struct

import pytest

from actors.core.fetcher.follower_messages import (
    FollowerAppendPartition, FollowerAppendRequest, FollowerTruncatePartition, FollowerTruncateRequest, TruncationMode,
)
from actors.local_channel import (
    FRAME_BYTES_MAX, LocalChannelClient, LocalChannelError, LocalChannelServer, LocalChannelUnavailable,
)

pytestmark = pytest.mark.skipif(not hasattr(socket, "AF_UNIX"), reason="needs Unix sockets")


def append(records: bytes, offset: int = 0) -> FollowerAppendRequest:
    return FollowerAppendRequest(partitions=(FollowerAppendPartition(
        topic="t", partition=0, current_leader_epoch=1, fetch_offset=offset, records=records,
        leader_high_watermark=0),))


class Broker:
    """A stand-in for the broker: records what it was asked, answers with what it would append."""

    def __init__(self) -> None:
        self.asked: list = []
        self.fail_next = False

    async def handle(self, request):
        self.asked.append(request)
        if self.fail_next:
            self.fail_next = False
            raise RuntimeError("broker 1 is shut down")
        await asyncio.sleep(0)
        return ("appended", sum(len(p.records) for p in getattr(request, "partitions", ()) if hasattr(p, "records")))


async def started(broker: Broker) -> LocalChannelServer:
    server = LocalChannelServer("broker-1", broker.handle, (FollowerAppendRequest, FollowerTruncateRequest))
    assert server.listen()
    asyncio.get_running_loop().create_task(server.serve())
    return server


async def raw_connection(server: LocalChannelServer):
    return await asyncio.open_unix_connection(server.address)


def frame(payload: bytes) -> bytes:
    return struct.pack(">I", len(payload)) + payload


def test_calls_carry_the_same_messages_and_their_answers_in_order():
    async def run():
        broker = Broker()
        server = await started(broker)
        client = LocalChannelClient(server.address, server.secret)
        answers = [await client.call(append(b"x" * n, offset=n)) for n in (1, 300_000, 5)]
        truncate = FollowerTruncateRequest(partitions=(FollowerTruncatePartition(
            topic="t", partition=0, current_leader_epoch=1, mode=TruncationMode.TO_OFFSET, offset=3),))
        answers.append(await client.call(truncate))
        client.close()
        server.close()
        return broker, answers
    broker, answers = asyncio.run(run())
    assert answers == [("appended", 1), ("appended", 300_000), ("appended", 5), ("appended", 0)]
    assert [r.partitions[0].fetch_offset for r in broker.asked[:3]] == [1, 300_000, 5]
    assert broker.asked[0] == append(b"x", offset=1), "the request arrives as it was sent"


def test_the_brokers_own_failure_reaches_the_caller_and_the_channel_carries_on():
    async def run():
        broker = Broker()
        server = await started(broker)
        client = LocalChannelClient(server.address, server.secret)
        broker.fail_next = True
        with pytest.raises(LocalChannelError, match="broker 1 is shut down"):
            await client.call(append(b"a"))
        after = await client.call(append(b"bb"))
        server.close()
        return after
    assert asyncio.run(run()) == ("appended", 2)


def test_no_listener_is_unavailable_so_the_caller_may_send_another_way():
    async def run():
        server = await started(Broker())
        address, secret = server.address, server.secret
        server.close()
        await asyncio.sleep(0.05)
        with pytest.raises(LocalChannelUnavailable):
            await LocalChannelClient(address, secret).call(append(b"a"))
    asyncio.run(run())


def test_a_peer_without_the_secret_gets_nothing_unpickled_and_the_server_serves_on():
    class Boom:
        def __reduce__(self):
            return (exec, ("raise SystemExit('unpickled')",))

    async def run():
        broker = Broker()
        server = await started(broker)
        reader, writer = await raw_connection(server)
        writer.write(frame(b"\0" * 32) + frame(pickle.dumps((1, Boom()))))
        await writer.drain()
        closed = await asyncio.wait_for(reader.read(), 5)  # the server closes it: end of stream
        reader, writer = await raw_connection(server)  # a first frame of any other length is not read
        writer.write(struct.pack(">I", FRAME_BYTES_MAX))
        await writer.drain()
        closed += await asyncio.wait_for(reader.read(), 5)
        answer = await LocalChannelClient(server.address, server.secret).call(append(b"ok"))
        server.close()
        return broker, closed, answer
    broker, closed, answer = asyncio.run(run())
    assert closed == b"" and answer == ("appended", 2) and len(broker.asked) == 1


def test_a_bad_frame_or_a_request_it_does_not_carry_closes_that_connection_only():
    async def run():
        broker = Broker()
        server = await started(broker)
        outcomes = []
        for payload in (b"not a pickle", pickle.dumps((1, "a string, not a request")),
                        pickle.dumps("no call number")):
            reader, writer = await raw_connection(server)
            writer.write(frame(server.secret) + frame(payload))
            await writer.drain()
            outcomes.append(await asyncio.wait_for(reader.read(), 5))
        reader, writer = await raw_connection(server)  # a frame over the limit is refused unread
        writer.write(frame(server.secret) + struct.pack(">I", FRAME_BYTES_MAX + 1))
        await writer.drain()
        outcomes.append(await asyncio.wait_for(reader.read(), 5))
        answer = await LocalChannelClient(server.address, server.secret).call(append(b"abc"))
        server.close()
        return broker, outcomes, answer
    broker, outcomes, answer = asyncio.run(run())
    assert outcomes == [b"", b"", b"", b""] and answer == ("appended", 3) and len(broker.asked) == 1


def test_a_call_cancelled_midway_drops_its_connection_and_the_next_call_connects_again():
    async def run():
        broker = Broker()
        release = asyncio.Event()

        async def slow(request):
            broker.asked.append(request)
            if len(broker.asked) == 1:
                await release.wait()
            return len(broker.asked)
        server = LocalChannelServer("broker-1", slow, (FollowerAppendRequest,))
        assert server.listen()
        asyncio.get_running_loop().create_task(server.serve())
        client = LocalChannelClient(server.address, server.secret)
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(client.call(append(b"first")), 0.2)
        release.set()  # the first request ran; its answer goes to a closed connection
        second = await client.call(append(b"second"))
        server.close()
        return second
    assert asyncio.run(run()) == 2


def test_a_fetcher_sends_its_broker_truncations_and_inline_appends_over_the_channel_and_nothing_in_shared_memory():
    from actors.replica_fetcher import _inline
    from actors.shared_records import SharedRecords
    truncate = FollowerTruncateRequest(partitions=(FollowerTruncatePartition(
        topic="t", partition=0, current_leader_epoch=1, mode=TruncationMode.TO_OFFSET, offset=3),))
    shared = FollowerAppendRequest(partitions=(
        append(b"inline").partitions[0],
        FollowerAppendPartition(topic="t", partition=1, current_leader_epoch=1, fetch_offset=0,
                                records=SharedRecords(ref=object(), index=0, size_bytes=600_000),
                                leader_high_watermark=0)))
    assert _inline(truncate) and _inline(append(b"x" * 1000)) and _inline(append(b""))
    assert not _inline(shared), "one partition's records in shared memory: the whole append goes through Ray"
    assert not _inline("something else")
