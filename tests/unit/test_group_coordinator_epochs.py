"""Leadership changes of offsets partitions are fenced by leader epoch: a late, older change is
ignored, a repeated election at the same epoch is a duplicate (it must not load the partition a
second time), and a load started under an epoch or role that has since moved on is recognised as
stale."""
from actors.core.group.coordinator_epochs import CoordinatorEpochs


def test_older_changes_are_ignored_and_stale_loads_recognised():
    epochs = CoordinatorEpochs()
    assert epochs.accept(2, 5, is_leader=True)
    assert not epochs.accept(2, 4, is_leader=False), "a change older than one already seen"
    assert epochs.is_current(2, 5)
    assert epochs.accept(2, 6, is_leader=True)
    assert not epochs.is_current(2, 5), "a load begun at epoch 5 finished after epoch 6 arrived"
    assert epochs.partitions() == [2]
    epochs.clear()
    assert epochs.partitions() == [] and epochs.accept(2, 1, is_leader=True)


def test_the_same_election_twice_is_a_duplicate_and_loads_once():
    # A restarted coordinator hears of its broker's leaderships both from its own start-up
    # adoption and from its broker watch (and, at cluster start, from the broker itself).
    epochs = CoordinatorEpochs()
    assert epochs.accept(0, 3, is_leader=True)
    assert not epochs.accept(0, 3, is_leader=True), "the same election again"


def test_a_resignation_at_the_election_epoch_wins_and_makes_the_load_of_that_election_stale():
    # StopReplica resigns the offsets partition at the leader epoch it was led with.
    epochs = CoordinatorEpochs()
    assert epochs.accept(0, 3, is_leader=True)
    assert epochs.accept(0, 3, is_leader=False), "election, then resignation at that epoch"
    assert not epochs.is_current(0, 3), "a load of the election must not finish after the resignation"
    assert not epochs.accept(0, 3, is_leader=True), "a late copy of the election"
    assert not epochs.accept(0, 3, is_leader=False), "the same resignation again"
    assert epochs.accept(0, 4, is_leader=True)
