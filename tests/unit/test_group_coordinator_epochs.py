"""Leadership changes of offsets partitions are fenced by leader epoch: a late, older change is
ignored, and a load started under an epoch that has since moved on is recognised as stale."""
from actors.core.group.coordinator_epochs import CoordinatorEpochs


def test_older_changes_are_ignored_and_stale_loads_recognised():
    epochs = CoordinatorEpochs()
    assert epochs.accept(2, 5)
    assert not epochs.accept(2, 4), "a change older than one already seen"
    assert epochs.accept(2, 5), "the same epoch again (election, then resignation at that epoch)"
    assert epochs.is_current(2, 5)
    assert epochs.accept(2, 6)
    assert not epochs.is_current(2, 5), "a load begun at epoch 5 finished after epoch 6 arrived"
    assert epochs.partitions() == [2]
    epochs.clear()
    assert epochs.partitions() == [] and epochs.accept(2, 1)
