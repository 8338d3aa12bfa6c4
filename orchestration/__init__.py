"""Starting and steering a raykafka cluster from outside: the Cluster API and its clients.

Names are imported on first use, so that pure modules here (the history checker, say) can be used
without loading Ray.
"""
from __future__ import annotations

import importlib

_EXPORTS = {
    "Cluster": "orchestration.cluster",
    "PartitionDescription": "orchestration.cluster",
    "CommitFailedError": "orchestration.consumer_coordinator",
    "Consumer": "orchestration.consumer",
    "KafkaError": "orchestration.errors",
    "Producer": "orchestration.producer",
    "ConsumerRecord": "actors.records",
    "RecordMetadata": "actors.records",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module 'orchestration' has no attribute {name!r}")
    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value
    return value
