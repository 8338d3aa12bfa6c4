"""The producer's configuration: Kafka's keys with Kafka 3.x's defaults, and how ``acks`` reads."""
from __future__ import annotations

from actors.core.errors import ErrorCode
from orchestration.errors import KafkaError

PRODUCER_DEFAULTS = {
    "acks": "1",
    "batch.size": "16384",
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
}


def parse_acks(value: str) -> int:
    """'all' is -1; other values are sent as given, so the broker judges them (INVALID_REQUIRED_ACKS)."""
    text = str(value).strip().lower()
    if text == "all":
        return -1
    try:
        return int(text)
    except ValueError:
        raise KafkaError(ErrorCode.INVALID_CONFIG, f"acks={value!r}") from None
