"""Kafka's ``LogDirFailureChannel``: the first I/O error in a log operation takes the log directory offline.

Theory of operation. A disk that failed a write (ENOSPC, EIO) or an fsync leaves the files in a
state nobody knows: a write may have landed in part, and after a failed fsync the kernel may have
dropped the dirty pages it could not write. Kafka therefore trusts nothing more from that log
directory: every ``IOException`` in a log operation (``Log.maybeHandleIOException``) marks the
directory offline in the ``LogDirFailureChannel``, the operation fails with
``KafkaStorageException`` (``KAFKA_STORAGE_ERROR`` on the wire), and from then on every operation
on a log of that directory fails the same way before it touches a file.

One channel serves all the logs of a broker (raykafka's brokers have one log directory). Inputs:
``mark_offline(reason)`` from a ``Log`` whose storage call raised ``OSError``, from the replica
manager when a storage work (fsyncs, checkpoint writes) failed on the storage worker, and from any
step of the broker a storage call of which raised outside a log. Outputs: ``check()`` raises
``KAFKA_STORAGE_ERROR`` once offline; ``take_unhandled()`` hands the replica manager the failure
exactly once, so that it stops the directory's partitions
(``actors/core/replica/log_dir_failure_handler.py``).
The state only moves from online to offline: a directory comes back only with a new process that
recovers it from what is on disk.
"""
from __future__ import annotations

import functools

from actors.core.errors import ErrorCode, KafkaProtocolError


class LogDirFailureChannel:
    """The broker's log directory: online until the first storage error, offline ever after."""

    def __init__(self) -> None:
        self.failure: str | None = None  # the first error's description; None while online
        self._handled = False  # whether the replica manager took the failure (take_unhandled)

    @property
    def offline(self) -> bool:
        return self.failure is not None

    def mark_offline(self, reason: str) -> None:
        """The first failure is the one kept (later ones follow from it)."""
        if self.failure is None:
            self.failure = reason

    def check(self) -> None:
        """Raises ``KAFKA_STORAGE_ERROR`` when the directory is offline."""
        if self.failure is not None:
            raise KafkaProtocolError(ErrorCode.KAFKA_STORAGE_ERROR,
                                     f"the log directory is offline after a storage error: {self.failure}")

    def take_unhandled(self) -> str | None:
        """The failure, the first time it is asked for after it happened; else None."""
        if self.failure is None or self._handled:
            return None
        self._handled = True
        return self.failure


def storage_operation(method):
    """Kafka's ``Log.maybeHandleIOException`` around a ``Log`` method: refused with
    ``KAFKA_STORAGE_ERROR`` once the directory is offline; an ``OSError`` inside takes the directory
    offline and becomes ``KAFKA_STORAGE_ERROR``. The log must have ``_failure_channel`` and
    ``_directory``."""
    @functools.wraps(method)
    def guarded(log, *args, **kwargs):
        channel = log._failure_channel
        channel.check()
        try:
            return method(log, *args, **kwargs)
        except OSError as exc:
            channel.mark_offline(f"{method.__name__} on {log._directory}: {type(exc).__name__}: {exc}")
            raise KafkaProtocolError(ErrorCode.KAFKA_STORAGE_ERROR,
                                     f"{log._directory}: {type(exc).__name__}: {exc}") from exc
    return guarded
