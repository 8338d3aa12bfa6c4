"""Starting and steering a raykafka cluster from outside: the Cluster API and its clients.

The rooms: ``clients/`` (producer, consumer, consumer groups), ``admin/`` (the ``Cluster`` and its
admin API, and the Ray it runs on), ``chaos/`` (faults, the invariant sampler, the checker, the
scenario runner), ``spark/`` (load and consume jobs on Spark on Ray), ``simulation/`` (the
deterministic simulator: the shipped drivers over a seeded network, no Ray), ``commands/`` (the
``raykafka`` command's subcommands) and ``cli`` (the command itself). ``history`` is the record of
what clients did and saw, written by the clients and the admin API and read by the checker;
``errors`` holds ``KafkaError``, which all of them raise; ``progress`` draws waits in a terminal.

Names are imported on first use, so that pure modules here (the history checker, say) can be used
without loading Ray.

Used as a library, raykafka prints nothing: following loguru's convention for libraries, its log
lines (``orchestration`` here, and ``actors`` in this process) are off until the application turns
them on with ``logger.enable("orchestration")`` / ``logger.enable("actors")``; the ``raykafka``
command does, at its ``--log-level``. The actors' own processes on Ray keep logging to Ray's log
files (``ray logs``).
"""
from __future__ import annotations

import importlib

from loguru import logger

logger.disable("orchestration")
logger.disable("actors")

_EXPORTS = {
    "Cluster": "orchestration.admin.cluster",
    "PartitionDescription": "orchestration.admin.admin_client",
    "CommitFailedError": "orchestration.clients.consumer_coordinator",
    "Consumer": "orchestration.clients.consumer",
    "KafkaError": "orchestration.errors",
    "LogTruncationError": "orchestration.clients.position_validation",
    "Producer": "orchestration.clients.producer",
    "ConsumerRecord": "actors.codecs.record_batches",
    "RecordMetadata": "actors.codecs.record_batches",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module 'orchestration' has no attribute {name!r}")
    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value
    return value
