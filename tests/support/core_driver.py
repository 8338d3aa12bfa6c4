"""Drive a pure ReplicaManager step by step, as the broker shell would, and collect its answers."""
from __future__ import annotations

import itertools

from actors.core.config import KafkaConfig
from actors.core.effects import ArmTimer, Metric, Respond
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
from actors.core.replica.replica_manager import ReplicaManager
from actors.records import BatchBuilder


def make_batch(values, keys=None, timestamp_ms: int = 1_700_000_000_000) -> bytes:
    builder = BatchBuilder(batch_size=1 << 30)
    for index, value in enumerate(values):
        key = None if keys is None else keys[index]
        assert builder.try_append(key, value, timestamp_ms, None)
    return builder.build()


class CoreDriver:
    """A ReplicaManager with a fake clock; ``answers`` maps request id -> response."""

    def __init__(self, broker_id: int = 0, storage=None, config: dict | None = None, now_ms: int = 0):
        self.storage = storage if storage is not None else InMemoryStorage()
        self.now_ms = now_ms
        self.config = config or {}
        self.manager = ReplicaManager(broker_id=broker_id, storage=self.storage,
                                      config=KafkaConfig(self.config), now_ms=now_ms)
        self.answers: dict[int, object] = {}
        self.timers: list[int] = []
        self.metrics: list[Metric] = []  # every Metric effect, in order
        self._ids = itertools.count()

    def _apply(self, effects) -> None:
        for effect in effects:
            if isinstance(effect, Respond):
                assert effect.request_id not in self.answers, "a request was answered twice"
                self.answers[effect.request_id] = effect.response
            elif isinstance(effect, ArmTimer):
                self.timers.append(effect.deadline_ms)
            elif isinstance(effect, Metric):
                self.metrics.append(effect)

    def call(self, handler_name: str, request):
        """Step the core with one request; returns its request id (the answer may come later)."""
        request_id = next(self._ids)
        self._apply(getattr(self.manager, handler_name)(request_id, request, self.now_ms))
        return request_id

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
        isr = tuple(isr if isr is not None else (leader,))
        state = LeaderAndIsrPartitionState(
            partition_index=partition, controller_epoch=controller_epoch, leader=leader,
            leader_epoch=leader_epoch, isr=isr, partition_epoch=leader_epoch, replicas=tuple(replicas))
        response = self.ask("handle_leader_and_isr", LeaderAndIsrRequest(
            controller_id=-1, controller_epoch=controller_epoch, broker_epoch=-1, topic_states=(
                LeaderAndIsrTopicState(topic_name=topic, partition_states=(state,),
                                       topic_config=tuple((config or {}).items())),)))
        self.ask("handle_update_metadata", UpdateMetadataRequest(
            controller_id=-1, controller_epoch=controller_epoch, broker_epoch=-1,
            topic_states=(UpdateMetadataTopicState(topic_name=topic, partition_states=(
                UpdateMetadataPartitionState(partition_index=partition, controller_epoch=controller_epoch,
                                             leader=leader, leader_epoch=leader_epoch, isr=isr,
                                             partition_epoch=leader_epoch, replicas=tuple(replicas),
                                             offline_replicas=()),)),),
            live_brokers=tuple(UpdateMetadataBroker(id=b, host=f"b{b}") for b in sorted(set(replicas)))))
        return response

    def produce(self, topic: str, partition: int, records: bytes, acks: int = 1, timeout_ms: int = 30000):
        return self.call("handle_produce", ProduceRequest(acks=acks, timeout_ms=timeout_ms, topic_data=(
            TopicProduceData(name=topic, partition_data=(PartitionProduceData(index=partition, records=records),)),)))

    def fetch(self, topic: str, partition: int, offset: int, *, replica_id: int = -1, max_wait_ms: int = 0,
              min_bytes: int = 1, max_bytes: int = 1 << 20, partition_max_bytes: int = 1 << 20,
              current_leader_epoch: int = -1):
        return self.call("handle_fetch", FetchRequest(
            replica_id=replica_id, max_wait_ms=max_wait_ms, min_bytes=min_bytes, max_bytes=max_bytes,
            topics=(FetchTopic(topic=topic, partitions=(FetchPartition(
                partition=partition, fetch_offset=offset, partition_max_bytes=partition_max_bytes,
                current_leader_epoch=current_leader_epoch),)),)))

    def list_offset(self, topic: str, partition: int, timestamp: int):
        response = self.ask("handle_list_offsets", ListOffsetsRequest(topics=(ListOffsetsTopic(
            name=topic, partitions=(ListOffsetsPartition(partition_index=partition, timestamp=timestamp),)),)))
        return response.topics[0].partitions[0]


def produce_result(response):
    return response.responses[0].partition_responses[0]


def fetch_result(response):
    return response.responses[0].partitions[0]
