"""KIP-320 for the consumer: a position is checked against the leader's log after a leader change.

After an unclean election the new leader's log may end below, or differ from, what the consumer
has already read: records it fetched from the old leader were truncated away, and a fetch at the
old position would either be answered OFFSET_OUT_OF_RANGE (and reset per ``auto.offset.reset``,
skipping records) or, once the new leader has written past it, return other records as if nothing
happened. Kafka's consumer (``SubscriptionState``, ``Fetcher.validateOffsetsAsync``) therefore
remembers, with each position, the leader epoch of the record before it (the position's
*offset epoch*) and the leader epoch it was last fetched under. When the metadata names another
leader epoch the partition awaits validation and is not fetched: an OffsetForLeaderEpoch request
asks the leader where the offset epoch ends in its log. An end offset below the position is a
truncation: with a reset policy the position moves to that end offset (the first offset known to
diverge), with ``auto.offset.reset=none`` poll raises ``LogTruncationError``. An answer naming no
epoch (the leader knows no epoch at or below it) resets the position per ``auto.offset.reset``,
as Kafka does since 2.7 (2.4 took it as a valid position). A position without an offset epoch (a
``seek``, a reset by ListOffsets) or a leader whose epoch is unknown is not validated, as in Kafka.

``PositionEpochs`` is that bookkeeping and the verdict on an answer, with no I/O; ``Consumer``
sends the requests (one per leader at a time, never blocking ``poll``) and applies the verdicts.
"""
from __future__ import annotations

import dataclasses
import enum

from actors.core.errors import ErrorCode
from actors.core.messages._base import NO_EPOCH
from actors.core.messages.offset_for_leader_epoch import (
    UNDEFINED_EPOCH_OFFSET, OffsetForLeaderEpochRequest, OffsetForLeaderPartition, OffsetForLeaderTopic,
)
from orchestration.clients.broker_directory import as_future, as_kafka_error
from orchestration.errors import KafkaError

TopicPartition = tuple[str, int]


class LogTruncationError(KafkaError):
    """Kafka's ``LogTruncationException``: the leader's log diverged below the consumer's position
    and ``auto.offset.reset`` is none. ``divergent_offsets`` maps each partition to the first
    offset known to diverge (None when the leader knows no epoch to compare), for the
    application to ``seek`` to once it has decided what to do."""

    def __init__(self, divergent_offsets: dict[TopicPartition, int | None], positions: dict[TopicPartition, int]):
        self.divergent_offsets = dict(divergent_offsets)
        described = ", ".join(f"{t}-{p} at {positions[(t, p)]} (diverges from {offset})"
                              for (t, p), offset in sorted(self.divergent_offsets.items()))
        super().__init__(ErrorCode.OFFSET_OUT_OF_RANGE, f"log truncation detected for {described} "
                                                         "and auto.offset.reset is none")


class Verdict(enum.Enum):
    VALID = "valid"  # the position is in the leader's log: fetch on
    TRUNCATED = "truncated"  # the log diverges below the position: move it, or raise
    UNDEFINED = "undefined"  # the leader knows no epoch to compare: reset, or raise
    RETRY = "retry"  # an error the consumer retries after a metadata refresh
    STALE = "stale"  # the position moved while the request was out: ignore the answer


@dataclasses.dataclass(slots=True)
class _Epochs:
    offset_epoch: int  # leader epoch of the record before the position; NO_EPOCH if unknown
    leader_epoch: int | None  # epoch the position was last fetched or validated under; None: validate


@dataclasses.dataclass(frozen=True, slots=True)
class ValidationOutcome:
    topic_partition: TopicPartition
    verdict: Verdict
    end_offset: int = UNDEFINED_EPOCH_OFFSET
    end_epoch: int = NO_EPOCH
    error_code: ErrorCode = ErrorCode.NONE


class PositionEpochs:
    """Per owned partition, the offset epoch of its position and the leader epoch it stands
    validated for. Bounded by the consumer's assignment (``keep_only``)."""

    def __init__(self) -> None:
        self._epochs: dict[TopicPartition, _Epochs] = {}

    def keep_only(self, owned) -> None:
        owned = set(owned)
        self._epochs = {tp: e for tp, e in self._epochs.items() if tp in owned}

    def forget(self, tp: TopicPartition) -> None:
        """A position with no epoch (``seek``, a reset by ListOffsets): never validated."""
        self._epochs.pop(tp, None)

    def restored(self, tp: TopicPartition, offset_epoch: int) -> None:
        """A position from the group's committed offset and its epoch: validated before the first fetch."""
        if offset_epoch == NO_EPOCH:
            self.forget(tp)
        else:
            self._epochs[tp] = _Epochs(offset_epoch=offset_epoch, leader_epoch=None)

    def fetched(self, tp: TopicPartition, last_batch_epoch: int) -> None:
        """A fetch answer moved the position past a batch written in ``last_batch_epoch``."""
        epochs = self._epochs.get(tp)
        if epochs is not None:
            epochs.offset_epoch = last_batch_epoch

    def offset_epoch(self, tp: TopicPartition) -> int:
        epochs = self._epochs.get(tp)
        return NO_EPOCH if epochs is None else epochs.offset_epoch

    def rewound(self, tp: TopicPartition, offset_epoch: int) -> None:
        """Buffered records were dropped and the position moved back to what was handed out,
        the record before it written in ``offset_epoch``; the leader epoch stays as it was."""
        epochs = self._epochs.setdefault(tp, _Epochs(offset_epoch=NO_EPOCH, leader_epoch=None))
        epochs.offset_epoch = offset_epoch

    def needs_validation(self, tp: TopicPartition, current_leader_epoch: int) -> bool:
        """Whether ``tp`` must be validated before it is fetched under ``current_leader_epoch``
        (the metadata's); a partition that need not be is fetched under that epoch from now on."""
        epochs = self._epochs.setdefault(tp, _Epochs(offset_epoch=NO_EPOCH, leader_epoch=None))
        if current_leader_epoch == NO_EPOCH:
            return False  # Kafka skips validation when the metadata carries no epoch
        if epochs.leader_epoch == current_leader_epoch:
            return False
        if epochs.offset_epoch == NO_EPOCH:
            epochs.leader_epoch = current_leader_epoch  # nothing to compare: fetch under this epoch
            return False
        return True

    def request(self, wanted: dict[TopicPartition, int]) -> OffsetForLeaderEpochRequest:
        """One OffsetForLeaderEpoch (as a consumer) for ``{tp: current leader epoch}``."""
        by_topic: dict[str, list[OffsetForLeaderPartition]] = {}
        for (topic, partition), current_leader_epoch in sorted(wanted.items()):
            by_topic.setdefault(topic, []).append(OffsetForLeaderPartition(
                partition=partition, leader_epoch=self.offset_epoch((topic, partition)),
                current_leader_epoch=current_leader_epoch))
        return OffsetForLeaderEpochRequest(topics=tuple(
            OffsetForLeaderTopic(topic=topic, partitions=tuple(parts)) for topic, parts in by_topic.items()))

    def judge(self, response, asked: dict[TopicPartition, tuple[int, int, int]],
              positions: dict[TopicPartition, int | None]) -> list[ValidationOutcome]:
        """Verdicts on an answer to ``request``; ``asked`` is ``{tp: (position, offset epoch,
        current leader epoch)}`` as they were when it was sent, ``positions`` the consumer's now.
        A valid position is marked validated for the epoch it was asked under."""
        answered = {(topic.topic, p.partition): p for topic in response.topics for p in topic.partitions}
        outcomes = []
        for tp, (position, offset_epoch, current_leader_epoch) in sorted(asked.items()):
            answer = answered.get(tp)
            if positions.get(tp) != position or self.offset_epoch(tp) != offset_epoch:
                outcomes.append(ValidationOutcome(tp, Verdict.STALE))
            elif answer is None or answer.error_code != ErrorCode.NONE:
                code = ErrorCode.UNKNOWN_SERVER_ERROR if answer is None else ErrorCode(answer.error_code)
                outcomes.append(ValidationOutcome(tp, Verdict.RETRY, error_code=code))
            elif answer.end_offset == UNDEFINED_EPOCH_OFFSET or answer.leader_epoch == NO_EPOCH:
                outcomes.append(ValidationOutcome(tp, Verdict.UNDEFINED))
            elif answer.end_offset < position:
                outcomes.append(ValidationOutcome(tp, Verdict.TRUNCATED, answer.end_offset, answer.leader_epoch))
            else:
                self._epochs[tp].leader_epoch = current_leader_epoch
                outcomes.append(ValidationOutcome(tp, Verdict.VALID, answer.end_offset, answer.leader_epoch))
        return outcomes

    def moved_to_divergence(self, tp: TopicPartition, end_epoch: int, current_leader_epoch: int) -> None:
        """The position moved to the first offset known to diverge, whose epoch the leader named:
        valid under the epoch it was asked under (Kafka's ``seekValidated``)."""
        self._epochs[tp] = _Epochs(offset_epoch=end_epoch, leader_epoch=current_leader_epoch)


class ValidatingPositions:
    """What ``Consumer`` does for KIP-320, mixed into it (its state: ``_positions``,
    ``_buffered``, ``_directory``, ``_reset_policy``): before a partition is fetched, validate its
    position if the leader epoch moved, and apply the verdicts of the answers. At most one
    OffsetForLeaderEpoch per leader is out at a time, held in ``_validations`` beside the fetches,
    and its partitions are not fetched until it is answered."""

    def _validating_partitions(self) -> set[TopicPartition]:
        return {tp for _, _, asked in self._validations.values() for tp in asked}

    def _fetchable_after_validation(self, tp: TopicPartition, leader: int, epoch: int,
                                    buffered: set[TopicPartition], to_validate: dict) -> bool:
        """Whether ``tp`` may be fetched from ``leader`` under ``epoch``; if it must be validated
        first it joins ``to_validate`` (``{leader: {tp: epoch}}``). Fetched but unreturned records
        of a partition to validate are dropped and its position goes back to what ``poll`` handed
        out, as Kafka's consumer drops them: they may be what the new leader truncated."""
        if not self._position_epochs.needs_validation(tp, epoch):
            return True
        if tp in buffered:
            consumed_at = self._buffered.positions()[tp]
            self._drop_buffered(lambda other: other == tp)
            self._positions[tp] = consumed_at
            self._position_epochs.rewound(tp, self._consumed_epochs.get(tp, NO_EPOCH))
            if not self._position_epochs.needs_validation(tp, epoch):
                return False  # nothing to compare now; fetched again from where poll stopped
        to_validate.setdefault(leader, {})[tp] = epoch
        return False

    def _send_validations(self, to_validate: dict[int, dict[TopicPartition, int]]) -> None:
        for leader, wanted in to_validate.items():
            if any(asking == leader for asking, _, _ in self._validations.values()):
                continue  # one at a time per leader; these wait for the next send
            asked = {tp: (self._positions[tp], self._position_epochs.offset_epoch(tp), epoch)
                     for tp, epoch in wanted.items()}
            try:
                ref = self._directory.broker(leader).handle.remote(
                    self._position_epochs.request(wanted))
            except KafkaError:
                self._on_broker_trouble(leader)
                continue
            self._validations[as_future(ref)] = (leader, ref, asked)

    def _handle_validation(self, answer) -> None:
        """Apply an OffsetForLeaderEpoch answer; raises ``LogTruncationError`` for truncations
        found when ``auto.offset.reset`` is none (the partitions stay unvalidated, so the next
        poll raises again until the application seeks)."""
        leader, _, asked = self._validations.pop(answer)
        try:
            response = answer.result()
        except Exception as exc:
            error = as_kafka_error(exc)
            if not error.retriable:
                raise error
            self._directory.forget(leader)
            self._on_broker_trouble(leader)
            return
        diverged: dict[TopicPartition, int | None] = {}
        for outcome in self._position_epochs.judge(response, asked, self._positions):
            tp = outcome.topic_partition
            if outcome.verdict is Verdict.RETRY:
                if not outcome.error_code.retriable and outcome.error_code not in _RETRIED:
                    raise KafkaError(outcome.error_code, f"validating the position of {tp[0]}-{tp[1]}")
                self._on_broker_trouble(leader)
            elif outcome.verdict in (Verdict.TRUNCATED, Verdict.UNDEFINED) and self._reset_policy == "none":
                diverged[tp] = outcome.end_offset if outcome.verdict is Verdict.TRUNCATED else None
            elif outcome.verdict is Verdict.TRUNCATED:
                self._set_position(tp, outcome.end_offset)
                self._position_epochs.moved_to_divergence(tp, outcome.end_epoch, asked[tp][2])
            elif outcome.verdict is Verdict.UNDEFINED:  # reset per auto.offset.reset by the next send
                self._drop_buffered(lambda other: other == tp)
                self._positions[tp] = None
                self._position_epochs.forget(tp)
        if diverged:
            raise LogTruncationError(diverged, {tp: asked[tp][0] for tp in diverged})


# Errors Kafka's OffsetsForLeaderEpochClient retries after a metadata refresh, besides retriable ones.
_RETRIED = frozenset({ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.FENCED_LEADER_EPOCH,
                      ErrorCode.UNKNOWN_LEADER_EPOCH, ErrorCode.KAFKA_STORAGE_ERROR})
