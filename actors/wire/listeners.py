"""Kafka's ``listeners``, ``advertised.listeners`` and ``listener.security.protocol.map``, parsed,
and the ports a broker keeps.

``listeners`` is a comma-separated list of ``NAME://host:port``; each listener's name maps to a
security protocol through ``listener.security.protocol.map`` (Kafka's default maps PLAINTEXT, SSL,
SASL_PLAINTEXT and SASL_SSL to themselves), so a cluster can name an internal and an external
listener, ``INTERNAL://10.0.0.5:9094,EXTERNAL://0.0.0.0:9092`` with
``INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT``. raykafka serves PLAINTEXT only: a listener mapped to
another protocol is refused. Port 0 binds a free port; an empty host binds every interface.

``advertised.listeners`` is what the broker registers with the controller and what Metadata hands
to clients; it defaults to ``listeners``, its names must be among the listeners', an advertised
port 0 means the bound one, and an advertised host of 0.0.0.0 (or ``::``) is refused with Kafka's
message: a client told to connect there would connect to itself. An empty advertised host is the
broker's node's address, as Kafka advertises the host's own name.

Both keys may name the node the broker runs on, resolved there when the broker (re)starts, so one
cluster-wide setting gives every broker its own address and a broker that Ray moves advertises
its new node: ``{node_ip}`` (the node's IP as Ray reports it), ``{node_id}`` and ``{broker_id}``.
``listeners=EXTERNAL://{node_ip}:9092`` is the usual choice on a multi-host Ray cluster.

A broker remembers the port each listener bound in its log directory, so that when Ray restarts
it the listener binds that port again and clients that knew the broker reconnect to it, as they
would to a restarted Kafka broker.
"""
from __future__ import annotations

import json
from typing import NamedTuple

from actors.core.errors import ErrorCode, KafkaProtocolError
from actors.core.messages.broker_registration import BrokerEndpoint

LISTENERS_DEFAULT = "PLAINTEXT://127.0.0.1:0"
# The default on a Ray cluster of several hosts: each broker on its own node's IP, which clients on
# the other hosts can reach (LISTENERS_DEFAULT reaches only the broker's own host).
NODE_LISTENERS = "PLAINTEXT://{node_ip}:0"
# Kafka's default listener.security.protocol.map.
SECURITY_PROTOCOL_MAP_DEFAULT = "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL"
KAFKA_SECURITY_PROTOCOLS = frozenset({"PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"})
SUPPORTED_SECURITY_PROTOCOLS = frozenset({"PLAINTEXT"})
NONROUTABLE_HOSTS = frozenset({"0.0.0.0", "::"})
PLACEHOLDERS = ("{node_ip}", "{node_id}", "{broker_id}")
LISTENER_KEYS = ("listeners", "advertised.listeners", "listener.security.protocol.map")
# The file in a broker's log directory holding the ports its listeners bound: {"NAME": port}.
LISTENER_PORTS_FILE = "kafka-listener-ports.json"


class Listener(NamedTuple):
    name: str
    host: str
    port: int
    security_protocol: str = "PLAINTEXT"


def _invalid(key: str, value: str, why: str) -> KafkaProtocolError:
    return KafkaProtocolError(ErrorCode.INVALID_CONFIG, f"{key}={value!r}: {why}")


def with_listeners_for_hosts(config: dict[str, str], *, several_hosts: bool) -> dict[str, str]:
    """``config`` with ``listeners`` defaulted to ``NODE_LISTENERS`` when the cluster may span
    hosts and it names neither ``listeners`` nor ``advertised.listeners`` (an operator's choice
    always wins); on one host the brokers keep ``LISTENERS_DEFAULT``, loopback only."""
    if not several_hosts or {"listeners", "advertised.listeners"} & set(config):
        return dict(config)
    return {**config, "listeners": NODE_LISTENERS}


def resolve_placeholders(value: str, *, node_ip: str, node_id: str, broker_id: int) -> str:
    """``{node_ip}``, ``{node_id}`` and ``{broker_id}`` in a listener setting, for the node the broker runs on."""
    return value.replace("{node_ip}", node_ip).replace("{node_id}", node_id).replace("{broker_id}", str(broker_id))


def parse_security_protocol_map(value: str | None) -> dict[str, str]:
    """``listener.security.protocol.map``: listener name -> security protocol, both upper case."""
    value = SECURITY_PROTOCOL_MAP_DEFAULT if value is None else value
    mapping: dict[str, str] = {}
    for item in (part.strip() for part in value.split(",")):
        if not item:
            continue
        name, colon, protocol = item.partition(":")
        if not colon or not name.strip():
            raise _invalid("listener.security.protocol.map", value, f"{item!r} is not NAME:PROTOCOL")
        if protocol.strip().upper() not in KAFKA_SECURITY_PROTOCOLS:
            raise _invalid("listener.security.protocol.map", value,
                           f"Invalid security protocol `{protocol.strip()}` defined in listener.security.protocol.map")
        mapping[name.strip().upper()] = protocol.strip().upper()
    return mapping


def parse_listeners(value: str, key: str = "listeners", protocols: dict[str, str] | None = None) -> tuple[Listener, ...]:
    """Kafka's ``CoreUtils.listenerListToEndPoints``: each ``NAME://host:port`` with its security
    protocol from ``protocols`` (``listener.security.protocol.map``), names and ports distinct."""
    protocols = parse_security_protocol_map(None) if protocols is None else protocols
    found: list[Listener] = []
    for item in (part.strip() for part in value.split(",")):
        if not item:
            continue
        name, separator, address = item.partition("://")
        host, colon, port_text = address.rpartition(":")
        if not separator or not colon or not port_text.isdigit():
            raise _invalid(key, value, f"{item!r} is not NAME://host:port")
        if any(placeholder in host for placeholder in PLACEHOLDERS):
            raise _invalid(key, value, f"{item!r} names the broker's node, which is known only where it runs")
        port = int(port_text)
        if port > 65535:
            raise _invalid(key, value, f"port {port} is over 65535")
        name = name.upper()
        protocol = protocols.get(name)
        if protocol is None:
            raise _invalid(key, value, f"No security protocol defined for listener {name} "
                                       f"(listener.security.protocol.map names {', '.join(sorted(protocols))})")
        if protocol not in SUPPORTED_SECURITY_PROTOCOLS:
            raise _invalid(key, value, f"listener {name} uses {protocol}: raykafka serves PLAINTEXT only")
        if any(existing.name == name for existing in found):
            raise _invalid(key, value, f"Each listener must have a different name: {name} appears twice")
        if port and any(existing.port == port for existing in found):
            raise _invalid(key, value, f"Each listener must have a different port: {port} appears twice")
        found.append(Listener(name, host.strip("[]"), port, protocol))
    if not found:
        raise _invalid(key, value, "no listener")
    return tuple(found)


def configured_listeners(config: dict[str, str]) -> tuple[tuple[Listener, ...], tuple[Listener, ...]]:
    """(listeners, advertised listeners) of a broker configuration whose placeholders are resolved,
    checked as Kafka's ``KafkaConfig.validateValues`` checks them."""
    protocols = parse_security_protocol_map(config.get("listener.security.protocol.map"))
    listeners = parse_listeners(config.get("listeners", LISTENERS_DEFAULT), "listeners", protocols)
    advertised_value = config.get("advertised.listeners")
    advertised = parse_listeners(advertised_value, "advertised.listeners", protocols) if advertised_value else listeners
    names = {listener.name for listener in listeners}
    if not {listener.name for listener in advertised} <= names:
        raise _invalid("advertised.listeners", advertised_value or "", (
            "advertised.listeners listener names must be equal to or a subset of the ones defined in listeners. "
            f"Found {','.join(l.name for l in advertised)}. The valid options based on the current configuration "
            f"are {','.join(sorted(names))}"))
    for listener in advertised:
        if listener.host in NONROUTABLE_HOSTS:
            raise _invalid("advertised.listeners" if advertised_value else "listeners",
                           advertised_value or config.get("listeners", LISTENERS_DEFAULT),
                           f"advertised.listeners cannot use the nonroutable meta-address {listener.host}. "
                           "Use a routable IP address.")
    return listeners, advertised


def check_listener_config(config: dict[str, str]) -> None:
    """Refuse, before any broker starts, listener settings every broker would refuse (placeholders
    stand for a node here)."""
    resolved = {key: resolve_placeholders(str(config[key]), node_ip="192.0.2.1", node_id="node", broker_id=0)
                for key in LISTENER_KEYS if key in config}
    configured_listeners(resolved)


def ports_to_bind(listeners: tuple[Listener, ...], remembered: dict[str, int]) -> dict[str, int]:
    """The port each listener binds: its configured port, else the one it bound last time."""
    return {listener.name: listener.port or int(remembered.get(listener.name, 0)) for listener in listeners}


def advertised_endpoints(config: dict[str, str], bound_ports: dict[str, int],
                         node_ip: str = "127.0.0.1") -> tuple[BrokerEndpoint, ...]:
    """What the broker registers: ``advertised.listeners`` (default: ``listeners``), each port 0
    replaced by the port that listener bound, and an empty host by the node's address."""
    _, advertised = configured_listeners(config)
    endpoints = []
    for listener in advertised:
        port = listener.port or bound_ports.get(listener.name, 0)
        if port == 0:
            raise _invalid("advertised.listeners", config.get("advertised.listeners", ""),
                           f"{listener.name} has no bound port")
        endpoints.append(BrokerEndpoint(name=listener.name, host=listener.host or node_ip, port=port,
                                        security_protocol=listener.security_protocol))
    return tuple(endpoints)


def decode_remembered_ports(text: str) -> dict[str, int]:
    """The ports file's content; anything unreadable is forgotten (the listener binds afresh)."""
    try:
        data = json.loads(text)
    except ValueError:
        return {}
    if not isinstance(data, dict):
        return {}
    return {str(k): v for k, v in data.items() if isinstance(v, int) and 0 < v <= 65535}


def encode_remembered_ports(ports: dict[str, int]) -> str:
    return json.dumps(ports, sort_keys=True)
