"""A producer batch and the request that carries it: Kafka's ``ProducerBatch``, client side.

A ``ProducerBatch`` holds the records ``send`` queued for one partition, built once into a v2
record batch and resent as is on retry, with the futures it will resolve. It remembers whether any
attempt may have appended it (``maybe_written``), which is what makes its final failure
indeterminate (``info``) rather than definite (``fail``) in a run's history; ``OUTCOME_UNKNOWN_ERRORS``
are the answers that leave that open. An ``InFlightRequest`` is one Produce request to one broker,
awaiting its answer.
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

    def size_in_bytes(self) -> int:
        return len(self.payload) if self.payload is not None else self.builder.size_in_bytes()


@dataclass(slots=True)
class InFlightRequest:
    """One Produce request awaiting its answer; ``ref`` is kept to cancel an abandoned call."""
    broker_id: int
    groups: list  # [[ProducerBatch]]: per partition, the batches in the request, in order
    sent_ms: float
    ref: Any


__all__ = ["OUTCOME_UNKNOWN_ERRORS", "InFlightRequest", "ProducerBatch"]
