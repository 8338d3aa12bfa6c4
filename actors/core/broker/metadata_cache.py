"""A broker's view of the cluster, filled by UpdateMetadata and read by Metadata requests.

Theory of operation. The controller sends every broker UpdateMetadata with the live brokers and
the partition states it has decided. The cache keeps the live brokers of the newest request and,
per partition, the newest state the controller sent; a request from an older controller epoch is
refused by the replica manager before it gets here. A request without partition states only
replaces the live brokers (Kafka's controller sends such a request when a broker dies or comes
back, before or without any new partition state).

Liveness is judged when a question is answered, never frozen when a state arrives, as Kafka 2.4's
``MetadataCache.getPartitionMetadata`` judges it against its current snapshot. Metadata v1 and
later (and raykafka's own clients):

- a leader that is not among the live brokers answers LEADER_NOT_AVAILABLE, with no leader and no
  leader epoch, and the full replica and ISR lists;
- otherwise NONE, with the full replica and ISR lists, live or not: a client that sees a replica
  down needs no new metadata to go on using the leader.

Metadata v0 (Kafka's ``errorUnavailableEndpoints``) lists only the live replicas and ISR members:

- a leader that is not live answers LEADER_NOT_AVAILABLE, with no leader and no leader epoch, and
  only the live replicas and ISR members;
- otherwise, a partition with a replica (or, failing that, an ISR member) that is not live answers
  REPLICA_NOT_AVAILABLE with its leader and only the live replicas and ISR members listed: the
  partition is usable, and Kafka's clients use its leader;
- otherwise NONE, with the full lists.

``offline_replicas`` (v5+) is the controller's list as sent (those brokers are down by
definition); the fields an old version does not have are not written to its answer.

A partition state whose leader is -2 (``LEADER_DURING_DELETE``) deletes the partition; ``update``
returns the deleted partitions (Kafka's broker hands them to its group coordinator).
``partitions_version`` counts the changes of the set of partitions, so a reader can tell cheaply
whether that set moved.
"""
from __future__ import annotations

from actors.core.errors import ErrorCode
from actors.core.messages._base import NO_EPOCH, NO_LEADER
from actors.core.messages.metadata import (
    MetadataRequest, MetadataResponse, MetadataResponseBroker, MetadataResponsePartition,
    MetadataResponseTopic,
)
from actors.core.messages.update_metadata import UpdateMetadataPartitionState, UpdateMetadataRequest
from actors.core.topics import INTERNAL_TOPICS

# Kafka's controller marks a partition being deleted with leader -2 (LeaderDuringDelete).
LEADER_DURING_DELETE = -2


class MetadataCache:
    def __init__(self, cluster_id: str | None = None) -> None:
        self.cluster_id = cluster_id
        self.controller_id = -1
        # The live brokers of the newest UpdateMetadata, by id.
        self.brokers: dict[int, MetadataResponseBroker] = {}
        # The same brokers' Kafka listeners: listener name -> (host, port), by broker id.
        self.endpoints: dict[int, dict[str, tuple[str, int]]] = {}
        # topic -> partition index -> the partition's state as last sent by the controller. A topic
        # is present only while it has at least one partition.
        self.topics: dict[str, dict[int, UpdateMetadataPartitionState]] = {}
        self.partitions_version = 0

    def update(self, request: UpdateMetadataRequest) -> list[tuple[str, int]]:
        """Apply an UpdateMetadata request; returns the partitions it deleted."""
        self.controller_id = request.controller_id
        self.brokers = {
            broker.id: MetadataResponseBroker(node_id=broker.id, host=broker.host, port=broker.port,
                                              rack=broker.rack)
            for broker in request.live_brokers
        }
        self.endpoints = {broker.id: {e.name: (e.host, e.port) for e in broker.endpoints}
                          for broker in request.live_brokers}
        deleted: list[tuple[str, int]] = []
        changed = False
        for topic_state in request.topic_states:
            partitions = self.topics.setdefault(topic_state.topic_name, {})
            for state in topic_state.partition_states:
                if state.leader == LEADER_DURING_DELETE:
                    changed |= partitions.pop(state.partition_index, None) is not None
                    deleted.append((topic_state.topic_name, state.partition_index))
                    continue
                changed |= state.partition_index not in partitions
                partitions[state.partition_index] = state
            if not partitions:
                del self.topics[topic_state.topic_name]
        if changed:
            self.partitions_version += 1
        return deleted

    def contains(self, topic: str) -> bool:
        return topic in self.topics

    def topic_partitions(self) -> tuple[tuple[str, int], ...]:
        """Every partition the cache knows, sorted."""
        return tuple(sorted((topic, index) for topic, partitions in self.topics.items() for index in partitions))

    def partition_leader(self, topic: str, partition: int) -> tuple[int, int]:
        """(leader, leader epoch) when the partition's leader is live, else (NO_LEADER, NO_EPOCH):
        Kafka's ``getPartitionLeaderEndpoint``, which gives no node for a leader that is not live."""
        state = self.topics.get(topic, {}).get(partition)
        if state is None or state.leader not in self.brokers:
            return NO_LEADER, NO_EPOCH
        return state.leader, state.leader_epoch

    def partition_metadata(self, state: UpdateMetadataPartitionState,
                           filter_unavailable: bool = False) -> MetadataResponsePartition:
        """One partition's answer, judged against the live brokers now (see the module docstring);
        ``filter_unavailable`` gives Metadata v0's answer."""
        if filter_unavailable:
            live_replicas = tuple(b for b in state.replicas if b in self.brokers)
            live_isr = tuple(b for b in state.isr if b in self.brokers)
        else:
            live_replicas, live_isr = tuple(state.replicas), tuple(state.isr)
        if state.leader not in self.brokers:
            return MetadataResponsePartition(
                partition_index=state.partition_index, error_code=ErrorCode.LEADER_NOT_AVAILABLE,
                leader_id=NO_LEADER, leader_epoch=NO_EPOCH, replica_nodes=live_replicas, isr_nodes=live_isr,
                offline_replicas=tuple(state.offline_replicas))
        complete = len(live_replicas) == len(state.replicas) and len(live_isr) == len(state.isr)
        return MetadataResponsePartition(
            partition_index=state.partition_index,
            error_code=ErrorCode.NONE if complete else ErrorCode.REPLICA_NOT_AVAILABLE,
            leader_id=state.leader, leader_epoch=state.leader_epoch, replica_nodes=live_replicas,
            isr_nodes=live_isr, offline_replicas=tuple(state.offline_replicas))

    def endpoint(self, broker_id: int, listener_name: str) -> tuple[str, int] | None:
        """(host, port) of a live broker's listener ``listener_name``, or None."""
        return self.endpoints.get(broker_id, {}).get(listener_name)

    def brokers_on(self, listener_name: str | None) -> tuple[MetadataResponseBroker, ...]:
        """The live brokers, by actor name, or by their endpoint on ``listener_name`` (Kafka
        leaves out a broker without that listener)."""
        if listener_name is None:
            return tuple(self.brokers[b] for b in sorted(self.brokers))
        found = []
        for broker_id in sorted(self.brokers):
            endpoint = self.endpoint(broker_id, listener_name)
            if endpoint is not None:
                found.append(MetadataResponseBroker(node_id=broker_id, host=endpoint[0], port=endpoint[1],
                                                    rack=self.brokers[broker_id].rack))
        return tuple(found)

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
                partitions=tuple(self.partition_metadata(partitions[index], request.request_api_version == 0)
                                 for index in sorted(partitions))))
        return MetadataResponse(brokers=self.brokers_on(request.listener_name),
                                topics=tuple(topics), cluster_id=self.cluster_id,
                                controller_id=self.controller_id)
