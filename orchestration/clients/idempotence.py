"""The idempotent producer's client side (KIP-98): a producer id, and a sequence per partition.

Theory of operation. An idempotent producer asks a broker for a producer id and epoch
(InitProducerId) before it sends anything, then stamps every batch, when it is first drained for
sending, with that id, that epoch and the partition's next sequence number, which then grows by
the batch's record count. A retry resends the batch as stamped, so a leader that already has it
answers with the original offsets instead of writing it twice: retries become safe, and an
attempt whose outcome was unknown no longer risks a duplicate.

Pipelining (Kafka 3.x's Sender and TransactionManager). Up to ``BATCHES_IN_FLIGHT_MAX`` (5)
stamped batches of a partition may be incomplete (sent and not yet acknowledged or failed for
good) at once, in up to ``max.in.flight.requests.per.connection`` requests per broker; five is the
leader's window of remembered batches per producer (Kafka's ``NumBatchesToRetain``), so a retry
of any incomplete batch is still recognised as a duplicate. Ray runs one caller's calls to an
actor in the order they were made, so the leader sees a partition's requests in sequence order;
if one fails retriably, the leader answers the ones after it OUT_OF_ORDER_SEQUENCE_NUMBER.

Retries go in sequence order, one at a time (``may_drain``). A retried batch returns to its
partition's queue in creation order and is sent only once it is the partition's first incomplete
batch: every batch before it was acknowledged or failed. It travels alone: a leader that finds a
request's first batch of a producer among the batches it already has answers with that batch's
offsets and writes nothing of the request (Kafka's rule), so batches beside a retry would be
acknowledged and never written. Fresh batches may share a request (our records field carries a
partition's batches end to end), within the five.

Errors (``may_retry``, Kafka's ``canRetry``). OUT_OF_ORDER_SEQUENCE_NUMBER or
UNKNOWN_PRODUCER_ID for a batch that is not its partition's first incomplete batch means an
earlier one is not in the log yet: retry (so too for a batch past a gap, see below). For the first incomplete batch it is a real gap (the
leader lost batches it had acknowledged, or its state of this producer): the batch fails (the
leader refused it, so it is not in the log), as it does for INVALID_PRODUCER_EPOCH (fenced).
Other errors retry as they are retriable.

Gaps. A sequence number is never reused for other records: a batch that fails for good after it
was stamped (expired, refused, retries used up) may or may not be in the log, so the producer
asks for a new producer id before it stamps anything else, and every partition starts again at
sequence 0 under it (Kafka's ``resetProducerId``). The partition's later batches under the old
identity can no longer be written in sequence: each, when it comes back to be retried, loses its
stamp and is stamped afresh under the new identity if no attempt may have appended it, and fails
(indeterminately) otherwise, since a fresh stamp could then write it twice. Earlier batches keep
their identity and retry under it. A partition stamps nothing under the new identity while a
batch under an older one is incomplete (Kafka's ``hasStaleProducerIdAndEpoch``), so the leader
sees the new epoch only after the old one's batches.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from actors.core.errors import ErrorCode
from actors.core.log.producer_state import increment_sequence
from actors.core.messages.init_producer_id import InitProducerIdRequest
from actors.codecs.record_batches import with_producer_state
from orchestration.errors import KafkaError

NO_PRODUCER_ID = -1
MAX_IN_FLIGHT_WITH_IDEMPOTENCE = 5  # Kafka's limit for enable.idempotence
# Stamped batches of one partition incomplete at once; the leader remembers the last five batches
# per producer (Kafka's ProducerStateEntry.NumBatchesToRetain), see the module docstring.
BATCHES_IN_FLIGHT_MAX = 5
# The leader's answers to a sequence it cannot take next: the batches before it are not in its log.
# The leader answers UNKNOWN_PRODUCER_ID for a producer it has no state for whose batch does not
# start at sequence 0 (Kafka 2.4's rule), which is what a pipelined batch meets when the
# producer's first batch of the partition has not landed.
_SEQUENCE_ERRORS = frozenset({ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, ErrorCode.UNKNOWN_PRODUCER_ID})


def idempotence_enabled(settings: dict[str, str], acks: int, explicit: bool) -> bool:
    """Kafka 3.x's rule: on by default when the other settings allow it (acks=all, retries > 0,
    at most 5 requests in flight); asked for explicitly with settings that forbid it, an error."""
    conflicts = []
    if acks != -1:
        conflicts.append(f"acks={settings['acks']} (it needs acks=all)")
    if int(settings["retries"]) <= 0:
        conflicts.append(f"retries={settings['retries']} (it needs retries > 0)")
    if int(settings["max.in.flight.requests.per.connection"]) > MAX_IN_FLIGHT_WITH_IDEMPOTENCE:
        conflicts.append(f"max.in.flight.requests.per.connection={settings['max.in.flight.requests.per.connection']}"
                         f" (it needs at most {MAX_IN_FLIGHT_WITH_IDEMPOTENCE})")
    wanted = str(settings.get("enable.idempotence", "true")).strip().lower()
    if wanted not in ("true", "false"):
        raise KafkaError(ErrorCode.INVALID_CONFIG, f"enable.idempotence={settings['enable.idempotence']!r}")
    if wanted == "false":
        return False
    if conflicts and explicit:
        raise KafkaError(ErrorCode.INVALID_CONFIG, "enable.idempotence=true conflicts with " + "; ".join(conflicts))
    return not conflicts


@dataclass(slots=True)
class PartitionSequences:
    """One partition's sequences (Kafka's ``TxnPartitionEntry``)."""
    next_sequence: int = 0  # under the current identity
    # Stamped batches neither acknowledged nor failed for good, in the order they were stamped
    # (which is sequence order under each identity, and older identities first).
    incomplete: list = field(default_factory=list)
    # Per retired identity (producer id, epoch): the creation order of its first batch here that
    # failed for good after it was stamped; batches of that identity created later are past a gap.
    gaps: dict = field(default_factory=dict)


class Idempotence:
    """The producer's identity and sequences; used from the producer's sender thread only."""

    def __init__(self, directory, *, request_timeout_ms: int) -> None:
        self._directory = directory
        self._request_timeout_ms = request_timeout_ms
        self.producer_id = NO_PRODUCER_ID
        self.producer_epoch = -1
        self._partitions: dict[tuple[str, int], PartitionSequences] = {}
        self._reset_needed = False
        self._next_broker = 0

    @property
    def ready(self) -> bool:
        return self.producer_id != NO_PRODUCER_ID and not self._reset_needed

    def init_producer_id(self) -> bool:
        """One InitProducerId to a known broker (round robin); True once the producer has an id.
        A retriable answer or an unreachable broker is False (the caller waits retry.backoff.ms);
        any other error is raised, as Kafka's producer fails on a fatal one."""
        brokers = self._directory.known_broker_ids()
        if not brokers:
            self._directory.refresh_metadata()
            return False
        broker_id = brokers[self._next_broker % len(brokers)]
        self._next_broker += 1
        try:
            response = self._directory.call(broker_id, InitProducerIdRequest(),
                                            timeout_ms=self._request_timeout_ms)
        except KafkaError as exc:
            if exc.retriable:
                return False
            raise
        if response.error_code != ErrorCode.NONE:
            error = KafkaError(response.error_code, response.error_message or "InitProducerId refused")
            if error.retriable:
                return False
            raise error
        self.producer_id, self.producer_epoch = response.producer_id, response.producer_epoch
        for sequences in self._partitions.values():
            sequences.next_sequence = 0
        self._reset_needed = False
        return True

    def _sequences(self, batch) -> PartitionSequences:
        key = (batch.topic, batch.partition)
        sequences = self._partitions.get(key)
        if sequences is None:
            sequences = self._partitions[key] = PartitionSequences()
        return sequences

    # ------------------------------------------------------------------------------ draining
    def may_drain(self, head) -> bool:
        """Whether the partition's first queued batch may be sent now (Kafka's
        ``shouldStopDrainBatchesForPartition``): a stamped one (a retry) once it is the
        partition's first incomplete batch; a fresh one while fewer than five are incomplete and
        none of them is of an older identity."""
        sequences = self._sequences(head)
        if head.base_sequence is not None:
            return sequences.incomplete[0] is head
        if len(sequences.incomplete) >= BATCHES_IN_FLIGHT_MAX:
            return False
        return not any(batch.producer_id != self.producer_id or batch.producer_epoch != self.producer_epoch
                       for batch in sequences.incomplete)

    def may_join(self, group, batch) -> bool:
        """Whether ``batch`` may travel in one request with ``group`` (the partition's batches
        drained so far for it, not empty): only fresh batches go together, and only while the
        partition has fewer than five incomplete."""
        return (batch.attempts == 0 and group[0].attempts == 0 and batch.base_sequence is None
                and len(self._sequences(batch).incomplete) < BATCHES_IN_FLIGHT_MAX)

    def past_gap(self, batch) -> bool:
        """Whether a stamped batch comes after one of its identity that failed for good here."""
        if batch.base_sequence is None:
            return False
        gap_order = self._sequences(batch).gaps.get((batch.producer_id, batch.producer_epoch))
        return gap_order is not None and batch.order > gap_order

    def settle_gap(self, queue) -> list:
        """The queued batches of a partition that are past a gap lose their stamp, or leave the
        queue to fail if an attempt may have appended them (returned with their error). All of them
        at once: one left stamped would hold the partition's fresh batches back for good."""
        if not queue or not self._sequences(queue[0]).gaps:
            return []
        failed = []
        for batch in [batch for batch in queue if self.past_gap(batch)]:
            if not batch.maybe_written:
                self.unstamp(batch)
                continue
            queue.remove(batch)
            failed.append((batch, KafkaError(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, (
                f"a batch of {batch.topic}-{batch.partition} sent before this one failed for good, and this one "
                "may be in the log already, so it cannot be sent again under a new sequence"))))
        return failed

    def unstamp(self, batch) -> None:
        """A batch past a gap that no attempt may have appended: stamped afresh when next drained."""
        assert not batch.maybe_written, "a batch that may be in the log keeps its stamp"
        sequences = self._sequences(batch)
        sequences.incomplete.remove(batch)
        _forget_passed_gaps(sequences)
        batch.producer_id, batch.producer_epoch, batch.base_sequence = NO_PRODUCER_ID, -1, None

    def stamp(self, batch) -> None:
        """Give a batch drained for the first time this producer's identity and the partition's next
        sequence (its header gets them when it is built, ``ProducerBatch.seal``); a batch stamped
        before (a retry) keeps what it has."""
        if batch.base_sequence is not None:
            return
        sequences = self._sequences(batch)
        sequence = sequences.next_sequence
        batch.producer_id, batch.producer_epoch, batch.base_sequence = self.producer_id, self.producer_epoch, sequence
        if batch.payload is not None:  # stamped afresh after a gap; a new batch is stamped by ``seal``
            batch.payload = with_producer_state(batch.payload, self.producer_id, self.producer_epoch, sequence)
        sequences.next_sequence = increment_sequence(sequence, batch.builder.record_count)
        sequences.incomplete.append(batch)

    def on_split(self, batch, pieces) -> None:
        """A stamped batch refused as too large was split: its pieces take its place among the
        incomplete batches, with its identity and its sequences in record order (Kafka's
        ``ProducerBatch.split``), so the sequences that follow it stay as they were."""
        if batch.base_sequence is None:
            return
        sequence = batch.base_sequence
        for piece in pieces:
            piece.producer_id, piece.producer_epoch, piece.base_sequence = (
                batch.producer_id, batch.producer_epoch, sequence)
            sequence = increment_sequence(sequence, piece.builder.record_count)
        incomplete = self._sequences(batch).incomplete
        index = incomplete.index(batch)
        incomplete[index:index + 1] = pieces

    # ------------------------------------------------------------------------------- answers
    def on_acknowledged(self, batch) -> None:
        if batch.base_sequence is not None:
            sequences = self._sequences(batch)
            sequences.incomplete.remove(batch)
            _forget_passed_gaps(sequences)

    def may_retry(self, batch, error: KafkaError) -> bool:
        """Kafka's ``canRetry`` for an idempotent producer, see the module docstring."""
        if batch.base_sequence is None:
            return error.retriable
        if error.error_code in _SEQUENCE_ERRORS:
            # Past a gap, the batch is to be stamped afresh (or failed) before it is sent again.
            return self.past_gap(batch) or self._sequences(batch).incomplete[0] is not batch
        if error.error_code == ErrorCode.INVALID_PRODUCER_EPOCH:
            return False  # fenced by a newer epoch of this producer id
        return error.retriable

    def on_failed_for_good(self, batch) -> None:
        """A stamped batch will not be retried: its sequence may have left a gap, so a new id,
        and its identity's later batches of the partition are past a gap."""
        if batch.base_sequence is None:
            return
        sequences = self._sequences(batch)
        if batch in sequences.incomplete:
            sequences.incomplete.remove(batch)
        identity = (batch.producer_id, batch.producer_epoch)
        sequences.gaps[identity] = min(batch.order, sequences.gaps.get(identity, batch.order))
        if batch.producer_id == self.producer_id and not self._reset_needed:
            self._reset_needed = True
        _forget_passed_gaps(sequences)


def _forget_passed_gaps(sequences: PartitionSequences) -> None:
    """Drops the gaps of identities with no incomplete batch left here (nothing can be past them),
    so a partition keeps at most one gap per identity that still has batches in flight."""
    if sequences.gaps:
        live = {(b.producer_id, b.producer_epoch) for b in sequences.incomplete}
        for identity in [i for i in sequences.gaps if i not in live]:
            del sequences.gaps[identity]
