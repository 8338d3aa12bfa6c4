"""Kafka's ``listeners`` and ``advertised.listeners`` keys, parsed, and the ports a broker keeps.

``listeners`` is a comma-separated list of ``NAME://host:port`` (Kafka's default listener name
is PLAINTEXT, whose security protocol has the same name; raykafka serves only PLAINTEXT). Port 0
binds a free port. ``advertised.listeners`` is what the broker registers with the controller and
what Metadata hands to clients; it defaults to ``listeners`` with each bound port, and an
advertised port 0 means the bound one. A broker remembers the port each listener bound in its
log directory, so that when Ray restarts it the listener binds that port again and clients that
knew the broker reconnect to it, as they would to a restarted Kafka broker.
"""
from __future__ import annotations

import json
from typing import NamedTuple

from actors.core.errors import ErrorCode, KafkaProtocolError
from actors.core.messages.broker_registration import BrokerEndpoint

LISTENERS_DEFAULT = "PLAINTEXT://127.0.0.1:0"
SUPPORTED_SECURITY_PROTOCOLS = frozenset({"PLAINTEXT"})
# The file in a broker's log directory holding the ports its listeners bound: {"NAME": port}.
LISTENER_PORTS_FILE = "kafka-listener-ports.json"


class Listener(NamedTuple):
    name: str
    host: str
    port: int


def _invalid(key: str, value: str, why: str) -> KafkaProtocolError:
    return KafkaProtocolError(ErrorCode.INVALID_CONFIG, f"{key}={value!r}: {why}")


def parse_listeners(value: str, key: str = "listeners") -> tuple[Listener, ...]:
    found: list[Listener] = []
    for item in (part.strip() for part in value.split(",")):
        if not item:
            continue
        name, separator, address = item.partition("://")
        host, colon, port_text = address.rpartition(":")
        if not separator or not colon or not port_text.isdigit():
            raise _invalid(key, value, f"{item!r} is not NAME://host:port")
        port = int(port_text)
        if port > 65535:
            raise _invalid(key, value, f"port {port} is over 65535")
        if name.upper() not in SUPPORTED_SECURITY_PROTOCOLS:
            raise _invalid(key, value, f"listener {name!r}: only PLAINTEXT is supported")
        if any(existing.name == name.upper() for existing in found):
            raise _invalid(key, value, f"listener {name!r} appears twice")
        found.append(Listener(name.upper(), host.strip("[]"), port))
    if not found:
        raise _invalid(key, value, "no listener")
    return tuple(found)


def ports_to_bind(listeners: tuple[Listener, ...], remembered: dict[str, int]) -> dict[str, int]:
    """The port each listener binds: its configured port, else the one it bound last time."""
    return {listener.name: listener.port or int(remembered.get(listener.name, 0)) for listener in listeners}


def advertised_endpoints(config: dict[str, str], bound_ports: dict[str, int]) -> tuple[BrokerEndpoint, ...]:
    """What the broker registers: ``advertised.listeners`` (default: ``listeners``), each port 0
    replaced by the port that listener bound, and a wildcard host by loopback."""
    listeners = parse_listeners(config.get("listeners", LISTENERS_DEFAULT))
    advertised_value = config.get("advertised.listeners")
    advertised = parse_listeners(advertised_value, "advertised.listeners") if advertised_value else listeners
    endpoints = []
    for listener in advertised:
        port = listener.port or bound_ports.get(listener.name, 0)
        if port == 0:
            raise _invalid("advertised.listeners", advertised_value or "", f"{listener.name} has no bound port")
        host = listener.host if listener.host not in ("", "0.0.0.0", "::") else "127.0.0.1"
        endpoints.append(BrokerEndpoint(name=listener.name, host=host, port=port,
                                        security_protocol=listener.name))
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
