"""Dynamic broker configs: the broker keys IncrementalAlterConfigs and AlterConfigs may set on a
broker resource (one broker, by its id, or every broker, the empty name: Kafka's ``<default>``).

Theory of operation. Kafka lets an admin set some broker keys at runtime (Kafka's
``DynamicBrokerConfig``: the replication throttles kafka-reassign-partitions sets and clears, the log
cleaner's keys, the log defaults). A broker checks each operation here (``check_broker_alter_ops``)
and forwards the resource to the controller, which merges it (``merge_broker_alter_ops``) and writes
the result to its metadata store (Kafka 2.4's ``/config/brokers/<id>`` and ``/config/brokers/<default>``);
DescribeConfigs reads it from there and reports each key with Kafka's precedence: the broker's own
dynamic value (``DYNAMIC_BROKER_CONFIG``), the cluster-wide one (``DYNAMIC_DEFAULT_BROKER_CONFIG``),
the broker's configuration (``STATIC_BROKER_CONFIG``), the default (``DEFAULT_CONFIG``).

raykafka stores and reports these keys; its brokers do not yet apply a changed value at runtime
(the replication throttles have no mechanism at all: raykafka has no replication quotas). The
README lists them. A key Kafka cannot change at runtime, or one raykafka does not know, is
``INVALID_CONFIG``; APPEND and SUBTRACT are ``INVALID_REQUEST`` (no list-valued key is dynamic here).
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping

from actors.core.config import KafkaConfig
from actors.core.errors import ErrorCode, KafkaProtocolError
from actors.core.messages.incremental_alter_configs import OP_SET, AlterableConfig
from actors.core.topic_configs import set_or_delete_ops

RESOURCE_BROKER = 4  # Kafka's ConfigResource.Type.BROKER
DEFAULT_ENTITY = ""  # every broker: kafka-configs --entity-default
_LONG_MAX = str(2 ** 63 - 1)
# Kafka's dynamic broker keys that raykafka knows, with Kafka's default (None: no default value).
# The three throttles are the ones kafka-reassign-partitions sets with --throttle and --verify clears.
_THROTTLES = {"leader.replication.throttled.rate": _LONG_MAX, "follower.replication.throttled.rate": _LONG_MAX,
              "replica.alter.log.dirs.io.max.bytes.per.second": _LONG_MAX}
_FROM_BROKER_CONFIG = (
    "log.cleaner.backoff.ms", "log.cleaner.dedupe.buffer.size", "log.cleaner.io.max.bytes.per.second",
    "log.cleaner.min.cleanable.ratio", "log.cleaner.min.compaction.lag.ms", "log.cleaner.delete.retention.ms",
    "log.retention.ms", "log.retention.bytes", "log.segment.bytes", "log.roll.ms", "message.max.bytes",
    "min.insync.replicas", "unclean.leader.election.enable", "compression.type", "num.replica.fetchers",
)
_DEFAULTS = KafkaConfig({}).as_dict()
DYNAMIC_BROKER_KEYS: Mapping[str, str | None] = {
    **_THROTTLES, **{key: _DEFAULTS.get(key) for key in _FROM_BROKER_CONFIG}}


def _invalid(message: str) -> KafkaProtocolError:
    return KafkaProtocolError(ErrorCode.INVALID_CONFIG, message)


def check_broker_name(name: str) -> None:
    """The empty name (every broker) or a broker id, as Kafka's ``validateBrokerName``."""
    if name != DEFAULT_ENTITY and not (name.isascii() and name.isdigit()):
        raise KafkaProtocolError(ErrorCode.INVALID_REQUEST, f"Invalid broker name {name}")


def check_broker_alter_ops(name: str, ops: Iterable[AlterableConfig]) -> None:
    """Each operation alone: SET or DELETE of a dynamic broker key, a SET's value of the key's type."""
    check_broker_name(name)
    for op in set_or_delete_ops(ops, "no dynamic broker key is a list"):
        if op.name not in DYNAMIC_BROKER_KEYS:
            raise _invalid(f"Cannot update these configs dynamically: {op.name}")
        if op.config_operation == OP_SET:
            _check_value(op.name, op.value)


def _check_value(key: str, value: str | None) -> None:
    if value is None:
        raise _invalid(f"Null value not supported for broker config {key}")
    default = DYNAMIC_BROKER_KEYS[key]
    try:
        if default in ("true", "false"):
            if value.strip().lower() not in ("true", "false"):
                raise ValueError(value)
        elif default is not None and _is_number(default) and not default.lstrip("-").isdigit():
            float(value.strip())  # a double (log.cleaner.min.cleanable.ratio, the cleaner's io rate)
        elif (default is not None and default.lstrip("-").isdigit()) or key.endswith((".ms", ".bytes")):
            int(value.strip())  # a long or an int, with or without a default (log.retention.ms)
    except ValueError:
        raise _invalid(f"Invalid value {value} for configuration {key}") from None


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def merge_broker_alter_ops(current: Mapping[str, str], name: str, ops: Iterable[AlterableConfig]) -> dict[str, str]:
    """The broker resource's dynamic keys after ``ops`` (checked alone, then merged)."""
    ops = tuple(ops)
    check_broker_alter_ops(name, ops)
    merged = dict(current)
    for op in ops:
        if op.config_operation == OP_SET:
            merged[op.name] = str(op.value).strip()
        else:
            merged.pop(op.name, None)
    return merged


__all__ = ["DEFAULT_ENTITY", "DYNAMIC_BROKER_KEYS", "RESOURCE_BROKER", "check_broker_alter_ops",
           "check_broker_name", "merge_broker_alter_ops"]
