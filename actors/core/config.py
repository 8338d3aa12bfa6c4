"""Kafka's configuration keys, their defaults, and typed access to them.

Users already know Kafka's keys, so raykafka takes them as Kafka does: a mapping of string keys to
string values. A default that only makes sense at Kafka's scale may be smaller here (the values
marked "smaller than Kafka's" below) but never means something else. An invalid value raises
``KafkaProtocolError(INVALID_CONFIG)`` naming the key, which a request handler turns into the
response's error code.
"""
from __future__ import annotations

from collections.abc import Mapping

from actors.core.errors import ErrorCode, KafkaProtocolError

BROKER_DEFAULTS: dict[str, str] = {
    "num.partitions": "1",
    "default.replication.factor": "1",
    "min.insync.replicas": "1",
    "segment.bytes": str(1024 * 1024 * 1024),
    "index.interval.bytes": "4096",
    "max.message.bytes": "1048588",
    # Kafka's default: a batch is stored with the codec its producer chose (no recompression).
    "compression.type": "producer",
    # Kafka 2.4's default (2.5 raised it to 30000 with KIP-537). Tests and chaos runs that need
    # faster ISR shrinking set their own.
    "replica.lag.time.max.ms": "10000",
    "replica.fetch.max.bytes": "1048576",
    "replica.fetch.response.max.bytes": str(10 * 1024 * 1024),
    "replica.fetch.wait.max.ms": "500",
    "replica.fetch.min.bytes": "1",
    "replica.fetch.backoff.ms": "1000",
    "num.replica.fetchers": "1",
    "max.incremental.fetch.session.cache.slots": "1000",
    "replica.high.watermark.checkpoint.interval.ms": "5000",
    "log.flush.offset.checkpoint.interval.ms": "60000",
    "unclean.leader.election.enable": "false",
    "auto.leader.rebalance.enable": "true",
    "request.timeout.ms": "30000",
    "offsets.topic.num.partitions": "50",
    "offsets.topic.replication.factor": "3",
    # Smaller than Kafka's 1000: bounds how many delayed requests one broker parks before it
    # answers new ones at once with what it has (Kafka's purgatories are unbounded).
    "raykafka.purgatory.max.size": "10000",
    "raykafka.truncation.policy": "leader-epoch",
}

# Keys a topic may override at creation (Kafka's topic-level names).
TOPIC_CONFIG_KEYS = frozenset({
    "segment.bytes", "index.interval.bytes", "max.message.bytes", "min.insync.replicas",
    "unclean.leader.election.enable", "retention.ms", "retention.bytes", "cleanup.policy",
    "compression.type",
})


def _parse_bool(key: str, value: str) -> bool:
    lowered = value.strip().lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    raise KafkaProtocolError(ErrorCode.INVALID_CONFIG, f"{key}={value!r} is not a boolean")


def _parse_int(key: str, value: str, minimum: int | None) -> int:
    try:
        number = int(str(value).strip())
    except ValueError:
        raise KafkaProtocolError(ErrorCode.INVALID_CONFIG, f"{key}={value!r} is not an integer") from None
    if minimum is not None and number < minimum:
        raise KafkaProtocolError(ErrorCode.INVALID_CONFIG, f"{key}={value!r} is below {minimum}")
    return number


class KafkaConfig:
    """Kafka-style properties over a defaults table. Values are strings; getters parse them."""

    __slots__ = ("_values",)

    def __init__(self, overrides: Mapping[str, object] | None = None,
                 defaults: Mapping[str, str] = BROKER_DEFAULTS) -> None:
        values = dict(defaults)
        for key, value in (overrides or {}).items():
            values[str(key)] = str(value).lower() if isinstance(value, bool) else str(value)
        self._values = values

    def get_str(self, key: str) -> str:
        return self._values[key]

    def get_int(self, key: str, minimum: int | None = 0) -> int:
        return _parse_int(key, self._values[key], minimum)

    def get_bool(self, key: str) -> bool:
        return _parse_bool(key, self._values[key])

    def with_overrides(self, overrides: Mapping[str, object]) -> "KafkaConfig":
        return KafkaConfig(overrides, defaults=self._values)

    def as_dict(self) -> dict[str, str]:
        return dict(self._values)

    def __contains__(self, key: str) -> bool:
        return key in self._values
