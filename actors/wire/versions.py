"""The API versions raykafka's listeners serve, which ApiVersions advertises: each API's range is
its ``versions`` in the API table (actors/core/apis.py); here is why the ranges are what they are.

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

from actors.core.apis import WIRE_VERSIONS

API_VERSIONS_KEY = 18

# API key -> (min version, max version): each API's ``versions`` in the API table.
SUPPORTED_VERSIONS: dict[int, tuple[int, int]] = dict(WIRE_VERSIONS)
