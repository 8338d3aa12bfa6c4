"""Per-producer state of one partition's log: the idempotent producer's duplicates and gaps (KIP-98).

Theory of operation. An idempotent producer stamps every batch's header with its producer id, its
producer epoch and the sequence number of the batch's first record (``base_sequence``; the last
record's is ``base_sequence + last_offset_delta``, wrapping after 2**31 - 1 as Kafka's
``DefaultRecordBatch.incrementSequence`` does). ``ProducerStateManager`` keeps, per producer id,
its epoch and the metadata of its last ``BATCHES_RETAINED`` (5) batches: sequences, offsets and
timestamp, as Kafka's ``ProducerStateEntry`` does. That is enough for the leader to:

- answer a batch it already has (same epoch, same first and last sequence among the five) with
  the original batch's offsets instead of writing it twice (``check_append`` returns it);
- refuse an older epoch with INVALID_PRODUCER_EPOCH (the producer was fenced);
- refuse a sequence that does not follow the last one with OUT_OF_ORDER_SEQUENCE_NUMBER, a new
  epoch that does not start at sequence 0 likewise, and an unknown producer whose first batch does
  not start at 0 with UNKNOWN_PRODUCER_ID (its state is gone, for example by retention).

Only a client's append is validated (Kafka's ``ValidationType.Full``); a follower replays what its
leader wrote, unchecked, so every replica rebuilds the same state from the same log. ``record``
takes a batch after it is written, with its offsets; the log calls it for every append and for
every batch it replays.

The state is a function of the log, so it can always be rebuilt by replaying batch headers (no
record is decoded). To bound that work after a restart, snapshots are kept beside the segments:
``<offset:020d>.snapshot`` holds the state of every batch below ``offset`` (written when a segment
rolls and when the log closes). Opening loads the newest readable snapshot at or below the log end
offset and replays the rest; truncation deletes the snapshots above the new end and rebuilds the
same way; moving the log start forgets producers whose last batch is below it (Kafka's
``evictUnretainedProducers``). A snapshot is JSON with a CRC-32C of its body: a torn or corrupt
one is skipped, and an older one (or the log itself) is used instead.

Transactions are out of scope, but the entry keeps room for them: the batch header's attributes
are stored as they came, and a coordinator epoch and an open transaction's first offset would join
``ProducerStateEntry`` without changing the snapshot's envelope (its ``version`` says which
fields it has).
"""
from __future__ import annotations

import json
from collections.abc import Callable, Collection, Iterable, Iterator
from dataclasses import dataclass

from crc32c import crc32c

from actors.core.errors import ErrorCode, KafkaProtocolError
from actors.core.log.record_batch import BatchHeader
from actors.core.log.storage import Storage

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
BATCHES_RETAINED = 5  # Kafka's ProducerStateEntry.NumBatchesToRetain
INT32_MAX = 2**31 - 1
SNAPSHOT_FILE_SUFFIX = ".snapshot"
SNAPSHOT_VERSION = 1


def increment_sequence(sequence: int, increment: int) -> int:
    """``sequence + increment``, wrapping to 0 after INT32_MAX (Kafka's incrementSequence)."""
    if sequence > INT32_MAX - increment:
        return increment - (INT32_MAX - sequence) - 1
    return sequence + increment


def last_sequence(header: BatchHeader) -> int:
    return increment_sequence(header.base_sequence, header.last_offset_delta)


def in_sequence(last_seq: int, next_seq: int) -> bool:
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == INT32_MAX)


@dataclass(frozen=True, slots=True)
class BatchMetadata:
    """One batch of a producer's as the log holds it."""

    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int
    timestamp: int


@dataclass(frozen=True, slots=True)
class ProducerStateEntry:
    """A producer's epoch and its last ``BATCHES_RETAINED`` batches, oldest first."""

    producer_id: int
    producer_epoch: int
    batches: tuple[BatchMetadata, ...] = ()

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else NO_SEQUENCE

    @property
    def last_offset(self) -> int:
        return self.batches[-1].last_offset if self.batches else -1

    def find_duplicate(self, first_seq: int, last_seq: int) -> BatchMetadata | None:
        for batch in self.batches:
            if batch.first_seq == first_seq and batch.last_seq == last_seq:
                return batch
        return None

    def with_batch(self, producer_epoch: int, batch: BatchMetadata) -> ProducerStateEntry:
        """This entry after ``batch``; a new epoch starts the batch list afresh."""
        kept = self.batches if producer_epoch == self.producer_epoch else ()
        return ProducerStateEntry(self.producer_id, producer_epoch, (kept + (batch,))[-BATCHES_RETAINED:])


def _refuse(code: ErrorCode, message: str) -> KafkaProtocolError:
    return KafkaProtocolError(code, message)


class ProducerStateManager:
    """The producers of one log and how far into the log their state reaches (``map_end_offset``)."""

    def __init__(self, entries: Iterable[ProducerStateEntry] = (), map_end_offset: int = 0) -> None:
        self._producers: dict[int, ProducerStateEntry] = {entry.producer_id: entry for entry in entries}
        self.map_end_offset = map_end_offset

    def __repr__(self) -> str:
        return f"ProducerStateManager(producers={len(self._producers)}, map_end_offset={self.map_end_offset})"

    @property
    def producers(self) -> dict[int, ProducerStateEntry]:
        return dict(self._producers)

    def entry(self, producer_id: int) -> ProducerStateEntry | None:
        return self._producers.get(producer_id)

    # -- the leader's checks -----------------------------------------------------------------

    def check_append(self, headers: Iterable[BatchHeader]) -> BatchMetadata | None:
        """Validates a client's batches before they are written; changes nothing.

        Returns the original batch when one is a duplicate (the append must then write nothing
        and answer with the original's offsets, as Kafka does); raises KafkaProtocolError with
        INVALID_PRODUCER_EPOCH, OUT_OF_ORDER_SEQUENCE_NUMBER or UNKNOWN_PRODUCER_ID otherwise.
        Later batches of one append are checked against the earlier ones.
        """
        pending: dict[int, tuple[int, int]] = {}  # producer id -> (epoch, last sequence) within this append
        for header in headers:
            producer_id = header.producer_id
            if producer_id == NO_PRODUCER_ID:
                continue
            entry = self._producers.get(producer_id)
            if producer_id not in pending and entry is not None and header.producer_epoch == entry.producer_epoch:
                duplicate = entry.find_duplicate(header.base_sequence, last_sequence(header))
                if duplicate is not None:
                    return duplicate
            known_epoch, known_last_seq = pending.get(producer_id) or (
                (entry.producer_epoch, entry.last_seq) if entry is not None else (NO_PRODUCER_EPOCH, NO_SEQUENCE))
            self._check_epoch(header, known_epoch)
            self._check_sequence(header, known_epoch, known_last_seq)
            pending[producer_id] = (header.producer_epoch, last_sequence(header))
        return None

    @staticmethod
    def _check_epoch(header: BatchHeader, known_epoch: int) -> None:
        if header.producer_epoch < known_epoch:
            raise _refuse(ErrorCode.INVALID_PRODUCER_EPOCH,
                          f"producer {header.producer_id}'s epoch {header.producer_epoch} is older than the "
                          f"current epoch {known_epoch}: the producer was fenced")

    @staticmethod
    def _check_sequence(header: BatchHeader, known_epoch: int, known_last_seq: int) -> None:
        first_seq = header.base_sequence
        if header.producer_epoch != known_epoch:
            if first_seq == 0:
                return
            if known_epoch != NO_PRODUCER_EPOCH:
                raise _refuse(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                              f"producer {header.producer_id}'s new epoch {header.producer_epoch} starts at "
                              f"sequence {first_seq}, not 0")
            raise _refuse(ErrorCode.UNKNOWN_PRODUCER_ID,
                          f"producer {header.producer_id} is unknown to this partition and its batch starts at "
                          f"sequence {first_seq}, not 0")
        if known_last_seq == NO_SEQUENCE and first_seq != 0 or (
                known_last_seq != NO_SEQUENCE and not in_sequence(known_last_seq, first_seq)):
            raise _refuse(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                          f"producer {header.producer_id} (epoch {header.producer_epoch}) sent sequence {first_seq} "
                          f"after {known_last_seq}")

    # -- following the log ---------------------------------------------------------------------

    def record(self, header: BatchHeader) -> None:
        """Takes a written batch (offsets stamped) into the state; batches come in log order."""
        self.map_end_offset = max(self.map_end_offset, header.next_offset)
        producer_id = header.producer_id
        if producer_id == NO_PRODUCER_ID:
            return
        entry = self._producers.get(producer_id) or ProducerStateEntry(producer_id, header.producer_epoch)
        batch = BatchMetadata(first_seq=header.base_sequence, last_seq=last_sequence(header),
                              first_offset=header.base_offset, last_offset=header.last_offset,
                              timestamp=header.max_timestamp)
        self._producers[producer_id] = entry.with_batch(header.producer_epoch, batch)

    def evict_below(self, log_start_offset: int) -> None:
        """Forgets producers whose last batch is below the log start (Kafka's
        evictUnretainedProducers): their batches are gone, so no duplicate can be recognised."""
        for producer_id in [p for p, entry in self._producers.items() if entry.last_offset < log_start_offset]:
            del self._producers[producer_id]

    # -- snapshots -----------------------------------------------------------------------------

    def to_snapshot(self) -> bytes:
        body = json.dumps({
            "version": SNAPSHOT_VERSION, "map_end_offset": self.map_end_offset,
            "producers": [[e.producer_id, e.producer_epoch,
                           [[b.first_seq, b.last_seq, b.first_offset, b.last_offset, b.timestamp] for b in e.batches]]
                          for e in sorted(self._producers.values(), key=lambda e: e.producer_id)],
        }, separators=(",", ":")).encode()
        return json.dumps({"crc": crc32c(body), "body": body.decode()}, separators=(",", ":")).encode()

    @classmethod
    def from_snapshot(cls, data: bytes) -> ProducerStateManager:
        """Raises ValueError for a torn, corrupt or unknown snapshot."""
        try:
            envelope = json.loads(data)
            body = envelope["body"].encode()
            if crc32c(body) != envelope["crc"]:
                raise ValueError("snapshot CRC mismatch")
            state = json.loads(body)
            if state["version"] != SNAPSHOT_VERSION:
                raise ValueError(f"snapshot version {state['version']} is not {SNAPSHOT_VERSION}")
            entries = [ProducerStateEntry(int(pid), int(epoch), tuple(BatchMetadata(*map(int, b)) for b in batches))
                       for pid, epoch, batches in state["producers"]]
            return cls(entries, int(state["map_end_offset"]))
        except (KeyError, TypeError, AttributeError, json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ValueError(f"unreadable producer-state snapshot: {exc!r}") from exc


# -- snapshot files beside the segments ----------------------------------------------------------

def snapshot_path(directory: str, offset: int) -> str:
    return f"{directory}/{offset:020d}{SNAPSHOT_FILE_SUFFIX}"


def snapshot_offsets(storage: Storage, directory: str) -> list[int]:
    offsets = []
    for name in storage.list_dir(directory):
        stem = name[:-len(SNAPSHOT_FILE_SUFFIX)]
        if name.endswith(SNAPSHOT_FILE_SUFFIX) and stem.isdigit():
            offsets.append(int(stem))
    return sorted(offsets)


def delete_snapshots(storage: Storage, directory: str, *, above: int | None = None, below: int | None = None) -> None:
    """Deletes the snapshots past offset ``above`` or before ``below`` (all of them with neither)."""
    for offset in snapshot_offsets(storage, directory):
        if snapshot_selected(offset, above=above, below=below):
            storage.delete(snapshot_path(directory, offset))


def snapshot_selected(offset: int, *, above: int | None = None, below: int | None = None) -> bool:
    """Whether ``delete_snapshots`` with these bounds deletes the snapshot at ``offset``."""
    return (above is None and below is None) or (above is not None and offset > above) or (
        below is not None and offset < below)


def load_state(storage: Storage, directory: str, *, log_start_offset: int, log_end_offset: int,
               headers_from: Callable[[int], Iterator[BatchHeader]],
               delete_above: Callable[[int], None] | None = None,
               skip: Collection[int] = ()) -> ProducerStateManager:
    """The state of the log [log_start_offset, log_end_offset): the newest readable snapshot at or
    below the end (newer ones are deleted: they describe data that is gone), then the batches
    after it from ``headers_from(offset)``. A log whose deletes run later passes ``delete_above``
    (which deletes the snapshots past an offset, or below it for an unreadable one) and the
    offsets of snapshots it has already doomed as ``skip``: such files may still be on disk."""
    if delete_above is None:
        delete_snapshots(storage, directory, above=log_end_offset)
    else:
        delete_above(log_end_offset)
    state = ProducerStateManager(map_end_offset=log_start_offset)
    for offset in reversed(snapshot_offsets(storage, directory)):
        if offset > log_end_offset or offset in skip:
            continue
        if offset < log_start_offset:
            break
        try:
            state = ProducerStateManager.from_snapshot(storage.read_file(snapshot_path(directory, offset)))
            break
        except ValueError:
            storage.delete(snapshot_path(directory, offset))
    for header in headers_from(state.map_end_offset):
        state.record(header)
    state.map_end_offset = max(state.map_end_offset, log_end_offset)
    state.evict_below(log_start_offset)
    return state
