"""Drive a pure ReplicaManager step by step, as the broker shell would, and collect its answers;
Metadata is answered, and the metadata cache fed from UpdateMetadata, as ``BrokerCore`` does."""
from __future__ import annotations

import itertools

from actors.core.config import KafkaConfig
from actors.core.effects import ArmTimer, LogDirFailure, Metric, Respond, StorageWork
from actors.core.errors import ErrorCode
from actors.core.log.storage import InMemoryStorage
from actors.core.messages.fetch import FetchPartition, FetchRequest, FetchTopic
from actors.core.messages.leader_and_isr import (
    LeaderAndIsrPartitionState, LeaderAndIsrRequest, LeaderAndIsrTopicState,
)
from actors.core.messages.list_offsets import ListOffsetsPartition, ListOffsetsRequest, ListOffsetsTopic
from actors.core.messages.produce import PartitionProduceData, ProduceRequest, TopicProduceData
from actors.core.messages.update_metadata import (
    UpdateMetadataBroker, UpdateMetadataPartitionState, UpdateMetadataRequest, UpdateMetadataTopicState,
)
from actors.core.broker.auto_create import TopicAutoCreation
from actors.core.broker.metadata_cache import MetadataCache
from actors.core.replica.replica_manager import ReplicaManager
from actors.codecs.compression import KafkaCompressionCodecs
from actors.drivers.broker import run_storage_work
from actors.codecs.record_batches import BatchBuilder


def make_batch(values, keys=None, timestamp_ms: int = 1_700_000_000_000) -> bytes:
    builder = BatchBuilder(batch_size=1 << 30)
    for index, value in enumerate(values):
        key = None if keys is None else keys[index]
        assert builder.try_append(key, value, timestamp_ms, None)
    return builder.build()


class CoreDriver:
    """A ReplicaManager with a fake clock; ``answers`` maps request id -> response. ``StorageWork``
    runs as soon as the step that returned it is applied, or with ``hold_storage_work`` waits in
    ``storage_works`` until ``finish_storage_work``."""

    def __init__(self, broker_id: int = 0, storage=None, config: dict | None = None, now_ms: int = 0,
                 hold_storage_work: bool = False):
        self.storage = storage if storage is not None else InMemoryStorage()
        self.now_ms = now_ms
        self.config = config or {}
        self.metadata_cache = MetadataCache()
        self.topic_auto_creation = TopicAutoCreation(broker_id, KafkaConfig(self.config))
        self.manager = ReplicaManager(broker_id=broker_id, storage=self.storage,
                                      config=KafkaConfig(self.config), now_ms=now_ms,
                                      codecs=KafkaCompressionCodecs(),
                                      partition_leader=self.metadata_cache.partition_leader)
        self.answers: dict[int, object] = {}
        self.timers: list[int] = []
        self.metrics: list[Metric] = []  # every Metric effect, in order
        self.hold_storage_work = hold_storage_work
        self.storage_works: list[StorageWork] = []
        self.log_dir_failures: list[str] = []  # each LogDirFailure's reason (the broker would stop)
        self._ids = itertools.count()

    def finish_storage_work(self) -> None:
        """Run the held storage work in order, and what finishing it starts, and report each done."""
        while self.storage_works:
            work = self.storage_works.pop(0)
            run_storage_work(self.storage, work)
            self._apply(self.manager.on_storage_done(work.work_id, None, self.now_ms))

    def fail_storage_work(self, error: str) -> None:
        """Report the first held storage work failed with ``error``, without running it."""
        work = self.storage_works.pop(0)
        self._apply(self.manager.on_storage_done(work.work_id, error, self.now_ms))

    def _apply(self, effects) -> None:
        for effect in effects:
            if isinstance(effect, StorageWork):
                self.storage_works.append(effect)
                continue
            if isinstance(effect, Respond):
                assert effect.request_id not in self.answers, "a request was answered twice"
                self.answers[effect.request_id] = effect.response
            elif isinstance(effect, ArmTimer):
                self.timers.append(effect.deadline_ms)
            elif isinstance(effect, Metric):
                self.metrics.append(effect)
            elif isinstance(effect, LogDirFailure):
                self.log_dir_failures.append(effect.reason)
        if not self.hold_storage_work:
            self.finish_storage_work()

    def shutdown(self) -> None:
        """A clean shutdown, its last storage work run as the driver's host waits for it."""
        self._apply(self.manager.shutdown())
        self.finish_storage_work()

    def call(self, handler_name: str, request):
        """Step the core with one request; returns its request id (the answer may come later)."""
        request_id = next(self._ids)
        if handler_name == "handle_metadata":
            self._apply(self.handle_metadata(request_id, request, self.now_ms))
            return request_id
        self._apply(getattr(self.manager, handler_name)(request_id, request, self.now_ms))
        if handler_name == "handle_update_metadata" and self.answers[request_id].error_code == ErrorCode.NONE:
            self.metadata_cache.update(request)
        return request_id

    def handle_metadata(self, request_id: int, request, now_ms: int) -> list:
        """The broker's Metadata answer from this driver's cache (``BrokerCore.handle_metadata``)."""
        response, effects = self.topic_auto_creation.apply(
            request, self.metadata_cache.handle_metadata(request), len(self.metadata_cache.brokers), now_ms)
        return effects + [Respond(request_id=request_id, response=response)]

    def ask(self, handler_name: str, request):
        """Step the core and return the immediate answer (fails if the request was parked)."""
        request_id = self.call(handler_name, request)
        assert request_id in self.answers, f"{handler_name} was parked, not answered"
        return self.answers[request_id]

    def advance(self, ms: int) -> None:
        self.now_ms += ms
        self._apply(self.manager.tick(self.now_ms))

    # --------------------------------------------------------------------- request builders
    def become(self, topic: str, partition: int, *, leader: int, replicas=(0,), isr=None,
               leader_epoch: int = 0, controller_epoch: int = 1, config: dict | None = None):
        role = dict(leader=leader, replicas=replicas, isr=isr, leader_epoch=leader_epoch,
                    controller_epoch=controller_epoch)
        response = self.ask("handle_leader_and_isr", leader_and_isr_request(topic, partition, config=config, **role))
        self.ask("handle_update_metadata", update_metadata_request(topic, partition, **role))
        return response

    def produce(self, topic: str, partition: int, records: bytes, acks: int = 1, timeout_ms: int = 30000):
        return self.call("handle_produce", produce_request(topic, partition, records, acks, timeout_ms))

    def fetch(self, topic: str, partition: int, offset: int, **options):
        return self.call("handle_fetch", fetch_request(topic, partition, offset, **options))

    def list_offset(self, topic: str, partition: int, timestamp: int):
        response = self.ask("handle_list_offsets", ListOffsetsRequest(topics=(ListOffsetsTopic(
            name=topic, partitions=(ListOffsetsPartition(partition_index=partition, timestamp=timestamp),)),)))
        return response.topics[0].partitions[0]


def leader_and_isr_request(topic: str, partition: int, *, leader: int, replicas=(0,), isr=None,
                           leader_epoch: int = 0, controller_epoch: int = 1,
                           config: dict | None = None) -> LeaderAndIsrRequest:
    """The controller's LeaderAndIsr naming ``leader`` for one partition (not fenced by broker epoch)."""
    state = LeaderAndIsrPartitionState(
        partition_index=partition, controller_epoch=controller_epoch, leader=leader, leader_epoch=leader_epoch,
        isr=tuple(isr if isr is not None else (leader,)), partition_epoch=leader_epoch, replicas=tuple(replicas))
    return LeaderAndIsrRequest(controller_id=-1, controller_epoch=controller_epoch, broker_epoch=-1, topic_states=(
        LeaderAndIsrTopicState(topic_name=topic, partition_states=(state,), topic_config=tuple((config or {}).items())),))


def update_metadata_request(topic: str, partition: int, *, leader: int, replicas=(0,), isr=None,
                            leader_epoch: int = 0, controller_epoch: int = 1) -> UpdateMetadataRequest:
    """The UpdateMetadata that goes with ``leader_and_isr_request``: the partition and its live brokers."""
    return UpdateMetadataRequest(
        controller_id=-1, controller_epoch=controller_epoch, broker_epoch=-1,
        topic_states=(UpdateMetadataTopicState(topic_name=topic, partition_states=(
            UpdateMetadataPartitionState(partition_index=partition, controller_epoch=controller_epoch,
                                         leader=leader, leader_epoch=leader_epoch,
                                         isr=tuple(isr if isr is not None else (leader,)),
                                         partition_epoch=leader_epoch, replicas=tuple(replicas),
                                         offline_replicas=()),)),),
        live_brokers=tuple(UpdateMetadataBroker(id=b, host=f"b{b}") for b in sorted(set(replicas))))


def produce_request(topic: str, partition: int, records: bytes, acks: int = 1, timeout_ms: int = 30000) -> ProduceRequest:
    return ProduceRequest(acks=acks, timeout_ms=timeout_ms, topic_data=(
        TopicProduceData(name=topic, partition_data=(PartitionProduceData(index=partition, records=records),)),))


def fetch_request(topic: str, partition: int, offset: int, *, replica_id: int = -1, max_wait_ms: int = 0,
                  min_bytes: int = 1, max_bytes: int = 1 << 20, partition_max_bytes: int = 1 << 20,
                  current_leader_epoch: int = -1, log_start_offset: int = -1) -> FetchRequest:
    return FetchRequest(
        replica_id=replica_id, max_wait_ms=max_wait_ms, min_bytes=min_bytes, max_bytes=max_bytes,
        topics=(FetchTopic(topic=topic, partitions=(FetchPartition(
            partition=partition, fetch_offset=offset, partition_max_bytes=partition_max_bytes,
            current_leader_epoch=current_leader_epoch, log_start_offset=log_start_offset),)),))


def produce_result(response):
    return response.responses[0].partition_responses[0]


def fetch_result(response):
    return response.responses[0].partitions[0]
