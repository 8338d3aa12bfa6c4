"""The broker's configuration defaults are Kafka 2.4's where raykafka claims Kafka's meaning, and
typed access refuses bad values with INVALID_CONFIG; checked on the pure KafkaConfig."""
from __future__ import annotations

import pytest

from actors.core.config import KafkaConfig
from actors.core.errors import ErrorCode, KafkaProtocolError

# (key, Kafka 2.4's default)
KAFKA_24_DEFAULTS = [
    ("replica.lag.time.max.ms", 10000),  # 2.5 raised it to 30000 (KIP-537)
    ("replica.fetch.wait.max.ms", 500),
    ("replica.fetch.min.bytes", 1),
    ("replica.fetch.backoff.ms", 1000),
    ("replica.high.watermark.checkpoint.interval.ms", 5000),
    ("min.insync.replicas", 1),
    ("num.replica.fetchers", 1),
]


@pytest.mark.parametrize("key,expected", KAFKA_24_DEFAULTS, ids=[k for k, _ in KAFKA_24_DEFAULTS])
def test_defaults_are_kafka_2_4s(key, expected):
    assert KafkaConfig().get_int(key) == expected


def test_an_override_wins_and_a_bad_value_is_invalid_config():
    assert KafkaConfig({"replica.lag.time.max.ms": 3000}).get_int("replica.lag.time.max.ms") == 3000
    with pytest.raises(KafkaProtocolError) as raised:
        KafkaConfig({"replica.lag.time.max.ms": "soon"}).get_int("replica.lag.time.max.ms")
    assert raised.value.error_code == ErrorCode.INVALID_CONFIG
