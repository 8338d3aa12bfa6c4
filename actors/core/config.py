"""Kafka's configuration keys, their defaults, and typed access to them.

Users already know Kafka's keys, so raykafka takes them as Kafka does: a mapping of string keys to
string values. A default that only makes sense at Kafka's scale may be smaller here (the values
marked "smaller than Kafka's" below) but never means something else. An invalid value raises
``KafkaProtocolError(INVALID_CONFIG)`` naming the key, which a request handler turns into the
response's error code.

A broker is configured with Kafka's broker keys (``KafkaConfig``'s names: ``log.segment.bytes``,
``message.max.bytes``, ``log.retention.hours``); a topic with the topic keys (``LogConfig``'s:
``segment.bytes``, ``max.message.bytes``, ``retention.ms``). The broker keys are the defaults of
the topic keys (``TOPIC_CONFIG_SYNONYMS``, Kafka's ``KafkaServer.copyKafkaConfigToLog``), so a
topic's effective value is its own override, else the broker's key, else Kafka's default
(``effective_topic_config``). A broker configuration with a key raykafka does not know is refused
with a message naming the key and the nearest known one: Kafka only logs such a key, which hides a
misspelling until the setting is missed.
"""
from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import NamedTuple

from actors.core.errors import ErrorCode, KafkaProtocolError


class TopicConfigSynonym(NamedTuple):
    """A topic key's broker keys (the first one set wins) and Kafka's default in the topic key's unit."""

    broker_keys: tuple[str, ...]
    default: str


# Topic key -> the broker keys that set its default, as Kafka's LogConfig.TopicConfigSynonyms.
# One line per topic key; a key here is one CreateTopics and IncrementalAlterConfigs accept.
TOPIC_CONFIG_SYNONYMS: dict[str, TopicConfigSynonym] = {
    "segment.bytes": TopicConfigSynonym(("log.segment.bytes",), str(1024 * 1024 * 1024)),
    "index.interval.bytes": TopicConfigSynonym(("log.index.interval.bytes",), "4096"),
    "max.message.bytes": TopicConfigSynonym(("message.max.bytes",), "1048588"),
    "min.insync.replicas": TopicConfigSynonym(("min.insync.replicas",), "1"),
    "unclean.leader.election.enable": TopicConfigSynonym(("unclean.leader.election.enable",), "false"),
    "retention.ms": TopicConfigSynonym(("log.retention.ms", "log.retention.minutes", "log.retention.hours"),
                                       str(168 * 3_600_000)),
    "retention.bytes": TopicConfigSynonym(("log.retention.bytes",), "-1"),
    "segment.ms": TopicConfigSynonym(("log.roll.ms", "log.roll.hours"), str(168 * 3_600_000)),
    "cleanup.policy": TopicConfigSynonym(("log.cleanup.policy",), "delete"),
    "compression.type": TopicConfigSynonym(("compression.type",), "producer"),
    # The log cleaner's (actors/core/log/cleaner.py), as Kafka's LogConfig.
    "min.cleanable.dirty.ratio": TopicConfigSynonym(("log.cleaner.min.cleanable.ratio",), "0.5"),
    "min.compaction.lag.ms": TopicConfigSynonym(("log.cleaner.min.compaction.lag.ms",), "0"),
    "delete.retention.ms": TopicConfigSynonym(("log.cleaner.delete.retention.ms",), "86400000"),
}

# A broker key in another unit than its topic key: the factor to the topic key's unit.
_SYNONYM_SCALE = {"log.retention.minutes": 60_000, "log.retention.hours": 3_600_000, "log.roll.hours": 3_600_000,
                  "log.roll.jitter.hours": 3_600_000}

# The other topic keys Kafka 2.4 defines (LogConfig): accepted, validated with Kafka's ranges
# (topic_configs.py), stored and reported by DescribeConfigs, and not applied, for raykafka has no
# such mechanism (no preallocation, roll jitter, index size cap, flush policy per topic, delayed file
# deletion, LogAppendTime stamping, timestamp bounds, replication quotas, message format
# conversion, or compaction lag bound). min.cleanable.dirty.ratio, min.compaction.lag.ms and
# delete.retention.ms belong to the log cleaner.
STORED_ONLY_TOPIC_CONFIG_KEYS = frozenset({
    "segment.jitter.ms", "segment.index.bytes", "flush.messages", "flush.ms", "file.delete.delay.ms",
    "preallocate", "message.format.version", "message.timestamp.type", "message.timestamp.difference.max.ms",
    "leader.replication.throttled.replicas", "follower.replication.throttled.replicas",
    "message.downconversion.enable", "max.compaction.lag.ms",
})

# Keys a topic may override (Kafka's topic-level names).
TOPIC_CONFIG_KEYS = frozenset(TOPIC_CONFIG_SYNONYMS) | STORED_ONLY_TOPIC_CONFIG_KEYS

BROKER_DEFAULTS: dict[str, str] = {
    "num.partitions": "1",
    "default.replication.factor": "1",
    "min.insync.replicas": "1",
    "log.segment.bytes": str(1024 * 1024 * 1024),
    "log.index.interval.bytes": "4096",
    "message.max.bytes": "1048588",
    "log.retention.hours": "168",
    "log.retention.bytes": "-1",
    # How often every log is checked against its retention.ms, retention.bytes and log start offset.
    "log.retention.check.interval.ms": "300000",
    "log.roll.hours": "168",
    "log.cleanup.policy": "delete",
    # The log cleaner actor (actors/log_cleaner.py), one per broker as Kafka's one cleaner thread:
    # whether it runs, how long it waits when no log qualifies, its offset map's memory (24 bytes
    # a key at a load factor of 0.9), and the defaults of the topics' cleaner keys.
    "log.cleaner.enable": "true",
    "log.cleaner.backoff.ms": "15000",
    "log.cleaner.dedupe.buffer.size": str(128 * 1024 * 1024),
    "log.cleaner.io.max.bytes.per.second": "1.7976931348623157E308",  # Kafka's Double.MaxValue: no throttle
    "log.cleaner.min.cleanable.ratio": "0.5",
    "log.cleaner.min.compaction.lag.ms": "0",
    "log.cleaner.delete.retention.ms": "86400000",
    # Kafka's default: a batch is stored with the codec its producer chose (no recompression).
    "compression.type": "producer",
    # Metadata for an unknown topic, from a client that allows it, creates the topic with
    # num.partitions and default.replication.factor (broker/auto_create.py).
    "auto.create.topics.enable": "true",
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
    "offsets.topic.segment.bytes": str(100 * 1024 * 1024),
    # Smaller than Kafka's 1000: bounds how many delayed requests one broker parks before it
    # answers new ones at once with what it has (Kafka's purgatories are unbounded).
    "raykafka.purgatory.max.size": "10000",
    "raykafka.truncation.policy": "leader-epoch",
    # How long a follower's fetch waits for records to carry a newer high watermark before it is
    # answered without them (replica/fetch.py); 0 answers at once, as Kafka does.
    "raykafka.replica.high.watermark.linger.ms": "50",
    # How long a broker keeps a fetcher actor that has no partitions left (Kafka stops an idle
    # fetcher thread at once); the next partitions of that leader reuse it. 0 stops it at once.
    "raykafka.replica.fetcher.idle.keep.ms": "300000",
    # Whether a fetcher hands its broker the appends whose records travel inline over the broker's
    # Unix socket rather than as Ray calls (actors/broker_channel.py); false keeps them on Ray.
    "raykafka.replica.local.channel.enable": "true",
    # Whether a broker takes its followers' Fetches over TCP (its fetch channel) rather than as
    # Ray calls, the answers' records out of band instead of in Ray's shared memory
    # (actors/broker_channel.py); false keeps every Fetch on Ray.
    "raykafka.replica.fetch.channel.enable": "true",
    # Whether the broker's processes (the broker, its fetchers and its log cleaner) have glibc's
    # malloc keep freed memory for the next buffer rather than hand it back to the kernel
    # (actors/process_memory.py); false leaves glibc's defaults.
    "raykafka.process.keep.freed.memory.enable": "true",
}

# Broker keys that have no value unless set (Kafka's null defaults), and broker keys whose default
# lives with the code that reads them: controller.py's CONTROLLER_DEFAULTS, broker_lifecycle.py's
# LIFECYCLE_DEFAULTS, group_config.py's GROUP_COORDINATOR_DEFAULTS (test_broker_config_keys checks
# that each of those is listed here), and the listener keys the Ray shells read (wire/listeners.py).
BROKER_KEYS_WITHOUT_DEFAULT = frozenset({
    "log.retention.ms", "log.retention.minutes", "log.roll.ms",
    "broker.session.timeout.ms", "broker.heartbeat.interval.ms", "leader.imbalance.check.interval.seconds",
    "leader.imbalance.per.broker.percentage", "raykafka.controller.queue.size.max",
    "controller.socket.timeout.ms",
    "controlled.shutdown.max.retries", "controlled.shutdown.retry.backoff.ms",
    "raykafka.registration.retry.backoff.ms",
    "group.min.session.timeout.ms", "group.max.session.timeout.ms", "group.initial.rebalance.delay.ms",
    "group.max.size", "offsets.retention.minutes", "offsets.retention.check.interval.ms",
    "offsets.commit.timeout.ms", "offset.metadata.max.bytes", "raykafka.group.new.member.join.timeout.ms",
    "listeners", "advertised.listeners", "listener.security.protocol.map", "socket.request.max.bytes",
})

# The broker keys of the topic keys raykafka stores but does not apply, in Kafka's synonym order
# (DynamicBrokerConfig.brokerConfigSynonyms), each with Kafka 2.4's default (None: none of its own;
# log.flush.interval.ms falls back to log.flush.scheduler.interval.ms). A broker accepts them,
# checked as their topic key, and DescribeConfigs reports them as the topic's synonyms.
STORED_ONLY_BROKER_SYNONYMS: dict[str, tuple[tuple[str, str | None], ...]] = {
    "segment.jitter.ms": (("log.roll.jitter.ms", None), ("log.roll.jitter.hours", "0")),
    "segment.index.bytes": (("log.index.size.max.bytes", "10485760"),),
    "flush.messages": (("log.flush.interval.messages", str(2 ** 63 - 1)),),
    "flush.ms": (("log.flush.interval.ms", None), ("log.flush.scheduler.interval.ms", str(2 ** 63 - 1))),
    "file.delete.delay.ms": (("log.segment.delete.delay.ms", "60000"),),
    "preallocate": (("log.preallocate", "false"),),
    "message.format.version": (("log.message.format.version", "2.4-IV1"),),
    "message.timestamp.type": (("log.message.timestamp.type", "CreateTime"),),
    "message.timestamp.difference.max.ms": (("log.message.timestamp.difference.max.ms", str(2 ** 63 - 1)),),
    "message.downconversion.enable": (("log.message.downconversion.enable", "true"),),
    "max.compaction.lag.ms": (("log.cleaner.max.compaction.lag.ms", str(2 ** 63 - 1)),),
}

BROKER_CONFIG_KEYS = (frozenset(BROKER_DEFAULTS) | BROKER_KEYS_WITHOUT_DEFAULT
                      | {key for chain in STORED_ONLY_BROKER_SYNONYMS.values() for key, _ in chain})


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


def unknown_key_message(kind: str, key: str, known: frozenset[str] | set[str]) -> str:
    """``Unknown <kind> config: 'key'`` and the nearest known key, if one is near."""
    nearest = difflib.get_close_matches(key, sorted(known), n=1)
    return f"Unknown {kind} config: {key!r}" + (f" (did you mean {nearest[0]!r}?)" if nearest else "")


def check_broker_config_keys(overrides: Mapping[str, object]) -> None:
    """Refuse a key the broker does not know with ``INVALID_CONFIG`` naming it; a topic key gets
    the name of its broker key."""
    for key in map(str, overrides):
        if key in BROKER_CONFIG_KEYS:
            continue
        synonym = TOPIC_CONFIG_SYNONYMS.get(key)
        if synonym is not None:
            raise KafkaProtocolError(ErrorCode.INVALID_CONFIG, (
                f"Unknown broker config: {key!r} is a topic config; the broker's default for it is "
                f"{' / '.join(synonym.broker_keys)}"))
        raise KafkaProtocolError(ErrorCode.INVALID_CONFIG, unknown_key_message("broker", key, BROKER_CONFIG_KEYS))


class TopicConfigValue(NamedTuple):
    """A topic key's effective value and where it came from: ``source`` is ``"topic"`` (the topic's
    override), ``"broker"`` (``synonym``, a broker key set in the broker's configuration) or
    ``"default"`` (Kafka's default, or the default of ``synonym`` when one has a default)."""

    value: str
    source: str
    synonym: str | None


def synonym_value(broker_key: str, raw: str) -> str:
    """A broker key's value in its topic key's unit (log.retention.hours scaled to milliseconds)."""
    scale = _SYNONYM_SCALE.get(broker_key)
    if scale is None:
        return str(raw)
    number = _parse_int(broker_key, raw, None) * scale
    return "-1" if number < 0 else str(number)  # Kafka: any negative retention is "unlimited"


def effective_topic_config(broker_overrides: Mapping[str, object],
                           topic_overrides: Mapping[str, object]) -> dict[str, TopicConfigValue]:
    """Each topic key's value: the topic's override, else the first of its broker keys set in
    ``broker_overrides``, else that broker key's default, else Kafka's topic default."""
    result = {}
    for key, synonym in TOPIC_CONFIG_SYNONYMS.items():
        if key in topic_overrides:
            result[key] = TopicConfigValue(str(topic_overrides[key]), "topic", None)
            continue
        for source, values in (("broker", broker_overrides), ("default", BROKER_DEFAULTS)):
            broker_key = next((k for k in synonym.broker_keys if k in values), None)
            if broker_key is not None:
                raw = values[broker_key]
                raw = str(raw).lower() if isinstance(raw, bool) else str(raw)
                result[key] = TopicConfigValue(synonym_value(broker_key, raw), source, broker_key)
                break
        else:
            result[key] = TopicConfigValue(synonym.default, "default", None)
    return result


class KafkaConfig:
    """Kafka-style properties over a defaults table. Values are strings; getters parse them.

    ``KafkaConfig(overrides)`` is a broker's configuration: every key must be a broker key
    (``check_broker_config_keys``). ``for_topic`` gives a topic's, with the topic keys."""

    __slots__ = ("_values", "_overrides")

    def __init__(self, overrides: Mapping[str, object] | None = None,
                 defaults: Mapping[str, str] = BROKER_DEFAULTS) -> None:
        overrides = {str(k): str(v).lower() if isinstance(v, bool) else str(v) for k, v in (overrides or {}).items()}
        if defaults is BROKER_DEFAULTS:
            check_broker_config_keys(overrides)
        self._values = {**defaults, **overrides}
        self._overrides = overrides  # the keys set explicitly (Kafka's STATIC_BROKER_CONFIG)

    def get_str(self, key: str) -> str:
        return self._values[key]

    def get_int(self, key: str, minimum: int | None = 0) -> int:
        return _parse_int(key, self._values[key], minimum)

    def get_bool(self, key: str) -> bool:
        return _parse_bool(key, self._values[key])

    def with_overrides(self, overrides: Mapping[str, object]) -> "KafkaConfig":
        """These keys over this configuration, unchecked (a module's own defaults); ``overrides``
        still names only the keys set explicitly in the broker's configuration."""
        layered = KafkaConfig(overrides, defaults=self._values)
        layered._overrides = dict(self._overrides)
        return layered

    def for_topic(self, topic_overrides: Mapping[str, object]) -> "KafkaConfig":
        """A topic's configuration: every topic key at its effective value over this broker's keys."""
        effective = effective_topic_config(self._overrides, topic_overrides)
        return self.with_overrides({key: entry.value for key, entry in effective.items()})

    def as_dict(self) -> dict[str, str]:
        return dict(self._values)

    def overrides(self) -> dict[str, str]:
        """The keys set explicitly, as given."""
        return dict(self._overrides)

    def __contains__(self, key: str) -> bool:
        return key in self._values
