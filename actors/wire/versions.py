"""The API versions raykafka's listeners serve, which ApiVersions advertises.

A client uses, for each API, the highest version both sides support, so a range here must only
hold versions whose every field the translation honours (or that a broker may ignore, as Kafka's
own broker ignores them when a feature is off). The ranges are those librdkafka 2.x,
kafka-python and aiokafka negotiate, capped where a newer version needs what raykafka lacks:
Fetch v12+ (KIP-405 tiered storage and diverging-epoch fields, then topic ids from v13),
Metadata v10+ (topic ids), ListOffsets v6+ (flexible, then max-timestamp lookups), OffsetFetch
v8+ (several groups per request), DeleteTopics v5+ and CreateTopics v6+ (topic ids and newer
semantics). kio has no schemas for versions Kafka 4 removed, so ranges start no lower than kio's.

Flexible versions (KIP-482, tagged fields) are not advertised, ApiVersions v3 aside: kio 0.6.5
refuses a request carrying a tagged field its schema does not name (KeyError "Unknown tagged
field tag"), where Kafka skips it, and librdkafka 2.x sends such fields (seen on Metadata v9).
Every client here speaks the non-flexible versions, which carry the same information.

SaslHandshake and SaslAuthenticate are listed although no listener speaks SASL: Kafka lists every
API on every listener. A client configured for SASL against a PLAINTEXT listener then sends its
SaslHandshake and gets Kafka's ILLEGAL_SASL_STATE answer (librdkafka reports "SASL PLAIN mechanism
handshake failed"), where an unlisted API got a closed connection from the listener, or, from
librdkafka, "SASL Handshake not supported by broker", which names the wrong cause.
"""
from __future__ import annotations

API_VERSIONS_KEY = 18

# API key -> (min version, max version).
SUPPORTED_VERSIONS: dict[int, tuple[int, int]] = {
    0: (3, 8),    # Produce (v3 is the first carrying v2 record batches)
    1: (4, 11),   # Fetch
    2: (1, 5),    # ListOffsets
    3: (0, 8),    # Metadata
    8: (2, 7),    # OffsetCommit
    9: (1, 5),    # OffsetFetch
    10: (0, 2),   # FindCoordinator
    11: (0, 5),   # JoinGroup
    12: (0, 3),   # Heartbeat
    13: (0, 3),   # LeaveGroup
    14: (0, 3),   # SyncGroup
    15: (0, 4),   # DescribeGroups
    16: (0, 2),   # ListGroups
    17: (0, 1),   # SaslHandshake (answered ILLEGAL_SASL_STATE: listeners are PLAINTEXT, as Kafka answers there)
    18: (0, 3),   # ApiVersions (v3 is flexible; clients send it first, KIP-511)
    19: (2, 4),   # CreateTopics
    20: (1, 3),   # DeleteTopics
    22: (0, 1),   # InitProducerId (idempotent producers; a transactional id is refused)
    23: (2, 3),   # OffsetForLeaderEpoch
    32: (1, 3),   # DescribeConfigs (read-only)
    36: (0, 1),   # SaslAuthenticate (answered ILLEGAL_SASL_STATE, as SaslHandshake)
}
