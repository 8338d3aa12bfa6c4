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

from collections.abc import Iterable, Mapping

from actors.core.config import TOPIC_CONFIG_KEYS, KafkaConfig, effective_topic_config
from actors.core.errors import ErrorCode, KafkaProtocolError
from actors.core.log.log_config import LogConfig
from actors.core.messages.incremental_alter_configs import OP_DELETE, OP_SET, AlterableConfig

# Kafka's lower bounds for the integer keys (LogConfig's validators); -1 means "no limit" for the
# retention keys.
_INT_MINIMUMS = {"segment.bytes": 1, "max.message.bytes": 0, "index.interval.bytes": 0,
                 "min.insync.replicas": 1, "retention.ms": -1, "retention.bytes": None,
                 "segment.ms": 1, "min.compaction.lag.ms": 0, "delete.retention.ms": 0}
_CLEANUP_POLICIES = frozenset({"delete", "compact"})


def _invalid(message: str) -> KafkaProtocolError:
    return KafkaProtocolError(ErrorCode.INVALID_CONFIG, message)


def validate_topic_config(config: Mapping[str, str]) -> None:
    """Raise ``INVALID_CONFIG`` for an unknown key or an illegal value, as ``LogConfig.validate``."""
    for key in config:
        if key not in TOPIC_CONFIG_KEYS:
            raise _invalid(f"Unknown topic config name: {key}")
    checked = KafkaConfig({k: v for k, v in config.items()}, defaults={})
    for key, minimum in _INT_MINIMUMS.items():
        if key in config:
            checked.get_int(key, minimum=minimum)
    if "unclean.leader.election.enable" in config:
        checked.get_bool("unclean.leader.election.enable")
    if "cleanup.policy" in config:
        policies = [p.strip() for p in str(config["cleanup.policy"]).split(",")]
        if not policies or any(p not in _CLEANUP_POLICIES for p in policies):
            raise _invalid(f"Invalid value {config['cleanup.policy']} for configuration cleanup.policy: "
                           f"String must be one of: {', '.join(sorted(_CLEANUP_POLICIES))}")
    LogConfig.from_properties(config)  # segment.bytes' own bounds, and the other log keys


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
    return config


def check_alter_ops(ops: Iterable[AlterableConfig]) -> None:
    """Each operation alone: SET or DELETE of a known key, SET with a legal value, no key twice."""
    seen: set[str] = set()
    for op in ops:
        if op.name in seen:
            raise KafkaProtocolError(ErrorCode.INVALID_REQUEST, f"Error due to duplicate config keys: {op.name}")
        seen.add(op.name)
        if op.config_operation not in (OP_SET, OP_DELETE):
            raise KafkaProtocolError(ErrorCode.INVALID_REQUEST,
                                     f"config operation {op.config_operation} on {op.name}: only SET (0) "
                                     f"and DELETE (1) are supported for topic configs")
        if op.name not in TOPIC_CONFIG_KEYS:
            raise _invalid(f"Unknown topic config name: {op.name}")
        if op.config_operation == OP_SET:
            if op.value is None:
                raise _invalid(f"Null value not supported for topic config {op.name}")
            validate_topic_config({op.name: op.value})


def merge_alter_ops(current: Mapping[str, str], ops: Iterable[AlterableConfig]) -> dict[str, str]:
    """The overrides after ``ops`` (checked alone and merged), as Kafka's ``prepareIncrementalConfigs``."""
    ops = tuple(ops)
    check_alter_ops(ops)
    merged = dict(current)
    for op in ops:
        if op.config_operation == OP_SET:
            merged[op.name] = str(op.value)
        else:
            merged.pop(op.name, None)
    validate_topic_config(merged)
    return merged


__all__ = ["check_alter_ops", "check_broker_config", "merge_alter_ops", "validate_topic_config"]
