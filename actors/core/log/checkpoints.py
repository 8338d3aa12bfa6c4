"""Kafka's checkpoint files, read and written through ``Storage``.

Theory of operation. A checkpoint is a small text file that Kafka rewrites whole: a version line
(0), a line with the number of entries, then one line per entry, every line ending in '\\n'
(Kafka's ``CheckpointFile``). Writes go through ``Storage.write_file_atomically`` (temp file,
fsync, rename), so a reader sees the old file or the new one, never a mix. Two entry formats:

- ``OffsetCheckpointFile``: "topic partition offset" lines; the broker-level files
  ``replication-offset-checkpoint`` (high watermarks), ``recovery-point-offset-checkpoint`` and
  ``log-start-offset-checkpoint``.
- ``LeaderEpochCheckpointFile``: "epoch start_offset" lines; ``<partition dir>/leader-epoch-checkpoint``.

A missing file reads as empty. A malformed one (bad version, bad line, wrong count) raises
``CheckpointFileError``, a ``KafkaProtocolError`` with ``KAFKA_STORAGE_ERROR``: Kafka treats it as
a storage failure and takes the log directory offline rather than guess.
"""
from __future__ import annotations

from typing import Callable, Iterable, Mapping, TypeVar

from actors.core.errors import ErrorCode, KafkaProtocolError
from actors.core.log.storage import Storage

CHECKPOINT_VERSION = 0
REPLICATION_OFFSET_CHECKPOINT = "replication-offset-checkpoint"
RECOVERY_POINT_OFFSET_CHECKPOINT = "recovery-point-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"
LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
# The log cleaner's first dirty offset per compacted partition (Kafka's LogCleanerManager).
CLEANER_OFFSET_CHECKPOINT = "cleaner-offset-checkpoint"

Entry = TypeVar("Entry")


class CheckpointFileError(KafkaProtocolError):
    """A checkpoint file that cannot be parsed; the log directory holding it is unusable."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(ErrorCode.KAFKA_STORAGE_ERROR, f"malformed checkpoint file {path!r}: {message}")
        self.path = path


def _read_entries(storage: Storage, path: str, parse_line: Callable[[list[str]], Entry]) -> list[Entry]:
    if not storage.exists(path):
        return []
    try:
        text = storage.read_file(path).decode("utf-8")
    except UnicodeDecodeError as error:
        raise CheckpointFileError(path, f"not UTF-8 ({error})") from None
    lines = text.split("\n")
    # Every line, the last included, ends in '\n': the final split piece must be empty.
    if len(lines) < 3 or lines[-1] != "":
        raise CheckpointFileError(path, "missing the version line, the count line or the final newline")
    lines = [line.rstrip("\r") for line in lines[:-1]]
    try:
        version = int(lines[0])
    except ValueError:
        raise CheckpointFileError(path, f"bad version line {lines[0]!r}") from None
    if version != CHECKPOINT_VERSION:
        raise CheckpointFileError(path, f"unrecognized version {version}")
    try:
        expected_count = int(lines[1])
    except ValueError:
        raise CheckpointFileError(path, f"bad count line {lines[1]!r}") from None
    entries = []
    for line in lines[2:]:
        try:
            entries.append(parse_line(line.split()))
        except (ValueError, IndexError):
            raise CheckpointFileError(path, f"bad entry line {line!r}") from None
    if len(entries) != expected_count:
        raise CheckpointFileError(path, f"expected {expected_count} entries, found {len(entries)}")
    return entries


def _entries_bytes(lines: Iterable[str]) -> bytes:
    body = list(lines)
    return "".join(f"{line}\n" for line in [str(CHECKPOINT_VERSION), str(len(body)), *body]).encode("utf-8")


def offset_checkpoint_bytes(offsets: Mapping[tuple[str, int], int]) -> bytes:
    """The contents of an offset checkpoint file holding ``offsets`` (sorted, so that the same map
    always gives the same bytes: the simulation stays deterministic)."""
    lines = []
    for (topic, partition), offset in sorted(offsets.items()):
        if not topic or any(character.isspace() for character in topic):
            raise ValueError(f"topic name {topic!r} cannot be written to a checkpoint")
        lines.append(f"{topic} {int(partition)} {int(offset)}")
    return _entries_bytes(lines)


def _parse_offset_line(fields: list[str]) -> tuple[tuple[str, int], int]:
    if len(fields) != 3:
        raise ValueError(fields)
    topic, partition, offset = fields
    return (topic, int(partition)), int(offset)


def _parse_epoch_line(fields: list[str]) -> tuple[int, int]:
    if len(fields) != 2:
        raise ValueError(fields)
    return int(fields[0]), int(fields[1])


class OffsetCheckpointFile:
    """A map (topic, partition) -> offset in Kafka's "topic partition offset" checkpoint format."""

    def __init__(self, storage: Storage, path: str) -> None:
        self.storage = storage
        self.path = path

    def read(self) -> dict[tuple[str, int], int]:
        entries = _read_entries(self.storage, self.path, _parse_offset_line)
        result = dict(entries)
        if len(result) != len(entries):
            raise CheckpointFileError(self.path, "a topic partition appears twice")
        return result

    def write(self, offsets: Mapping[tuple[str, int], int]) -> None:
        self.storage.write_file_atomically(self.path, offset_checkpoint_bytes(offsets))


def leader_epoch_checkpoint_bytes(entries: Iterable[tuple[int, int]]) -> bytes:
    """The contents of a leader-epoch checkpoint file holding ``entries``."""
    return _entries_bytes(f"{int(epoch)} {int(start_offset)}" for epoch, start_offset in entries)


class LeaderEpochCheckpointFile:
    """A list of (epoch, start_offset) in Kafka's "epoch start_offset" checkpoint format."""

    def __init__(self, storage: Storage, path: str) -> None:
        self.storage = storage
        self.path = path

    def read(self) -> list[tuple[int, int]]:
        return _read_entries(self.storage, self.path, _parse_epoch_line)

    def write(self, entries: Iterable[tuple[int, int]]) -> None:
        self.storage.write_file_atomically(self.path, leader_epoch_checkpoint_bytes(entries))
