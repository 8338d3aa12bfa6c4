"""The cluster id the Apache Kafka helper formats its nodes with is one kafka-storage can take as the
value of ``-t``: as Kafka's Uuid.randomUuid, never one that starts with '-' (checked over enough
draws that about 1 in 64 starting with '-' could not go unseen; no JVM started)."""
from __future__ import annotations

import base64

from orchestration.apache_kafka import _cluster_id


def test_a_cluster_id_is_16_bytes_of_url_safe_base64_and_never_starts_with_a_dash():
    drawn = [_cluster_id() for _ in range(3000)]
    assert not [c for c in drawn if c.startswith("-")]
    assert all(len(base64.urlsafe_b64decode(c + "==")) == 16 for c in drawn)
    assert len(set(drawn)) == len(drawn)
