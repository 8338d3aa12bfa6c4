"""A producer batch and the request that carries it: Kafka's ``ProducerBatch``, client side.

A ``ProducerBatch`` holds the records ``send`` queued for one partition, built once into a v2
record batch and resent as is on retry, with the futures it will resolve. It remembers whether any
attempt may have appended it (``maybe_written``), which is what makes its final failure
indeterminate (``info``) rather than definite (``fail``) in a run's history; ``OUTCOME_UNKNOWN_ERRORS``
are the answers that leave that open; ``record_send_outcome`` writes a send's outcome to the history
by those rules. An ``InFlightRequest`` is one Produce request to one broker, awaiting its answer.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from actors.core.errors import ErrorCode
from orchestration.clients.records import BatchBuilder

# An attempt answered with one of these may have appended its records: the leader appended and
# then could not replicate in time (REQUEST_TIMED_OUT, NOT_ENOUGH_REPLICAS_AFTER_APPEND, both from
# the produce purgatory), the call's fate is unknown (NETWORK_EXCEPTION), or the broker failed
# somewhere inside the request (UNKNOWN_SERVER_ERROR, KAFKA_STORAGE_ERROR: a write may be partly
# on disk). Every other error is answered before the append, so it proves that attempt wrote
# nothing (NOT_LEADER_OR_FOLLOWER too, unless it carries a base offset: see ``Producer._complete``).
OUTCOME_UNKNOWN_ERRORS = frozenset({
    ErrorCode.REQUEST_TIMED_OUT, ErrorCode.NETWORK_EXCEPTION, ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
    ErrorCode.UNKNOWN_SERVER_ERROR, ErrorCode.KAFKA_STORAGE_ERROR,
})


@dataclass(slots=True)
class ProducerBatch:
    topic: str
    partition: int
    builder: BatchBuilder
    created_ms: float
    futures: list = field(default_factory=list)
    payload: bytes | None = None  # built once, resent as is on retry
    attempts: int = 0
    retry_after_ms: float = 0.0
    estimated_bytes: int = 0  # what this batch holds of buffer.memory
    # Set once any attempt may have appended this batch, and never cleared: a later attempt's
    # refusal (NOT_LEADER_OR_FOLLOWER, say) says nothing about the earlier one.
    maybe_written: bool = False
    # An idempotent producer's stamp (``Idempotence.stamp``): None until first drained.
    producer_id: int = -1
    base_sequence: int | None = None

    def size_in_bytes(self) -> int:
        return len(self.payload) if self.payload is not None else self.builder.size_in_bytes()


@dataclass(slots=True)
class InFlightRequest:
    """One Produce request awaiting its answer; ``ref`` is kept to cancel an abandoned call."""
    broker_id: int
    groups: list  # [[ProducerBatch]]: per partition, the batches in the request, in order
    sent_ms: float
    ref: Any


# The history's error for a completed acks=0 send: the broker's answer is not an acknowledgement.
NO_ACKNOWLEDGEMENT = "NO_ACKNOWLEDGEMENT"


def record_send_outcome(history, process: str, acks: int, value_text: str, batch: ProducerBatch | None,
                        future) -> None:
    """How one send ended, for the history (a done callback, run by whoever resolved the
    future). A failure is ``fail`` only if no attempt may have appended the record: refused
    in ``send`` (``batch`` is None) or every attempt refused before the append."""
    error = future.exception()
    if error is None:
        metadata = future.result()
        if acks == 0:
            history.info(process, value_text, NO_ACKNOWLEDGEMENT)
        else:
            history.ok(process, metadata.topic, metadata.partition, metadata.offset, value_text)
    elif batch is not None and batch.maybe_written:
        history.info(process, value_text, error)
    else:
        history.fail(process, value_text, error)


def history_text(value: bytes | bytearray | memoryview | None) -> str:
    """A record's value as the history writes it, here and in polls (UTF-8, else escaped)."""
    if isinstance(value, memoryview):
        value = bytes(value)
    return value.decode("utf-8", errors="backslashreplace") if isinstance(value, (bytes, bytearray)) else str(value)


__all__ = ["NO_ACKNOWLEDGEMENT", "OUTCOME_UNKNOWN_ERRORS", "InFlightRequest", "ProducerBatch", "history_text",
           "record_send_outcome"]
