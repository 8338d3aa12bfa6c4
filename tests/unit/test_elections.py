"""Leader elections choose the leaders Kafka 2.4 chooses and write the ISR Kafka writes, checked
against the cases of Kafka's PartitionLeaderElectionAlgorithmsTest and PartitionStateMachineTest
and against the dead-ISR story (last in-sync replica dies, with unclean election off and on)."""
from __future__ import annotations

import pytest

from actors.core.controller.elections import (
    ElectionResult, controlled_shutdown_partition_leader_election, elect_for_controlled_shutdown,
    elect_for_offline_partition, elect_preferred, initial_leader_and_isr,
    offline_partition_leader_election, preferred_replica_partition_leader_election,
    reassign_partition_leader_election,
)
from actors.core.controller.state import NO_LEADER, LeaderAndIsr
from actors.core.errors import ErrorCode

CONTROLLER_EPOCH = 4


def record(leader, isr, leader_epoch=7, partition_epoch=11):
    return LeaderAndIsr(leader=leader, leader_epoch=leader_epoch, isr=tuple(isr), partition_epoch=partition_epoch,
                        controller_epoch=3)


def bumped(leader, isr):
    """What a successful election writes over record(...): both epochs up by one, our controller epoch."""
    return LeaderAndIsr(leader=leader, leader_epoch=8, isr=tuple(isr), partition_epoch=12,
                        controller_epoch=CONTROLLER_EPOCH)


# The algorithms, case by case from PartitionLeaderElectionAlgorithmsTest (2.4).

OFFLINE_CASES = [
    # story, assignment, isr, live, unclean enabled, expected (leader, unclean)
    ("first live ISR member", [2, 4], [2, 4], {4}, False, (4, False)),
    ("assignment order, not ISR order", [5, 2, 4], [4, 2, 5], {2, 4}, False, (2, False)),
    ("last ISR offline, unclean disabled", [2, 4], [2], {4}, False, (None, False)),
    ("last ISR offline, unclean enabled", [2, 4], [2], {4}, True, (4, True)),
    ("clean candidate preferred over unclean", [3, 2, 4], [4], {3, 4}, True, (4, False)),
    ("nothing live, unclean enabled", [2, 4], [2], set(), True, (None, False)),
]


@pytest.mark.parametrize("story,assignment,isr,live,unclean,expected", OFFLINE_CASES,
                         ids=[case[0] for case in OFFLINE_CASES])
def test_offline_partition_leader_election(story, assignment, isr, live, unclean, expected):
    assert offline_partition_leader_election(assignment=assignment, isr=isr, live_replicas=live,
                                             unclean_leader_election_enabled=unclean) == expected


REASSIGN_CASES = [
    ("first live ISR member of the target", [2, 4], [2, 4], {4}, 4),
    ("no live ISR member", [2, 4], [2], set(), None),
    ("empty ISR", [2], [], {2}, None),
]


@pytest.mark.parametrize("story,reassignment,isr,live,expected", REASSIGN_CASES, ids=[c[0] for c in REASSIGN_CASES])
def test_reassign_partition_leader_election(story, reassignment, isr, live, expected):
    assert reassign_partition_leader_election(reassignment=reassignment, isr=isr, live_replicas=live) == expected


PREFERRED_CASES = [
    ("preferred live and in ISR", [2, 4], [2, 4], {2, 4}, 2),
    ("preferred in ISR but dead", [2, 4], [2], set(), None),
    ("preferred live but out of ISR", [2, 4], [4], {2, 4}, None),
    ("no fallback to the second replica", [2, 4], [4], {4}, None),
]


@pytest.mark.parametrize("story,assignment,isr,live,expected", PREFERRED_CASES, ids=[c[0] for c in PREFERRED_CASES])
def test_preferred_replica_partition_leader_election(story, assignment, isr, live, expected):
    assert preferred_replica_partition_leader_election(assignment=assignment, isr=isr, live_replicas=live) == expected


CONTROLLED_SHUTDOWN_CASES = [
    ("leader shutting down, follower takes over", [2, 4], [2, 4], {2, 4}, {2}, 4),
    ("last ISR member shutting down", [2, 4], [2], {2, 4}, {2}, None),
    ("all ISR shutting down at once", [2, 4], [2, 4], {2, 4}, {2, 4}, None),
    ("dead follower skipped", [2, 4, 6], [2, 4, 6], {2, 6}, {2}, 6),
]


@pytest.mark.parametrize("story,assignment,isr,live,shutting_down,expected", CONTROLLED_SHUTDOWN_CASES,
                         ids=[c[0] for c in CONTROLLED_SHUTDOWN_CASES])
def test_controlled_shutdown_partition_leader_election(story, assignment, isr, live, shutting_down, expected):
    assert controlled_shutdown_partition_leader_election(
        assignment=assignment, isr=isr, live_replicas=live, shutting_down_brokers=shutting_down) == expected


# The elections: new LeaderAndIsr, recipients, errors.

def test_initial_leader_and_isr_takes_the_live_replicas_in_assignment_order():
    assert initial_leader_and_isr(assignment=[3, 1, 2], live_replicas={1, 2}, controller_epoch=4) == \
        LeaderAndIsr(leader=1, leader_epoch=0, isr=(1, 2), partition_epoch=0, controller_epoch=4)
    assert initial_leader_and_isr(assignment=[3, 1], live_replicas={2}, controller_epoch=4) is None


OFFLINE_ELECTIONS = [
    # story, current (leader, isr), assignment, live, unclean enabled, expected result
    ("leader died: next ISR member leads, dead replicas leave the ISR",
     (1, [1, 2, 3]), [1, 2, 3], {2, 3}, False,
     ElectionResult(leader_and_isr=bumped(2, [2, 3]), live_replicas_to_notify=(2, 3))),
    ("ISR order kept while filtering", (1, [3, 1, 2]), [1, 2, 3], {2, 3}, False,
     ElectionResult(leader_and_isr=bumped(2, [3, 2]), live_replicas_to_notify=(2, 3))),
    ("leaderless partition with its last ISR member back (PartitionStateMachineTest)",
     (NO_LEADER, [5]), [5], {5}, False,
     ElectionResult(leader_and_isr=bumped(5, [5]), live_replicas_to_notify=(5,))),
    ("whole ISR dead, unclean disabled: stays offline",
     (NO_LEADER, [1]), [1, 2, 3], {2, 3}, False,
     ElectionResult(leader_and_isr=None, live_replicas_to_notify=(2, 3),
                    error=ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE)),
    ("whole ISR dead, unclean enabled: first live replica, ISR = [it]",
     (NO_LEADER, [1]), [1, 3, 2], {2, 3}, True,
     ElectionResult(leader_and_isr=bumped(3, [3]), live_replicas_to_notify=(3, 2), unclean=True)),
    ("nothing live at all", (NO_LEADER, [1]), [1, 2], set(), True,
     ElectionResult(leader_and_isr=None, live_replicas_to_notify=(),
                    error=ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE)),
]


@pytest.mark.parametrize("story,current,assignment,live,unclean,expected", OFFLINE_ELECTIONS,
                         ids=[case[0] for case in OFFLINE_ELECTIONS])
def test_elect_for_offline_partition(story, current, assignment, live, unclean, expected):
    result = elect_for_offline_partition(leader_and_isr=record(*current), assignment=assignment, live_replicas=live,
                                         unclean_leader_election_enabled=unclean, controller_epoch=CONTROLLER_EPOCH)
    assert result == expected


PREFERRED_ELECTIONS = [
    ("preferred replica back in ISR takes over, ISR unchanged", (2, [2, 1]), [1, 2], {1, 2},
     ElectionResult(leader_and_isr=bumped(1, [2, 1]), live_replicas_to_notify=(1, 2))),
    ("preferred replica already leads", (1, [1, 2]), [1, 2], {1, 2},
     ElectionResult(leader_and_isr=None, live_replicas_to_notify=(1, 2), error=ErrorCode.ELECTION_NOT_NEEDED)),
    ("preferred replica dead", (2, [2, 1]), [1, 2], {2},
     ElectionResult(leader_and_isr=None, live_replicas_to_notify=(2,),
                    error=ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE)),
    ("preferred replica live but out of ISR", (2, [2]), [1, 2], {1, 2},
     ElectionResult(leader_and_isr=None, live_replicas_to_notify=(1, 2),
                    error=ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE)),
]


@pytest.mark.parametrize("story,current,assignment,live,expected", PREFERRED_ELECTIONS,
                         ids=[case[0] for case in PREFERRED_ELECTIONS])
def test_elect_preferred(story, current, assignment, live, expected):
    assert elect_preferred(leader_and_isr=record(*current), assignment=assignment, live_replicas=live,
                           controller_epoch=CONTROLLER_EPOCH) == expected


CONTROLLED_SHUTDOWN_ELECTIONS = [
    ("leader shuts down: follower leads, ISR loses the leaving broker; it is still told",
     (1, [1, 2, 3]), [1, 2, 3], {2, 3}, {1},
     ElectionResult(leader_and_isr=bumped(2, [2, 3]), live_replicas_to_notify=(1, 2, 3))),
    ("two brokers shutting down at once", (1, [1, 2, 3]), [1, 2, 3], {1, 2, 3}, {1, 2},
     ElectionResult(leader_and_isr=bumped(3, [3]), live_replicas_to_notify=(1, 2, 3))),
    ("last ISR member shutting down: keeps leading for now", (1, [1]), [1, 2], {1, 2}, {1},
     ElectionResult(leader_and_isr=None, live_replicas_to_notify=(1, 2),
                    error=ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE)),
]


@pytest.mark.parametrize("story,current,assignment,live,shutting_down,expected", CONTROLLED_SHUTDOWN_ELECTIONS,
                         ids=[case[0] for case in CONTROLLED_SHUTDOWN_ELECTIONS])
def test_elect_for_controlled_shutdown(story, current, assignment, live, shutting_down, expected):
    assert elect_for_controlled_shutdown(leader_and_isr=record(*current), assignment=assignment, live_replicas=live,
                                         shutting_down_brokers=shutting_down,
                                         controller_epoch=CONTROLLER_EPOCH) == expected


def test_last_isr_member_dies_then_returns_with_unclean_election_off():
    """The whole story: leader 1 with ISR [1]; broker 1 dies; broker 2 cannot lead; broker 1 returns."""
    current = record(1, [1])
    # The offline election runs first and finds no one.
    failed = elect_for_offline_partition(leader_and_isr=current, assignment=[1, 2], live_replicas={2},
                                         unclean_leader_election_enabled=False, controller_epoch=CONTROLLER_EPOCH)
    assert failed.error is ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE
    # Then OfflineReplica removes broker 1 from the ISR: no leader, but the ISR keeps its last member.
    offline = current.remove_replica_from_isr(1, controller_epoch=CONTROLLER_EPOCH)
    assert (offline.leader, offline.isr, offline.leader_epoch) == (NO_LEADER, (1,), 8)
    # Broker 1 comes back: it is the only clean choice and leads again.
    back = elect_for_offline_partition(leader_and_isr=offline, assignment=[1, 2], live_replicas={1, 2},
                                       unclean_leader_election_enabled=False, controller_epoch=CONTROLLER_EPOCH)
    assert (back.leader_and_isr.leader, back.leader_and_isr.isr, back.leader_and_isr.leader_epoch) == (1, (1,), 9)
    assert not back.unclean


def test_election_result_rejects_a_result_with_both_or_neither():
    with pytest.raises(AssertionError):
        ElectionResult(leader_and_isr=None, live_replicas_to_notify=())
    with pytest.raises(AssertionError):
        ElectionResult(leader_and_isr=bumped(1, [1]), live_replicas_to_notify=(1,),
                       error=ErrorCode.ELECTION_NOT_NEEDED)
