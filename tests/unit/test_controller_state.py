"""The controller's partition and replica state machines accept exactly Kafka 2.4's legal transitions
(every (from, to) pair is tried against a table copied from PartitionStateMachine.scala and
ReplicaStateMachine.scala, and a refused one leaves the state unchanged), and LeaderAndIsr bumps its
epochs and shrinks its ISR as Kafka's controller does."""
from __future__ import annotations

import itertools
import random

import pytest

from actors.core.controller.state import (
    NO_LEADER, LeaderAndIsr, PartitionState, PartitionStates, ReplicaState, ReplicaStates,
    is_valid_partition_transition, is_valid_replica_transition,
)

P = PartitionState
R = ReplicaState

# Written out from Kafka 2.4's validPreviousStates, independently of the module's own table.
LEGAL_PARTITION_TRANSITIONS = {
    (P.NON_EXISTENT_PARTITION, P.NEW_PARTITION),
    (P.NEW_PARTITION, P.ONLINE_PARTITION), (P.ONLINE_PARTITION, P.ONLINE_PARTITION),
    (P.OFFLINE_PARTITION, P.ONLINE_PARTITION),
    (P.NEW_PARTITION, P.OFFLINE_PARTITION), (P.ONLINE_PARTITION, P.OFFLINE_PARTITION),
    (P.OFFLINE_PARTITION, P.OFFLINE_PARTITION),
    (P.OFFLINE_PARTITION, P.NON_EXISTENT_PARTITION),
}
LEGAL_REPLICA_TRANSITIONS = {
    (R.NON_EXISTENT_REPLICA, R.NEW_REPLICA),
    *((source, R.ONLINE_REPLICA) for source in
      (R.NEW_REPLICA, R.ONLINE_REPLICA, R.OFFLINE_REPLICA, R.REPLICA_DELETION_INELIGIBLE)),
    *((source, R.OFFLINE_REPLICA) for source in
      (R.NEW_REPLICA, R.ONLINE_REPLICA, R.OFFLINE_REPLICA, R.REPLICA_DELETION_INELIGIBLE)),
    (R.OFFLINE_REPLICA, R.REPLICA_DELETION_STARTED),
    (R.REPLICA_DELETION_STARTED, R.REPLICA_DELETION_SUCCESSFUL),
    (R.OFFLINE_REPLICA, R.REPLICA_DELETION_INELIGIBLE),
    (R.REPLICA_DELETION_STARTED, R.REPLICA_DELETION_INELIGIBLE),
    (R.REPLICA_DELETION_SUCCESSFUL, R.NON_EXISTENT_REPLICA),
}
# Transitions a controller bug could plausibly attempt, named so a failure reads as a story.
ILLEGAL_PARTITION_TRANSITIONS = [
    (P.NON_EXISTENT_PARTITION, P.ONLINE_PARTITION),   # must be created (NEW) first
    (P.NON_EXISTENT_PARTITION, P.OFFLINE_PARTITION),
    (P.NON_EXISTENT_PARTITION, P.NON_EXISTENT_PARTITION),
    (P.ONLINE_PARTITION, P.NON_EXISTENT_PARTITION),   # deletion goes through OFFLINE
    (P.NEW_PARTITION, P.NEW_PARTITION),
    (P.ONLINE_PARTITION, P.NEW_PARTITION),
]
ILLEGAL_REPLICA_TRANSITIONS = [
    (R.ONLINE_REPLICA, R.REPLICA_DELETION_STARTED),    # must be stopped (OFFLINE) first
    (R.NON_EXISTENT_REPLICA, R.ONLINE_REPLICA),
    (R.NEW_REPLICA, R.NEW_REPLICA),
    (R.REPLICA_DELETION_STARTED, R.ONLINE_REPLICA),
    (R.REPLICA_DELETION_STARTED, R.NON_EXISTENT_REPLICA),  # must succeed first
    (R.REPLICA_DELETION_SUCCESSFUL, R.ONLINE_REPLICA),
    (R.REPLICA_DELETION_INELIGIBLE, R.REPLICA_DELETION_STARTED),  # retried through OFFLINE
    (R.NON_EXISTENT_REPLICA, R.NON_EXISTENT_REPLICA),
]

TP = ("orders", 3)
REPLICA = (TP, 2)


def partition_states_with(state: PartitionState) -> PartitionStates:
    states = PartitionStates()
    if state is not P.NON_EXISTENT_PARTITION:
        states.initialize(TP, state)
    return states


def replica_states_with(state: ReplicaState) -> ReplicaStates:
    states = ReplicaStates()
    if state is not R.NON_EXISTENT_REPLICA:
        states.initialize(REPLICA, state)
    return states


@pytest.mark.parametrize("current,target", list(itertools.product(PartitionState, repeat=2)))
def test_partition_transition_follows_kafkas_table(current, target):
    states = partition_states_with(current)
    legal = (current, target) in LEGAL_PARTITION_TRANSITIONS
    assert is_valid_partition_transition(current, target) is legal
    assert states.transition(TP, target) is legal
    assert states.get(TP) is (target if legal else current)


@pytest.mark.parametrize("current,target", list(itertools.product(ReplicaState, repeat=2)))
def test_replica_transition_follows_kafkas_table(current, target):
    states = replica_states_with(current)
    legal = (current, target) in LEGAL_REPLICA_TRANSITIONS
    assert is_valid_replica_transition(current, target) is legal
    assert states.transition(REPLICA, target) is legal
    assert states.get(REPLICA) is (target if legal else current)


@pytest.mark.parametrize("current,target", ILLEGAL_PARTITION_TRANSITIONS)
def test_illegal_partition_transition_is_refused_and_changes_nothing(current, target):
    states = partition_states_with(current)
    other = ("orders", 4)
    states.initialize(other, P.ONLINE_PARTITION)
    assert states.transition(TP, target) is False
    assert states.get(TP) is current and states.get(other) is P.ONLINE_PARTITION
    assert len(states) == (1 if current is P.NON_EXISTENT_PARTITION else 2)


@pytest.mark.parametrize("current,target", ILLEGAL_REPLICA_TRANSITIONS)
def test_illegal_replica_transition_is_refused_and_changes_nothing(current, target):
    states = replica_states_with(current)
    assert states.transition(REPLICA, target) is False
    assert states.get(REPLICA) is current
    assert len(states) == (0 if current is R.NON_EXISTENT_REPLICA else 1)


def test_states_carry_kafkas_state_bytes_and_a_docstring_each():
    assert [s.value for s in PartitionState] == [0, 1, 2, 3]
    assert [s.value for s in ReplicaState] == [1, 2, 3, 4, 5, 6, 7]
    for state in [*PartitionState, *ReplicaState]:
        assert state.__doc__ and "Comes from" in state.__doc__ and "goes to" in state.__doc__


def test_partition_lifecycle_from_creation_to_deletion_and_recreation():
    states = PartitionStates()
    for target in (P.NEW_PARTITION, P.ONLINE_PARTITION, P.OFFLINE_PARTITION, P.ONLINE_PARTITION,
                   P.OFFLINE_PARTITION, P.NON_EXISTENT_PARTITION, P.NEW_PARTITION):
        assert states.transition(TP, target), target
    assert states.get(TP) is P.NEW_PARTITION and len(states) == 1


def test_replica_deletion_lifecycle_with_a_failed_attempt_and_a_retry():
    states = ReplicaStates()
    path = (R.NEW_REPLICA, R.ONLINE_REPLICA, R.OFFLINE_REPLICA, R.REPLICA_DELETION_STARTED,
            R.REPLICA_DELETION_INELIGIBLE, R.OFFLINE_REPLICA, R.REPLICA_DELETION_STARTED,
            R.REPLICA_DELETION_SUCCESSFUL, R.NON_EXISTENT_REPLICA)
    for target in path:
        assert states.transition(REPLICA, target), target
    assert REPLICA not in states and len(states) == 0


def test_partition_states_queries():
    states = PartitionStates()
    for tp, state in [(("b", 1), P.OFFLINE_PARTITION), (("a", 0), P.ONLINE_PARTITION),
                      (("b", 0), P.ONLINE_PARTITION), (("a", 1), P.NEW_PARTITION)]:
        states.initialize(tp, state)
    assert states.partitions_in(P.ONLINE_PARTITION) == [("a", 0), ("b", 0)]
    assert states.partitions_in(P.NEW_PARTITION, P.OFFLINE_PARTITION) == [("a", 1), ("b", 1)]
    assert states.partitions_of_topic("b") == [("b", 0), ("b", 1)]
    assert states.count(P.ONLINE_PARTITION) == 2 and len(states) == 4
    states.remove(("a", 0))
    assert states.get(("a", 0)) is P.NON_EXISTENT_PARTITION and len(states) == 3
    states.remove_topic("b")
    assert list(states.items()) == [(("a", 1), P.NEW_PARTITION)] and len(states) == 1
    with pytest.raises(AssertionError):
        states.initialize(("a", 1), P.ONLINE_PARTITION)


def test_replica_states_queries():
    states = ReplicaStates()
    for replica, state in [((("t", 0), 1), R.ONLINE_REPLICA), ((("t", 0), 2), R.REPLICA_DELETION_STARTED),
                           ((("t", 1), 1), R.REPLICA_DELETION_SUCCESSFUL), ((("u", 0), 2), R.ONLINE_REPLICA)]:
        states.initialize(replica, state)
    assert [replica for replica, _ in states.items("t")] == [(("t", 0), 1), (("t", 0), 2), (("t", 1), 1)]
    assert states.replicas_in(R.ONLINE_REPLICA) == [(("t", 0), 1), (("u", 0), 2)]
    assert states.replicas_in(R.ONLINE_REPLICA, topic="u") == [(("u", 0), 2)]
    assert states.replicas_in(R.REPLICA_DELETION_STARTED, topic="u") == []
    assert states.transition((("t", 0), 1), R.OFFLINE_REPLICA)
    assert states.transition((("t", 0), 1), R.REPLICA_DELETION_STARTED)
    for replica in [(("t", 0), 1), (("t", 0), 2)]:
        assert states.transition(replica, R.REPLICA_DELETION_SUCCESSFUL)
    assert states.replicas_in(R.REPLICA_DELETION_SUCCESSFUL, topic="t") == [(("t", 0), 1), (("t", 0), 2), (("t", 1), 1)]
    states.remove_topic("t")
    assert len(states) == 1 and list(states.items("t")) == []


# LeaderAndIsr


def record(leader=1, isr=(1, 2, 3), leader_epoch=5, partition_epoch=9, controller_epoch=2):
    return LeaderAndIsr(leader=leader, leader_epoch=leader_epoch, isr=isr, partition_epoch=partition_epoch,
                        controller_epoch=controller_epoch)


def test_new_leader_and_isr_bumps_leader_epoch_and_partition_epoch():
    changed = record().new_leader_and_isr(2, [2, 3], controller_epoch=3)
    assert changed == record(leader=2, isr=(2, 3), leader_epoch=6, partition_epoch=10, controller_epoch=3)


def test_new_leader_keeps_the_isr():
    assert record().new_leader(3, 4) == record(leader=3, leader_epoch=6, partition_epoch=10, controller_epoch=4)


def test_new_isr_bumps_only_the_partition_epoch():
    assert record().new_isr((1, 3), 2) == record(isr=(1, 3), partition_epoch=10)


@pytest.mark.parametrize("fields", [
    dict(isr=(1, 1, 2)),                 # duplicate ISR member
    dict(leader=4),                      # leader outside the ISR
    dict(leader=-2),                     # LeaderDuringDelete is a message marker, never a record
    dict(leader_epoch=-1),
    dict(partition_epoch=-1),
    dict(controller_epoch=-2),
    dict(isr=[1, 2]),                    # a list would make the record mutable
])
def test_invariants_are_asserted(fields):
    with pytest.raises(AssertionError):
        record(**fields)


def test_an_offline_partition_may_have_no_leader_and_keep_its_isr():
    offline = record(leader=NO_LEADER, isr=(3,))
    assert not offline.has_leader and record().has_leader


# Kafka 2.4 doRemoveReplicasFromIsr, one partition at a time: (leader, isr, removed) -> (leader, isr).
REMOVE_FROM_ISR_CASES = [
    ("follower leaves", 1, (1, 2, 3), 2, 1, (1, 3)),
    ("leader leaves", 1, (1, 2, 3), 1, NO_LEADER, (2, 3)),
    ("last ISR member, the leader, dies: ISR kept", 3, (3,), 3, NO_LEADER, (3,)),
    ("already leaderless, last member dies again", NO_LEADER, (3,), 3, NO_LEADER, (3,)),
    ("leaderless, one of two ISR members dies", NO_LEADER, (2, 3), 2, NO_LEADER, (3,)),
]


@pytest.mark.parametrize("story,leader,isr,removed,new_leader,new_isr", REMOVE_FROM_ISR_CASES,
                         ids=[case[0] for case in REMOVE_FROM_ISR_CASES])
def test_remove_replica_from_isr_as_kafka_does(story, leader, isr, removed, new_leader, new_isr):
    before = record(leader=leader, isr=isr)
    after = before.remove_replica_from_isr(removed, controller_epoch=7)
    # The controller's write bumps the leader epoch too, even when only a follower left.
    assert after == record(leader=new_leader, isr=new_isr, leader_epoch=6, partition_epoch=10,
                           controller_epoch=7)


def test_removing_a_replica_outside_the_isr_writes_nothing():
    assert record(isr=(1, 2)).remove_replica_from_isr(3, controller_epoch=7) is None


def test_partition_state_counts_follow_every_change():
    # The controller reads count() after every event, so it is kept as states change, not scanned:
    # after each change of a seeded sequence it must equal what a scan of every partition counts.
    chooser, states = random.Random(7), PartitionStates()
    topics = ("a", "b", "c")
    for _ in range(500):
        tp = (chooser.choice(topics), chooser.randrange(4))
        action = chooser.random()
        if action < 0.05:
            states.remove_topic(tp[0])
        elif action < 0.15:
            states.remove(tp)
        else:
            states.transition(tp, chooser.choice(list(P)))
        for state in P:
            scanned = sum(1 for _, current in states.items() if current is state)
            expected = 0 if state is P.NON_EXISTENT_PARTITION else scanned
            assert states.count(state) == expected, (state, states.count(state), expected)
