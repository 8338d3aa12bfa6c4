"""A broker's Kafka listeners: TCP servers speaking Kafka's binary protocol to stock clients.

Each broker actor runs one server per listener (``listeners``, default
``PLAINTEXT://127.0.0.1:0``) on its own event loop. A connection is served as Kafka's network
layer serves one: a 4-byte size is read first and a size over ``socket.request.max.bytes``
closes the connection before any body is read; then the request is decoded by kio
(``actors.wire.frames``), translated to raykafka's message (``actors.wire.apis``), handed to its
target, and the answer translated back and written, its records as the log stored them (no
copy on the way: ``actors.wire.sockets``). Produce, which a client of many partitions sends many
small ones of, is read and answered without kio (``actors.wire.produce_codec``). The connection
reads its next request only after answering this one (Kafka mutes a connection while a request is
in flight), so requests on one connection are handled and answered in order (answers to requests
a client sent back to back may be written together: ``actors.wire.sockets.HeldResponses``); that
also gives one producer connection the ordering that Ray calls do not promise. One exception:
acks=all produces in a row (up to ``PIPELINED_PRODUCES_MAX``) are handled at once, each appended
in the order it was read, and answered in that order as their replication completes (``_serve``):
one replication round at a time would cap a connection at one batch per round. A produce with
acks=0 is handled and not answered.

Targets, as the API table (actors/core/apis.py) names them by API key: data and metadata requests
go to this broker actor's ``handle`` (in-process), also CreateTopics and DeleteTopics, which the
broker forwards to the active controller (as KIP-590 brokers do) and answers once its own metadata
agrees (actors/core/broker/topic_operations.py); group requests go to this broker's group
coordinator actor's ``handle``; ApiVersions, the SASL pair and DescribeConfigs are answered here.
What the listener cannot read closes that connection and touches nothing else; a target that cannot be reached is answered with the
API's error code (COORDINATOR_NOT_AVAILABLE, or NOT_CONTROLLER from the broker), which clients retry.
"""
from __future__ import annotations

import asyncio
import collections
import dataclasses
import ipaddress
import os
import socket
import time
from typing import Any

import ray
from loguru import logger

from actors.core.errors import ErrorCode, KafkaProtocolError
from actors.core.messages.join_group import JoinGroupRequest
from actors.core.messages.produce import ProduceRequest
from actors.core.messages.broker_registration import BrokerEndpoint
from actors.core.controller.metadata_store import MetadataStore
from actors.ray_metadata_store import RayKeyValueStore
from actors.core.apis import BROKER, GROUP_COORDINATOR
from actors.wire.apis import CODECS, Codec, WireContext, api_versions_error_response
from actors.wire.describe_configs import RESOURCE_BROKER, RESOURCE_TOPIC, describe_configs
from actors.wire.frames import (
    REQUEST_BYTES_MAX_DEFAULT, SIZE_PREFIX, InvalidFrame, UnsupportedApiVersions, check_frame_size, decode_body,
    decode_header, encode_response_body, encode_response_segments, load_served_schemas, request_schema,
)
from actors.wire.listeners import (
    LISTENER_KEYS, LISTENER_PORTS_FILE, advertised_endpoints, configured_listeners, decode_remembered_ports,
    encode_remembered_ports, ports_to_bind, resolve_placeholders,
)
from actors.wire.sockets import ConnectionClosed, HeldResponses, receive_exactly, send_segments

# How long a restarted broker tries to bind the port it had before taking a new one: the port
# may still be held for a moment by the process Ray is replacing.
REBIND_TIMEOUT_S = 10.0
REBIND_BACKOFF_S = 0.2
# Connections served at once per listener; more are closed on accept (each holds at most one
# request of up to socket.request.max.bytes).
CONNECTIONS_MAX = 1000
DESCRIBE_CONFIGS_KEY = 32
# After an accept fails (e.g. out of file descriptors), how long before the next.
ACCEPT_RETRY_S = 0.1
# The most acks=all produce requests of one connection handled at once (see ``_serve``). A
# producer without idempotence (librdkafka's max.in.flight is 1,000,000 then) sends a batch every
# linger.ms whatever is out: with 5 out, a paced load at half the bulk peak fell behind (p50
# 394 ms); with 16, 72,796 records/s of 1 KiB kept up at p50 59 ms (benchmarks/ack_latency.py).
# An idempotent producer has at most 5 out anyway.
PIPELINED_PRODUCES_MAX = 16


@dataclasses.dataclass
class _Decoded:
    """A request frame decoded (``KafkaListener._decode``), or the answer it gets without a target."""
    answer: list | None = None  # the response's pieces when it needs no target (an unsupported version)
    codec: Codec | None = None
    header: Any = None
    request: Any = None
    body: Any = None

    @property
    def is_acks_all_produce(self) -> bool:
        return isinstance(self.request, ProduceRequest) and self.request.acks not in (0, 1)


class KafkaListener:
    def __init__(self, *, broker: Any, broker_id: int, namespace: str, config: dict[str, str], log_dir: str,
                 coordinator_actor_name: str, node_ip: str = "127.0.0.1", node_id: str = "") -> None:
        self._broker = broker  # the BrokerActor whose handlers serve data requests
        self._broker_id = broker_id
        self._coordinator_actor_name = coordinator_actor_name  # this broker's group coordinator actor
        self._namespace = namespace
        # The node this broker runs on names itself in the listener keys ({node_ip}, {broker_id} ...).
        self._node_ip = node_ip
        self._config = {key: resolve_placeholders(str(value), node_ip=node_ip, node_id=node_id, broker_id=broker_id)
                        if key in LISTENER_KEYS else value for key, value in config.items()}
        self._log_dir = log_dir
        self._request_bytes_max = int(config.get("socket.request.max.bytes", REQUEST_BYTES_MAX_DEFAULT))
        self._sockets: dict[str, socket.socket] = {}
        self._acceptors: list[asyncio.Task] = []
        self._connections: set[asyncio.Task] = set()
        self._coordinator = None

    # ------------------------------------------------------------------------------ binding
    def bind(self) -> tuple[BrokerEndpoint, ...]:
        """Bind every listener (synchronously, before the broker registers) and return the
        endpoints to advertise."""
        listeners, _ = configured_listeners(self._config)
        ports_path = os.path.join(self._log_dir, LISTENER_PORTS_FILE)
        remembered = {}
        if os.path.exists(ports_path):
            with open(ports_path, encoding="utf-8") as file:
                remembered = decode_remembered_ports(file.read())
        wanted = ports_to_bind(listeners, remembered)
        bound: dict[str, int] = {}
        for listener in listeners:
            sock = self._bind_one(listener.host, wanted[listener.name], configured=listener.port != 0)
            self._sockets[listener.name] = sock
            bound[listener.name] = sock.getsockname()[1]
        with open(ports_path + ".tmp", "w", encoding="utf-8") as file:
            file.write(encode_remembered_ports(bound))
        os.replace(ports_path + ".tmp", ports_path)
        endpoints = advertised_endpoints(self._config, bound, self._node_ip)
        logger.info("broker {} Kafka listeners bound: {}", self._broker_id,
                    ", ".join(f"{e.name}://{e.host}:{e.port}" for e in endpoints))
        return endpoints

    def replication_host(self) -> str:
        """Where this broker's fetch channel listens (actors/broker_channel.py): loopback when
        every Kafka listener is (a cluster on one host), else this node's address, which the other
        hosts' followers can reach."""
        listeners, _ = configured_listeners(self._config)
        if listeners and all(_is_loopback(listener.host) for listener in listeners):
            return "127.0.0.1"
        return self._node_ip

    def _bind_one(self, host: str, port: int, *, configured: bool) -> socket.socket:
        deadline = time.monotonic() + REBIND_TIMEOUT_S
        while True:
            sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                sock.bind((host, port))
                sock.listen(128)
                sock.setblocking(False)
                return sock
            except OSError as exc:
                sock.close()
                if port == 0 or time.monotonic() >= deadline:
                    if configured or port == 0:
                        raise
                    # A remembered port someone else took: clients find the new one in Metadata.
                    logger.warning("broker {} cannot bind its earlier port {} ({}); binding a free one",
                                   self._broker_id, port, exc)
                    port = 0
                    continue
                time.sleep(REBIND_BACKOFF_S)

    async def start(self) -> None:
        load_served_schemas()
        loop = asyncio.get_running_loop()
        for name, sock in self._sockets.items():
            self._acceptors.append(loop.create_task(self._accept_loop(sock, name)))

    async def close(self) -> None:
        for task in self._acceptors:
            task.cancel()
        # The acceptors stop waiting on their sockets before the sockets close.
        await asyncio.gather(*self._acceptors, return_exceptions=True)
        for sock in self._sockets.values():
            sock.close()
        for task in list(self._connections):
            task.cancel()

    # --------------------------------------------------------------------------- connections
    async def _accept_loop(self, sock: socket.socket, listener_name: str) -> None:
        loop = asyncio.get_running_loop()
        while True:
            try:
                connection, peer = await loop.sock_accept(sock)
            except OSError as exc:
                # Out of descriptors, or a connection reset before it was accepted: Kafka's
                # acceptor logs and goes on accepting.
                logger.warning("broker {} could not accept a Kafka connection: {!r}", self._broker_id, exc)
                await asyncio.sleep(ACCEPT_RETRY_S)
                continue
            if len(self._connections) >= CONNECTIONS_MAX:
                connection.close()
                continue
            connection.setblocking(False)
            # As asyncio's transports do: a response is sent at once, not held for the peer's ack.
            connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            task = loop.create_task(self._serve(connection, peer, listener_name))
            self._connections.add(task)
            task.add_done_callback(self._connections.discard)

    async def _serve(self, connection: socket.socket, peer: Any, listener_name: str) -> None:
        """One connection's requests, answered in order.

        An acks=all produce waits for the followers (a replication round of several Ray calls), and
        a client such as librdkafka sends the next one meanwhile. Up to ``PIPELINED_PRODUCES_MAX``
        such produces in a row are handled at once: each is appended as it is read (in order: they
        are stepped in the order they arrived), and their answers are written in that order by a
        writer of their own as they come. Any other request waits until the produces before it are
        answered, so it is handled as Kafka handles it, with the connection's earlier requests done
        (a Fetch after a produce on the same connection sees what that produce's answer promised)."""
        loop = asyncio.get_running_loop()
        peer = peer if isinstance(peer, tuple) else (str(peer), 0)
        context = WireContext(listener_name=listener_name, client_host=str(peer[0]))
        size_prefix = bytearray(SIZE_PREFIX.size)
        held = HeldResponses(loop, connection)
        produces: collections.deque[asyncio.Task] = collections.deque()  # acks=all produces out, oldest first
        room = asyncio.Semaphore(PIPELINED_PRODUCES_MAX)  # taken per produce out, given back once it is answered
        writer: asyncio.Task | None = None  # writes their answers, in order, while any is out
        try:
            while True:
                await receive_exactly(loop, connection, size_prefix, before_wait=held.send)
                (size,) = SIZE_PREFIX.unpack(size_prefix)
                check_frame_size(size, self._request_bytes_max)
                frame = bytearray(size)
                await receive_exactly(loop, connection, frame, before_wait=held.send)
                # kio reads only from read-only buffers; the view costs no copy.
                decoded = self._decode(memoryview(frame).toreadonly(), context)
                if decoded.is_acks_all_produce:
                    await room.acquire()  # as many out as may be: the oldest answered first
                    await held.send()  # the answers before it go out first
                    produces.append(loop.create_task(self._answer(decoded)))
                    if writer is None or writer.done():
                        writer = loop.create_task(self._write_in_order(loop, connection, produces, room))
                    continue
                if writer is not None:
                    await writer  # the produces before this request are answered first
                    writer = None
                response = await self._answer(decoded, held)
                if response is not None and held.add(response):
                    await held.send()
        except (ConnectionClosed, ConnectionError):
            pass  # the client went away
        except InvalidFrame as exc:
            # The answers to the requests before this one go out before the connection closes.
            await self._written_quietly(writer)
            await self._send_quietly(held)
            logger.info("broker {} closed a Kafka connection from {}: {}", self._broker_id, peer, exc)
        except asyncio.CancelledError:
            raise
        except Exception:
            await self._written_quietly(writer)
            await self._send_quietly(held)
            logger.exception("broker {} closed a Kafka connection from {} on an unexpected error",
                             self._broker_id, peer)
        finally:
            for task in [*produces, writer]:
                if task is not None and not task.done():
                    task.cancel()  # a produce already appended stays so: the client sees the connection close
            if writer is not None and writer.done() and not writer.cancelled() and writer.exception() is not None:
                logger.info("broker {} closed a Kafka connection from {}: a produce failed: {!r}", self._broker_id,
                            peer, writer.exception())
            connection.close()

    @staticmethod
    async def _write_in_order(loop: asyncio.AbstractEventLoop, connection: socket.socket,
                              produces: collections.deque, room: asyncio.Semaphore) -> None:
        """Write the answers of the produces out, oldest first, until none is left. A produce that
        fails ends the connection (as a request handled inline would): it is shut, so the reading
        loop stops too."""
        try:
            while produces:
                answer = await produces[0]
                produces.popleft()
                if answer is not None:
                    await send_segments(loop, connection, answer)
                room.release()
        except asyncio.CancelledError:
            raise
        except BaseException:
            try:
                connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass  # already gone
            raise

    @staticmethod
    async def _written_quietly(writer: asyncio.Task | None) -> None:
        """Wait for the answers of the produces out to be written, whatever became of them."""
        if writer is None:
            return
        try:
            await writer
        except Exception:
            pass  # that produce's failure closes the connection anyway

    @staticmethod
    async def _send_quietly(held: HeldResponses) -> None:
        try:
            await held.send()
        except (ConnectionError, OSError):
            pass  # the client went away meanwhile

    @staticmethod
    def _decode(frame, context: WireContext) -> _Decoded:
        """A request frame decoded; InvalidFrame (which closes the connection) when it cannot be."""
        try:
            header = decode_header(frame)
        except UnsupportedApiVersions as exc:
            return _Decoded(answer=encode_response_segments(exc.correlation_id, api_versions_error_response()))
        codec = CODECS[header.api_key]
        if context.client_id != (header.client_id or ""):
            context = dataclasses.replace(context, client_id=header.client_id or "")
        body = None
        if codec.read is not None:
            request = codec.read(frame, header.position, header.api_version)
        else:
            body = decode_body(frame, header)
            try:
                request = codec.to_core(body, header.api_version, context)
            except (TypeError, ValueError) as exc:
                raise InvalidFrame(f"{codec.api.name} v{header.api_version}: {exc}") from None
        return _Decoded(codec=codec, header=header, request=request, body=body)

    async def _answer(self, decoded: _Decoded, held: HeldResponses | None = None) -> list | None:
        """A decoded request's response frame's pieces (None for acks=0). The responses ``held``
        (answered, not yet written) are written first unless it is a Produce with acks 0 or 1,
        which the broker answers without waiting."""
        if decoded.answer is not None:
            return decoded.answer
        codec, header, request, body = decoded.codec, decoded.header, decoded.request, decoded.body
        answered_at_once = isinstance(request, ProduceRequest) and request.acks in (0, 1)
        if held is not None and not answered_at_once:
            await held.send()
        response = await self._route(codec, request, header.api_version)
        if isinstance(request, ProduceRequest) and request.acks == 0:
            return None
        if codec.write is not None:
            return encode_response_body(header.correlation_id, codec.write(response, header.api_version),
                                        flexible=request_schema(header.api_key, header.api_version).__flexible__)
        return encode_response_segments(header.correlation_id, codec.to_kio(response, header.api_version, body))

    async def _route(self, codec: Codec, request: Any, version: int) -> Any:
        """The request to the kind the API table names: this broker, its group coordinator, or
        this listener alone."""
        try:
            if codec.api.kind is BROKER:
                return await self._broker.handle(request)
            if codec.api.kind is GROUP_COORDINATOR:
                return await self._ask_coordinator(codec, request, version)
        except KafkaProtocolError as exc:
            raise InvalidFrame(f"{codec.api.name}: {exc}") from None
        return self._answer_locally(codec.api.key, request)

    def _answer_locally(self, api_key: int, request: Any) -> Any:
        if api_key == DESCRIBE_CONFIGS_KEY:
            return self._describe_configs(request)
        # ApiVersions and the SASL pair: the answer is the API's own (``actors.wire.apis``).
        return ErrorCode.NONE

    async def _ask_coordinator(self, codec: Codec, request: Any, version: int) -> Any:
        try:
            if self._coordinator is None:
                self._coordinator = ray.get_actor(self._coordinator_actor_name, namespace=self._namespace)
            coordinator = self._coordinator
            response = await coordinator.handle.remote(request)
            if isinstance(request, JoinGroupRequest) and version < 4 \
                    and response.error_code == ErrorCode.MEMBER_ID_REQUIRED:
                # Before KIP-394 a client cannot take an id and rejoin: rejoin for it.
                request = dataclasses.replace(request, member_id=response.member_id)
                response = await coordinator.handle.remote(request)
            return response
        except KafkaProtocolError:
            raise
        except Exception as exc:
            if isinstance(getattr(exc, "cause", None), KafkaProtocolError):
                raise exc.cause from None
            logger.info("broker {} could not reach its group coordinator: {!r}", self._broker_id, exc)
            self._coordinator = None
            return codec.error_response(request, ErrorCode.COORDINATOR_NOT_AVAILABLE)

    def _describe_configs(self, body: Any) -> dict:
        """Topic configs and dynamic broker configs as the controller stored them (Kafka's brokers
        read them from ZooKeeper the same way), so any broker describes any topic."""
        topic_overrides, broker_dynamic = {}, {}
        if any(resource.resource_type == RESOURCE_TOPIC for resource in body.resources):
            stored = MetadataStore(RayKeyValueStore(self._namespace)).topics()
            topic_overrides = {name: dict(record.get("config", {})) for name, record in stored.items() if record}
        if body.resources:  # a topic's synonyms name the dynamic broker values too
            broker_dynamic = MetadataStore(RayKeyValueStore(self._namespace)).broker_configs()
        return describe_configs(
            body, broker_id=self._broker_id, broker_overrides=self._config, topic_overrides=topic_overrides,
            known_topics=self._broker.cached_topics() | frozenset(topic_overrides), broker_dynamic=broker_dynamic)


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a name, or empty (every interface)
