"""Reading request frames from, and writing response frames to, a non-blocking socket on asyncio.

The listener serves connections on the bare socket rather than through asyncio's streams,
because streams copy every byte twice on each side: a response is joined into one ``bytes``
(``writelines`` joins too, before Python 3.12) and, when the socket cannot take it at once, copied
again into the transport's buffer, whose sent head is then cut off with a move of the rest; a
request is gathered in the reader's buffer and copied out of it. Here a response goes out with
``sendmsg`` straight from its pieces (``frames.encode_response_segments``: a partition's records
are a view of the log segment), as many as the socket takes per call, and a request is read into
one buffer of its announced size.

``HeldResponses`` holds a connection's answered responses while the requests after them are
already there to be read, and writes them together: a client that sends requests back to back
(librdkafka sends one Produce request per partition) then gets several answers per write, and
is woken once for them rather than once each.
"""
from __future__ import annotations

import asyncio
import os
import socket
from collections.abc import Awaitable, Callable

# How many pieces one sendmsg takes at most (the kernel's IOV_MAX, 1024 on Linux).
_IOV_MAX = os.sysconf("SC_IOV_MAX") if hasattr(os, "sysconf") else 16
# A piece handed to sendmsg whole is at most this long, so one call never asks the kernel to
# pin a whole 50 MB fetch response at once.
_SEND_BYTES_MAX = 4 * 1024 * 1024
# At most this many responses, or this many bytes of them, wait to be written together.
HELD_RESPONSES_MAX = 64
HELD_RESPONSE_BYTES_MAX = 1024 * 1024


class ConnectionClosed(Exception):
    """The peer closed the connection, possibly in the middle of a frame."""


async def _ready(loop: asyncio.AbstractEventLoop, sock: socket.socket, *, write: bool) -> None:
    """Until ``sock`` can be written (``write``) or read."""
    ready = loop.create_future()
    descriptor = sock.fileno()

    def wake() -> None:
        if not ready.done():
            ready.set_result(None)
    (loop.add_writer if write else loop.add_reader)(descriptor, wake)
    try:
        await ready
    finally:
        (loop.remove_writer if write else loop.remove_reader)(descriptor)


async def receive_exactly(loop: asyncio.AbstractEventLoop, sock: socket.socket, buffer: bytearray,
                          before_wait: Callable[[], Awaitable[None]] | None = None) -> None:
    """Fill ``buffer`` from ``sock``; ConnectionClosed if the peer closes first. ``before_wait``,
    if given, is awaited each time the socket has nothing to read yet, before waiting for it."""
    view = memoryview(buffer)
    received = 0
    while received < len(view):
        try:
            count = sock.recv_into(view[received:])
        except (BlockingIOError, InterruptedError):
            if before_wait is not None:
                await before_wait()
            await _ready(loop, sock, write=False)
            continue
        if count == 0:
            raise ConnectionClosed(f"closed after {received} of {len(view)} bytes")
        received += count


def _byte_views(segments: list) -> list[memoryview]:
    views = []
    for segment in segments:
        view = segment if isinstance(segment, memoryview) else memoryview(segment)
        if view.ndim != 1 or view.format != "B":
            view = view.cast("B")
        for start in range(0, len(view), _SEND_BYTES_MAX):
            views.append(view[start:start + _SEND_BYTES_MAX])
    return views


async def send_segments(loop: asyncio.AbstractEventLoop, sock: socket.socket, segments: list) -> None:
    """Send the concatenation of ``segments`` (bytes-like pieces) on ``sock``, in order and whole,
    without joining them: each call hands the kernel as many pieces as it takes."""
    views = _byte_views(segments)
    first = 0  # the first piece not yet wholly sent
    while first < len(views):
        try:
            sent = sock.sendmsg(views[first:first + _IOV_MAX])
        except (BlockingIOError, InterruptedError):
            await _ready(loop, sock, write=True)
            continue
        while sent and sent >= len(views[first]):
            sent -= len(views[first])
            first += 1
        if sent:
            views[first] = views[first][sent:]
        while first < len(views) and not len(views[first]):
            first += 1


class HeldResponses:
    """A connection's responses answered but not yet written, in order. ``add`` holds one;
    ``send`` writes all held ones (in one ``send_segments``). The listener sends them before it
    would wait for the next request, before it handles a request that may wait (a long poll, an
    acks=all produce), and once ``HELD_RESPONSES_MAX`` or ``HELD_RESPONSE_BYTES_MAX`` are held,
    so no answer waits for more than the handling of requests already received."""

    def __init__(self, loop: asyncio.AbstractEventLoop, sock: socket.socket) -> None:
        self._loop = loop
        self._sock = sock
        self._segments: list = []
        self._count = 0
        self._bytes = 0

    def add(self, segments: list) -> bool:
        """Hold a response's pieces; True when as many are held as may be (send them now)."""
        self._segments += segments
        self._count += 1
        self._bytes += sum(len(segment) for segment in segments)
        return self._count >= HELD_RESPONSES_MAX or self._bytes >= HELD_RESPONSE_BYTES_MAX

    async def send(self) -> None:
        if not self._segments:
            return
        segments, self._segments, self._count, self._bytes = self._segments, [], 0, 0
        await send_segments(self._loop, self._sock, segments)
