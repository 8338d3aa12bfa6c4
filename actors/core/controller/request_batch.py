"""The controller's per-event batch of control requests, as Kafka 2.4's ``ControllerBrokerRequestBatch``.

Theory of operation
-------------------
While the controller handles one event, its state-machine steps *add* work to a batch: "tell
brokers 1 and 2 this partition's new leader and ISR", "refresh everyone's metadata for this
partition", "stop (and delete) this replica on broker 3". When the event is done, ``send_requests``
turns the batch into at most one request of each kind per broker and empties the batch. The
controller hands the pairs to the brokers' send threads, which deliver each broker's requests in
order.

In: ``add_*`` calls between ``new_batch()`` and ``send_requests(...)``.
Out: ``[(broker_id, request), ...]`` in Kafka's order: every ``LeaderAndIsrRequest`` first, then
every ``UpdateMetadataRequest``, then every ``StopReplicaRequest``; brokers in id order, topics by
name, partitions by index.

Rules, each from Kafka 2.4's ``AbstractControllerBrokerRequestBatch``:

- Adding a LeaderAndIsr for a partition also adds that partition to the UpdateMetadata for every
  live (or shutting-down) broker, so metadata caches follow every leadership change.
- A partition added twice for the same broker keeps the latest state, and stays ``is_new`` if
  either add said so.
- UpdateMetadata partitions are one set shared by every broker that gets an UpdateMetadata. Their
  state is read at send time through ``partition_states``; a partition with no leadership record
  yet is skipped (Kafka: "Leader not yet assigned"). A partition of a topic queued for deletion is
  sent with leader ``LEADER_DURING_DELETE`` (-2), which tells brokers to drop it from their cache.
- A broker gets at most two StopReplica requests: one with ``delete_partitions=True`` (sent first)
  and one without. A partition added both ways is only sent with delete; deleting implies stopping.
- Requests for brokers not in ``live_brokers`` are dropped: a dead broker will get the full
  metadata when it comes back. Negative broker ids (NO_LEADER) are ignored when added.
- Every request carries the controller's id and epoch and the target broker's epoch.

Limit: one batch holds at most ``PARTITIONS_IN_BATCH_MAX`` distinct partitions; adding more is
an assertion failure (the caller must split the work; Kafka's largest batch, on controller
failover, is one entry per partition in the cluster).
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Optional

from actors.core.controller.state import (INITIAL_LEADER_EPOCH, INITIAL_PARTITION_EPOCH,
                                          LEADER_DURING_DELETE, LeaderAndIsr, TopicPartition)
from actors.core.messages.leader_and_isr import (LeaderAndIsrLiveLeader, LeaderAndIsrPartitionState,
                                                 LeaderAndIsrRequest, LeaderAndIsrTopicState)
from actors.core.messages.stop_replica import StopReplicaRequest, StopReplicaTopic
from actors.core.messages.update_metadata import (UpdateMetadataBroker, UpdateMetadataPartitionState,
                                                  UpdateMetadataRequest, UpdateMetadataTopicState)

PARTITIONS_IN_BATCH_MAX = 100_000

# (current LeaderAndIsr, assigned replicas, offline replicas) of a partition, or None if it has
# no leadership record yet.
PartitionStateLookup = Callable[[TopicPartition], Optional[tuple[LeaderAndIsr, tuple[int, ...], tuple[int, ...]]]]
TopicConfig = tuple[tuple[str, str], ...]


class ControllerBrokerRequestBatch:
    """Collects one controller event's LeaderAndIsr, UpdateMetadata and StopReplica requests."""

    def __init__(self, *, controller_id: int, partitions_max: int = PARTITIONS_IN_BATCH_MAX) -> None:
        assert controller_id >= 0, f"controller_id {controller_id} is not a broker id"
        assert partitions_max > 0
        self.controller_id = controller_id
        self.partitions_max = partitions_max
        # broker id -> partition -> state to send; the state's partition_index is the partition's.
        self._leader_and_isr: dict[int, dict[TopicPartition, LeaderAndIsrPartitionState]] = {}
        self._topic_configs: dict[str, TopicConfig] = {}  # the latest non-empty config per topic
        self._update_metadata_brokers: set[int] = set()
        # Set by a LeaderAndIsr add: the UpdateMetadata also goes to every live broker, which only
        # send_requests knows.
        self._update_metadata_all_live_brokers = False
        self._update_metadata_partitions: set[TopicPartition] = set()
        self._stop_replica: dict[int, dict[TopicPartition, bool]] = {}  # broker -> partition -> delete
        self._partitions: set[TopicPartition] = set()  # every partition in the batch, for the limit

    def is_empty(self) -> bool:
        return not (self._leader_and_isr or self._update_metadata_brokers or self._partitions
                    or self._update_metadata_all_live_brokers or self._stop_replica)

    def new_batch(self) -> None:
        """Start an event's batch; the previous one must have been sent (or cleared)."""
        assert not self._leader_and_isr, \
            f"the previous batch still has LeaderAndIsr requests for brokers {sorted(self._leader_and_isr)}"
        assert not self._stop_replica, \
            f"the previous batch still has StopReplica requests for brokers {sorted(self._stop_replica)}"
        assert not (self._update_metadata_brokers or self._update_metadata_all_live_brokers), \
            "the previous batch still has UpdateMetadata requests"
        assert self.is_empty(), f"the previous batch still holds partitions {sorted(self._partitions)[:10]}"

    def clear(self) -> None:
        """Drop everything, as Kafka does when a state change fails half-way through an event."""
        self._leader_and_isr.clear()
        self._topic_configs.clear()
        self._update_metadata_brokers.clear()
        self._update_metadata_all_live_brokers = False
        self._update_metadata_partitions.clear()
        self._stop_replica.clear()
        self._partitions.clear()

    def add_leader_and_isr_request_for_brokers(
            self, broker_ids: Iterable[int], topic_partition: TopicPartition, leader_and_isr: LeaderAndIsr,
            replicas: Iterable[int], *, is_new: bool = False, topic_config: TopicConfig = (),
            adding_replicas: Iterable[int] = (), removing_replicas: Iterable[int] = ()) -> None:
        """Tell ``broker_ids`` the partition's leader and ISR; also refresh every live broker's metadata."""
        assert leader_and_isr.controller_epoch >= 0, \
            f"{topic_partition}: a LeaderAndIsr must carry the epoch of the controller that wrote it"
        replicas = tuple(replicas)
        for broker_id in broker_ids:
            if broker_id < 0:
                continue
            self._track(topic_partition)
            states = self._leader_and_isr.setdefault(broker_id, {})
            already_new = topic_partition in states and states[topic_partition].is_new
            states[topic_partition] = LeaderAndIsrPartitionState(
                partition_index=topic_partition[1], controller_epoch=leader_and_isr.controller_epoch,
                leader=leader_and_isr.leader, leader_epoch=leader_and_isr.leader_epoch,
                isr=leader_and_isr.isr, partition_epoch=leader_and_isr.partition_epoch,
                replicas=replicas, adding_replicas=tuple(adding_replicas),
                removing_replicas=tuple(removing_replicas), is_new=is_new or already_new)
        if topic_config:
            self._topic_configs[topic_partition[0]] = tuple(topic_config)
        self._update_metadata_all_live_brokers = True
        self._add_update_metadata_partitions((topic_partition,))

    def add_update_metadata_request_for_brokers(self, broker_ids: Iterable[int],
                                                topic_partitions: Iterable[TopicPartition] | None = None) -> None:
        """Send ``broker_ids`` an UpdateMetadata carrying the live brokers and the batch's partitions.

        With ``topic_partitions`` None only the brokers are added (a live-broker-list refresh); pass
        every partition to give a (re)starting broker the full metadata.
        """
        self._update_metadata_brokers.update(b for b in broker_ids if b >= 0)
        if topic_partitions is not None:
            self._add_update_metadata_partitions(topic_partitions)

    def add_stop_replica_request_for_brokers(self, broker_ids: Iterable[int], topic_partition: TopicPartition,
                                             *, delete_partition: bool) -> None:
        """Tell ``broker_ids`` to stop replicating the partition and, if ``delete_partition``, delete it."""
        for broker_id in broker_ids:
            if broker_id < 0:
                continue
            self._track(topic_partition)
            partitions = self._stop_replica.setdefault(broker_id, {})
            partitions[topic_partition] = partitions.get(topic_partition, False) or delete_partition

    def send_requests(self, *, controller_epoch: int, broker_epochs: Mapping[int, int],
                      live_brokers: Mapping[int, str], partition_states: PartitionStateLookup,
                      topics_to_be_deleted: Iterable[str] = (),
                      broker_endpoints: Mapping[int, tuple] | None = None,
                      topic_configs: Callable[[str], TopicConfig] | None = None) -> list[tuple[int, object]]:
        """The batch as (broker id, request) pairs in Kafka's order; the batch is empty afterwards.

        ``live_brokers`` maps every live or shutting-down broker to its actor name, and
        ``broker_epochs`` must hold the epoch of each of them; ``broker_endpoints`` gives their
        Kafka listeners, which UpdateMetadata carries to every broker's metadata cache;
        ``topic_configs`` gives each topic's overrides, which UpdateMetadata carries with the
        topic's partitions (a topic being deleted gets none).
        """
        assert controller_epoch >= 0, f"controller_epoch {controller_epoch} < 0"
        try:
            requests = self._leader_and_isr_requests(controller_epoch, broker_epochs, live_brokers)
            requests += self._update_metadata_requests(controller_epoch, broker_epochs, live_brokers,
                                                       partition_states, frozenset(topics_to_be_deleted),
                                                       broker_endpoints or {}, topic_configs)
            requests += self._stop_replica_requests(controller_epoch, broker_epochs, live_brokers)
        finally:
            self.clear()
        return requests

    def _track(self, topic_partition: TopicPartition) -> None:
        if topic_partition not in self._partitions:
            assert len(self._partitions) < self.partitions_max, \
                f"a controller batch may hold at most {self.partitions_max} partitions"
            self._partitions.add(topic_partition)

    def _add_update_metadata_partitions(self, topic_partitions: Iterable[TopicPartition]) -> None:
        for topic_partition in topic_partitions:
            self._track(topic_partition)
            self._update_metadata_partitions.add(topic_partition)

    def _leader_and_isr_requests(self, controller_epoch: int, broker_epochs: Mapping[int, int],
                                 live_brokers: Mapping[int, str]) -> list[tuple[int, object]]:
        requests: list[tuple[int, object]] = []
        for broker_id in sorted(self._leader_and_isr):
            if broker_id not in live_brokers:
                continue
            states = self._leader_and_isr[broker_id]
            topic_states = tuple(
                LeaderAndIsrTopicState(topic_name=topic, partition_states=partition_states,
                                       topic_config=self._topic_configs.get(topic, ()))
                for topic, partition_states in _group_by_topic(states))
            leader_ids = sorted({state.leader for state in states.values()} & live_brokers.keys())
            live_leaders = tuple(LeaderAndIsrLiveLeader(broker_id=leader, host_name=live_brokers[leader])
                                 for leader in leader_ids)
            requests.append((broker_id, LeaderAndIsrRequest(
                controller_id=self.controller_id, controller_epoch=controller_epoch,
                broker_epoch=_broker_epoch(broker_epochs, broker_id), topic_states=topic_states,
                live_leaders=live_leaders)))
        return requests

    def _update_metadata_requests(self, controller_epoch: int, broker_epochs: Mapping[int, int],
                                  live_brokers: Mapping[int, str], partition_states: PartitionStateLookup,
                                  topics_to_be_deleted: frozenset[str],
                                  broker_endpoints: Mapping[int, tuple],
                                  topic_configs: Callable[[str], TopicConfig] | None = None) -> list[tuple[int, object]]:
        targets = set(self._update_metadata_brokers)
        if self._update_metadata_all_live_brokers:
            targets |= live_brokers.keys()
        targets &= live_brokers.keys()
        if not targets:
            return []
        states: dict[TopicPartition, UpdateMetadataPartitionState] = {}
        for topic_partition in self._update_metadata_partitions:
            state = _update_metadata_state(topic_partition, partition_states(topic_partition),
                                           topic_partition[0] in topics_to_be_deleted)
            if state is not None:
                states[topic_partition] = state
        topic_states = tuple(UpdateMetadataTopicState(
            topic_name=topic, partition_states=partition_states_,
            topic_config=None if topic_configs is None or topic in topics_to_be_deleted else topic_configs(topic))
            for topic, partition_states_ in _group_by_topic(states))
        brokers = tuple(UpdateMetadataBroker(id=broker_id, host=live_brokers[broker_id],
                                             endpoints=tuple(broker_endpoints.get(broker_id, ())))
                        for broker_id in sorted(live_brokers))
        return [(broker_id, UpdateMetadataRequest(
                    controller_id=self.controller_id, controller_epoch=controller_epoch,
                    broker_epoch=_broker_epoch(broker_epochs, broker_id), topic_states=topic_states,
                    live_brokers=brokers))
                for broker_id in sorted(targets)]

    def _stop_replica_requests(self, controller_epoch: int, broker_epochs: Mapping[int, int],
                               live_brokers: Mapping[int, str]) -> list[tuple[int, object]]:
        requests: list[tuple[int, object]] = []
        for broker_id in sorted(self._stop_replica):
            if broker_id not in live_brokers:
                continue
            partitions = self._stop_replica[broker_id]
            for delete in (True, False):  # Kafka sends the deleting request first
                chosen = [tp for tp, delete_partition in partitions.items() if delete_partition is delete]
                if not chosen:
                    continue
                topics = tuple(StopReplicaTopic(name=topic, partition_indexes=indexes)
                               for topic, indexes in _group_by_topic({tp: tp[1] for tp in chosen}))
                requests.append((broker_id, StopReplicaRequest(
                    controller_id=self.controller_id, controller_epoch=controller_epoch,
                    broker_epoch=_broker_epoch(broker_epochs, broker_id), topics=topics,
                    delete_partitions=delete)))
        return requests


def _update_metadata_state(topic_partition: TopicPartition, found, being_deleted: bool
                           ) -> UpdateMetadataPartitionState | None:
    if found is None:
        return None  # no leader elected yet: Kafka skips the partition
    leader_and_isr, replicas, offline_replicas = found
    if being_deleted:
        # Kafka's LeaderAndIsr.duringDelete(isr): leader -2 and the *initial* epochs, ISR kept.
        leader, leader_epoch, partition_epoch = LEADER_DURING_DELETE, INITIAL_LEADER_EPOCH, INITIAL_PARTITION_EPOCH
    else:
        leader, leader_epoch = leader_and_isr.leader, leader_and_isr.leader_epoch
        partition_epoch = leader_and_isr.partition_epoch
    return UpdateMetadataPartitionState(
        partition_index=topic_partition[1], controller_epoch=leader_and_isr.controller_epoch,
        leader=leader, leader_epoch=leader_epoch, isr=leader_and_isr.isr, partition_epoch=partition_epoch,
        replicas=tuple(replicas), offline_replicas=tuple(offline_replicas))


def _group_by_topic(by_partition: Mapping[TopicPartition, object]) -> list[tuple[str, tuple]]:
    """[(topic, (value, ...)), ...] with topics by name and values by partition index."""
    grouped: dict[str, list[tuple[int, object]]] = {}
    for (topic, partition), value in by_partition.items():
        grouped.setdefault(topic, []).append((partition, value))
    return [(topic, tuple(value for _, value in sorted(grouped[topic], key=lambda item: item[0])))
            for topic in sorted(grouped)]


def _broker_epoch(broker_epochs: Mapping[int, int], broker_id: int) -> int:
    assert broker_id in broker_epochs, f"no broker epoch known for live broker {broker_id}"
    return broker_epochs[broker_id]
