"""Proves LeaderEpochCache follows Kafka 2.4's LeaderEpochFileCache: assign rules, endOffsetFor
(KIP-101/279) and both truncations are checked against tables of expected entries, and every
change is persisted (a fresh cache over the same storage sees it, in Kafka's file format)."""
from __future__ import annotations

import pytest

from actors.core.log.checkpoints import CheckpointFileError
from actors.core.log.leader_epoch_cache import EpochEntry, LeaderEpochCache
from actors.core.log.storage import InMemoryStorage
from actors.file_storage import FileStorage

PATH = "t-0/leader-epoch-checkpoint"


@pytest.fixture(params=["memory", "files"])
def storage(request, tmp_path):
    if request.param == "memory":
        result = InMemoryStorage()
    else:
        result = FileStorage(str(tmp_path / "logs"))
    result.make_dir("t-0")
    yield result
    if isinstance(result, FileStorage):
        result.close()


def cache_with(storage, entries) -> LeaderEpochCache:
    cache = LeaderEpochCache(storage, PATH)
    for epoch, start_offset in entries:
        cache.assign(epoch, start_offset)
    return cache


def reloaded(storage) -> list[tuple[int, int]]:
    return [tuple(entry) for entry in LeaderEpochCache(storage, PATH).entries]


ASSIGNS = [
    # name, assigns in order, resulting entries
    ("first entry", [(0, 0)], [(0, 0)]),
    ("new epochs append", [(0, 0), (1, 10), (3, 25)], [(0, 0), (1, 10), (3, 25)]),
    ("same epoch, later start: ignored", [(0, 0), (0, 5)], [(0, 0)]),
    ("same epoch, same start: ignored", [(2, 7), (2, 7)], [(2, 7)]),
    ("same epoch, earlier start: replaces", [(0, 5), (0, 3)], [(0, 3)]),
    ("lower epoch drops higher epochs", [(0, 0), (2, 10), (1, 20)], [(0, 0), (1, 20)]),
    ("earlier start drops later starts", [(0, 0), (2, 10), (3, 5)], [(0, 0), (3, 5)]),
    ("same start replaces the entry", [(0, 0), (1, 10), (3, 10)], [(0, 0), (3, 10)]),
    ("first entry need not start at 0", [(5, 100)], [(5, 100)]),
    ("everything dropped", [(3, 10), (4, 20), (1, 5)], [(1, 5)]),
]


@pytest.mark.parametrize("name, assigns, expected", ASSIGNS, ids=[row[0] for row in ASSIGNS])
def test_assign_rules(storage, name, assigns, expected):
    cache = cache_with(storage, assigns)
    assert [tuple(entry) for entry in cache.entries] == expected
    assert reloaded(storage) == expected
    assert cache.latest_epoch == expected[-1][0]
    assert cache.earliest_entry == EpochEntry(*expected[0])


def test_assign_reports_whether_it_changed_anything(storage):
    cache = LeaderEpochCache(storage, PATH)
    assert cache.assign(1, 0) is True
    assert cache.assign(1, 10) is False
    assert cache.assign(2, 10) is True


@pytest.mark.parametrize("epoch, start_offset", [(-1, 0), (0, -1)])
def test_assign_refuses_negative_values(storage, epoch, start_offset):
    with pytest.raises(ValueError):
        LeaderEpochCache(storage, PATH).assign(epoch, start_offset)


def test_empty_cache(storage):
    cache = LeaderEpochCache(storage, PATH)
    assert cache.entries == ()
    assert cache.latest_epoch == -1
    assert cache.earliest_entry is None
    assert cache.latest_entry is None
    assert not storage.exists(PATH)  # nothing changed, nothing written


END_OFFSETS = [
    # requested epoch, expected (epoch, end offset); cache [(1,0),(2,10),(4,20)], LEO 30
    (-1, (-1, -1)),     # undefined epoch
    (0, (0, 0)),        # below the earliest epoch: (requested, earliest start)
    (1, (1, 10)),       # ends where epoch 2 starts
    (2, (2, 20)),       # ends where epoch 4 starts
    (3, (2, 20)),       # KIP-279: never-seen epoch -> largest epoch below it
    (4, (4, 30)),       # the latest epoch ends at the LEO
    (5, (-1, -1)),      # above every epoch
]


@pytest.mark.parametrize("requested, expected", END_OFFSETS)
def test_end_offset_for(storage, requested, expected):
    cache = cache_with(storage, [(1, 0), (2, 10), (4, 20)])
    assert cache.end_offset_for(requested, log_end_offset=30) == expected


@pytest.mark.parametrize("requested", [-1, 0, 3])
def test_end_offset_for_on_empty_cache_is_undefined(storage, requested):
    assert LeaderEpochCache(storage, PATH).end_offset_for(requested, log_end_offset=30) == (-1, -1)


def test_end_offset_for_after_start_truncation_points_at_log_start(storage):
    # The log start moved past epoch 1's data: asking for epoch 1 gets (1, new start of epoch 2).
    cache = cache_with(storage, [(1, 0), (2, 10), (4, 20)])
    cache.truncate_from_start(15)
    assert cache.end_offset_for(1, log_end_offset=30) == (1, 15)


TRUNCATE_FROM_END = [
    (21, [(1, 0), (2, 10), (4, 20)]),  # nothing starts at or after 21
    (20, [(1, 0), (2, 10)]),
    (11, [(1, 0), (2, 10)]),
    (10, [(1, 0)]),
    (0, []),
    (-1, [(1, 0), (2, 10), (4, 20)]),  # Kafka ignores a negative end offset
]


@pytest.mark.parametrize("end_offset, expected", TRUNCATE_FROM_END)
def test_truncate_from_end(storage, end_offset, expected):
    cache = cache_with(storage, [(1, 0), (2, 10), (4, 20)])
    cache.truncate_from_end(end_offset)
    assert [tuple(entry) for entry in cache.entries] == expected
    assert reloaded(storage) == expected


TRUNCATE_FROM_START = [
    (0, [(1, 0), (2, 10), (4, 20)]),  # exclusive: an entry starting there is kept as is
    (5, [(1, 5), (2, 10), (4, 20)]),
    (10, [(2, 10), (4, 20)]),
    (15, [(2, 15), (4, 20)]),
    (20, [(4, 20)]),
    (25, [(4, 25)]),
]


@pytest.mark.parametrize("start_offset, expected", TRUNCATE_FROM_START)
def test_truncate_from_start(storage, start_offset, expected):
    cache = cache_with(storage, [(1, 0), (2, 10), (4, 20)])
    cache.truncate_from_start(start_offset)
    assert [tuple(entry) for entry in cache.entries] == expected
    assert reloaded(storage) == expected


def test_truncate_from_start_below_first_entry_changes_nothing(storage):
    cache = cache_with(storage, [(3, 50)])
    assert cache.truncate_from_start(40) is False
    assert cache.entries == (EpochEntry(3, 50),)


def test_clear_is_persisted(storage):
    cache = cache_with(storage, [(1, 0), (2, 10)])
    cache.clear()
    assert cache.entries == ()
    assert storage.read_file(PATH) == b"0\n0\n"
    assert reloaded(storage) == []


def test_checkpoint_file_format(storage):
    cache_with(storage, [(1, 0), (2, 10)])
    assert storage.read_file(PATH) == b"0\n2\n1 0\n2 10\n"


def test_loading_a_non_monotonic_file_repairs_it_with_kafkas_rules(storage):
    storage.write_file_atomically(PATH, b"0\n3\n1 0\n3 10\n2 20\n")
    cache = LeaderEpochCache(storage, PATH)
    assert [tuple(entry) for entry in cache.entries] == [(1, 0), (2, 20)]
    assert storage.read_file(PATH) == b"0\n2\n1 0\n2 20\n"


@pytest.mark.parametrize("content", [b"0\n1\n-1 0\n", b"0\n1\n0 -5\n", b"0\n2\n1 0\n"])
def test_bad_checkpoint_file_is_refused(storage, content):
    storage.write_file_atomically(PATH, content)
    with pytest.raises(CheckpointFileError):
        LeaderEpochCache(storage, PATH)
