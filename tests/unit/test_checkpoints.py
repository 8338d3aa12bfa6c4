"""Proves the checkpoint files round-trip in Kafka's exact text format on both storages, read as
empty when missing, and refuse every malformed file (table-driven) with KAFKA_STORAGE_ERROR."""
from __future__ import annotations

import pytest

from actors.core.errors import ErrorCode, KafkaProtocolError
from actors.core.log.checkpoints import (
    CheckpointFileError, LeaderEpochCheckpointFile, OffsetCheckpointFile)


def test_offsets_round_trip_in_kafka_format(storage):
    checkpoint = OffsetCheckpointFile(storage, "replication-offset-checkpoint")
    checkpoint.write({("orders", 1): 20, ("orders", 0): 10, ("audit", 3): 0})
    assert storage.read_file("replication-offset-checkpoint") == (
        b"0\n3\naudit 3 0\norders 0 10\norders 1 20\n")
    assert checkpoint.read() == {("orders", 0): 10, ("orders", 1): 20, ("audit", 3): 0}


def test_offsets_rewrite_replaces_the_whole_file(storage):
    checkpoint = OffsetCheckpointFile(storage, "recovery-point-offset-checkpoint")
    checkpoint.write({("a", 0): 5, ("b", 0): 6})
    checkpoint.write({("a", 0): 7})
    assert checkpoint.read() == {("a", 0): 7}
    assert storage.list_dir("") == ["recovery-point-offset-checkpoint"]  # no temp file left


def test_empty_map_round_trips(storage):
    checkpoint = OffsetCheckpointFile(storage, "log-start-offset-checkpoint")
    checkpoint.write({})
    assert storage.read_file("log-start-offset-checkpoint") == b"0\n0\n"
    assert checkpoint.read() == {}


def test_missing_files_read_as_empty(storage):
    assert OffsetCheckpointFile(storage, "replication-offset-checkpoint").read() == {}
    assert LeaderEpochCheckpointFile(storage, "t-0/leader-epoch-checkpoint").read() == []


def test_leader_epochs_round_trip_in_kafka_format(storage):
    storage.make_dir("t-0")
    checkpoint = LeaderEpochCheckpointFile(storage, "t-0/leader-epoch-checkpoint")
    checkpoint.write([(0, 0), (3, 120), (4, 500)])
    assert storage.read_file("t-0/leader-epoch-checkpoint") == b"0\n3\n0 0\n3 120\n4 500\n"
    assert checkpoint.read() == [(0, 0), (3, 120), (4, 500)]


def test_topic_names_that_would_break_the_format_are_refused(storage):
    with pytest.raises(ValueError):
        OffsetCheckpointFile(storage, "hw").write({("bad topic", 0): 1})


MALFORMED_OFFSET_FILES = [
    ("empty file", b""),
    ("only a version", b"0\n"),
    ("unknown version", b"1\n0\n"),
    ("version not a number", b"x\n0\n"),
    ("count not a number", b"0\nx\n"),
    ("fewer entries than the count", b"0\n2\na 0 1\n"),
    ("more entries than the count", b"0\n1\na 0 1\na 1 1\n"),
    ("too few fields", b"0\n1\na 0\n"),
    ("too many fields", b"0\n1\na 0 1 2\n"),
    ("partition not a number", b"0\n1\na b 1\n"),
    ("offset not a number", b"0\n1\na 0 z\n"),
    ("no final newline", b"0\n1\na 0 1"),
    ("blank entry line", b"0\n1\n\n"),
    ("duplicate partition", b"0\n2\na 0 1\na 0 2\n"),
    ("not utf-8", b"0\n1\n\xff 0 1\n"),
]


@pytest.mark.parametrize("name, content", MALFORMED_OFFSET_FILES, ids=[row[0] for row in MALFORMED_OFFSET_FILES])
def test_malformed_offset_checkpoint_is_a_storage_error(storage, name, content):
    storage.write_file_atomically("hw", content)
    with pytest.raises(CheckpointFileError) as raised:
        OffsetCheckpointFile(storage, "hw").read()
    assert isinstance(raised.value, KafkaProtocolError)
    assert raised.value.error_code == ErrorCode.KAFKA_STORAGE_ERROR
    assert "'hw'" in str(raised.value)


MALFORMED_EPOCH_FILES = [
    ("three fields", b"0\n1\n0 0 0\n"),
    ("one field", b"0\n1\n5\n"),
    ("epoch not a number", b"0\n1\nx 0\n"),
    ("count mismatch", b"0\n0\n1 0\n"),
]


@pytest.mark.parametrize("name, content", MALFORMED_EPOCH_FILES, ids=[row[0] for row in MALFORMED_EPOCH_FILES])
def test_malformed_epoch_checkpoint_is_a_storage_error(storage, name, content):
    storage.write_file_atomically("epochs", content)
    with pytest.raises(CheckpointFileError):
        LeaderEpochCheckpointFile(storage, "epochs").read()


def test_windows_line_endings_are_accepted(storage):
    storage.write_file_atomically("hw", b"0\r\n1\r\na 0 1\r\n")
    assert OffsetCheckpointFile(storage, "hw").read() == {("a", 0): 1}
