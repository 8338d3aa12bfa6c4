"""A broker that comes back without its data is not trusted as if it had it (KIP-858's directory ids).

Theory of operation. Every broker registers the id of its log directory (``meta.properties``),
which the controller keeps per broker in its store, also while the broker is down. A broker that
registers with an id other than the one on record started on an empty or replaced directory: it
lost every replica it held. Kafka 2.4 cannot tell (nothing records the disk), so when such a
broker was the last member of a partition's ISR the controller elects it as soon as it registers,
and every acknowledged record of that partition is silently gone (the replication stories' lost
disk). Here the controller first takes the broker out of every ISR it is in, even where it is the
last member: the ISR becomes empty and the partition has no leader. A clean election then finds
no one, so the partition stays offline until an operator allows an unclean election
(``unclean.leader.election.enable`` or ElectLeaders with the unclean type), which is recorded as
unclean; a replica that kept its data never needs this, since it never left the ISR by losing it.
(Kafka reached the same place in KRaft with KIP-966's eligible leader replicas.)
"""
from __future__ import annotations

from collections.abc import Callable, Iterable

from actors.core.controller.context import ControllerContext
from actors.core.controller.state import PartitionState, TopicPartition


def directory_changed(context: ControllerContext, broker_id: int, log_dirs: Iterable[str]) -> bool:
    """Records the broker's directory id; True if it differs from the one on record."""
    directories = tuple(log_dirs)
    if not directories:
        return False  # a broker that reports no directory id: nothing to compare
    recorded = context.store.broker_directory(broker_id)
    if recorded != directories[0]:
        context.store.put_broker_directory(broker_id, directories[0])
    return recorded is not None and recorded != directories[0]


def remove_from_every_isr(context: ControllerContext, broker_id: int, controller_epoch: int,
                          add_leader_and_isr: Callable[[TopicPartition, list[int]], None]) -> list[TopicPartition]:
    """Takes ``broker_id`` out of every ISR it is in, the last member included; returns the
    partitions changed. Their replicas hear of it through ``add_leader_and_isr``."""
    changed = []
    for topic_partition in context.partitions_on_broker(broker_id):
        leadership = context.leadership.get(topic_partition)
        if leadership is None or topic_partition[0] in context.topics_to_delete:
            continue
        shrunk = leadership.remove_replica_from_isr(broker_id, controller_epoch, lost_data=True)
        if shrunk is None:
            continue
        context.set_leadership(topic_partition, shrunk)
        if not shrunk.has_leader:
            context.partition_states.transition(topic_partition, PartitionState.OFFLINE_PARTITION)
        add_leader_and_isr(topic_partition, list(context.replicas(topic_partition)))
        changed.append(topic_partition)
    return changed
