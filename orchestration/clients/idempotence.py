"""The idempotent producer's client side (KIP-98): a producer id, and a sequence per partition.

Theory of operation. An idempotent producer asks a broker for a producer id and epoch
(InitProducerId) before it sends anything, then stamps every batch, when it is first drained for
sending, with that id, that epoch and the partition's next sequence number, which then grows by
the batch's record count. A retry resends the batch as stamped, so a leader that already has it
answers with the original offsets instead of writing it twice: retries become safe, and an
attempt whose outcome was unknown no longer risks a duplicate.

Order. Ray keeps no order between calls, so while a partition has a Produce request in flight
its next batches wait (the partition is muted, as Kafka's accumulator mutes a partition to
guarantee order); up to five queued batches of the partition travel in the next request together,
so a busy partition still sends large requests. Up to ``max.in.flight.requests.per.connection``
requests stay in flight per broker, for different partitions.

Retries travel alone. A leader that finds a request's first batch of a producer among the batches
it already has answers with that batch's offsets and writes nothing of the request (Kafka's rule;
Kafka's producer sends one batch per partition per request). So a batch that was sent before goes
in a request of its own: were the batches queued behind it in the same request, they would be
acknowledged at the offsets that follow the duplicate and never written. Fresh batches go at most
``BATCHES_PER_REQUEST_MAX`` together, the leader's window of remembered batches per producer, so a
retry of any of them, alone, is still recognised as a duplicate.

Gaps. A sequence number is never reused for other records: a batch that fails for good after it
was stamped (expired, refused, retries used up) may or may not be in the log, so the producer
asks for a new producer id before it stamps anything else, and every partition starts again at
sequence 0 under it (Kafka's ``resetProducerId``). Batches already stamped keep their old
identity and still retry under it. OUT_OF_ORDER_SEQUENCE_NUMBER, UNKNOWN_PRODUCER_ID and
INVALID_PRODUCER_EPOCH fail their batch (the leader refused it, so it is not in the log) and reset
the id the same way.
"""
from __future__ import annotations

from actors.core.errors import ErrorCode
from actors.core.log.producer_state import increment_sequence
from actors.core.messages import InitProducerIdRequest
from actors.records import with_producer_state
from orchestration.errors import KafkaError

NO_PRODUCER_ID = -1
MAX_IN_FLIGHT_WITH_IDEMPOTENCE = 5  # Kafka's limit for enable.idempotence
# Batches of one partition in one request; the leader remembers the last five batches per
# producer (Kafka's ProducerStateEntry.NumBatchesToRetain), see the module docstring.
BATCHES_PER_REQUEST_MAX = 5


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


class Idempotence:
    """The producer's identity and sequences; used from the producer's sender thread only."""

    def __init__(self, directory, *, request_timeout_ms: int) -> None:
        self._directory = directory
        self._request_timeout_ms = request_timeout_ms
        self.producer_id = NO_PRODUCER_ID
        self.producer_epoch = -1
        self._next_sequence: dict[tuple[str, int], int] = {}
        self._reset_needed = False
        # Partitions with a request in flight. Only the sender thread mutes, unmutes and drains.
        self.muted: set[tuple[str, int]] = set()
        self._next_broker = 0
        self.resets = 0

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
            response = self._directory.call(broker_id, "handle_init_producer_id", InitProducerIdRequest(),
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
        self._next_sequence.clear()
        self._reset_needed = False
        return True

    def mute(self, groups) -> None:
        self.muted.update((group[0].topic, group[0].partition) for group in groups)

    def unmute(self, groups) -> None:
        self.muted.difference_update((group[0].topic, group[0].partition) for group in groups)

    @staticmethod
    def may_join(group, batch) -> bool:
        """Whether ``batch`` may travel in one request with ``group`` (the partition's batches
        drained so far for it, not empty): only fresh batches go together, five at most."""
        return (batch.attempts == 0 and group[0].attempts == 0
                and len(group) < BATCHES_PER_REQUEST_MAX)

    def stamp(self, batch) -> None:
        """Give a batch drained for the first time this producer's identity and the partition's next
        sequence; a batch stamped before (a retry) keeps what it has."""
        if batch.base_sequence is not None:
            return
        key = (batch.topic, batch.partition)
        sequence = self._next_sequence.get(key, 0)
        batch.payload = with_producer_state(batch.payload, self.producer_id, self.producer_epoch, sequence)
        batch.producer_id, batch.base_sequence = self.producer_id, sequence
        self._next_sequence[key] = increment_sequence(sequence, batch.builder.record_count)

    def on_failed_for_good(self, batch) -> None:
        """A stamped batch will not be retried: its sequence may have left a gap, so a new id."""
        if batch.base_sequence is not None and batch.producer_id == self.producer_id and not self._reset_needed:
            self._reset_needed = True
            self.resets += 1
