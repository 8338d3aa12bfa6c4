"""A broker's view of the cluster, filled by UpdateMetadata and read by Metadata requests.

Theory of operation. The controller sends every broker UpdateMetadata with the live brokers and
the partition states it has decided. The cache keeps the newest state per partition and answers
clients' Metadata requests and routing questions from it. A request from an older controller
epoch is refused by the replica manager before it gets here.
"""
from __future__ import annotations

from actors.core.errors import ErrorCode
from actors.core.messages._base import NO_EPOCH, NO_LEADER
from actors.core.messages.metadata import (
    MetadataRequest, MetadataResponse, MetadataResponseBroker, MetadataResponsePartition,
    MetadataResponseTopic,
)
from actors.core.messages.update_metadata import UpdateMetadataRequest

INTERNAL_TOPICS = frozenset({"__consumer_offsets"})


class MetadataCache:
    def __init__(self, cluster_id: str | None = None) -> None:
        self.cluster_id = cluster_id
        self.controller_id = -1
        self.brokers: dict[int, MetadataResponseBroker] = {}
        # topic -> partition index -> partition state as last sent by the controller.
        self.topics: dict[str, dict[int, MetadataResponsePartition]] = {}

    def update(self, request: UpdateMetadataRequest) -> list[tuple[str, int]]:
        """Apply an UpdateMetadata request; returns the partitions it deleted."""
        self.controller_id = request.controller_id
        self.brokers = {
            broker.id: MetadataResponseBroker(node_id=broker.id, host=broker.host, port=broker.port,
                                              rack=broker.rack)
            for broker in request.live_brokers
        }
        deleted: list[tuple[str, int]] = []
        for topic_state in request.topic_states:
            partitions = self.topics.setdefault(topic_state.topic_name, {})
            for state in topic_state.partition_states:
                if state.leader == LEADER_DURING_DELETE:
                    partitions.pop(state.partition_index, None)
                    deleted.append((topic_state.topic_name, state.partition_index))
                    continue
                partitions[state.partition_index] = MetadataResponsePartition(
                    partition_index=state.partition_index,
                    error_code=(ErrorCode.NONE if state.leader in self.brokers
                                else ErrorCode.LEADER_NOT_AVAILABLE),
                    leader_id=state.leader if state.leader in self.brokers else NO_LEADER,
                    leader_epoch=state.leader_epoch,
                    replica_nodes=tuple(state.replicas),
                    isr_nodes=tuple(state.isr),
                    offline_replicas=tuple(state.offline_replicas),
                )
            if not partitions:
                del self.topics[topic_state.topic_name]
        return deleted

    def contains(self, topic: str) -> bool:
        return topic in self.topics

    def partition_leader(self, topic: str, partition: int) -> tuple[int, int]:
        state = self.topics.get(topic, {}).get(partition)
        if state is None:
            return NO_LEADER, NO_EPOCH
        return state.leader_id, state.leader_epoch

    def handle_metadata(self, request: MetadataRequest) -> MetadataResponse:
        names = sorted(self.topics) if request.topics is None else list(request.topics)
        topics = []
        for name in names:
            partitions = self.topics.get(name)
            if partitions is None:
                topics.append(MetadataResponseTopic(name=name, error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
                continue
            topics.append(MetadataResponseTopic(
                name=name, is_internal=name in INTERNAL_TOPICS,
                partitions=tuple(partitions[index] for index in sorted(partitions))))
        return MetadataResponse(brokers=tuple(self.brokers[b] for b in sorted(self.brokers)),
                                topics=tuple(topics), cluster_id=self.cluster_id,
                                controller_id=self.controller_id)


# Kafka's controller marks a partition being deleted with leader -2 (LeaderDuringDelete).
LEADER_DURING_DELETE = -2
