"""The group coordinator's configuration: Kafka's keys and Kafka 2.4's defaults.

The broker's ``KafkaConfig`` does not list these keys, so ``GroupConfig.from_config`` lays the
broker's values over ``GROUP_COORDINATOR_DEFAULTS``: a broker configured with
``offsets.topic.num.partitions=3`` gets 3, one that says nothing gets Kafka's 50.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from actors.core.config import KafkaConfig
from actors.core.errors import ErrorCode, KafkaProtocolError

GROUP_COORDINATOR_DEFAULTS: dict[str, str] = {
    "group.min.session.timeout.ms": "6000",
    "group.max.session.timeout.ms": "1800000",
    "group.initial.rebalance.delay.ms": "3000",
    "group.max.size": "2147483647",
    "offsets.topic.num.partitions": "50",
    "offsets.retention.minutes": "10080",
    "offsets.retention.check.interval.ms": "600000",
    "offsets.commit.timeout.ms": "5000",
    "offset.metadata.max.bytes": "4096",
    # Kafka's constant GroupCoordinator.NewMemberJoinTimeoutMs (5 minutes): how long a member that
    # joined this rebalance may wait in JoinGroup before it is dropped.
    "raykafka.group.new.member.join.timeout.ms": "300000",
    # Bounds the OffsetCommits waiting for their __consumer_offsets append; at the limit a new
    # commit is answered COORDINATOR_NOT_AVAILABLE (retriable) instead of being parked.
    "raykafka.purgatory.max.size": "10000",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupConfig:
    group_min_session_timeout_ms: int = 6000
    group_max_session_timeout_ms: int = 1800000
    group_initial_rebalance_delay_ms: int = 3000
    group_max_size: int = 2147483647
    offsets_topic_num_partitions: int = 50
    offsets_retention_ms: int = 10080 * 60 * 1000
    offsets_retention_check_interval_ms: int = 600000
    offset_commit_timeout_ms: int = 5000
    offset_metadata_max_bytes: int = 4096
    new_member_join_timeout_ms: int = 300000
    pending_commits_max: int = 10000

    @staticmethod
    def from_config(config: KafkaConfig | Mapping[str, object] | None = None) -> GroupConfig:
        values = config.as_dict() if isinstance(config, KafkaConfig) else dict(config or {})
        merged = KafkaConfig(values, defaults=GROUP_COORDINATOR_DEFAULTS)
        result = GroupConfig(
            group_min_session_timeout_ms=merged.get_int("group.min.session.timeout.ms"),
            group_max_session_timeout_ms=merged.get_int("group.max.session.timeout.ms"),
            group_initial_rebalance_delay_ms=merged.get_int("group.initial.rebalance.delay.ms"),
            group_max_size=merged.get_int("group.max.size", minimum=1),
            offsets_topic_num_partitions=merged.get_int("offsets.topic.num.partitions", minimum=1),
            offsets_retention_ms=merged.get_int("offsets.retention.minutes", minimum=1) * 60 * 1000,
            offsets_retention_check_interval_ms=merged.get_int("offsets.retention.check.interval.ms", minimum=1),
            offset_commit_timeout_ms=merged.get_int("offsets.commit.timeout.ms", minimum=1),
            offset_metadata_max_bytes=merged.get_int("offset.metadata.max.bytes"),
            new_member_join_timeout_ms=merged.get_int("raykafka.group.new.member.join.timeout.ms", minimum=1),
            pending_commits_max=merged.get_int("raykafka.purgatory.max.size", minimum=1),
        )
        if result.group_min_session_timeout_ms > result.group_max_session_timeout_ms:
            raise KafkaProtocolError(ErrorCode.INVALID_CONFIG, "group.min.session.timeout.ms exceeds "
                                                               "group.max.session.timeout.ms")
        return result
