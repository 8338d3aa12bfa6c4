"""A Kafka listener's connection without Ray: answers to requests a client sent back to back are
written together, in order, once no further request is there to read; a request that may wait (an
acks=all produce) has the answers before it written first; a frame that closes the connection has
the answers before it written first. A real socket pair and the listener's serving loop over a
stand-in broker whose acks=all answers wait for the test."""
from __future__ import annotations

import asyncio
import socket
import struct

from actors.core.messages.produce import PartitionProduceResponse, ProduceResponse, TopicProduceResponse
from actors import kafka_listener
from actors.kafka_listener import KafkaListener
from actors.wire import sockets
from tests.unit.test_wire_frames import read_response, request_frame
from tests.unit.test_wire_produce_codec import produce_body

WAIT_S = 10.0


class StandInBroker:
    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.parked = asyncio.Event()

    async def handle(self, request):  # the broker actor's one entry point; only Produce comes here
        if request.acks == -1:
            self.parked.set()
            await asyncio.wait_for(self.release.wait(), WAIT_S)
        return ProduceResponse(responses=tuple(TopicProduceResponse(name=t.name, partition_responses=tuple(
            PartitionProduceResponse(index=p.index, base_offset=0) for p in t.partition_data))
            for t in request.topic_data))


def framed(correlation_id: int, acks: int = 1) -> bytes:
    frame = request_frame(0, 8, produce_body(8, acks=acks), correlation_id=correlation_id)
    return struct.pack(">i", len(frame)) + frame


async def read_answers(loop, client: socket.socket, count: int) -> list[int]:
    """The correlation ids of the next ``count`` responses, each within WAIT_S."""
    ids = []
    for _ in range(count):
        prefix = await asyncio.wait_for(loop.sock_recv(client, 4), WAIT_S)
        (size,) = struct.unpack(">i", prefix)
        body = b""
        while len(body) < size:
            body += await asyncio.wait_for(loop.sock_recv(client, size - len(body)), WAIT_S)
        ids.append(read_response(0, 8, prefix + body)[0])
    return ids


def serving(broker) -> tuple[KafkaListener, socket.socket, socket.socket]:
    listener = KafkaListener(broker=broker, broker_id=0, namespace="test", config={}, log_dir="/nonexistent",
                             coordinator_actor_name="none")
    server, client = socket.socketpair()
    server.setblocking(False)
    client.setblocking(False)
    return listener, server, client


async def back_to_back_story(writes: list) -> tuple[list[int], int]:
    loop = asyncio.get_running_loop()
    listener, server, client = serving(StandInBroker())
    client.sendall(b"".join(framed(i) for i in (1, 2, 3)))  # all there before the listener reads
    task = loop.create_task(listener._serve(server, ("127.0.0.1", 1), "PLAINTEXT"))
    try:
        first = await read_answers(loop, client, 3)
        written = len(writes)
        client.sendall(framed(4))
        return first + await read_answers(loop, client, 1), written
    finally:
        task.cancel()
        client.close()


def test_answers_to_requests_sent_back_to_back_are_written_together_in_order(monkeypatch):
    writes = []
    real = sockets.send_segments

    async def counting(loop, sock, segments):
        writes.append(len(segments))
        await real(loop, sock, segments)
    monkeypatch.setattr(sockets, "send_segments", counting)
    monkeypatch.setattr(kafka_listener, "send_segments", counting, raising=False)  # wherever it is called from
    answered, writes_for_three = asyncio.run(back_to_back_story(writes))
    assert answered == [1, 2, 3, 4]
    assert writes_for_three == 1, f"three answers took {writes_for_three} writes"


async def waiting_request_story() -> list[int]:
    loop = asyncio.get_running_loop()
    broker = StandInBroker()
    listener, server, client = serving(broker)
    client.sendall(framed(1) + framed(2, acks=-1) + framed(3))
    task = loop.create_task(listener._serve(server, ("127.0.0.1", 1), "PLAINTEXT"))
    try:
        await asyncio.wait_for(broker.parked.wait(), WAIT_S)
        before_release = await read_answers(loop, client, 1)  # answer 1 goes out while 2 waits
        assert not broker.release.is_set()
        broker.release.set()
        return before_release + await read_answers(loop, client, 2)
    finally:
        task.cancel()
        client.close()


def test_a_request_that_may_wait_has_the_answers_before_it_written_first():
    assert asyncio.run(waiting_request_story()) == [1, 2, 3]


async def closing_story() -> tuple[list[int], bytes]:
    loop = asyncio.get_running_loop()
    listener, server, client = serving(StandInBroker())
    unserved = struct.pack(">hhi", 999, 0, 9) + b"\x00\x00"
    client.sendall(framed(1) + framed(2) + struct.pack(">i", len(unserved)) + unserved)
    task = loop.create_task(listener._serve(server, ("127.0.0.1", 1), "PLAINTEXT"))
    try:
        answered = await read_answers(loop, client, 2)
        rest = await asyncio.wait_for(loop.sock_recv(client, 100), WAIT_S)
        return answered, rest
    finally:
        task.cancel()
        client.close()


class CountingBroker(StandInBroker):
    def __init__(self) -> None:
        super().__init__()
        self.seen: list[int] = []  # the acks of each request handed to the broker, in order

    async def handle(self, request):
        self.seen.append(request.acks)
        return await super().handle(request)


async def pipelined_story() -> tuple[list[int], list[int]]:
    loop = asyncio.get_running_loop()
    broker = CountingBroker()
    listener, server, client = serving(broker)
    client.sendall(framed(1, acks=-1) + framed(2, acks=-1) + framed(3, acks=-1) + framed(4, acks=1))
    task = loop.create_task(listener._serve(server, ("127.0.0.1", 1), "PLAINTEXT"))
    try:
        deadline = loop.time() + WAIT_S
        while len(broker.seen) < 3:  # the three acks=all produces are out at once
            assert loop.time() < deadline, f"only {broker.seen} handed to the broker"
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.1)
        seen_before_release = list(broker.seen)  # the acks=1 one waits for the produces before it
        broker.release.set()
        return seen_before_release, await read_answers(loop, client, 4)
    finally:
        task.cancel()
        client.close()


def test_acks_all_produces_in_a_row_are_out_at_once_and_answered_in_order():
    seen_before_release, answered = asyncio.run(pipelined_story())
    assert seen_before_release == [-1, -1, -1]
    assert answered == [1, 2, 3, 4]


def test_a_frame_that_closes_the_connection_has_the_answers_before_it_written_first():
    answered, rest = asyncio.run(closing_story())
    assert answered == [1, 2] and rest == b"", (answered, rest)
