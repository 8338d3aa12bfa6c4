"""The controller's request batch bound to its context: what every controller event uses to tell
brokers about the state changes it made.

Theory of operation. Kafka 2.4's ``ControllerBrokerRequestBatch`` reads leaderships, assignments
and live brokers from the ``ControllerContext`` it was built with, and its ``sendRequestsToBrokers``
hands the requests to the channel manager. ``BrokerRequests`` is that pairing here: it owns one
``ControllerBrokerRequestBatch``, knows the context and this controller's epoch, and offers the
steps that every event handler (broker lifecycle, elections, ISR changes, controlled shutdown,
topic deletion) shares: add a LeaderAndIsr for a partition's current leadership, take a replica
offline (Kafka's ``OfflineReplica`` transition), and ``flush`` the batch into ``Send`` effects.

In: calls from the controller's handlers while they handle one event. Out: ``Send`` effects, one
per (broker, request), destination ``broker:<id>``, in the batch's order (see request_batch.py).
"""
from __future__ import annotations

from collections.abc import Iterable

from actors.core.controller.context import ControllerContext
from actors.core.controller.request_batch import ControllerBrokerRequestBatch
from actors.core.controller.state import PartitionState, ReplicaState, TopicPartition
from actors.core.effects import Effect, Send


def broker_destination(broker_id: int) -> str:
    return f"broker:{broker_id}"


class BrokerRequests:
    def __init__(self, *, context: ControllerContext, controller_id: int, controller_epoch: int) -> None:
        self.context = context
        # The epoch this controller claimed when it started; it never changes for this controller.
        self.controller_epoch = controller_epoch
        self.batch = ControllerBrokerRequestBatch(controller_id=controller_id)

    def flush(self) -> list[Effect]:
        """Turn the batch into one Send per (broker, request), in Kafka's order."""
        context = self.context
        live = context.live_or_shutting_down_broker_ids
        pairs = self.batch.send_requests(
            controller_epoch=self.controller_epoch,
            broker_epochs={b: context.brokers[b].broker_epoch for b in live},
            live_brokers={b: context.brokers[b].host for b in live},
            broker_endpoints={b: context.brokers[b].listeners for b in live},
            partition_states=context.partition_state_lookup,
            topics_to_be_deleted=context.topics_to_delete,
            topic_configs=context.topic_config_pairs)
        return [Send(destination=broker_destination(b), message=request) for b, request in pairs]

    def add_leader_and_isr(self, topic_partition: TopicPartition, broker_ids: Iterable[int],
                           is_new: bool = False) -> None:
        """Tell the live ones of ``broker_ids`` the partition's current leadership (if it has one)."""
        context = self.context
        leadership = context.leadership.get(topic_partition)
        if leadership is None:
            return
        live = context.live_or_shutting_down_broker_ids
        self.batch.add_leader_and_isr_request_for_brokers(
            [b for b in broker_ids if b in live], topic_partition, leadership,
            context.replicas(topic_partition), is_new=is_new,
            topic_config=context.topic_config_pairs(topic_partition[0]))

    def replica_offline(self, topic_partition: TopicPartition, broker_id: int) -> None:
        """Kafka's OfflineReplica transition: out of the ISR, the remaining replicas told."""
        context = self.context
        replica = (topic_partition, broker_id)
        if replica not in context.replica_states:
            context.replica_states.initialize(replica, ReplicaState.ONLINE_REPLICA)
        context.replica_states.transition(replica, ReplicaState.OFFLINE_REPLICA)
        if topic_partition[0] in context.topics_to_delete:
            return
        leadership = context.leadership.get(topic_partition)
        if leadership is None:
            return
        changed = leadership.remove_replica_from_isr(broker_id, self.controller_epoch)
        if changed is None:
            return
        context.set_leadership(topic_partition, changed)
        if not changed.has_leader:
            context.partition_states.transition(topic_partition, PartitionState.OFFLINE_PARTITION)
        others = [r for r in context.replicas(topic_partition)
                  if r != broker_id and r in context.live_or_shutting_down_broker_ids]
        self.add_leader_and_isr(topic_partition, others)


__all__ = ["BrokerRequests", "broker_destination"]
