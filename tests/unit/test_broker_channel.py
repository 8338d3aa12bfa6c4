"""A broker's channels to the replica fetchers (actors/broker_channel.py): calls go and come back in
order over a Unix socket and over TCP, records travel out of band and arrive as arrays, the
broker's own failure reaches the caller, and nothing a peer sends without proving the secret, or
badly, is unpickled or ends the server; nor does a client unpickle from a server without it."""
from __future__ import annotations

import asyncio
import hashlib
import hmac
import os
import pickle
import socket
import struct

import numpy as np
import pytest

from actors.broker_channel import (
    BUFFERS_MAX, FRAME_BYTES_MAX, HEADER, HELLO, NONCE_BYTES, ChannelClient, ChannelError, ChannelServer,
    ChannelUnavailable, send_message,
)
from actors.core.errors import ErrorCode
from actors.core.fetcher.follower_messages import (
    FollowerAppendPartition, FollowerAppendRequest, FollowerTruncatePartition, FollowerTruncateRequest, TruncationMode,
)
from actors.core.messages.fetch import (
    FetchableTopicResponse, FetchPartition, FetchPartitionData, FetchRequest, FetchResponse, FetchTopic,
)

pytestmark = pytest.mark.skipif(not hasattr(socket, "AF_UNIX"), reason="needs Unix sockets")
KINDS = ("unix", "tcp")


def append(records, offset: int = 0) -> FollowerAppendRequest:
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


def listen(server: ChannelServer, kind: str) -> None:
    assert server.listen_unix() if kind == "unix" else server.listen_tcp("127.0.0.1")
    asyncio.get_running_loop().create_task(server.serve())


async def started(broker: Broker, kind: str = "unix", carries=(FollowerAppendRequest, FollowerTruncateRequest)):
    server = ChannelServer("broker-1", broker.handle, carries)
    listen(server, kind)
    return server


async def raw_connection(address):
    if address[0] == "unix":
        return await asyncio.open_unix_connection(address[1])
    return await asyncio.open_connection(address[1], address[2])


async def proven(server: ChannelServer, secret: bytes | None = None):
    """A raw connection that went through the handshake (with ``secret``, the server's by default)."""
    secret = server.secret if secret is None else secret
    reader, writer = await raw_connection(server.address)
    nonce = os.urandom(NONCE_BYTES)
    writer.write(HELLO + nonce)
    reply = await reader.readexactly(NONCE_BYTES + 32)
    writer.write(hmac.new(secret, b"client" + nonce + reply[:NONCE_BYTES], hashlib.sha256).digest())
    await writer.drain()
    return reader, writer


async def until_closed(reader) -> bytes:
    """What the server sent before it closed the connection (a reset counts as closed: it went
    away with our bytes unread)."""
    try:
        return await asyncio.wait_for(reader.read(), 5)
    except ConnectionResetError:
        return b""


def unframed(payload: bytes) -> bytes:
    """``payload`` as a message frame without out-of-band buffers."""
    return HEADER.pack(len(payload), 0) + payload


@pytest.mark.parametrize("kind", KINDS)
def test_calls_carry_the_same_messages_and_their_answers_in_order(kind):
    async def run():
        broker = Broker()
        server = await started(broker, kind)
        client = ChannelClient(server.address, server.secret)
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


@pytest.mark.parametrize("kind", KINDS)
def test_records_as_arrays_travel_out_of_band_and_arrive_whole_as_arrays(kind):
    """A follower's Fetch answer over TCP: each large payload is a uint8 array, sent after the
    pickle, received into memory of its own; small ones stay bytes inside the pickle."""
    big = np.frombuffer(os.urandom(3 * 1024 * 1024 + 7), dtype=np.uint8)
    answer = FetchResponse(responses=(FetchableTopicResponse(topic="t", partitions=(
        FetchPartitionData(partition_index=0, high_watermark=9, records=big),
        FetchPartitionData(partition_index=1, error_code=ErrorCode.NOT_LEADER_OR_FOLLOWER, records=b""),
        FetchPartitionData(partition_index=2, high_watermark=4, records=b"small batch"))),), session_id=7)

    async def run():
        asked = []

        async def leader(request):
            asked.append(request)
            return answer
        server = ChannelServer("broker-2-fetch", leader, (FetchRequest,))
        listen(server, kind)
        client = ChannelClient(server.address, server.secret)
        request = FetchRequest(max_wait_ms=500, min_bytes=1, max_bytes=10 << 20, replica_id=3, topics=(
            FetchTopic(topic="t", partitions=(FetchPartition(partition=0, fetch_offset=5, partition_max_bytes=1 << 20),)),))
        got = await client.call(request)
        again = await client.call(request)
        server.close()
        return request, asked, got, again
    request, asked, got, again = asyncio.run(run())
    assert asked == [request, request]
    partitions = got.responses[0].partitions
    assert isinstance(partitions[0].records, np.ndarray) and partitions[0].records.dtype == np.uint8
    assert bytes(partitions[0].records) == bytes(big), "every byte of the records arrives"
    assert partitions[1].records == b"" and partitions[1].error_code is ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert partitions[2].records == b"small batch" and got.session_id == 7
    assert bytes(again.responses[0].partitions[0].records) == bytes(big)


def test_the_brokers_own_failure_reaches_the_caller_and_the_channel_carries_on():
    async def run():
        broker = Broker()
        server = await started(broker)
        client = ChannelClient(server.address, server.secret)
        broker.fail_next = True
        with pytest.raises(ChannelError, match="broker 1 is shut down"):
            await client.call(append(b"a"))
        after = await client.call(append(b"bb"))
        server.close()
        return after
    assert asyncio.run(run()) == ("appended", 2)


@pytest.mark.parametrize("kind", KINDS)
def test_no_listener_is_unavailable_so_the_caller_may_send_another_way(kind):
    async def run():
        server = await started(Broker(), kind)
        address, secret = server.address, server.secret
        server.close()
        await asyncio.sleep(0.05)
        with pytest.raises(ChannelUnavailable):
            await ChannelClient(address, secret).call(append(b"a"))
    asyncio.run(run())


class Boom:
    def __reduce__(self):
        return (exec, ("raise SystemExit('unpickled')",))


@pytest.mark.parametrize("kind", KINDS)
def test_a_peer_without_the_secret_gets_nothing_unpickled_and_the_server_serves_on(kind):
    async def run():
        broker = Broker()
        server = await started(broker, kind)
        reader, writer = await proven(server, secret=b"\0" * 32)  # a wrong proof
        writer.write(unframed(pickle.dumps((1, Boom()))))
        await writer.drain()
        closed = await until_closed(reader)  # the server closes it: end of stream
        reader, writer = await raw_connection(server.address)  # not this protocol: closed unread
        writer.write(b"GET / HTTP/1.0\r\n\r\n" + unframed(pickle.dumps((1, Boom()))))
        await writer.drain()
        closed += await until_closed(reader)
        answer = await ChannelClient(server.address, server.secret).call(append(b"ok"))
        server.close()
        return broker, closed, answer
    broker, closed, answer = asyncio.run(run())
    assert closed == b"" and answer == ("appended", 2) and len(broker.asked) == 1


def test_a_client_does_not_unpickle_from_a_server_that_cannot_prove_the_secret():
    """A process that took over a dead leader's port: the fetcher sends it nothing and reads
    nothing from it, and the call is unavailable (the fetcher may use Ray)."""
    async def run():
        impostor = socket.socket()
        impostor.bind(("127.0.0.1", 0))
        impostor.listen(1)
        impostor.setblocking(False)
        loop = asyncio.get_running_loop()
        heard = []

        async def pretend():
            sock, _ = await loop.sock_accept(impostor)
            heard.append(await loop.sock_recv(sock, 100))
            await loop.sock_sendall(sock, os.urandom(NONCE_BYTES + 32))  # a guessed proof
            await send_message(loop, sock, (1, ("ok", Boom())))
            try:
                heard.append(await loop.sock_recv(sock, 100))
            except ConnectionResetError:  # the client went away with the impostor's bytes unread
                heard.append(b"")
            sock.close()
        task = loop.create_task(pretend())
        with pytest.raises(ChannelUnavailable, match="does not know its secret"):
            await ChannelClient(("tcp", "127.0.0.1", impostor.getsockname()[1]), os.urandom(32)).call(append(b"a"))
        await asyncio.wait_for(task, 5)
        impostor.close()
        return heard
    heard = asyncio.run(run())
    assert heard[0].startswith(HELLO) and heard[1] == b"", "only the hello went out; no request"


def test_a_bad_frame_or_a_request_it_does_not_carry_closes_that_connection_only():
    async def run():
        broker = Broker()
        server = await started(broker)
        outcomes = []
        for frame in (unframed(b"not a pickle"), unframed(pickle.dumps((1, "a string, not a request"))),
                      unframed(pickle.dumps("no call number")),
                      HEADER.pack(8, 0) + b"short",  # then the peer stops writing: closed when it goes
                      HEADER.pack(0, BUFFERS_MAX + 1),  # too many buffers: refused unread
                      HEADER.pack(16, 1) + struct.pack(">Q", FRAME_BYTES_MAX)):  # too large: refused unread
            reader, writer = await proven(server)
            writer.write(frame)
            await writer.drain()
            if frame.endswith(b"short"):
                writer.write_eof()
            outcomes.append(await until_closed(reader))
        answer = await ChannelClient(server.address, server.secret).call(append(b"abc"))
        server.close()
        return broker, outcomes, answer
    broker, outcomes, answer = asyncio.run(run())
    assert outcomes == [b""] * 6 and answer == ("appended", 3) and len(broker.asked) == 1


def test_a_call_cancelled_midway_drops_its_connection_and_the_next_call_connects_again():
    async def run():
        broker = Broker()
        release = asyncio.Event()

        async def slow(request):
            broker.asked.append(request)
            if len(broker.asked) == 1:
                await release.wait()
            return len(broker.asked)
        server = ChannelServer("broker-1", slow, (FollowerAppendRequest,))
        listen(server, "tcp")
        client = ChannelClient(server.address, server.secret)
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
    assert _inline(append(np.zeros(600_000, dtype=np.uint8))), "records fetched over TCP are arrays of their own"
    assert not _inline(shared), "one partition's records in shared memory: the whole append goes through Ray"
    assert not _inline("something else")


def test_the_fetch_channel_listens_on_loopback_for_one_host_and_on_the_nodes_address_otherwise():
    from actors.kafka_listener import KafkaListener

    def host(listeners: str) -> str:
        listener = KafkaListener.__new__(KafkaListener)
        listener._config, listener._node_ip = {"listeners": listeners, "listener.security.protocol.map":
                                               "PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT"}, "198.18.0.7"
        return listener.replication_host()
    assert host("PLAINTEXT://127.0.0.1:0") == "127.0.0.1"
    assert host("PLAINTEXT://localhost:9092,INTERNAL://127.0.0.2:0") == "127.0.0.1"
    assert host("PLAINTEXT://198.18.0.7:9092") == "198.18.0.7"
    assert host("PLAINTEXT://127.0.0.1:0,EXTERNAL://:9093") == "198.18.0.7", "one listener on every interface"
