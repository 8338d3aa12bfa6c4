"""What a core asks its driver (actors/drivers/) to do.

A core never performs I/O beyond its injected storage, never reads a clock and never calls Ray.
Each handler returns a list of effects; the driver applies them in order with no ``await`` in
between, so the core's view and the world's stay in step.

- ``Respond``: answer the request the driver registered under ``request_id`` (immediately or, for a
  request parked in a purgatory, later).
- ``Send``: deliver ``message`` to another actor (``destination`` names it by role and id); the
  reply, if any, comes back to the core as a new input (``timeout_ms``: how long the driver waits
  for it, when the core needs other than the driver's default).
- ``ArmTimer``: call the core's ``tick`` no later than ``deadline_ms``; the host also ticks on a
  short period, so a lost timer only delays, never stalls.
- ``LogEvent``: a line worth a human's attention (leadership change, truncation, ...).
- ``AddBrokerChannel`` / ``RemoveBrokerChannel``: the controller's channel manager starts or stops
  the request-send thread for a broker (Kafka's ``ControllerChannelManager.addBroker``).
- ``Metric``: set a gauge, or observe a histogram (the Ray host exports it through Ray's metrics).
- ``AddPartitionsToFetcher`` / ``RemovePartitionsFromFetcher``: the broker's fetcher manager
  hands follower partitions to the replica fetcher for (leader, fetcher id), creating it if need
  be, or takes them away (``stop_fetcher`` when it has none left, Kafka's idle-fetcher shutdown).
- ``CoordinatorLeadershipChange``: this broker started or stopped leading a ``__consumer_offsets``
  partition; its group coordinator loads or drops that partition's groups (Kafka's
  ``onElection``/``onResignation``, fenced by the leader epoch, Kafka's coordinator epoch).
- ``CoordinatorMetadataUpdate``: the partitions in this broker's metadata cache changed; its group
  coordinator takes them as its view of the cluster (OffsetCommit for a partition outside it is
  UNKNOWN_TOPIC_OR_PARTITION) and removes the deleted partitions' offsets (Kafka's
  ``handleDeletedPartitions``).
- ``StorageWork``: durable writes that may take long (fsyncs, checkpoint files), for the driver to
  run off its event loop, one at a time in the order given; when one finished (or failed) the
  driver calls the core's ``on_storage_done(work_id, error, now_ms)``. The core commits what the
  work made durable (a log's recovery point) only then.
- ``LogDirFailure``: the broker's log directory failed (an I/O error in a log operation or a
  storage work: actors/core/log/log_dir_failure.py); the driver stops the broker as Kafka 2.4
  halts a broker whose every log directory failed. Everything the core had to answer first is
  before it in the same list.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Union

effect = dataclass(frozen=True, slots=True, kw_only=True)


@effect
class Respond:
    request_id: int
    response: Any


@effect
class Send:
    destination: str
    message: Any
    timeout_ms: int | None = None


@effect
class ArmTimer:
    deadline_ms: int


@effect
class LogEvent:
    level: str  # "debug", "info", "warning"
    message: str


@effect
class AddBrokerChannel:
    broker_id: int
    broker_epoch: int


@effect
class RemoveBrokerChannel:
    broker_id: int


@effect
class Metric:
    name: str
    value: float
    tags: tuple[tuple[str, str], ...] = ()


@effect
class AddPartitionsToFetcher:
    leader_id: int
    fetcher_id: int
    partitions: tuple[Any, ...]  # InitialFetchState


@effect
class RemovePartitionsFromFetcher:
    leader_id: int
    fetcher_id: int
    partitions: tuple[tuple[str, int], ...]
    stop_fetcher: bool = False


@effect
class CoordinatorLeadershipChange:
    partition: int
    leader_epoch: int
    is_leader: bool


@effect
class CoordinatorMetadataUpdate:
    # (broker epoch, metadata cache partitions version): orders the updates of one broker, also
    # across its restarts (a new incarnation registers with a higher broker epoch). The receiver
    # ignores a view older than the one it has.
    version: tuple[int, int]
    partitions: tuple[tuple[str, int], ...]  # every partition in the cache, sorted
    deleted_partitions: tuple[tuple[str, int], ...] = ()  # deleted by the UpdateMetadata that caused this


@effect
class StorageWork:
    work_id: int
    # Fsynced first, each as it is when the work runs; a path deleted meanwhile is skipped (its
    # offsets left the log with it).
    fsync_paths: tuple[str, ...] = ()
    # Then each file replaced, all-or-nothing and durably, with these contents (checkpoints,
    # snapshots); a file whose directory is gone meanwhile (its partition deleted) is skipped.
    files: tuple[tuple[str, bytes], ...] = ()
    # Then each path deleted (a file or a whole tree) and its directory fsynced.
    delete_paths: tuple[str, ...] = ()


@effect
class LogDirFailure:
    reason: str  # the first I/O error, with the log operation or work it broke


Effect = Union[LogDirFailure, StorageWork, CoordinatorLeadershipChange, CoordinatorMetadataUpdate, AddPartitionsToFetcher, RemovePartitionsFromFetcher, Respond, Send, ArmTimer, LogEvent, AddBrokerChannel, RemoveBrokerChannel, Metric]
