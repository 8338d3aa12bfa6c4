"""Kafka's ``ReplicaManager.handleLogDirFailure`` for raykafka's one log directory per broker.

Theory of operation. ``storage_step`` wraps each step of the replica manager (a request, a tick, a
storage work's report). A storage error in the step has marked the broker's
``LogDirFailureChannel`` (actors/core/log/log_dir_failure.py): a ``Log`` did it for an ``OSError``
in a log operation and failed that operation with KAFKA_STORAGE_ERROR (which the request's
handler answers, as Kafka does, for that partition); the step's wrapper does it for an ``OSError``
elsewhere (a new partition's directory, a checkpoint); the log flusher does it for a storage
work that failed on the storage worker (an fsync error above all: after one the kernel may have
dropped the pages it could not write, so nothing written since the last good fsync can be
trusted). A step that an error cut short leaves its request unanswered. After the step,
``handle_log_dir_failure`` runs once:

- the fetchers of every partition are removed (Kafka stops the fetchers of the failed
  directory's partitions);
- every acks=all produce still parked is answered KAFKA_STORAGE_ERROR, so nothing appended before
  the failure and not yet acknowledged is acknowledged after it (its records may or may not
  survive: the producer retries, as after a timeout);
- the log flusher stops: no flush, checkpoint or snapshot is planned or committed any more, so no
  recovery point or checkpoint names what the failed disk may not hold;
- every log operation answers KAFKA_STORAGE_ERROR from now on (produce, fetch, list offsets,
  follower appends and truncations) before it touches a file, so the broker never serves a byte it
  did not write;
- last, a ``LogDirFailure`` effect: the broker stops.

Why stop and not keep running with its replicas offline (KRaft's heartbeat carrying offline
directories)? A raykafka broker has one log directory, and Kafka 2.4's ``LogManager`` halts the
broker when every one of its log directories has failed: it has no replica left to serve, and
only a new process can recover a log from what is really on disk. Stopping also tells the
controller by the one path every failure already takes: the broker's process is gone (Ray's
death notice at the broker's send thread, or its heartbeats stop), the controller moves the
leadership of its partitions to other ISR members, and when Ray starts the broker again with a
healthy disk it recovers its logs (the torn tail of a partial write cut by the CRC scan, as after a
crash), registers as a new incarnation (a bounced broker: its partitions are led elsewhere) and
rejoins them as a follower, truncating by leader epoch.
"""
from __future__ import annotations

import functools
from typing import Any

from actors.core.effects import Effect, LogDirFailure, LogEvent
from actors.core.errors import ErrorCode, KafkaProtocolError


def storage_step(method):
    """A replica-manager step whose storage errors take the log directory offline (module docstring).
    The step's ``now_ms`` is its last positional argument."""
    @functools.wraps(method)
    def step(manager: Any, *args, **kwargs) -> list[Effect]:
        channel = manager.log_dir_failure_channel
        try:
            effects = method(manager, *args, **kwargs)
        except OSError as exc:
            channel.mark_offline(f"{method.__name__}: {type(exc).__name__}: {exc}")
            effects = []
        except KafkaProtocolError as exc:
            if exc.error_code != ErrorCode.KAFKA_STORAGE_ERROR or not channel.offline:
                raise
            effects = []
        failure = channel.take_unhandled()
        if failure is None:
            return effects
        return effects + handle_log_dir_failure(manager, failure)
    return step


def handle_log_dir_failure(manager: Any, failure: str) -> list[Effect]:
    """Stop serving every partition of the failed directory and stop the broker (module docstring)."""
    effects: list[Effect] = [LogEvent(level="error", message=(
        f"broker {manager.broker_id}: its log directory failed ({failure}); its "
        f"{len(manager.partitions)} partition(s) are offline and answer KAFKA_STORAGE_ERROR; "
        f"the broker stops, as Kafka does when every log directory failed"))]
    effects += manager.fetcher_manager.remove(list(manager.partitions))
    effects += manager.produce_path.fail_parked(ErrorCode.KAFKA_STORAGE_ERROR)
    manager.log_flusher.stop()
    effects.append(LogDirFailure(reason=failure))
    return effects
