"""The Kafka listener's data path, without Ray: a Fetch response's records reach the socket as the
log stored them (no copy into a joined frame), the socket writer sends a frame given in pieces
whole and in order even when the socket takes it a little at a time, translating a response of
many partitions does no type reflection per partition, and a started listener has the codecs of
the versions stock clients use loaded before the first request arrives."""
from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
import threading
import typing

import pytest

from actors.core.messages.fetch import FetchableTopicResponse, FetchPartitionData, FetchResponse
from actors.core.messages.produce import PartitionProduceResponse, ProduceResponse, TopicProduceResponse
from actors.wire.apis import CODECS
from actors.wire.frames import encode_response
from tests.unit.test_wire_frames import read_response

STORED = bytes(range(256)) * 512  # 128 KiB of "log segment"


def fetch_response(partitions: int, records) -> FetchResponse:
    return FetchResponse(responses=(FetchableTopicResponse(topic="t", partitions=tuple(FetchPartitionData(
        partition_index=index, high_watermark=9, last_stable_offset=9, log_start_offset=0, records=records)
        for index in range(partitions))),))


@pytest.mark.parametrize("version", [4, 11])
def test_fetch_records_go_into_the_response_frame_as_stored_not_copied(version):
    from actors.wire.frames import encode_response_segments
    view = memoryview(STORED)[100:100_000]
    segments = encode_response_segments(9, CODECS[1].to_kio(fetch_response(1, view), version, None))
    assert any(isinstance(segment, memoryview) and segment.obj is STORED for segment in segments), \
        [type(segment).__name__ for segment in segments]
    correlation_id, body = read_response(1, version, b"".join(segments))
    assert correlation_id == 9
    assert bytes(body.responses[0].partitions[0].records) == bytes(view)


def test_the_frame_in_pieces_is_the_frame_joined():
    from actors.wire.frames import encode_response_segments
    response = CODECS[1].to_kio(fetch_response(3, memoryview(STORED)[:70_000]), 11, None)
    assert b"".join(encode_response_segments(5, response)) == encode_response(5, response)


def test_a_response_of_many_partitions_converts_without_type_reflection_per_partition(monkeypatch):
    fetch = fetch_response(64, memoryview(STORED)[:1000])
    produce = ProduceResponse(responses=(TopicProduceResponse(name="t", partition_responses=tuple(
        PartitionProduceResponse(index=index, base_offset=index) for index in range(64))),))
    CODECS[1].to_kio(fetch, 11, None)  # the first conversion of a type may read its hints
    CODECS[0].to_kio(produce, 8, None)
    calls = []
    real_get_args = typing.get_args
    monkeypatch.setattr(typing, "get_args", lambda hint: calls.append(hint) or real_get_args(hint))
    CODECS[1].to_kio(fetch, 11, None)
    CODECS[0].to_kio(produce, 8, None)
    assert calls == []


def _receive_all(sock: socket.socket, expected: int, received: bytearray) -> None:
    while len(received) < expected:
        chunk = sock.recv(65536)
        if not chunk:
            return
        received.extend(chunk)


def test_a_frame_in_pieces_is_sent_whole_and_in_order_through_a_small_socket_buffer():
    from actors.wire.sockets import send_segments
    pieces = [b"head", memoryview(STORED)[3:120_000], bytearray(b"x" * 5000), memoryview(STORED), b"", b"tail"]
    expected = b"".join(bytes(piece) for piece in pieces) * 4
    sender, receiver = socket.socketpair()
    sender.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
    sender.setblocking(False)
    received = bytearray()
    reader = threading.Thread(target=_receive_all, args=(receiver, len(expected), received), daemon=True)
    reader.start()

    async def send() -> None:
        loop = asyncio.get_running_loop()
        for _ in range(4):
            await send_segments(loop, sender, list(pieces))
    try:
        asyncio.run(asyncio.wait_for(send(), timeout=60))
        reader.join(timeout=60)
        assert not reader.is_alive(), f"the reader got {len(received)} of {len(expected)} bytes"
        assert bytes(received) == expected
    finally:
        sender.close()
        receiver.close()


def test_a_started_listener_has_the_codecs_clients_use_loaded_before_a_request_arrives(tmp_path):
    # A fresh interpreter: the codecs must be loaded by the listener, not by an earlier test.
    program = f"""
import asyncio, sys
from actors.kafka_listener import KafkaListener
listener = KafkaListener(broker=None, broker_id=1, namespace="n", config={{}}, log_dir={str(tmp_path)!r},
                         coordinator_actor_name="c")
listener.bind()
async def main():
    await listener.start()
    await listener.close()
asyncio.run(main())
from actors.wire.versions import SUPPORTED_VERSIONS
top = {{name: SUPPORTED_VERSIONS[key][1] for name, key in (("fetch", 1), ("produce", 0), ("metadata", 3))}}
wanted = [f"kio.schema.{{name}}.v{{top[name]}}.{{kind}}" for name in top for kind in ("request", "response")]
missing = [name for name in wanted if name not in sys.modules]
assert not missing, missing
"""
    finished = subprocess.run([sys.executable, "-c", program], check=False, capture_output=True, text=True, timeout=120)
    assert finished.returncode == 0, finished.stderr[-2000:]
