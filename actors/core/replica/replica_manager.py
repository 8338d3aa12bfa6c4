"""A broker's replica manager: every partition replica it hosts, and the data requests they serve.

Theory of operation. The replica manager owns this broker's logs (recovered from its storage at
construction), a ``Partition`` per hosted replica, and three purgatories. Inputs
are requests, each with a ``request_id`` the shell uses to route the answer back, and the passage
of time (``tick``). Outputs are effects: ``Respond`` now or later, ``ArmTimer`` for the next
deadline, ``LogEvent`` for a human.

- Control requests (LeaderAndIsr, UpdateMetadata, StopReplica) come from the controller and are
  fenced by ``controller_epoch``; a LeaderAndIsr partition state is applied only when its leader
  epoch is newer than the one this replica has. StopReplica removes a partition and its log only
  with ``delete_partitions``; without it the replica stops leading or following but keeps its
  log, high watermark (checkpointed as before) and leader epoch. An accepted UpdateMetadata
  brings topic configs to the hosted partitions; the broker (actors/core/broker/broker_core.py)
  feeds its metadata cache from it, and answers Metadata. The replica manager reads that cache
  only through ``partition_leader``, to tell a client asking the wrong broker
  (NOT_LEADER_OR_FOLLOWER) from one asking for a partition that does not exist.
- Produce appends to the leader's log. acks=0/1 are answered at once; acks=all waits in the produce
  purgatory as a ``DelayedProduce`` until the high watermark passes the appended offsets (or the
  request times out). produce.py's ``ProducePath``.
- Fetch reads whole batches: consumers up to the high watermark, followers (``replica_id >= 0``) up
  to the log end offset. A fetch that found fewer than ``min_bytes`` waits in the fetch purgatory
  as a ``DelayedFetch`` until more arrives or ``max_wait_ms`` passes. fetch.py's ``FetchPath``.
- DeleteRecords moves a leader's log start offset and waits in the delete-records purgatory
  until every in-sync follower's fetch reports it (delete_records.py's ``DeleteRecordsPath``).
- Retention (Kafka's LogManager cleanup, every ``log.retention.check.interval.ms`` from ``tick``):
  each log deletes the whole segments its retention.ms / retention.bytes and log start offset
  allow below its high watermark (``cleanup_logs``; actors/core/log/retention.py); the files go
  by the flusher's work, and the log start offsets by its checkpoint.
- The follower's requests, OffsetForLeaderEpoch and the ISR: replication.py's ``Replication``.
  The paths are objects this manager owns, each given the parts of it that it needs.
- Any progress on a partition (an append, a high-watermark move, a role change) retries the
  delayed operations watching it (``DelayedOperations.try_complete``); each completes itself.
- The periodic log flush and checkpoints are planned by the ``LogFlusher`` (log_flusher.py) and run
  by the driver off its thread as ``StorageWork``; ``on_storage_done`` commits them. So are the
  logs' own disk waits (rolls, truncations, deletions, epoch checkpoints): each step that may
  change a log ends with the flusher's ``collect``; a follower's truncation and a StopReplica
  that deletes are answered only once durable (``hold``; actors/core/log/log_work.py says why).

Peers' bad input gets Kafka's error code and changes nothing; a broken invariant of our own is an
assertion.
"""
from __future__ import annotations

import collections
from collections.abc import Callable

from actors.core import metrics
from actors.core.config import KafkaConfig
from actors.core.effects import ArmTimer, CoordinatorLeadershipChange, Effect, LogEvent, Respond
from actors.core.errors import ErrorCode, KafkaProtocolError
from actors.core.log.checkpoints import (
    LOG_START_OFFSET_CHECKPOINT, RECOVERY_POINT_OFFSET_CHECKPOINT, REPLICATION_OFFSET_CHECKPOINT,
    OffsetCheckpointFile,
)
from actors.core.log.log import DELETED_DIRECTORY_SUFFIX, Log, LogWork
from actors.core.log.cleaner import CleanedSegments, CleaningPlan
from actors.core.log.cleaner_manager import LogCleanerManager
from actors.core.log.compression import CompressionCodecs
from actors.core.log.log_dir_failure import LogDirFailureChannel
from actors.core.log.log_config import log_config_for
from actors.core.log.storage import Storage
from actors.core.messages._base import NO_EPOCH, NO_LEADER
from actors.core.messages.fetch import FetchRequest
from actors.core.messages.leader_and_isr import (
    LeaderAndIsrPartitionError, LeaderAndIsrRequest, LeaderAndIsrResponse,
)
from actors.core.log.timestamps import offset_for_timestamp
from actors.core.messages.list_offsets import (
    EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, ListOffsetsPartitionResponse, ListOffsetsRequest,
    ListOffsetsResponse, ListOffsetsTopicResponse,
)
from actors.core.messages.produce import ProduceRequest
from actors.core.messages.stop_replica import (
    StopReplicaPartitionError, StopReplicaRequest, StopReplicaResponse,
)
from actors.core.messages.update_metadata import UpdateMetadataRequest, UpdateMetadataResponse
from actors.core.replica.alter_partition_manager import AlterPartitionManager
from actors.core.replica.fetch_session import SESSION_CACHE_SLOTS_KEY, FetchSessionCache
from actors.core.fetcher.fetcher_manager import FetcherManager
from actors.core.replica.log_dir_failure_handler import storage_step
from actors.core.replica.log_flusher import LogFlusher
from actors.core.replica.partition import Partition
from actors.core.replica.delete_records import DeleteRecordsPath
from actors.core.replica.fetch import FetchPath
from actors.core.replica.produce import ProducePath
from actors.core.replica.purgatory import DelayedOperations
from actors.core.replica.replication import TRUNCATION_POLICIES, Replication
from actors.core.topics import OFFSETS_TOPIC

TopicPartition = tuple[str, int]
METRICS_INTERVAL_MS = 1_000  # how often tick sets the broker's gauges


def partition_directory(topic: str, partition: int) -> str:
    return f"{topic}-{partition}"


def parse_partition_directory(name: str) -> TopicPartition | None:
    """``<topic>-<partition>`` as Kafka names log directories; None for anything else."""
    topic, dash, index = name.rpartition("-")
    if not dash or not topic or not index.isdigit():
        return None
    return topic, int(index)


class ReplicaManager:
    def __init__(self, *, broker_id: int, storage: Storage, config: KafkaConfig, now_ms: int,
                 fetch_session_seed: int = 0, codecs: CompressionCodecs | None = None,
                 partition_leader: Callable[[str, int], tuple[int, int]] | None = None,
                 wall_clock_offset_ms: int = 0) -> None:
        """``codecs`` rebuild a produced batch in a topic's ``compression.type`` (without
        them such a produce is UNSUPPORTED_COMPRESSION_TYPE). ``partition_leader`` is the broker's
        metadata cache's answer to who leads a partition: (live leader, leader epoch), or
        (NO_LEADER, NO_EPOCH) for a partition unknown or without a live leader; without it no
        partition is known beyond those hosted here. ``wall_clock_offset_ms`` turns ``now_ms`` (the
        host's monotonic clock) into the wall clock that records' timestamps are on, which
        retention.ms compares them with (the host's offset at start; 0 where the clock is the wall
        clock already, as in the simulator and tests)."""
        self.broker_id = broker_id
        self.codecs = codecs
        self.storage = storage
        self.config = config
        log_config_for(config.for_topic({}))  # a bad log default (compression.type=brotli) stops the start
        self.controller_epoch = -1
        # Set by registration; control requests for an earlier incarnation of this broker are stale.
        self.broker_epoch = -1
        self.partition_leader = partition_leader or (lambda topic, partition: (NO_LEADER, NO_EPOCH))
        self._partitions: dict[TopicPartition, Partition] = {}
        self.topic_configs: dict[str, KafkaConfig] = {}
        self.delayed = DelayedOperations(config.get_int("raykafka.purgatory.max.size", minimum=1))
        self.fetch_sessions = FetchSessionCache(
            slots_max=config.get_int(SESSION_CACHE_SLOTS_KEY, 0), seed=fetch_session_seed or broker_id)
        self.truncation_policy = config.get_str("raykafka.truncation.policy")
        if self.truncation_policy not in TRUNCATION_POLICIES:
            raise KafkaProtocolError(ErrorCode.INVALID_CONFIG, f"raykafka.truncation.policy="
                                     f"{self.truncation_policy!r}; use one of {TRUNCATION_POLICIES}")
        self.fetcher_manager = FetcherManager(config.get_int("num.replica.fetchers", 1))
        self.alter_partition_manager = AlterPartitionManager(broker_id)
        self.replica_lag_time_max_ms = config.get_int("replica.lag.time.max.ms", 1)
        self._next_metrics_ms = now_ms  # when the broker's gauges are set next
        self._next_isr_check_ms = now_ms + self.replica_lag_time_max_ms // 2
        # Kafka's LogManager "kafka-log-retention" task.
        self.retention_check_interval_ms = config.get_int("log.retention.check.interval.ms", 1)
        self.wall_clock_offset_ms = wall_clock_offset_ms
        self._next_retention_check_ms = now_ms + self.retention_check_interval_ms
        # The log directory's state; a storage error takes it offline (log_dir_failure_handler.py).
        self.log_dir_failure_channel = LogDirFailureChannel()
        self.log_flusher = LogFlusher(
            broker_id, self, now_ms=now_ms,
            flush_interval_ms=config.get_int("log.flush.offset.checkpoint.interval.ms", 1),
            high_watermark_interval_ms=config.get_int("replica.high.watermark.checkpoint.interval.ms", 1))
        self.recovered_partitions = self._load_logs()
        self.log_cleaner = LogCleanerManager(storage)  # the broker's half of its cleaner actor's rounds
        # The request paths, each given what it needs of this manager.
        self.replication = Replication(
            broker_id=broker_id, partitions=self.partitions, leader_partition=self.leader_partition, delayed=self.delayed,
            fetcher_manager=self.fetcher_manager, alter_partition_manager=self.alter_partition_manager,
            truncation_policy=self.truncation_policy, broker_epoch=lambda: self.broker_epoch)
        self.produce_path = ProducePath(broker_id=broker_id, partitions=self.partitions,
                                        leader_partition=self.leader_partition, delayed=self.delayed)
        self.fetch_path = FetchPath(broker_id=broker_id, partitions=self.partitions,
                                    leader_partition=self.leader_partition, fetch_sessions=self.fetch_sessions,
                                    delayed=self.delayed, replication=self.replication,
                                    high_watermark_linger_ms=config.get_int(
                                        "raykafka.replica.high.watermark.linger.ms", minimum=0))
        self.delete_records_path = DeleteRecordsPath(broker_id=broker_id, partitions=self.partitions,
                                                     leader_partition=self.leader_partition, delayed=self.delayed)

    @property
    def partitions(self) -> dict[TopicPartition, Partition]:
        """Every hosted replica, by topic partition; the request paths share this map."""
        return self._partitions

    @partitions.setter
    def partitions(self, partitions: dict[TopicPartition, Partition]) -> None:
        """Put another map in its place (the simulator's watched map), in every path that holds it."""
        self._partitions = partitions
        for path in (self.replication, self.produce_path, self.fetch_path, self.delete_records_path):
            path.partitions = partitions

    # ---------------------------------------------------------------------------------- startup
    def _load_logs(self) -> list[TopicPartition]:
        """Open every partition directory in storage, recovering from the recovery point."""
        high_watermarks = OffsetCheckpointFile(self.storage, REPLICATION_OFFSET_CHECKPOINT).read()
        recovery_points = OffsetCheckpointFile(self.storage, RECOVERY_POINT_OFFSET_CHECKPOINT).read()
        log_start_offsets = OffsetCheckpointFile(self.storage, LOG_START_OFFSET_CHECKPOINT).read()
        recovered = []
        for name in self.storage.list_dir(""):
            if name.endswith(DELETED_DIRECTORY_SUFFIX):  # a deletion the last process did not finish
                self.log_flusher.work_queue.append(LogWork(fsync_paths=("",), delete_paths=(name,)))
                continue
            topic_partition = parse_partition_directory(name)
            if topic_partition is None:
                continue
            log = Log.open(self.storage, name, log_config_for(self.config.for_topic({})),
                           recovery_point=recovery_points.get(topic_partition, 0),
                           log_start_offset=log_start_offsets.get(topic_partition, 0),
                           work_queue=self.log_flusher.work_queue, failure_channel=self.log_dir_failure_channel)
            self.partitions[topic_partition] = self._new_partition(
                topic_partition, log, high_watermarks.get(topic_partition, 0), self.config)
            recovered.append(topic_partition)
        return recovered

    def _new_partition(self, topic_partition: TopicPartition, log: Log, high_watermark: int,
                       config: KafkaConfig) -> Partition:
        topic, index = topic_partition
        return Partition(topic=topic, partition=index, local_broker_id=self.broker_id, log=log,
                         high_watermark=high_watermark,
                         min_insync_replicas=config.get_int("min.insync.replicas", 1),
                         replica_lag_time_max_ms=self.replica_lag_time_max_ms, codecs=self.codecs)

    # -------------------------------------------------------------------------- control requests
    def _stale_control_request(self, request) -> ErrorCode | None:
        """Kafka's fencing of control requests: an older controller, or an earlier incarnation of us."""
        if request.controller_epoch < self.controller_epoch:
            return ErrorCode.STALE_CONTROLLER_EPOCH
        if request.broker_epoch != -1 and request.broker_epoch < self.broker_epoch:
            return ErrorCode.STALE_BROKER_EPOCH
        return None

    @storage_step
    def handle_leader_and_isr(self, request_id: int, request: LeaderAndIsrRequest,
                              now_ms: int) -> list[Effect]:
        stale = self._stale_control_request(request)
        if stale is not None:
            return [Respond(request_id=request_id, response=LeaderAndIsrResponse(
                error_code=stale, partition_errors=()))]
        self.controller_epoch = request.controller_epoch
        effects: list[Effect] = []
        errors = []
        changed = []
        for topic_state in request.topic_states:
            topic_config = self.config.for_topic(dict(topic_state.topic_config))
            for state in topic_state.partition_states:
                topic_partition = (topic_state.topic_name, state.partition_index)
                error = self._apply_partition_state(topic_partition, state, topic_config, now_ms, effects)
                errors.append(LeaderAndIsrPartitionError(
                    topic_name=topic_state.topic_name, partition_index=state.partition_index,
                    error_code=error))
                if error == ErrorCode.NONE:
                    changed.append(topic_partition)
        for topic_partition in changed:
            effects.extend(self.delayed.try_complete(topic_partition, now_ms))
        effects.append(Respond(request_id=request_id, response=LeaderAndIsrResponse(
            error_code=ErrorCode.NONE, partition_errors=tuple(errors))))
        return effects + self.log_flusher.collect()

    def _apply_partition_state(self, topic_partition: TopicPartition, state, topic_config: KafkaConfig,
                               now_ms: int, effects: list[Effect]) -> ErrorCode:
        if self.broker_id not in state.replicas:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        partition = self.partitions.get(topic_partition)
        if state.leader_epoch <= (NO_EPOCH if partition is None else partition.leader_epoch):
            # Kafka 2.4 (and every ZooKeeper-era release) answers a leader epoch that is not newer
            # with STALE_CONTROLLER_EPOCH in the partition's error; FENCED_LEADER_EPOCH came with
            # KIP-570 and for StopReplica only. A refused state changes nothing: no log is created
            # and the topic config it carries, which may be a stale one, is not applied.
            return ErrorCode.STALE_CONTROLLER_EPOCH
        if partition is None:
            topic, index = topic_partition
            log = Log.open(self.storage, partition_directory(topic, index), log_config_for(topic_config),
                           work_queue=self.log_flusher.work_queue, failure_channel=self.log_dir_failure_channel)
            partition = self._new_partition(topic_partition, log, 0, topic_config)
            self.partitions[topic_partition] = partition
        else:
            partition.min_insync_replicas = topic_config.get_int("min.insync.replicas", 1)
            partition.log.reconfigure(log_config_for(topic_config))
        self.topic_configs[topic_partition[0]] = topic_config
        role = dict(leader_epoch=state.leader_epoch, isr=tuple(state.isr), replicas=tuple(state.replicas),
                    partition_epoch=state.partition_epoch, controller_epoch=state.controller_epoch)
        if topic_partition[0] == OFFSETS_TOPIC:
            effects.append(CoordinatorLeadershipChange(partition=topic_partition[1], leader_epoch=state.leader_epoch,
                                                       is_leader=state.leader == self.broker_id))
        if state.leader == self.broker_id:
            partition.make_leader(now_ms=now_ms, **role)
            effects.extend(self.fetcher_manager.remove([topic_partition]))
            effects.append(LogEvent(level="info", message=(
                f"broker {self.broker_id} leads {topic_partition[0]}-{topic_partition[1]} "
                f"at epoch {state.leader_epoch} from offset {partition.log_end_offset}")))
        else:
            partition.make_follower(leader=state.leader, **role)
            if state.leader >= 0:
                effects.extend(self.replication.become_follower(partition))
            else:
                effects.extend(self.fetcher_manager.remove([topic_partition]))
            effects.append(LogEvent(level="debug", message=(
                f"broker {self.broker_id} follows {state.leader} for {topic_partition[0]}-"
                f"{topic_partition[1]} at epoch {state.leader_epoch}")))
        return ErrorCode.NONE

    def handle_update_metadata(self, request_id: int, request: UpdateMetadataRequest,
                               now_ms: int) -> list[Effect]:
        stale = self._stale_control_request(request)
        if stale is not None:
            return [Respond(request_id=request_id, response=UpdateMetadataResponse(error_code=stale))]
        self.controller_epoch = request.controller_epoch
        effects: list[Effect] = []
        for topic_state in request.topic_states:
            if topic_state.topic_config is not None:
                effects += self.apply_topic_config(topic_state.topic_name, topic_state.topic_config)
        return effects + [Respond(request_id=request_id, response=UpdateMetadataResponse(error_code=ErrorCode.NONE))]

    def apply_topic_config(self, topic: str, overrides: tuple[tuple[str, str], ...]) -> list[Effect]:
        """Kafka's ``TopicConfigHandler.processConfigChanges``: the topic's new overrides reach its
        live partitions (min.insync.replicas for the next produce, the log's segment settings for
        the next roll). Nothing happens when they did not change."""
        topic_config = self.config.for_topic(dict(overrides))
        previous = self.topic_configs.get(topic)
        if previous is not None and previous.as_dict() == topic_config.as_dict():
            return []
        hosted = [p for (name, _), p in self.partitions.items() if name == topic]
        if previous is None and not hosted:
            return []  # not a topic of ours: its first LeaderAndIsr brings its config
        for partition in hosted:
            partition.min_insync_replicas = topic_config.get_int("min.insync.replicas", 1)
            partition.log.reconfigure(log_config_for(topic_config))
        self.topic_configs[topic] = topic_config
        return [LogEvent(level="info", message=f"broker {self.broker_id} applied config {dict(overrides)} "
                                               f"to topic {topic} ({len(hosted)} partition(s))")]

    @storage_step
    def handle_stop_replica(self, request_id: int, request: StopReplicaRequest,
                            now_ms: int) -> list[Effect]:
        stale = self._stale_control_request(request)
        if stale is not None:
            return [Respond(request_id=request_id, response=StopReplicaResponse(
                error_code=stale, partition_errors=()))]
        self.controller_epoch = request.controller_epoch
        effects: list[Effect] = []
        errors = []
        for topic in request.topics:
            for index in topic.partition_indexes:
                topic_partition = (topic.name, index)
                effects.extend(self.fetcher_manager.remove([topic_partition]))
                effects.extend(self._stop_replica(topic_partition, delete=request.delete_partitions))
                # Delayed requests on it are answered now rather than left to time out.
                effects.extend(self.delayed.try_complete(topic_partition, now_ms))
                errors.append(StopReplicaPartitionError(topic_name=topic.name, partition_index=index,
                                                        error_code=ErrorCode.NONE))
        effects.append(Respond(request_id=request_id, response=StopReplicaResponse(
            error_code=ErrorCode.NONE, partition_errors=tuple(errors))))
        if not request.delete_partitions:
            return effects + self.log_flusher.collect()
        # Answered once the deletions are durable: the controller's next request to this broker,
        # which may recreate a partition under its old name, waits for this answer.
        effects = self.log_flusher.hold(effects, request_id)
        # Through the flusher, after the deletions, so this file's writes stay in order.
        return effects + [self.log_flusher.plan_high_watermark_checkpoint()]

    def _stop_replica(self, topic_partition: TopicPartition, *, delete: bool) -> list[Effect]:
        """Kafka's ``stopReplica``: with delete, the partition and its log go; without (controlled
        shutdown, the first step of a reassignment or a deletion), the partition stays with its log,
        high watermark and leader epoch, which keeps fencing older LeaderAndIsr states, and only
        stops leading or following."""
        partition = self.partitions.get(topic_partition)
        if partition is None:
            return []
        effects: list[Effect] = []
        topic, index = topic_partition
        if topic == OFFSETS_TOPIC:
            effects.append(CoordinatorLeadershipChange(partition=index, leader_epoch=partition.leader_epoch,
                                                       is_leader=False))
        if delete:
            del self.partitions[topic_partition]
            partition.log.delete()
            effects.append(LogEvent(level="info", message=(
                f"broker {self.broker_id} deleted its replica of {topic}-{index}")))
        else:
            partition.stop()
            partition.log.schedule_flush()
            effects.append(LogEvent(level="info", message=(
                f"broker {self.broker_id} stopped its replica of {topic}-{index} at leader epoch "
                f"{partition.leader_epoch}")))
        return effects

    # -------------------------------------------------------------------------- client requests
    def leader_partition(self, topic_partition: TopicPartition) -> Partition:
        partition = self.partitions.get(topic_partition)
        if partition is None:
            leader, _ = self.partition_leader(*topic_partition)
            if leader >= 0:
                # The partition exists in the cluster; this broker just does not host it.
                raise KafkaProtocolError(ErrorCode.NOT_LEADER_OR_FOLLOWER)
            raise KafkaProtocolError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                     f"{topic_partition[0]}-{topic_partition[1]}")
        self.log_dir_failure_channel.check()  # Kafka: an offline partition is KAFKA_STORAGE_ERROR
        if not partition.is_leader:
            raise KafkaProtocolError(ErrorCode.NOT_LEADER_OR_FOLLOWER,
                                     f"broker {self.broker_id} does not lead "
                                     f"{topic_partition[0]}-{topic_partition[1]}")
        return partition

    @storage_step
    def handle_produce(self, request_id: int, request: ProduceRequest, now_ms: int, *,
                       internal_topics_allowed: bool = False) -> list[Effect]:
        return self.produce_path.handle_produce(request_id, request, now_ms,
                                                internal_topics_allowed=internal_topics_allowed) + self.log_flusher.collect()

    @storage_step
    def handle_fetch(self, request_id: int, request: FetchRequest, now_ms: int) -> list[Effect]:
        return self.fetch_path.handle_fetch(request_id, request, now_ms)

    @storage_step
    def handle_delete_records(self, request_id: int, request, now_ms: int) -> list[Effect]:
        return self.delete_records_path.handle_delete_records(request_id, request, now_ms) + self.log_flusher.collect()

    @storage_step
    def handle_offset_for_leader_epoch(self, request_id: int, request, now_ms: int) -> list[Effect]:
        return self.replication.handle_offset_for_leader_epoch(request_id, request, now_ms)

    @storage_step
    def handle_follower_truncate(self, request_id: int, request, now_ms: int) -> list[Effect]:
        # Answered once the truncation is durable: the fetcher appends nothing before its answer.
        return self.log_flusher.hold(self.replication.handle_follower_truncate(request_id, request, now_ms), request_id)

    @storage_step
    def handle_follower_append(self, request_id: int, request, now_ms: int) -> list[Effect]:
        return self.replication.handle_follower_append(request_id, request, now_ms) + self.log_flusher.collect()

    @storage_step
    def on_alter_partition_response(self, request, response, now_ms: int) -> list[Effect]:
        return self.replication.on_alter_partition_response(request, response, now_ms)

    @storage_step
    def handle_list_offsets(self, request_id: int, request: ListOffsetsRequest,
                            now_ms: int) -> list[Effect]:
        # Kafka answers each partition asked for more than once with INVALID_REQUEST.
        asked_times = collections.Counter((t.name, p.partition_index) for t in request.topics for p in t.partitions)
        topics = []
        for topic in request.topics:
            answers = []
            for asked in topic.partitions:
                if asked_times[(topic.name, asked.partition_index)] > 1:
                    answers.append(ListOffsetsPartitionResponse(partition_index=asked.partition_index,
                                                                error_code=ErrorCode.INVALID_REQUEST))
                    continue
                answers.append(self._list_offset(topic.name, asked, request.replica_id))
            topics.append(ListOffsetsTopicResponse(name=topic.name, partitions=tuple(answers)))
        return [Respond(request_id=request_id, response=ListOffsetsResponse(topics=tuple(topics)))]

    def _list_offset(self, topic: str, asked, replica_id: int) -> ListOffsetsPartitionResponse:
        def error(code: ErrorCode) -> ListOffsetsPartitionResponse:
            return ListOffsetsPartitionResponse(partition_index=asked.partition_index, error_code=code)
        try:
            partition = self.leader_partition((topic, asked.partition_index))
        except KafkaProtocolError as exc:
            return error(exc.error_code)
        fenced = partition.check_leader_epoch(asked.current_leader_epoch)
        if fenced != ErrorCode.NONE:
            return error(fenced)
        if asked.timestamp == EARLIEST_TIMESTAMP:
            offset = partition.log_start_offset
        elif asked.timestamp == LATEST_TIMESTAMP:
            # Consumers see the committed end; a replica sees the whole log.
            offset = partition.log_end_offset if replica_id >= 0 else partition.high_watermark
        elif asked.timestamp < 0:
            return error(ErrorCode.INVALID_REQUEST)  # a sentinel Kafka 2.4 does not know
        else:
            # Consumers look among committed records only, as Kafka 2.4 does (read-uncommitted).
            max_offset = partition.log_end_offset if replica_id >= 0 else partition.high_watermark
            try:
                found = offset_for_timestamp(partition.log, asked.timestamp, max_offset)
            except KafkaProtocolError as exc:  # a segment that cannot be read (KAFKA_STORAGE_ERROR)
                return error(exc.error_code)
            if found is None:  # no record that late: Kafka answers offset and timestamp -1
                return ListOffsetsPartitionResponse(partition_index=asked.partition_index, offset=-1,
                                                    timestamp=-1, leader_epoch=partition.leader_epoch)
            # As Kafka does, the record's own batch epoch (what KIP-320 validates a position with).
            return ListOffsetsPartitionResponse(partition_index=asked.partition_index, offset=found.offset,
                                                timestamp=found.timestamp, leader_epoch=found.leader_epoch)
        return ListOffsetsPartitionResponse(partition_index=asked.partition_index, offset=offset,
                                            timestamp=-1, leader_epoch=partition.leader_epoch)

    # --------------------------------------------------------------------------------- timers
    @storage_step
    def tick(self, now_ms: int) -> list[Effect]:
        effects: list[Effect] = self.delayed.expire(now_ms)
        if now_ms >= self._next_metrics_ms:  # gauges once a second: the tick runs far more often
            self._next_metrics_ms = now_ms + METRICS_INTERVAL_MS
            effects.extend(metrics.broker_gauges(
                broker_id=self.broker_id, partitions=self.partitions.values(),
                produce_purgatory_size=len(self.delayed.produce), fetch_purgatory_size=len(self.delayed.fetch)))
        if now_ms >= self._next_isr_check_ms:  # Kafka's isr-expiration task
            self._next_isr_check_ms = now_ms + self.replica_lag_time_max_ms // 2
            effects.extend(self.replication.maybe_shrink_isrs(now_ms))
        if self.replication.unanswered_isr_proposals:
            effects.extend(self.replication.resend_unanswered_isr_proposals(now_ms))
        if now_ms >= self._next_retention_check_ms:
            self._next_retention_check_ms = now_ms + self.retention_check_interval_ms
            effects.extend(self.cleanup_logs(now_ms))
        effects.extend(self.log_flusher.tick(now_ms))  # the fsyncs run off this thread (and the deletions)
        next_deadline_ms = self.delayed.next_deadline_ms()
        if next_deadline_ms is not None:
            effects.append(ArmTimer(deadline_ms=next_deadline_ms))
        return effects

    def cleanup_logs(self, now_ms: int) -> list[Effect]:
        """Kafka's ``LogManager.cleanupLogs``: every log deletes the old segments its retention
        settings and log start offset allow, below its high watermark (actors/core/log/retention.py);
        the files go by the next ``collect``'s work. A moved log start may complete a DeleteRecords."""
        effects: list[Effect] = []
        for topic_partition, partition in list(self.partitions.items()):
            before = partition.log_start_offset
            for reason in partition.log.delete_old_segments(now_ms + self.wall_clock_offset_ms,
                                                            partition.high_watermark):
                effects.append(LogEvent(level="info", message=f"broker {self.broker_id} {reason}"))
            if partition.log_start_offset != before:
                effects.extend(self.delayed.try_complete(topic_partition, now_ms))
        return effects

    # ----------------------------------------------------------------------------- the cleaner
    def grab_filthiest_log(self, now_ms: int) -> CleaningPlan | None:
        """The next round of this broker's log cleaner actor (cleaner_manager.py), or None."""
        partitions = self.partitions
        if self.log_dir_failure_channel.offline:
            return None
        return self.log_cleaner.grab_filthiest({key: p.log for key, p in partitions.items()},
                                               {key: p.high_watermark for key, p in partitions.items()},
                                               now_ms + self.wall_clock_offset_ms)

    @storage_step
    def done_cleaning(self, cleaned: CleanedSegments, now_ms: int) -> list[Effect]:
        """The cleaner wrote a round's cleaned segments: swap them in, if the round is current."""
        line = self.log_cleaner.done_cleaning(cleaned, {key: p.log for key, p in self.partitions.items()})
        return [LogEvent(level="info", message=f"broker {self.broker_id} log cleaner: {line}")]

    # ---------------------------------------------------------------------------- checkpoints
    @storage_step
    def on_storage_done(self, work_id: int, error: str | None, now_ms: int) -> list[Effect]:
        """The driver ran a ``StorageWork`` of this core's: commit what it made durable."""
        return self.log_flusher.on_storage_done(work_id, error)

    def checkpoint_high_watermarks(self) -> None:
        """The high-watermark checkpoint written at once, on the caller's thread (shutdown, tests)."""
        self.storage.write_file_atomically(*self.log_flusher.high_watermark_checkpoint())

    def flush_and_checkpoint_recovery_points(self) -> None:
        """Flush every log and checkpoint, at once on the caller's thread (shutdown, tests)."""
        for partition in self.partitions.values():
            partition.log.flush()
        for path, contents in self.log_flusher.recovery_checkpoints():
            self.storage.write_file_atomically(path, contents)

    def shutdown(self) -> list[Effect]:
        """A clean shutdown: every log closed, and one last work that flushes them and writes every
        checkpoint, so the next start skips recovery. The driver waits for it; the logs are not used
        again."""
        for partition in self.partitions.values():
            partition.log.close()
        return self.log_flusher.plan_shutdown()

    def fetch_states_for(self, key: tuple[int, int]) -> list:
        """Where a replacement fetcher for (leader, fetcher id) starts: each partition's log end."""
        states = []
        for topic_partition in self.fetcher_manager.partitions_of(key):
            partition = self.partitions[topic_partition]
            states.append(self.replication.initial_fetch_state(partition))
        return states
