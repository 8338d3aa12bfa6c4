"""Proves Log.truncate_to trims the leader-epoch cache at the log end even when it cuts no record (an epoch a replica began as leader but never wrote to), as Kafka's truncateTo does, table-driven over in-memory logs."""
from __future__ import annotations

import pytest

from actors.core.log.log import Log

from actors.core.log.log_config import LogConfig
from actors.core.log.storage import InMemoryStorage
from tests.support.core_driver import make_batch

BATCH = make_batch([b"a", b"b"])  # two records


def log_with(epochs_written: list[int], empty_epoch: int | None) -> tuple[Log, InMemoryStorage]:
    """A log with one two-record batch per entry of ``epochs_written``, then optionally a leader-epoch
    entry for ``empty_epoch`` at the log end, as ``Partition.make_leader`` assigns it."""
    storage = InMemoryStorage()
    log = Log.open(storage, "t-0", LogConfig())
    for epoch in epochs_written:
        log.append_as_leader(BATCH, leader_epoch=epoch)
    if empty_epoch is not None:
        log.leader_epoch_cache.assign(empty_epoch, log.log_end_offset)
    return log, storage


@pytest.mark.parametrize(("epochs_written", "empty_epoch", "offset", "expected_entries", "expected_leo"), [
    # An empty epoch at the log end goes, whether the offset is at or past the end.
    ([0], 1, 2, [(0, 0)], 2),
    ([0], 1, 7, [(0, 0)], 2),
    ([0, 2], 3, 4, [(0, 0), (2, 2)], 4),
    # Nothing to trim: the cache and the log stay as they are.
    ([0, 2], None, 4, [(0, 0), (2, 2)], 4),
    ([0], None, 9, [(0, 0)], 2),
    # A real truncation still drops the later epochs with the records.
    ([0, 2], 3, 2, [(0, 0)], 2),
])
def test_truncate_to_trims_the_epoch_cache_at_the_log_end(epochs_written, empty_epoch, offset, expected_entries,
                                                        expected_leo):
    log, storage = log_with(epochs_written, empty_epoch)
    cut = log.truncate_to(offset)
    assert cut == (offset < len(epochs_written) * 2)
    assert log.log_end_offset == expected_leo
    assert [tuple(e) for e in log.leader_epoch_cache.entries] == expected_entries
    assert log.latest_epoch == expected_entries[-1][0]
    # The trimmed cache is what the checkpoint holds: a restart sees the same epochs.
    reopened = Log.open(storage, "t-0", LogConfig())
    assert [tuple(e) for e in reopened.leader_epoch_cache.entries] == expected_entries
