"""The producer's configuration: Kafka's keys with Kafka 3.x's defaults, and how ``acks`` reads.

One default differs, for a reason of Ray's: ``batch.size`` is 262144 (256 KiB), where Kafka's is
16384. A Produce request is one Ray actor call, which costs about 0.6 ms of the caller's time here
(about 1,700 calls a second) whatever it carries, where Kafka's producer pays microseconds per
request on a socket it keeps open. A batch is also the unit an idempotent producer pipelines: at
most five per partition are in flight (the leader's window), so ``batch.size`` bounds what one
partition has in flight per round trip, 80 KiB at Kafka's default. A batch's buffer grows with
its records, so a larger bound costs a partition with little traffic nothing. ``linger.ms`` keeps
Kafka 3.x's 0: under load, records gather into the next batch while requests are in flight.
"""
from __future__ import annotations

from actors.core.errors import ErrorCode
from orchestration.clients.client_config import COMMON_ALIASES, COMMON_NOT_HONOURED, ClientKeys
from orchestration.errors import KafkaError

PRODUCER_DEFAULTS = {
    "acks": "1",
    "batch.size": "262144",  # Kafka's is 16384: see the module docstring
    "linger.ms": "0",
    "max.request.size": "1048576",
    "retries": "2147483647",
    "retry.backoff.ms": "100",
    "delivery.timeout.ms": "120000",
    "request.timeout.ms": "30000",
    "max.in.flight.requests.per.connection": "5",
    "buffer.memory": "33554432",
    "max.block.ms": "60000",
    "metadata.max.age.ms": "300000",
    # none, gzip, snappy, lz4 or zstd: the codec every batch is built with.
    "compression.type": "none",
    "enable.idempotence": "true",  # on unless the other settings forbid it: see idempotence.py
    "client.id": "",  # names the sender thread; default producer-N
}

PRODUCER_KEYS = ClientKeys(
    kind="producer",
    defaults=PRODUCER_DEFAULTS,
    aliases={**COMMON_ALIASES, "request.required.acks": "acks", "queue.buffering.max.ms": "linger.ms",
             "message.send.max.retries": "retries", "message.timeout.ms": "delivery.timeout.ms",
             "compression.codec": "compression.type"},
    # Kafka's producer keys this producer does not implement (it partitions as Kafka's default
    # partitioner does, and writes what it is given as bytes).
    not_honoured=COMMON_NOT_HONOURED | {
        "key.serializer", "value.serializer", "partitioner.class", "partitioner.ignore.keys",
        "partitioner.adaptive.partitioning.enable", "partitioner.availability.timeout.ms",
        "metadata.max.idle.ms", "transaction.timeout.ms",
    },
    refused={"transactional.id": "it has no transactions; the records would be written outside any transaction"},
)


def parse_acks(value: str) -> int:
    """'all' is -1; other values are sent as given, so the broker judges them (INVALID_REQUIRED_ACKS)."""
    text = str(value).strip().lower()
    if text == "all":
        return -1
    try:
        return int(text)
    except ValueError:
        raise KafkaError(ErrorCode.INVALID_CONFIG, f"acks={value!r}") from None
