"""Producer and consumer configuration checked as librdkafka checks it: a key the client does not
know is an error naming it, so a misspelling (``"ack": "all"``) cannot pass for a setting.

Each client has a ``ClientKeys`` table. ``defaults`` holds the keys it honours, with their
defaults; ``aliases`` librdkafka's other names for them (``request.required.acks`` for ``acks``);
``not_honoured`` Kafka client keys that mean nothing to a client that talks to brokers through Ray
actor calls, or that it does not implement: they are accepted, so a configuration written for
Kafka's clients still runs, and each is named in a ``ConfigNotHonouredWarning``; ``refused`` keys
whose silent absence would change what the user gets (``transactional.id``: the records would be
written outside any transaction), each with the reason. Anything else is
``KafkaError(INVALID_CONFIG)`` with librdkafka's words and the nearest known key. A key moves
from ``not_honoured`` to honoured by adding it, with its default, to ``defaults``.
"""
from __future__ import annotations

import difflib
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field

from actors.core.errors import ErrorCode
from orchestration.errors import KafkaError

# Keys of Kafka's CommonClientConfigs, and librdkafka's bootstrap name, that the Python clients do
# not use: they find brokers by name in the cluster's Ray namespace and call them as actors, so
# there are no sockets, no TLS or SASL, and no JMX metrics. The prefixes cover ssl.* and sasl.*.
COMMON_NOT_HONOURED = frozenset({
    "bootstrap.servers", "metadata.broker.list", "client.dns.lookup", "connections.max.idle.ms",
    "receive.buffer.bytes", "send.buffer.bytes", "reconnect.backoff.ms", "reconnect.backoff.max.ms",
    "socket.connection.setup.timeout.ms", "socket.connection.setup.timeout.max.ms", "security.protocol",
    "metrics.sample.window.ms", "metrics.num.samples", "metrics.recording.level", "metric.reporters",
    "auto.include.jmx.reporter", "interceptor.classes", "security.providers",
})
NOT_HONOURED_PREFIXES = ("ssl.", "sasl.")
# librdkafka's names for keys both clients honour.
COMMON_ALIASES = {"max.in.flight": "max.in.flight.requests.per.connection"}



class ConfigNotHonouredWarning(UserWarning):
    """A Kafka client config key the Python client accepts and does not honour."""


@dataclass(frozen=True)
class ClientKeys:
    kind: str  # "producer" or "consumer", for messages
    defaults: Mapping[str, str]
    aliases: Mapping[str, str] = field(default_factory=dict)
    not_honoured: frozenset[str] = frozenset()
    refused: Mapping[str, str] = field(default_factory=dict)  # key -> why

    def known(self) -> set[str]:
        return set(self.defaults) | set(self.aliases) | set(self.not_honoured) | set(self.refused)

    def settings(self, config: Mapping[str, object] | None) -> dict[str, str]:
        """``defaults`` with ``config`` over them, aliases under their Kafka name; raises
        ``KafkaError(INVALID_CONFIG)`` for an unknown or refused key; warns (``ConfigNotHonouredWarning``)
        for each key accepted and not honoured."""
        given: dict[str, str] = {}
        for raw_key, value in (config or {}).items():
            key = str(raw_key)
            name = self.aliases.get(key, key)
            if name in self.refused:
                raise KafkaError(ErrorCode.INVALID_CONFIG, f"Configuration property {key!r} is not supported by "
                                                           f"raykafka's {self.kind}: {self.refused[name]}")
            if name not in self.defaults and name not in self.not_honoured and not name.startswith(
                    NOT_HONOURED_PREFIXES):
                nearest = difflib.get_close_matches(key, sorted(self.known()), n=1)
                raise KafkaError(ErrorCode.INVALID_CONFIG, f"No such configuration property: {key!r}"
                                 + (f" (did you mean {nearest[0]!r}?)" if nearest else ""))
            text = str(value).lower() if isinstance(value, bool) else str(value)
            if name in given and given[name] != text:
                raise KafkaError(ErrorCode.INVALID_CONFIG, f"{name!r} is set twice, under its own name and "
                                                           f"an alias, to {given[name]!r} and {text!r}")
            given[name] = text
            if name not in self.defaults:
                # A Python warning, shown once per key and caller by default (the library's loguru
                # logging is off unless enabled, and this must reach the user).
                warnings.warn(f"raykafka's Python {self.kind} does not honour the Kafka client config {key!r}; "
                              f"it has no effect", ConfigNotHonouredWarning, stacklevel=3)
        return {**self.defaults, **given}


__all__ = ["COMMON_ALIASES", "COMMON_NOT_HONOURED", "ClientKeys", "ConfigNotHonouredWarning"]
