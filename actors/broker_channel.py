"""A broker's channels: its replica fetchers' calls over a socket, beside Ray.

A follower's replication round is two calls its fetcher makes: a Fetch to the leader, and a
FollowerAppend (or a truncation) to its own broker. As Ray actor calls each cost about 1 ms and 1
ms of CPU on a 2-core machine, and a large answer one more object in shared memory, put by the
leader and mapped page by page by the follower; over a socket a call costs a seventh of that and
the records are copied twice by the kernel (benchmarks/replication_round.py). So a broker listens
on two channels, and its fetchers use them where they can, with the same message dataclasses:

- the *local* channel, an abstract Unix socket (Linux: no file to clean up; it goes with the
  process), for the appends and truncations of the fetchers it starts, which run on its node and
  die with it. A fetcher is handed its name and secret at construction.
- the *fetch* channel, a TCP socket on the host the broker's Kafka listeners use (loopback, or the
  node's address when the cluster spans hosts), for Fetches from followers anywhere: Kafka's
  followers fetch over TCP too. A fetcher asks the leader's actor for its address and secret
  through Ray, and again whenever the channel failed (the leader may be a new incarnation).

What travels: after a handshake, each message is a pickle (protocol 5) of (call number, request)
or (call number, ("ok", answer) | ("error", text)) whose buffers (records as uint8 arrays: the
broker shell's ``pack``) travel out of band, as raw bytes after it: a header of the pickle's
length and the buffers' count, each buffer's length, the pickle, the buffers, all handed to the
kernel in one ``sendmsg``. The reader receives the pickle and the buffers straight into one block
of memory of its own (no copy in user space on either side), and the arrays it unpickles are
views of it.

Trust: both ends prove they know the channel's secret (32 random bytes the broker made) without
sending it: the client sends a nonce, the server its own nonce and an HMAC of both, the client
its HMAC; each side checks the other's before it reads anything else. Nothing is unpickled from a
peer that has not proved it, and a client never unpickles from a server that has not (a process
that took over a dead leader's port). Until then only fixed-size reads happen. A request of a kind
the channel does not carry, a frame over ``FRAME_BYTES_MAX`` or one that does not unpickle ends
that connection (logged), never the broker; the broker's own exception is answered as an error,
and the channel carries on.

The client keeps one call out at a time, as a fetcher does; a call cancelled or failed closes the
connection (its answer may still come), and the next call connects again. A connection that
cannot be made raises ``ChannelUnavailable`` (nothing was sent: the caller may send it through
Ray); any other failure ``ChannelError``, which reaches the fetcher as a failed Ray call does (the
messenger answers the core ``PEER_UNREACHABLE``, and the fetcher backs off and asks again).

No Ray here: the shells wire it (actors/broker.py, actors/replica_fetcher.py).
"""
from __future__ import annotations

import asyncio
import hashlib
import hmac
import os
import pickle
import socket
import struct
import sys
from collections.abc import Awaitable, Callable
from typing import Any

from loguru import logger

HEADER = struct.Struct(">IH")  # the pickle's length, the out-of-band buffers' count
BUFFER_LENGTH = struct.Struct(">Q")
SECRET_BYTES = 32
NONCE_BYTES = 16
MAC_BYTES = hashlib.sha256().digest_size
HELLO = b"RKC1"  # a client's first bytes: this protocol, then its nonce
FRAME_BYTES_MAX = 1024 * 1024 * 1024  # a message's pickle and buffers together
BUFFERS_MAX = 4096
SENDMSG_PIECES_MAX = 512  # under the kernel's IOV_MAX (1024)
CONNECT_TIMEOUT_S = 5.0

Address = tuple  # ("unix", name) or ("tcp", host, port)


class ChannelError(ConnectionError):
    """The channel could not carry a call, or the broker's handling of it raised."""


class ChannelUnavailable(ChannelError):
    """No connection could be made: the request was not sent (its caller may send it another way)."""


def _mac(secret: bytes, side: bytes, client_nonce: bytes, server_nonce: bytes) -> bytes:
    return hmac.new(secret, side + client_nonce + server_nonce, hashlib.sha256).digest()


async def _receive_into(loop: asyncio.AbstractEventLoop, sock: socket.socket, view: memoryview) -> None:
    received = 0
    while received < len(view):
        count = await loop.sock_recv_into(sock, view[received:])
        if count == 0:
            raise asyncio.IncompleteReadError(bytes(view[:received]), len(view))
        received += count


async def _receive(loop: asyncio.AbstractEventLoop, sock: socket.socket, size: int) -> bytearray:
    data = bytearray(size)
    await _receive_into(loop, sock, memoryview(data))
    return data


async def send_message(loop: asyncio.AbstractEventLoop, sock: socket.socket, message: Any) -> None:
    """``message`` pickled, its out-of-band buffers after it (the module's docstring)."""
    buffers: list[pickle.PickleBuffer] = []
    payload = pickle.dumps(message, protocol=5, buffer_callback=buffers.append)
    raws = [buffer.raw() for buffer in buffers]
    head = HEADER.pack(len(payload), len(raws)) + b"".join(BUFFER_LENGTH.pack(len(raw)) for raw in raws)
    pieces = [memoryview(head), memoryview(payload), *raws]
    while pieces:
        chunk = pieces[:SENDMSG_PIECES_MAX]
        try:
            sent = sock.sendmsg(chunk)  # as much as the socket takes now, in one call
        except (BlockingIOError, InterruptedError):
            sent = 0
        for piece in chunk:
            if sent < len(piece):
                break
            sent -= len(piece)
            pieces.pop(0)
        else:
            continue
        if sent:  # the socket took part of this piece: the rest waits for it
            pieces[0] = pieces[0][sent:]
        await loop.sock_sendall(sock, pieces.pop(0))


async def receive_message(loop: asyncio.AbstractEventLoop, sock: socket.socket) -> Any:
    """One message ``send_message`` sent; ``ChannelError`` for a frame over the limits (unread)."""
    pickle_bytes, count = HEADER.unpack(await _receive(loop, sock, HEADER.size))
    if count > BUFFERS_MAX:
        raise ChannelError(f"a message of {count:,} buffers, over the {BUFFERS_MAX:,} allowed")
    raw_lengths = await _receive(loop, sock, count * BUFFER_LENGTH.size)
    lengths = [length for (length,) in BUFFER_LENGTH.iter_unpack(raw_lengths)]
    total = pickle_bytes + sum(lengths)
    if total > FRAME_BYTES_MAX:
        raise ChannelError(f"a message of {total:,} bytes, over the {FRAME_BYTES_MAX:,} allowed")
    block = memoryview(await _receive(loop, sock, total))
    buffers, start = [], pickle_bytes
    for length in lengths:
        buffers.append(block[start:start + length])
        start += length
    return pickle.loads(block[:pickle_bytes], buffers=buffers)


class ChannelServer:
    """The broker's side: ``handle(request)`` answers each request of the ``carries`` kinds."""

    def __init__(self, name: str, handle: Callable[[Any], Awaitable[Any]], carries: tuple[type, ...]) -> None:
        self._handle = handle
        self._carries = carries
        self.secret = os.urandom(SECRET_BYTES)
        self.address: Address | None = None  # once listening
        self._name = name
        self._listener: socket.socket | None = None
        self._accepting: asyncio.Task | None = None
        self._connections: set[asyncio.Task] = set()

    def listen_unix(self) -> bool:
        """Bind an abstract Unix socket and listen now (connections wait until ``serve`` accepts
        them); False, and no channel (the callers keep to Ray), where the platform has no abstract
        Unix sockets or the socket cannot be made."""
        if not sys.platform.startswith("linux"):
            return False
        name = f"\0raykafka-{self._name}-{os.getpid()}-{os.urandom(8).hex()}"
        return self._listen(socket.AF_UNIX, name, lambda bound: ("unix", name))

    def listen_tcp(self, host: str) -> bool:
        """Bind ``host`` on a port of the system's choosing and listen now; False, and no
        channel, where it cannot."""
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        return self._listen(family, (host, 0), lambda bound: ("tcp", host, bound[1]))

    def _listen(self, family: int, where: Any, address: Callable[[Any], Address]) -> bool:
        listener = socket.socket(family, socket.SOCK_STREAM)
        try:
            listener.bind(where)
            listener.listen(64)
            listener.setblocking(False)
        except OSError as exc:
            listener.close()
            logger.warning("channel {}: not listening ({!r}); its callers use Ray", self._name, exc)
            return False
        self._listener, self.address = listener, address(listener.getsockname())
        return True

    async def serve(self) -> None:
        """Accept and serve connections until ``close``."""
        if self._listener is None or self._accepting is not None:
            return
        self._accepting = asyncio.current_task()
        loop = asyncio.get_running_loop()
        listener = self._listener
        while self._listener is listener:
            try:
                sock, _ = await loop.sock_accept(listener)
            except OSError as exc:
                if self._listener is not listener:
                    return  # closed
                logger.warning("channel {}: accepting failed ({!r}); trying again", self._name, exc)
                await asyncio.sleep(0.1)
                continue
            sock.setblocking(False)
            if sock.family != socket.AF_UNIX:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            task = loop.create_task(self._serve(sock))
            self._connections.add(task)
            task.add_done_callback(self._connections.discard)

    async def _handshake(self, loop: asyncio.AbstractEventLoop, sock: socket.socket) -> bool:
        hello = await _receive(loop, sock, len(HELLO) + NONCE_BYTES)
        if bytes(hello[:len(HELLO)]) != HELLO:
            return False
        client_nonce, server_nonce = bytes(hello[len(HELLO):]), os.urandom(NONCE_BYTES)
        await loop.sock_sendall(sock, server_nonce + _mac(self.secret, b"server", client_nonce, server_nonce))
        proof = await _receive(loop, sock, MAC_BYTES)
        return hmac.compare_digest(bytes(proof), _mac(self.secret, b"client", client_nonce, server_nonce))

    async def _serve(self, sock: socket.socket) -> None:
        loop = asyncio.get_running_loop()
        try:
            if not await asyncio.wait_for(self._handshake(loop, sock), CONNECT_TIMEOUT_S):
                logger.warning("channel {}: a connection without the secret, closed", self._name)
                return
            while True:
                call, request = await receive_message(loop, sock)
                if not isinstance(request, self._carries):
                    logger.warning("channel {}: a {} it does not carry, connection closed", self._name,
                                   type(request).__name__)
                    return
                try:
                    answer = ("ok", await self._handle(request))
                except Exception as exc:  # the broker's own failure: the caller sees it, the channel stays
                    answer = ("error", f"{type(exc).__name__}: {exc}")
                await send_message(loop, sock, (call, answer))
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.TimeoutError) as exc:
            if isinstance(exc, ChannelError):
                logger.warning("channel {}: connection closed: {}", self._name, exc)
            return  # the fetcher went away (or never proved the secret): nothing to answer
        except Exception as exc:  # a frame that does not unpickle, or is not a (call, request)
            logger.warning("channel {}: connection closed on a bad frame: {!r}", self._name, exc)
        finally:
            sock.close()

    def close(self) -> None:
        listener, self._listener, self.address = self._listener, None, None
        if listener is not None:
            try:  # an accept under way: its descriptor leaves the event loop before it is closed
                asyncio.get_running_loop().remove_reader(listener.fileno())
            except RuntimeError:
                pass  # no loop running here
            listener.close()
        if self._accepting is not None:
            self._accepting.cancel()
            self._accepting = None
        for task in list(self._connections):
            task.cancel()


class ChannelClient:
    """The fetcher's side: ``await call(request)`` sends one request and returns its answer."""

    def __init__(self, address: Address, secret: bytes) -> None:
        self.address, self._secret = tuple(address), secret
        self._sock: socket.socket | None = None
        self._lock = asyncio.Lock()
        self._calls = 0

    async def _connect(self, loop: asyncio.AbstractEventLoop) -> socket.socket:
        kind, *where = self.address
        if kind == "unix":
            sock, target = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM), where[0]
        else:
            host, port = where
            sock, target = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET), (host, port)
        sock.setblocking(False)
        try:
            await asyncio.wait_for(loop.sock_connect(sock, target), CONNECT_TIMEOUT_S)
        except BaseException as exc:
            sock.close()
            if isinstance(exc, (OSError, asyncio.TimeoutError)):
                raise ChannelUnavailable(f"no connection to the channel at {self._shown()}: {exc!r}") from exc
            raise
        try:
            if kind != "unix":
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            client_nonce = os.urandom(NONCE_BYTES)
            await loop.sock_sendall(sock, HELLO + client_nonce)
            reply = await asyncio.wait_for(_receive(loop, sock, NONCE_BYTES + MAC_BYTES), CONNECT_TIMEOUT_S)
            server_nonce, proof = bytes(reply[:NONCE_BYTES]), bytes(reply[NONCE_BYTES:])
            if not hmac.compare_digest(proof, _mac(self._secret, b"server", client_nonce, server_nonce)):
                raise ChannelUnavailable(f"the channel at {self._shown()} does not know its secret")
            await loop.sock_sendall(sock, _mac(self._secret, b"client", client_nonce, server_nonce))
        except BaseException as exc:
            sock.close()
            if isinstance(exc, (OSError, asyncio.IncompleteReadError, asyncio.TimeoutError)):
                # Nothing of a request was sent yet: the caller may still send it another way.
                raise ChannelUnavailable(f"no handshake with the channel at {self._shown()}: {exc!r}") from exc
            raise
        return sock

    def _shown(self) -> str:
        return "an abstract Unix socket" if self.address[0] == "unix" else f"{self.address[1]}:{self.address[2]}"

    async def call(self, request: Any) -> Any:
        loop = asyncio.get_running_loop()
        async with self._lock:
            if self._sock is None:
                self._sock = await self._connect(loop)
            try:
                self._calls += 1
                await send_message(loop, self._sock, (self._calls, request))
                call, (outcome, answer) = await receive_message(loop, self._sock)
            except BaseException as exc:  # cancelled, timed out, refused, reset: this connection is done
                self.close()
                if isinstance(exc, (OSError, asyncio.IncompleteReadError, asyncio.TimeoutError, pickle.PickleError,
                                    ValueError, TypeError)) and not isinstance(exc, ChannelError):
                    raise ChannelError(f"channel call failed: {exc!r}") from exc
                raise
            if call != self._calls:
                self.close()
                raise ChannelError(f"answer {call} to call {self._calls}: the channel lost its place")
            if outcome != "ok":
                raise ChannelError(f"the broker failed the request: {answer}")
            return answer

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None
