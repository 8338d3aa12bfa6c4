"""A topic's configuration overrides: which keys exist, which values are legal, and how Kafka's
IncrementalAlterConfigs operations change them.

Theory of operation. Kafka validates a topic's overrides with ``LogConfig.validate`` wherever they
are written: at CreateTopics, and at AlterConfigs on the broker that receives the request.
raykafka checks twice too: the broker that receives IncrementalAlterConfigs checks each operation
on its own (``check_alter_resource``, so a bad key or value is refused without a trip to the
controller), and the controller checks the merged result (``merge_alter_ops``), which is what
will be stored. Every failure is a ``KafkaProtocolError`` with Kafka's code: an unknown key or a
bad value ``INVALID_CONFIG``; an operation raykafka cannot do, or a key named twice,
``INVALID_REQUEST``.
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from actors.core.config import (
    STORED_ONLY_BROKER_SYNONYMS, TOPIC_CONFIG_KEYS, TOPIC_CONFIG_SYNONYMS, KafkaConfig, effective_topic_config,
    synonym_value,
)
from actors.core.errors import ErrorCode, KafkaProtocolError
from actors.core.log.log_config import LogConfig
from actors.core.messages.incremental_alter_configs import OP_DELETE, OP_SET, AlterableConfig

# Kafka 2.4's LogConfig.configDef for the numeric keys: (type, lowest legal value; None: no bound).
# segment.bytes' bound, 14, is LegacyRecord.RECORD_OVERHEAD_V0.
_NUMBERS = {
    "segment.bytes": ("INT", 14), "segment.ms": ("LONG", 1), "segment.jitter.ms": ("LONG", 0),
    "segment.index.bytes": ("INT", 0), "flush.messages": ("LONG", 0), "flush.ms": ("LONG", 0),
    "retention.bytes": ("LONG", None), "retention.ms": ("LONG", -1), "max.message.bytes": ("INT", 0),
    "index.interval.bytes": ("INT", 0), "max.compaction.lag.ms": ("LONG", 1), "file.delete.delay.ms": ("LONG", 0),
    "min.insync.replicas": ("INT", 1), "message.timestamp.difference.max.ms": ("LONG", 0),
    "min.compaction.lag.ms": ("LONG", 0), "delete.retention.ms": ("LONG", 0),
}
_TYPE_BOUNDS = {"INT": (-2 ** 31, 2 ** 31 - 1), "LONG": (-2 ** 63, 2 ** 63 - 1)}
_BOOLEANS = frozenset({"unclean.leader.election.enable", "preallocate", "message.downconversion.enable"})
_CHOICES = {
    "compression.type": ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"),
    "message.timestamp.type": ("CreateTime", "LogAppendTime"),
}
_CLEANUP_POLICIES = frozenset({"delete", "compact"})
_THROTTLED_REPLICAS = frozenset({"leader.replication.throttled.replicas", "follower.replication.throttled.replicas"})
_THROTTLED_REPLICA = re.compile(r"([0-9]+:[0-9]+)?")
# Kafka 2.4's ApiVersion names: each short version, and each with its inter-broker sub-versions.
_SUB_VERSIONS = {"0.8.0": 0, "0.8.1": 0, "0.8.2": 0, "0.9.0": 0, "0.10.0": 2, "0.10.1": 3, "0.10.2": 1,
                 "0.11.0": 3, "1.0": 1, "1.1": 1, "2.0": 2, "2.1": 3, "2.2": 2, "2.3": 2, "2.4": 2}
MESSAGE_FORMAT_VERSIONS = frozenset(
    [short for short in _SUB_VERSIONS]
    + [f"{short}-IV{i}" for short, count in _SUB_VERSIONS.items() for i in range(count)])


def _invalid(message: str) -> KafkaProtocolError:
    return KafkaProtocolError(ErrorCode.INVALID_CONFIG, message)


def _check_value(key: str, value: str) -> None:
    """One key's value as Kafka's ConfigDef parses and validates it."""
    text = value.strip()
    if key in _NUMBERS:
        kind, minimum = _NUMBERS[key]
        low, high = _TYPE_BOUNDS[kind]
        try:
            number = int(text)
        except ValueError:
            raise _invalid(f"Invalid value {value} for configuration {key}: Not a number of type {kind}") from None
        if not low <= number <= high:
            raise _invalid(f"Invalid value {value} for configuration {key}: Not a number of type {kind}")
        if minimum is not None and number < minimum:
            raise _invalid(f"Invalid value {value} for configuration {key}: Value must be at least {minimum}")
    elif key in _BOOLEANS:
        if text.lower() not in ("true", "false"):
            raise _invalid(f"Invalid value {value} for configuration {key}: Expected value to be either true or false")
    elif key in _CHOICES:
        if text not in _CHOICES[key]:
            raise _invalid(f"Invalid value {value} for configuration {key}: String must be one of: "
                           f"{', '.join(_CHOICES[key])}")
    elif key == "cleanup.policy":
        policies = [p.strip() for p in text.split(",")]
        if not policies or any(p not in _CLEANUP_POLICIES for p in policies):
            raise _invalid(f"Invalid value {value} for configuration cleanup.policy: "
                           f"String must be one of: {', '.join(sorted(_CLEANUP_POLICIES))}")
    elif key in _THROTTLED_REPLICAS:
        entries = [e.strip() for e in text.split(",")]
        if not (all(_THROTTLED_REPLICA.fullmatch(e) for e in entries) or "".join(entries) == "*"):
            raise _invalid(f"Invalid value {value} for configuration {key}: {key} must be the literal '*' or a "
                           f"list of replicas in the following format: [partitionId]:[brokerId],...")
    elif key == "message.format.version":
        segments = text.split(".")
        if ".".join(segments[:3 if text.startswith("0.") else 2]) not in MESSAGE_FORMAT_VERSIONS:
            raise _invalid(f"Invalid value {value} for configuration message.format.version: "
                           f"Version `{value}` is not a valid version")


def validate_topic_config(config: Mapping[str, str], broker_overrides: Mapping[str, str] | None = None) -> None:
    """Raise ``INVALID_CONFIG`` for an unknown key, an illegal value, or ``min.compaction.lag.ms``
    above ``max.compaction.lag.ms``, as Kafka's ``LogConfig.validate``: a lag the topic does not
    set is the broker's (``broker_overrides``' log.cleaner.*.compaction.lag.ms, as Kafka's
    controller checks against its log config since KRaft; Kafka 2.4 took LogConfig's defaults)."""
    for key in config:
        if key not in TOPIC_CONFIG_KEYS:
            raise _invalid(f"Unknown topic config name: {key}")
    # The log's own checks first: segment.bytes' bounds and the integer keys, in its words.
    LogConfig.from_properties({k: v for k, v in config.items() if k in TOPIC_CONFIG_SYNONYMS})
    for key, value in config.items():
        _check_value(key, str(value))
    # LogConfig.validateValues: the parsed values, a key not set taking LogConfig's default.
    broker = broker_overrides or {}
    min_lag = int(str(config.get("min.compaction.lag.ms", broker.get("log.cleaner.min.compaction.lag.ms", 0))).strip())
    max_lag = int(str(config.get("max.compaction.lag.ms",
                                 broker.get("log.cleaner.max.compaction.lag.ms", 2 ** 63 - 1))).strip())
    if min_lag > max_lag:
        raise _invalid(f"conflict topic config setting min.compaction.lag.ms ({min_lag}) > "
                       f"max.compaction.lag.ms ({max_lag})")


def check_broker_config(overrides: Mapping[str, object]) -> KafkaConfig:
    """A broker configuration checked before any broker starts with it: every key a broker key
    (else ``INVALID_CONFIG`` naming it), and the topic defaults it sets (``log.segment.bytes``,
    ``log.retention.hours``, ...) legal values for their topic keys."""
    config = KafkaConfig(overrides)
    effective = effective_topic_config(config.overrides(), {})
    for key, entry in effective.items():
        try:
            validate_topic_config({key: entry.value})
        except KafkaProtocolError as exc:
            raise _invalid(f"{exc.message} (set by the broker's {entry.synonym}={overrides[entry.synonym]})"
                           if entry.source == "broker" else exc.message) from None
    for key, chain in STORED_ONLY_BROKER_SYNONYMS.items():
        for broker_key in (n for n, _ in chain if n in config.overrides()):
            raw = config.overrides()[broker_key]
            try:
                validate_topic_config({key: synonym_value(broker_key, raw)})
            except KafkaProtocolError as exc:
                raise _invalid(f"{exc.message} (set by the broker's {broker_key}={raw})") from None
    # Kafka's LogManager.validateBrokerLogConfigValues: the broker's own lags, as a topic's.
    validate_topic_config({}, config.overrides())
    return config


def set_or_delete_ops(ops: Iterable[AlterableConfig], why_not_a_list: str) -> Iterable[AlterableConfig]:
    """Each operation, once it is known to be a SET or DELETE of a key no earlier operation named
    (INVALID_REQUEST otherwise, with ``why_not_a_list`` saying why APPEND and SUBTRACT are refused)."""
    seen: set[str] = set()
    for op in ops:
        if op.name in seen:
            raise KafkaProtocolError(ErrorCode.INVALID_REQUEST, f"Error due to duplicate config keys: {op.name}")
        seen.add(op.name)
        if op.config_operation not in (OP_SET, OP_DELETE):
            raise KafkaProtocolError(ErrorCode.INVALID_REQUEST,
                                     f"config operation {op.config_operation} on {op.name}: {why_not_a_list}")
        yield op


def check_alter_ops(ops: Iterable[AlterableConfig]) -> None:
    """Each operation alone: SET or DELETE of a known key, SET with a legal value, no key twice."""
    for op in set_or_delete_ops(ops, "only SET (0) and DELETE (1) are supported for topic configs"):
        if op.name not in TOPIC_CONFIG_KEYS:
            raise _invalid(f"Unknown topic config name: {op.name}")
        if op.config_operation == OP_SET:
            if op.value is None:
                raise _invalid(f"Null value not supported for topic config {op.name}")
            validate_topic_config({op.name: op.value})


def merge_alter_ops(current: Mapping[str, str], ops: Iterable[AlterableConfig],
                    broker_overrides: Mapping[str, str] | None = None) -> dict[str, str]:
    """The overrides after ``ops`` (checked alone and merged), as Kafka's ``prepareIncrementalConfigs``;
    the result is checked against the brokers' configured keys ``broker_overrides``."""
    ops = tuple(ops)
    check_alter_ops(ops)
    merged = dict(current)
    for op in ops:
        if op.config_operation == OP_SET:
            merged[op.name] = str(op.value)
        else:
            merged.pop(op.name, None)
    validate_topic_config(merged, broker_overrides)
    return merged


__all__ = ["check_alter_ops", "check_broker_config", "merge_alter_ops", "validate_topic_config"]
