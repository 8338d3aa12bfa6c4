"""The controller's view of partitions and replicas: ``LeaderAndIsr`` and the two state machines.

Theory of operation
-------------------
This module owns three things, all pure data with no I/O:

- ``LeaderAndIsr``: one partition's leader, leader epoch, ISR and partition epoch, as Kafka 2.4
  stores it in ZooKeeper's ``/brokers/topics/<topic>/partitions/<n>/state`` (Kafka's
  ``kafka.api.LeaderAndIsr`` plus the controller epoch of ``LeaderIsrAndControllerEpoch``). Our
  ``partition_epoch`` plays the part of Kafka's ZooKeeper ``zkVersion``: every write of the record
  bumps it, which is what makes a broker's ISR change (``AlterPartition``) a compare-and-set.
- ``PartitionStates``: the state of every partition the controller knows, checked against Kafka's
  ``PartitionStateMachine`` valid-previous-state table.
- ``ReplicaStates``: the state of every (partition, replica), checked against Kafka's
  ``ReplicaStateMachine`` table.

In: the controller's event handlers ask for a transition. Out: ``True`` if the table allows it
(the state is then changed), ``False`` if it does not (the state is left alone). Kafka logs such
an illegal transition as an error and skips that partition or replica; the caller turns ``False``
into a ``LogEvent``. What a transition *does* (elect, send LeaderAndIsr, StopReplica, ...) is the
caller's job; see ``elections.py`` and ``request_batch.py``.

A key that was never seen, or was removed, is in the ``NON_EXISTENT_*`` state: Kafka likewise
starts every unseen partition or replica in ``NonExistentPartition``/``NonExistentReplica``.
Moving a key to ``NON_EXISTENT_*`` forgets it, so the maps only hold live state.

What Kafka 2.4 does when a replica dies (read from ``ReplicaStateMachine.doRemoveReplicasFromIsr``
and ``Election.leaderForOffline`` at 2.4; mirrored by ``LeaderAndIsr.remove_replica_from_isr`` and
``elections.elect_for_offline_partition``):

1. ``KafkaController.onReplicasBecomeOffline`` first moves the partitions the dead broker led to
   ``OfflinePartition`` and runs the offline election: the first replica in assignment order that
   is live and in the ISR becomes leader, and the new ISR is the old ISR filtered to live replicas.
2. Only then are the dead broker's replicas moved to ``OfflineReplica``, which removes the replica
   from the ISR of every partition whose ISR contains it: the leader becomes ``NO_LEADER`` (-1)
   if the dead replica was the leader, and the ISR loses the replica *unless it is the last ISR
   member*, in which case the ISR is left as it is. Either way the leader epoch is bumped
   (``newLeaderAndIsr``), even when only a follower left the ISR.

So a partition whose last in-sync replica dies ends up ``leader = -1, isr = [that replica]``:
Kafka never writes an empty ISR. With ``unclean.leader.election.enable=false`` that replica stays
the only one eligible to lead, and the partition comes back, cleanly, when its broker does (the
offline election then finds it live and in the ISR). With unclean election on, the first live
replica in assignment order takes over with ``isr = [itself]``.
"""
from __future__ import annotations

import enum
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, replace

from actors.core.messages._base import NO_LEADER

TopicPartition = tuple[str, int]
PartitionAndReplica = tuple[TopicPartition, int]  # Kafka's PartitionAndReplica: (partition, broker id)

LEADER_DURING_DELETE = -2  # Kafka's LeaderAndIsr.LeaderDuringDelete: only ever sent in UpdateMetadata.
INITIAL_LEADER_EPOCH = 0
INITIAL_PARTITION_EPOCH = 0
NO_CONTROLLER_EPOCH = -1

# Bounds on what one controller tracks. A ZooKeeper-era Kafka cluster tops out around 200,000
# partitions; going past these means a runaway caller, so it is an assertion, not an error code.
PARTITIONS_MAX = 1_000_000
REPLICAS_MAX = 4_000_000


@dataclass(frozen=True, slots=True, kw_only=True)
class LeaderAndIsr:
    """One partition's leadership record, immutable; every change makes a new one."""

    leader: int  # a broker id, or NO_LEADER; when not NO_LEADER it is a member of isr
    leader_epoch: int  # >= 0; bumped on every leader change (and by the controller's ISR writes)
    isr: tuple[int, ...]  # distinct broker ids, in the order Kafka keeps them
    partition_epoch: int  # >= 0; Kafka's zkVersion: bumped on every write of this record
    controller_epoch: int = NO_CONTROLLER_EPOCH  # the epoch of the controller that wrote it

    def __post_init__(self) -> None:
        assert isinstance(self.isr, tuple), f"isr must be a tuple, got {type(self.isr).__name__}"
        assert len(set(self.isr)) == len(self.isr), f"isr {self.isr} has duplicates"
        assert all(replica >= 0 for replica in self.isr), f"isr {self.isr} has a negative broker id"
        assert self.leader >= NO_LEADER, f"leader {self.leader} is neither a broker id nor NO_LEADER"
        assert self.leader == NO_LEADER or self.leader in self.isr, \
            f"leader {self.leader} is not in isr {self.isr}"
        assert self.leader_epoch >= INITIAL_LEADER_EPOCH, f"leader_epoch {self.leader_epoch} < 0"
        assert self.partition_epoch >= INITIAL_PARTITION_EPOCH, f"partition_epoch {self.partition_epoch} < 0"
        assert self.controller_epoch >= NO_CONTROLLER_EPOCH, f"controller_epoch {self.controller_epoch} < -1"

    @property
    def has_leader(self) -> bool:
        return self.leader != NO_LEADER

    def new_leader_and_isr(self, leader: int, isr: Iterable[int], controller_epoch: int) -> LeaderAndIsr:
        """A controller write that changes the leader and/or ISR: a new leader epoch and partition epoch.

        Kafka's ``newLeaderAndIsr`` bumps the leader epoch; the ZooKeeper write bumps zkVersion.
        """
        return replace(self, leader=leader, leader_epoch=self.leader_epoch + 1, isr=tuple(isr),
                       partition_epoch=self.partition_epoch + 1, controller_epoch=controller_epoch)

    def new_leader(self, leader: int, controller_epoch: int) -> LeaderAndIsr:
        """Kafka's ``newLeader``: a leader change that keeps the ISR (preferred election)."""
        return self.new_leader_and_isr(leader, self.isr, controller_epoch)

    def new_isr(self, isr: Iterable[int], controller_epoch: int) -> LeaderAndIsr:
        """An ISR change without a leader change (the leader's AlterPartition): partition epoch only.

        The leader epoch stays, so followers keep fetching without a new LeaderAndIsr.
        """
        return replace(self, isr=tuple(isr), partition_epoch=self.partition_epoch + 1,
                       controller_epoch=controller_epoch)

    def remove_replica_from_isr(self, replica_id: int, controller_epoch: int, *,
                                lost_data: bool = False) -> LeaderAndIsr | None:
        """Kafka 2.4's ``doRemoveReplicasFromIsr`` for one partition; None if ``replica_id`` is not in the ISR.

        The leader becomes NO_LEADER if it was ``replica_id``; the ISR drops ``replica_id`` unless it
        is the last member (Kafka never writes an empty ISR); the leader epoch is bumped either way.
        A replica that ``lost_data`` (its log directory was replaced) goes even as the last member:
        kept, it would be elected with an empty log (see ``lost_disks``).
        """
        if replica_id not in self.isr:
            return None
        leader = NO_LEADER if replica_id == self.leader else self.leader
        keep_last = len(self.isr) == 1 and not lost_data
        isr = self.isr if keep_last else tuple(r for r in self.isr if r != replica_id)
        return self.new_leader_and_isr(leader, isr, controller_epoch)


class _DocumentedState(enum.Enum):
    """An enum whose members carry Kafka's state byte as value and their own docstring."""

    def __new__(cls, code: int, doc: str) -> _DocumentedState:
        member = object.__new__(cls)
        member._value_ = code
        member.__doc__ = doc
        return member


class PartitionState(_DocumentedState):
    """A partition's state in the controller (Kafka's ``PartitionState``, values are its state bytes)."""

    NEW_PARTITION = (0, "Assigned replicas but no leader or ISR yet (just created). "
                        "Comes from NON_EXISTENT_PARTITION; goes to ONLINE_PARTITION (first leader "
                        "elected) or OFFLINE_PARTITION.")
    ONLINE_PARTITION = (1, "Has a live leader. Comes from NEW, ONLINE (re-election: preferred, "
                           "controlled shutdown, reassignment) or OFFLINE; goes to ONLINE or OFFLINE.")
    OFFLINE_PARTITION = (2, "Had a leader that died, or is being deleted. Comes from NEW, ONLINE or "
                            "OFFLINE; goes to ONLINE (a leader is elected), OFFLINE or NON_EXISTENT (deleted).")
    NON_EXISTENT_PARTITION = (3, "Never created, or deleted. Comes from OFFLINE only; goes to NEW.")


class ReplicaState(_DocumentedState):
    """A replica's state in the controller (Kafka's ``ReplicaState``, values are its state bytes)."""

    NEW_REPLICA = (1, "Created by topic creation or reassignment; may only be a follower. Comes from "
                      "NON_EXISTENT_REPLICA; goes to ONLINE or OFFLINE.")
    ONLINE_REPLICA = (2, "Started and in the assignment; may lead or follow. Comes from NEW, ONLINE, "
                         "OFFLINE or DELETION_INELIGIBLE; goes to ONLINE or OFFLINE.")
    OFFLINE_REPLICA = (3, "Its broker is down, or it is being stopped (StopReplica without delete, "
                          "removed from ISR). Comes from NEW, ONLINE, OFFLINE or DELETION_INELIGIBLE; "
                          "goes to ONLINE, OFFLINE, DELETION_STARTED or DELETION_INELIGIBLE.")
    REPLICA_DELETION_STARTED = (4, "StopReplica with delete sent. Comes from OFFLINE only; goes to "
                                   "DELETION_SUCCESSFUL or DELETION_INELIGIBLE.")
    REPLICA_DELETION_SUCCESSFUL = (5, "The broker deleted it without error. Comes from "
                                      "DELETION_STARTED only; goes to NON_EXISTENT.")
    REPLICA_DELETION_INELIGIBLE = (6, "Deletion failed or its broker is down; retried later. Comes "
                                      "from OFFLINE or DELETION_STARTED; goes to ONLINE or OFFLINE.")
    NON_EXISTENT_REPLICA = (7, "Never created, or deleted. Comes from DELETION_SUCCESSFUL only; goes "
                               "to NEW.")


_P = PartitionState
_R = ReplicaState

# Kafka 2.4 PartitionStateMachine.scala: each target state's validPreviousStates.
VALID_PREVIOUS_PARTITION_STATES: Mapping[PartitionState, frozenset[PartitionState]] = {
    _P.NEW_PARTITION: frozenset({_P.NON_EXISTENT_PARTITION}),
    _P.ONLINE_PARTITION: frozenset({_P.NEW_PARTITION, _P.ONLINE_PARTITION, _P.OFFLINE_PARTITION}),
    _P.OFFLINE_PARTITION: frozenset({_P.NEW_PARTITION, _P.ONLINE_PARTITION, _P.OFFLINE_PARTITION}),
    _P.NON_EXISTENT_PARTITION: frozenset({_P.OFFLINE_PARTITION}),
}

# Kafka 2.4 ReplicaStateMachine.scala: each target state's validPreviousStates. OFFLINE ->
# DELETION_INELIGIBLE arrived with KAFKA-8237 (2.3): dead replicas of a topic being deleted go
# straight to ineligible, without a StopReplica that could not be delivered anyway.
VALID_PREVIOUS_REPLICA_STATES: Mapping[ReplicaState, frozenset[ReplicaState]] = {
    _R.NEW_REPLICA: frozenset({_R.NON_EXISTENT_REPLICA}),
    _R.ONLINE_REPLICA: frozenset({_R.NEW_REPLICA, _R.ONLINE_REPLICA, _R.OFFLINE_REPLICA,
                                  _R.REPLICA_DELETION_INELIGIBLE}),
    _R.OFFLINE_REPLICA: frozenset({_R.NEW_REPLICA, _R.ONLINE_REPLICA, _R.OFFLINE_REPLICA,
                                   _R.REPLICA_DELETION_INELIGIBLE}),
    _R.REPLICA_DELETION_STARTED: frozenset({_R.OFFLINE_REPLICA}),
    _R.REPLICA_DELETION_SUCCESSFUL: frozenset({_R.REPLICA_DELETION_STARTED}),
    _R.REPLICA_DELETION_INELIGIBLE: frozenset({_R.OFFLINE_REPLICA, _R.REPLICA_DELETION_STARTED}),
    _R.NON_EXISTENT_REPLICA: frozenset({_R.REPLICA_DELETION_SUCCESSFUL}),
}

def is_valid_partition_transition(current: PartitionState, target: PartitionState) -> bool:
    return current in VALID_PREVIOUS_PARTITION_STATES[target]


def is_valid_replica_transition(current: ReplicaState, target: ReplicaState) -> bool:
    return current in VALID_PREVIOUS_REPLICA_STATES[target]


class PartitionStates:
    """The current ``PartitionState`` of every known partition, indexed by topic."""

    def __init__(self) -> None:
        self._by_topic: dict[str, dict[int, PartitionState]] = {}
        self._count = 0  # invariant: the number of entries over all of _by_topic
        # Invariant: per state, the number of entries in that state (the controller's gauges read
        # it after every event, which a scan of every partition made cost the cluster's size).
        self._state_counts: dict[PartitionState, int] = {}

    def __len__(self) -> int:
        return self._count

    def __contains__(self, topic_partition: TopicPartition) -> bool:
        topic, partition = topic_partition
        return partition in self._by_topic.get(topic, {})

    def get(self, topic_partition: TopicPartition) -> PartitionState:
        topic, partition = topic_partition
        return self._by_topic.get(topic, {}).get(partition, PartitionState.NON_EXISTENT_PARTITION)

    def transition(self, topic_partition: TopicPartition, target: PartitionState) -> bool:
        """Move to ``target`` if Kafka's table allows it from the current state; False otherwise."""
        if not is_valid_partition_transition(self.get(topic_partition), target):
            return False
        self._set(topic_partition, target)
        return True

    def initialize(self, topic_partition: TopicPartition, state: PartitionState) -> None:
        """Set a state without a transition check: a new controller rebuilding its view on failover."""
        assert topic_partition not in self, f"{topic_partition} is already tracked as {self.get(topic_partition)}"
        self._set(topic_partition, state)

    def remove(self, topic_partition: TopicPartition) -> None:
        self._set(topic_partition, PartitionState.NON_EXISTENT_PARTITION)

    def remove_topic(self, topic: str) -> None:
        for state in self._by_topic.pop(topic, {}).values():
            self._count -= 1
            self._state_counts[state] -= 1

    def partitions_in(self, *states: PartitionState) -> list[TopicPartition]:
        """The partitions in any of ``states``, sorted."""
        wanted = frozenset(states)
        return [tp for tp, state in self.items() if state in wanted]

    def partitions_of_topic(self, topic: str) -> list[TopicPartition]:
        return [(topic, partition) for partition in sorted(self._by_topic.get(topic, {}))]

    def count(self, state: PartitionState) -> int:
        return self._state_counts.get(state, 0)

    def items(self) -> Iterator[tuple[TopicPartition, PartitionState]]:
        """Every tracked (partition, state), sorted by topic and partition."""
        for topic in sorted(self._by_topic):
            states = self._by_topic[topic]
            for partition in sorted(states):
                yield (topic, partition), states[partition]

    def _set(self, topic_partition: TopicPartition, state: PartitionState) -> None:
        topic, partition = topic_partition
        states = self._by_topic.setdefault(topic, {})
        if partition in states:
            self._count -= 1
            self._state_counts[states[partition]] -= 1
        if state is PartitionState.NON_EXISTENT_PARTITION:
            states.pop(partition, None)
            if not states:
                del self._by_topic[topic]
            return
        assert self._count < PARTITIONS_MAX, f"more than {PARTITIONS_MAX} partitions tracked"
        states[partition] = state
        self._count += 1
        self._state_counts[state] = self._state_counts.get(state, 0) + 1


class ReplicaStates:
    """The current ``ReplicaState`` of every known (partition, replica), indexed by topic."""

    def __init__(self) -> None:
        self._by_topic: dict[str, dict[tuple[int, int], ReplicaState]] = {}
        self._count = 0  # invariant: the number of entries over all of _by_topic

    def __len__(self) -> int:
        return self._count

    def __contains__(self, replica: PartitionAndReplica) -> bool:
        (topic, partition), replica_id = replica
        return (partition, replica_id) in self._by_topic.get(topic, {})

    def get(self, replica: PartitionAndReplica) -> ReplicaState:
        (topic, partition), replica_id = replica
        return self._by_topic.get(topic, {}).get((partition, replica_id), ReplicaState.NON_EXISTENT_REPLICA)

    def transition(self, replica: PartitionAndReplica, target: ReplicaState) -> bool:
        """Move to ``target`` if Kafka's table allows it from the current state; False otherwise."""
        if not is_valid_replica_transition(self.get(replica), target):
            return False
        self._set(replica, target)
        return True

    def initialize(self, replica: PartitionAndReplica, state: ReplicaState) -> None:
        """Set a state without a transition check: a new controller rebuilding its view on failover."""
        assert replica not in self, f"{replica} is already tracked as {self.get(replica)}"
        self._set(replica, state)

    def remove(self, replica: PartitionAndReplica) -> None:
        self._set(replica, ReplicaState.NON_EXISTENT_REPLICA)

    def remove_topic(self, topic: str) -> None:
        self._count -= len(self._by_topic.pop(topic, {}))

    def items(self, topic: str | None = None) -> Iterator[tuple[PartitionAndReplica, ReplicaState]]:
        """Every tracked (replica, state), of one topic or all, sorted by topic, partition, replica."""
        topics = [topic] if topic is not None else sorted(self._by_topic)
        for name in topics:
            states = self._by_topic.get(name, {})
            for partition, replica_id in sorted(states):
                yield ((name, partition), replica_id), states[(partition, replica_id)]

    def replicas_in(self, *states: ReplicaState, topic: str | None = None) -> list[PartitionAndReplica]:
        """The replicas in any of ``states``, of one topic or all, sorted."""
        wanted = frozenset(states)
        return [replica for replica, state in self.items(topic) if state in wanted]

    def _set(self, replica: PartitionAndReplica, state: ReplicaState) -> None:
        (topic, partition), replica_id = replica
        key = (partition, replica_id)
        states = self._by_topic.setdefault(topic, {})
        self._count -= key in states
        if state is ReplicaState.NON_EXISTENT_REPLICA:
            states.pop(key, None)
            if not states:
                del self._by_topic[topic]
            return
        assert self._count < REPLICAS_MAX, f"more than {REPLICAS_MAX} replicas tracked"
        states[key] = state
        self._count += 1
