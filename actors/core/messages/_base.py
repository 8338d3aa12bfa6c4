"""The one decorator every message type uses: frozen, slotted, keyword-only dataclasses.

Collections inside messages are tuples, so a message is immutable all the way down and can be
shared between a core's state and an in-flight Ray call without defensive copies. Record payloads
(``records`` fields) are ``bytes``-like: ``bytes``, ``memoryview`` or a numpy ``uint8`` array
that Ray hands over from shared memory.
"""
from __future__ import annotations

from dataclasses import dataclass

message = dataclass(frozen=True, slots=True, kw_only=True)

# Kafka's sentinels.
NO_LEADER = -1
NO_EPOCH = -1
CONSUMER_REPLICA_ID = -1
