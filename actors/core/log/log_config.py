"""The topic-level settings a partition's log obeys: Kafka's ``LogConfig``.

Built from Kafka's own topic configuration keys (``segment.bytes``, ``index.interval.bytes``,
``max.message.bytes``) with Kafka's defaults and bounds; an out-of-range or non-integer value is
refused with ``INVALID_CONFIG``, so a bad CreateTopics config never reaches a log.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from actors.core.errors import ErrorCode, KafkaProtocolError
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
}


@dataclass(frozen=True, slots=True)
class LogConfig:
    """The topic-level settings the log obeys, with Kafka's defaults."""

    segment_bytes: int = 1073741824  # segment.bytes
    index_interval_bytes: int = 4096  # index.interval.bytes
    max_message_bytes: int = 1048588  # max.message.bytes: the largest batch accepted
    # cleanup.policy, as given ("delete", "compact" or both, comma-separated); already checked
    # by topic_configs.validate_topic_config before it reaches a log.
    cleanup_policy: str = "delete"

    @property
    def compact(self) -> bool:
        """Kafka's ``LogConfig.compact``: a compacted topic refuses records without a key."""
        return "compact" in (policy.strip() for policy in self.cleanup_policy.split(","))

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
        if "cleanup.policy" in properties:
            values["cleanup_policy"] = str(properties["cleanup.policy"])
        return cls(**values)
