"""The API versions raykafka's listeners serve, which ApiVersions advertises.

A client uses, for each API, the highest version both sides support, so a range here must only
hold versions whose every field the translation honours (or that a broker may ignore, as Kafka's
own broker ignores them when a feature is off). The ranges are those librdkafka 2.x,
kafka-python and aiokafka negotiate, capped where a newer version needs what raykafka lacks:
Fetch v12+ (KIP-405 tiered storage and diverging-epoch fields, then topic ids from v13),
Metadata v10+ (topic ids), ListOffsets v6+ (flexible, then max-timestamp lookups), OffsetFetch
v8+ (several groups per request), DeleteTopics v5+ and CreateTopics v6+ (topic ids and newer
semantics). kio has no schemas for versions Kafka 4 removed, so ranges start no lower than kio's.
"""
from __future__ import annotations

API_VERSIONS_KEY = 18

# API key -> (min version, max version).
SUPPORTED_VERSIONS: dict[int, tuple[int, int]] = {
    0: (3, 8),    # Produce (v3 is the first carrying v2 record batches)
    1: (4, 11),   # Fetch
    2: (1, 5),    # ListOffsets
    3: (0, 9),    # Metadata
    8: (2, 8),    # OffsetCommit
    9: (1, 7),    # OffsetFetch
    10: (0, 3),   # FindCoordinator
    11: (0, 7),   # JoinGroup
    12: (0, 4),   # Heartbeat
    13: (0, 4),   # LeaveGroup
    14: (0, 5),   # SyncGroup
    15: (0, 5),   # DescribeGroups
    16: (0, 4),   # ListGroups
    18: (0, 3),   # ApiVersions
    19: (2, 5),   # CreateTopics
    20: (1, 4),   # DeleteTopics
    22: (0, 4),   # InitProducerId (answers that idempotence is not supported)
    23: (2, 4),   # OffsetForLeaderEpoch
    32: (1, 4),   # DescribeConfigs (read-only)
}
