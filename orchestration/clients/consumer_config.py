"""The consumer's configuration: Kafka 2.4's keys and defaults, checked by ``ClientKeys``
(client_config.py): an unknown key is an error naming it."""
from __future__ import annotations

from orchestration.clients.client_config import COMMON_ALIASES, COMMON_NOT_HONOURED, ClientKeys

CONSUMER_DEFAULTS = {
    "auto.offset.reset": "latest",
    "fetch.min.bytes": "1",
    "fetch.max.wait.ms": "500",
    "fetch.max.bytes": "52428800",
    "max.partition.fetch.bytes": "1048576",
    "max.poll.records": "500",
    "request.timeout.ms": "30000",
    "retry.backoff.ms": "100",
    # Group mode (Kafka 2.4's defaults).
    "group.id": "",
    # KIP-345: set, the consumer is a static member; it sends no LeaveGroup when it closes, so a
    # restart within session.timeout.ms takes its old place without a rebalance.
    "group.instance.id": "",
    "client.id": "",
    "enable.auto.commit": "true",
    "auto.commit.interval.ms": "5000",
    "session.timeout.ms": "10000",
    "heartbeat.interval.ms": "3000",
    "max.poll.interval.ms": "300000",
    "partition.assignment.strategy": "range",
    "default.api.timeout.ms": "60000",
    "metadata.max.age.ms": "300000",
}

CONSUMER_KEYS = ClientKeys(
    kind="consumer",
    defaults=CONSUMER_DEFAULTS,
    aliases={**COMMON_ALIASES, "fetch.message.max.bytes": "max.partition.fetch.bytes",
             "fetch.wait.max.ms": "fetch.max.wait.ms"},
    # Kafka's consumer keys this consumer does not implement. isolation.level changes nothing
    # while raykafka has no transactions: every record is committed.
    not_honoured=COMMON_NOT_HONOURED | {
        "key.deserializer", "value.deserializer", "isolation.level", "check.crcs",
        "exclude.internal.topics", "allow.auto.create.topics", "client.rack", "group.protocol",
        "group.remote.assignor",
    },
)
