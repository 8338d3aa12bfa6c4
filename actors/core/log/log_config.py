"""The topic-level settings a partition's log obeys: Kafka's ``LogConfig``.

Built from Kafka's own topic configuration keys (``segment.bytes``, ``segment.ms``,
``index.interval.bytes``, ``max.message.bytes``, ``compression.type``, ``cleanup.policy``,
``retention.ms``, ``retention.bytes``, and the cleaner's ``min.cleanable.dirty.ratio``,
``min.compaction.lag.ms``, ``delete.retention.ms``) with Kafka's defaults and bounds; an out-of-range or
non-integer value, or a codec Kafka does not name, is refused with ``INVALID_CONFIG``, so a bad
CreateTopics config never reaches a log.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from actors.core.errors import ErrorCode, KafkaProtocolError
from actors.core.log.compression import PRODUCER, check_broker_compression_type
from actors.core.log.segment import INT32_MAX

__all__ = ["SEGMENT_BYTES_MIN", "LogConfig"]

# Kafka's `segment.bytes` lower bound (LegacyRecord.RECORD_OVERHEAD_V0).
SEGMENT_BYTES_MIN = 14


def _invalid_config(message: str) -> KafkaProtocolError:
    return KafkaProtocolError(ErrorCode.INVALID_CONFIG, message)


# Kafka's topic configuration keys -> LogConfig fields.
_PROPERTY_NAMES = {
    "segment.bytes": "segment_bytes",
    "index.interval.bytes": "index_interval_bytes",
    "max.message.bytes": "max_message_bytes",
    "segment.ms": "segment_ms",
    "retention.ms": "retention_ms",
    "retention.bytes": "retention_bytes",
    "min.compaction.lag.ms": "min_compaction_lag_ms",
    "delete.retention.ms": "delete_retention_ms",
}


@dataclass(frozen=True, slots=True)
class LogConfig:
    """The topic-level settings the log obeys, with Kafka's defaults."""

    segment_bytes: int = 1073741824  # segment.bytes
    index_interval_bytes: int = 4096  # index.interval.bytes
    max_message_bytes: int = 1048588  # max.message.bytes: the largest batch accepted
    # compression.type: the codec the leader stores batches with (``producer``: as sent); one of
    # compression.BROKER_COMPRESSION_TYPES.
    compression_type: str = PRODUCER
    # cleanup.policy, as given ("delete", "compact" or both, comma-separated); already checked
    # by topic_configs.validate_topic_config before it reaches a log.
    cleanup_policy: str = "delete"
    # segment.ms: the active segment rolls when an append's max timestamp is this much later than
    # its first batch's (Kafka's time-based roll; > 0).
    segment_ms: int = 7 * 24 * 3_600_000
    # retention.ms / retention.bytes: whole segments older / beyond this go (retention.py);
    # negative means no limit.
    retention_ms: int = 7 * 24 * 3_600_000
    retention_bytes: int = -1
    # The log cleaner's (cleaner.py): a compacted log is cleaned when its dirty part is more than
    # this share of it; a segment is not cleaned until its newest record is this old; a tombstone
    # is kept this long after the segment holding it was cleaned.
    min_cleanable_dirty_ratio: float = 0.5  # min.cleanable.dirty.ratio
    min_compaction_lag_ms: int = 0  # min.compaction.lag.ms
    delete_retention_ms: int = 86_400_000  # delete.retention.ms

    @property
    def compact(self) -> bool:
        """Kafka's ``LogConfig.compact``: a compacted topic refuses records without a key."""
        return "compact" in self._policies

    @property
    def delete(self) -> bool:
        """Kafka's ``LogConfig.delete``: retention.ms and retention.bytes apply (and DeleteRecords)."""
        return "delete" in self._policies

    @property
    def _policies(self) -> tuple[str, ...]:
        return tuple(policy.strip() for policy in self.cleanup_policy.split(","))

    def __post_init__(self) -> None:
        if not SEGMENT_BYTES_MIN <= self.segment_bytes <= INT32_MAX:
            raise _invalid_config(f"segment.bytes must be in [{SEGMENT_BYTES_MIN}, {INT32_MAX}], "
                                  f"got {self.segment_bytes}")
        if not 0 <= self.index_interval_bytes <= INT32_MAX:
            raise _invalid_config(f"index.interval.bytes must be in [0, {INT32_MAX}], "
                                  f"got {self.index_interval_bytes}")
        if not 0 <= self.max_message_bytes <= INT32_MAX:
            raise _invalid_config(f"max.message.bytes must be in [0, {INT32_MAX}], "
                                  f"got {self.max_message_bytes}")
        if self.segment_ms < 1:
            raise _invalid_config(f"segment.ms must be at least 1, got {self.segment_ms}")
        check_broker_compression_type(self.compression_type)
        if not 0 <= self.min_cleanable_dirty_ratio <= 1:
            raise _invalid_config(f"min.cleanable.dirty.ratio must be in [0, 1], got {self.min_cleanable_dirty_ratio}")
        if self.min_compaction_lag_ms < 0 or self.delete_retention_ms < 0:
            raise _invalid_config(f"min.compaction.lag.ms and delete.retention.ms must be at least 0, got "
                                  f"{self.min_compaction_lag_ms} and {self.delete_retention_ms}")

    @classmethod
    def from_properties(cls, properties: Mapping[str, str]) -> LogConfig:
        """Reads Kafka's keys (string values); other keys are left to their owners."""
        values = {}
        for key, field_name in _PROPERTY_NAMES.items():
            if key not in properties:
                continue
            raw = properties[key]
            try:
                if isinstance(raw, bool) or not isinstance(raw, (str, int)):
                    raise ValueError(raw)
                values[field_name] = int(raw)
            except ValueError:
                raise _invalid_config(f"{key} must be an integer, got {raw!r}") from None
        if "compression.type" in properties:
            values["compression_type"] = str(properties["compression.type"])
        if "min.cleanable.dirty.ratio" in properties:
            raw = properties["min.cleanable.dirty.ratio"]
            try:
                if isinstance(raw, bool) or not isinstance(raw, (str, int, float)):
                    raise ValueError(raw)
                values["min_cleanable_dirty_ratio"] = float(raw)
            except ValueError:
                raise _invalid_config(f"min.cleanable.dirty.ratio must be a number, got {raw!r}") from None
        if "cleanup.policy" in properties:
            values["cleanup_policy"] = str(properties["cleanup.policy"])
        return cls(**values)


# The topic keys a log obeys, read from a topic's KafkaConfig (its overrides over the broker's).
_LOG_KEYS = ("segment.bytes", "index.interval.bytes", "max.message.bytes", "compression.type",
             "segment.ms", "retention.ms", "retention.bytes", "min.cleanable.dirty.ratio",
             "min.compaction.lag.ms", "delete.retention.ms")


# The cleaner's keys: a broker configuration built without the cleaner's defaults has none of them.
_CLEANER_KEYS = ("min.cleanable.dirty.ratio", "min.compaction.lag.ms", "delete.retention.ms")


def log_config_for(config) -> LogConfig:
    """The ``LogConfig`` a topic's ``KafkaConfig`` gives."""
    properties = {key: config.get_str(key) for key in _LOG_KEYS if key not in _CLEANER_KEYS or key in config}
    if "cleanup.policy" in config:  # a topic override; Kafka's default is delete
        properties["cleanup.policy"] = config.get_str("cleanup.policy")
    return LogConfig.from_properties(properties)
