"""A broker's local channel: its replica fetchers' calls to it over a Unix socket, beside Ray.

A follower's replication round is two calls its fetcher makes, a Fetch to the leader and a
FollowerAppend (or a truncation) to its own broker. The second never leaves the node: a fetcher
runs on its broker's node and dies with it (actors/broker.py). As a Ray actor call it cost about
1 ms and 1 ms of CPU on a 2-core machine; over this channel, a tenth of that
(benchmarks/replication_round.py: a bare round of 64 KiB took 2.19 ms with both legs Ray calls and
1.11 ms with this leg over the channel; from 1 MiB up the copy through the socket costs more than
Ray's shared memory). So a fetcher sends its broker the requests whose records travel inline (no
``SharedRecords``: actors/shared_records.py) this way, and the rest as Ray calls, as before. The
messages are the same dataclasses; only their carrier differs.

The broker listens on an abstract Unix socket (Linux: no file to clean up; it goes with the
process) whose name and a random secret it hands each fetcher it starts. A connection's first
frame must be that secret, compared before anything else is read: nothing is unpickled from a peer
that has not shown it. Then each frame is a 4-byte big-endian length and a pickle of (call number,
request); the answer is a frame of (call number, ("ok", response)) or (call number, ("error",
text)) when the broker's handling raised. A request of a kind the channel does not carry, a frame
over ``FRAME_BYTES_MAX`` or one that does not unpickle ends that connection (logged), never the
broker. The client keeps one call out at a time, as a fetcher does; a call cancelled or failed
closes the connection (its answer may still come), and the next call connects again. Any failure
reaches the fetcher as an exception, as a failed Ray call does (the messenger answers the core
``PEER_UNREACHABLE``, and the fetcher backs off and asks again).

No Ray here: the shells wire it (actors/broker.py, actors/replica_fetcher.py).
"""
from __future__ import annotations

import asyncio
import hmac
import os
import pickle
import socket
import struct
import sys
from collections.abc import Awaitable, Callable
from typing import Any

from loguru import logger

HEADER = struct.Struct(">I")
SECRET_BYTES = 32
FRAME_BYTES_MAX = 64 * 1024 * 1024
CONNECT_TIMEOUT_S = 5.0


class LocalChannelError(ConnectionError):
    """The local channel could not carry a call, or the broker's handling of it raised."""


class LocalChannelUnavailable(LocalChannelError):
    """No connection could be made: the request was not sent (its caller may send it another way)."""


def _frame(payload: bytes) -> bytes:
    return HEADER.pack(len(payload)) + payload


async def _read_frame(reader: asyncio.StreamReader) -> bytes:
    (length,) = HEADER.unpack(await reader.readexactly(HEADER.size))
    if length > FRAME_BYTES_MAX:
        raise LocalChannelError(f"a frame of {length:,} bytes, over the {FRAME_BYTES_MAX:,} allowed")
    return await reader.readexactly(length)


async def _read_secret(reader: asyncio.StreamReader) -> bytes | None:
    """A connection's first frame, read only if it is a secret's length (None otherwise)."""
    (length,) = HEADER.unpack(await reader.readexactly(HEADER.size))
    return await reader.readexactly(length) if length == SECRET_BYTES else None


class LocalChannelServer:
    """The broker's side: ``handle(request)`` answers each request of the ``carries`` kinds."""

    def __init__(self, name: str, handle: Callable[[Any], Awaitable[Any]], carries: tuple[type, ...]) -> None:
        self._handle = handle
        self._carries = carries
        self.secret = os.urandom(SECRET_BYTES)
        self.address: str | None = None  # the socket's name, once listening
        self._name = name
        self._listener: socket.socket | None = None
        self._server: asyncio.AbstractServer | None = None
        self._connections: set[asyncio.Task] = set()

    def listen(self) -> bool:
        """Bind and listen now (connections wait until ``serve`` accepts them); False, and no
        channel (the fetchers keep to Ray), where the platform has no abstract Unix sockets or the
        socket cannot be made."""
        if not sys.platform.startswith("linux"):
            return False
        address = f"\0raykafka-{self._name}-{os.getpid()}-{os.urandom(8).hex()}"
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            listener.bind(address)
            listener.listen(64)
        except OSError as exc:
            listener.close()
            logger.warning("local channel {}: not listening ({!r}); its fetchers call through Ray", self._name, exc)
            return False
        self._listener, self.address = listener, address
        return True

    async def serve(self) -> None:
        """Accept and serve connections until ``close``."""
        if self.address is not None and self._server is None:
            self._server = await asyncio.start_unix_server(self._serve, sock=self._listener)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        self._connections.add(task)
        try:
            shown = await asyncio.wait_for(_read_secret(reader), CONNECT_TIMEOUT_S)
            if shown is None or not hmac.compare_digest(shown, self.secret):
                logger.warning("local channel {}: a connection without the secret, closed", self._name)
                return
            while True:
                call, request = pickle.loads(await _read_frame(reader))
                if not isinstance(request, self._carries):
                    logger.warning("local channel {}: a {} it does not carry, connection closed", self._name,
                                   type(request).__name__)
                    return
                try:
                    answer = ("ok", await self._handle(request))
                except Exception as exc:  # the broker's own failure: the caller sees it, the channel stays
                    answer = ("error", f"{type(exc).__name__}: {exc}")
                writer.write(_frame(pickle.dumps((call, answer), protocol=pickle.HIGHEST_PROTOCOL)))
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionResetError, BrokenPipeError, asyncio.TimeoutError):
            return  # the fetcher went away (or never said the secret): nothing to answer
        except Exception as exc:  # a frame that does not unpickle, or one too big
            logger.warning("local channel {}: connection closed on a bad frame: {!r}", self._name, exc)
        finally:
            self._connections.discard(task)
            writer.close()

    def close(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None
        elif self._listener is not None:
            self._listener.close()
        self._listener, self.address = None, None
        for task in list(self._connections):
            task.cancel()


class LocalChannelClient:
    """The fetcher's side: ``await call(request)`` sends one request and returns its answer."""

    def __init__(self, address: str, secret: bytes) -> None:
        self._address, self._secret = address, secret
        self._streams: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
        self._lock = asyncio.Lock()
        self._calls = 0

    async def call(self, request: Any) -> Any:
        async with self._lock:
            if self._streams is None:
                try:
                    reader, writer = await asyncio.wait_for(asyncio.open_unix_connection(self._address),
                                                            CONNECT_TIMEOUT_S)
                except (OSError, asyncio.TimeoutError) as exc:
                    raise LocalChannelUnavailable(f"no connection to the local channel: {exc!r}") from exc
                writer.write(_frame(self._secret))
                self._streams = reader, writer
            try:
                reader, writer = self._streams
                self._calls += 1
                writer.write(_frame(pickle.dumps((self._calls, request), protocol=pickle.HIGHEST_PROTOCOL)))
                await writer.drain()
                call, (outcome, answer) = pickle.loads(await _read_frame(reader))
            except BaseException as exc:  # cancelled, timed out, refused, reset: this connection is done
                self.close()
                if isinstance(exc, (OSError, asyncio.IncompleteReadError, asyncio.TimeoutError, pickle.PickleError)):
                    raise LocalChannelError(f"local channel call failed: {exc!r}") from exc
                raise
            if call != self._calls:
                self.close()
                raise LocalChannelError(f"answer {call} to call {self._calls}: the channel lost its place")
            if outcome != "ok":
                raise LocalChannelError(f"the broker failed the request: {answer}")
            return answer

    def close(self) -> None:
        if self._streams is not None:
            self._streams[1].close()
            self._streams = None
