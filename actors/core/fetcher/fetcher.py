"""One replica fetcher thread's logic (Kafka 2.4's AbstractFetcherThread + ReplicaFetcherThread), pure.

Theory of operation. A ``FetcherCore`` owns the fetch state of the partitions its broker hands it
(``add_partitions``), all led by one leader broker, and makes each follower log a copy of the
leader's. It sends ``Send(destination="leader")`` (Fetch, OffsetForLeaderEpoch, ListOffsets) and
``Send(destination="local")`` to its own broker (FollowerTruncateRequest, FollowerAppendRequest);
each answer comes back through ``on_leader_response`` / ``on_local_response`` with the request it
answers, or as a bare ``ErrorCode`` when the peer was unreachable. The driver must answer every
``Send``; as a backstop ``tick`` fails a request unanswered after request.timeout.ms +
replica.fetch.wait.max.ms with REQUEST_TIMED_OUT (its late answer is then ignored).

Like the thread it models it keeps exactly one request in flight; when none is, the next is (1)
a local append for all partitions whose fetched records (or new leader HW / log start) await it,
(2) a local truncate for all whose truncation point is known, (3) ListOffsets LATEST, then (4)
EARLIEST, for out-of-range fetches (Kafka's ``fetchOffsetAndTruncate``), (5) OffsetForLeaderEpoch
for all ready TRUNCATING partitions, (6) a Fetch for all ready FETCHING ones. Steps 1-4 ("pending
steps", at most one per partition) drain before a new leader round: "maybeTruncate, then maybeFetch".

Each partition is TRUNCATING, FETCHING or DELAYED; ``fetch_state`` holds the state table (checked
on every change) and the records the fetcher keeps.

Errors, as Kafka 2.4's fetcher treats them: FENCED_LEADER_EPOCH (leader or local) and a local
NOT_LEADER_OR_FOLLOWER remove the partition (the broker re-adds it on its next LeaderAndIsr); a
local OFFSET_OUT_OF_RANGE on append (the log moved under the fetcher) resumes at the log end the
broker reports, re-checking divergence first under the leader-epoch policy; any other error, and
an unreachable peer, delays the partitions concerned for replica.fetch.backoff.ms.

Answers are matched by partition incarnation: removing a partition or re-adding it with a newer
leader epoch starts a new one and answers for the old one are ignored. Re-adding with the same
epoch keeps the state (as Kafka does); with an older one it is ignored as stale.

Limits: ``PARTITIONS_MAX`` per fetcher (more are refused with a warning: raise
num.replica.fetchers); ``REQUEST_PARTITIONS_MAX`` per request, taken round-robin (served
partitions move to the back), the rest wait for the next round.
"""
from __future__ import annotations

import itertools
from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from actors.core.config import KafkaConfig
from actors.core.effects import ArmTimer, Effect, LogEvent, Send
from actors.core.errors import ErrorCode, KafkaProtocolError
from actors.core.messages._base import NO_EPOCH
from actors.core.messages.fetch import FetchPartition, FetchRequest, FetchResponse
from actors.core.messages.list_offsets import (
    EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, ListOffsetsPartition, ListOffsetsRequest, ListOffsetsResponse,
    ListOffsetsTopic,
)
from actors.core.messages.offset_for_leader_epoch import (
    OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse, OffsetForLeaderPartition, OffsetForLeaderTopic,
)
from actors.core.fetcher.fetch_session_handler import FetchSessionHandler
from actors.core.fetcher.fetch_state import (
    TRANSITIONS, FetchState, InFlight, PartitionFetchState, Step, StepKind, TopicPartition,
)
from actors.core.fetcher.follower_messages import (
    FollowerAppendPartition, FollowerAppendRequest, FollowerAppendResponse, FollowerPartitionState,
    FollowerTruncatePartition, FollowerTruncateRequest, FollowerTruncateResponse, InitialFetchState,
    TruncationMode,
)

__all__ = ["FetchState", "FetcherCore", "PartitionFetchState", "PARTITIONS_MAX", "REQUEST_PARTITIONS_MAX"]

LEADER_EPOCH_POLICY, HIGH_WATERMARK_POLICY = "leader-epoch", "high-watermark"  # raykafka.truncation.policy

# The most partitions one fetcher follows; add_partitions refuses more (with a warning LogEvent).
PARTITIONS_MAX = 50_000
# The most partitions one request names; the others wait for the next round (round-robin).
REQUEST_PARTITIONS_MAX = 1_000

_TRUNCATING, _FETCHING, _DELAYED = FetchState.TRUNCATING, FetchState.FETCHING, FetchState.DELAYED


def _error_code(value: Any) -> ErrorCode:
    try:
        return ErrorCode(value)
    except ValueError:
        return ErrorCode.UNKNOWN_SERVER_ERROR


def _has_records(records: Any) -> bool:
    """Whether a fetched payload may hold records; an opaque payload (an object ref) counts."""
    try:
        return records is not None and len(records) > 0
    except TypeError:
        return True


def _same_request(ours: Any, theirs: Any) -> bool:
    try:
        return ours is theirs or (type(ours) is type(theirs) and bool(ours == theirs))
    except (TypeError, ValueError):  # e.g. numpy payloads refuse a plain truth value
        return False


def _by_topic(topic_partitions: Iterable[TopicPartition], make: Any) -> dict[str, tuple]:
    grouped: dict[str, list] = {}
    for topic, partition in topic_partitions:
        grouped.setdefault(topic, []).append(make((topic, partition)))
    return {topic: tuple(items) for topic, items in grouped.items()}


class FetcherCore:
    """The fetch state machine for (this broker, one leader broker, fetcher id)."""

    def __init__(self, *, broker_id: int, leader_id: int, fetcher_id: int, config: KafkaConfig,
                 now_ms: int) -> None:
        self.broker_id, self.leader_id, self.fetcher_id = broker_id, leader_id, fetcher_id
        self._partition_max_bytes = config.get_int("replica.fetch.max.bytes", 0)
        self._response_max_bytes = config.get_int("replica.fetch.response.max.bytes", 0)
        self._max_wait_ms = config.get_int("replica.fetch.wait.max.ms", 0)
        self._min_bytes = config.get_int("replica.fetch.min.bytes", 0)
        self._backoff_ms = config.get_int("replica.fetch.backoff.ms", 0)
        self._request_timeout_ms = config.get_int("request.timeout.ms", 1) + self._max_wait_ms
        self.truncation_policy = self._policy = config.get_str("raykafka.truncation.policy")
        if self._policy not in (LEADER_EPOCH_POLICY, HIGH_WATERMARK_POLICY):
            raise KafkaProtocolError(ErrorCode.INVALID_CONFIG, f"raykafka.truncation.policy={self._policy!r}")
        # Ordered: requests take partitions from the front and move them to the back.
        self._states: dict[TopicPartition, PartitionFetchState] = {}
        self._pending: dict[TopicPartition, Step] = {}  # at most one step per partition
        self._incarnations: dict[TopicPartition, int] = {}  # same keys as _states
        self._next_incarnation = itertools.count(1)
        self._in_flight: InFlight | None = None
        self._timer_deadline_ms = -1  # the last ArmTimer sent, so each tick does not re-arm it
        # KIP-227: fetches name only partitions whose parameters changed; the leader answers only
        # partitions with something new (a partition left out is fetched again next round).
        self._fetch_session = FetchSessionHandler()
        self._label = f"fetcher {broker_id}->{leader_id}#{fetcher_id}"

    # ---------------------------------------------------------------------------- queries
    @property
    def partitions(self) -> dict[TopicPartition, PartitionFetchState]:
        return dict(self._states)

    @property
    def in_flight_request(self) -> Any:
        return None if self._in_flight is None else self._in_flight.request

    def _name(self, tp: TopicPartition) -> str:
        return f"{self._label} {tp[0]}-{tp[1]}"

    # ----------------------------------------------------------------------------- inputs
    def add_partitions(self, states: Iterable[InitialFetchState], now_ms: int) -> list[Effect]:
        effects: list[Effect] = []
        for initial in states:
            tp, epoch = (initial.topic, initial.partition), initial.current_leader_epoch
            assert initial.fetch_offset >= 0, f"{tp}: initial fetch offset {initial.fetch_offset}"
            existing = self._states.get(tp)
            if existing is not None and existing.current_leader_epoch >= epoch:
                if existing.current_leader_epoch > epoch:
                    effects.append(LogEvent(level="info", message=(
                        f"{self._name(tp)}: ignoring a stale add at leader epoch {epoch} "
                        f"(working under {existing.current_leader_epoch})")))
                continue
            if existing is None and len(self._states) >= PARTITIONS_MAX:
                effects.append(LogEvent(level="warning", message=(
                    f"{self._name(tp)}: refused, {PARTITIONS_MAX} partitions already (raise num.replica.fetchers)")))
                continue
            truncating = (self._policy == LEADER_EPOCH_POLICY and initial.needs_truncation
                          and initial.latest_epoch != NO_EPOCH)
            state = _TRUNCATING if truncating else _FETCHING
            self._forget(tp)
            self._states[tp] = PartitionFetchState(
                fetch_offset=initial.fetch_offset, current_leader_epoch=epoch,
                latest_epoch=initial.latest_epoch, state=state, resume_state=state,
                log_start_offset=initial.log_start_offset)
            self._incarnations[tp] = next(self._next_incarnation)
        return effects + self._send_next(now_ms)

    def remove_partitions(self, topic_partitions: Iterable[tuple[str, int]], now_ms: int) -> list[Effect]:
        for topic, partition in topic_partitions:
            self._forget((topic, partition))
        return self._send_next(now_ms)

    def tick(self, now_ms: int) -> list[Effect]:
        effects: list[Effect] = []
        in_flight = self._in_flight
        if in_flight is not None and now_ms >= in_flight.deadline_ms:
            self._in_flight = None
            effects += self._on_request_failed(in_flight, ErrorCode.REQUEST_TIMED_OUT, now_ms)
        return effects + self._send_next(now_ms)

    def on_leader_response(self, request: Any, response: Any, now_ms: int) -> list[Effect]:
        return self._on_response("leader", request, response, now_ms)

    def on_local_response(self, request: Any, response: Any, now_ms: int) -> list[Effect]:
        return self._on_response("local", request, response, now_ms)

    # ------------------------------------------------------------------ state bookkeeping
    def _set(self, tp: TopicPartition, new: PartitionFetchState) -> None:
        old = self._states[tp]
        assert new.state in TRANSITIONS[old.state], f"{tp}: {old.state} -> {new.state} is not allowed"
        assert new.current_leader_epoch == old.current_leader_epoch, (old, new)
        assert self._policy == LEADER_EPOCH_POLICY or _TRUNCATING not in (new.state, new.resume_state)
        self._states[tp] = new

    def _forget(self, tp: TopicPartition) -> None:
        self._states.pop(tp, None)
        self._pending.pop(tp, None)
        self._incarnations.pop(tp, None)

    def _is_current(self, tp: TopicPartition, in_flight: InFlight) -> bool:
        return self._incarnations.get(tp) == in_flight.incarnations[tp]

    def _delay(self, tp: TopicPartition, now_ms: int) -> None:
        state = self._states[tp]
        self._pending.pop(tp, None)
        if state.state is not _DELAYED:  # Kafka does not extend a running delay
            self._set(tp, replace(state, state=_DELAYED, resume_state=state.state,
                                  delayed_until_ms=now_ms + self._backoff_ms))

    def _expire_delays(self, now_ms: int) -> None:
        for tp, state in list(self._states.items()):
            if state.state is _DELAYED and now_ms >= state.delayed_until_ms:
                self._set(tp, replace(state, state=state.resume_state, delayed_until_ms=-1))

    def _resume_at(self, tp: TopicPartition, result: FollowerPartitionState, *, truncating: bool) -> None:
        """The local log now ends at ``result.log_end_offset``: fetch from there, or check it first."""
        assert result.log_end_offset >= 0, f"{tp}: local broker reported {result}"
        truncating = truncating and self._policy == LEADER_EPOCH_POLICY and result.latest_epoch != NO_EPOCH
        state = _TRUNCATING if truncating else _FETCHING
        self._set(tp, replace(self._states[tp], fetch_offset=result.log_end_offset,
                              latest_epoch=result.latest_epoch, state=state, resume_state=state,
                              log_start_offset=result.log_start_offset))

    def _truncate_step(self, tp: TopicPartition, mode: TruncationMode, **fields) -> None:
        self._pending[tp] = Step(StepKind.TRUNCATE, FollowerTruncatePartition(
            topic=tp[0], partition=tp[1], current_leader_epoch=self._states[tp].current_leader_epoch,
            mode=mode, **fields))

    def _on_partition_error(self, tp: TopicPartition, error: ErrorCode, now_ms: int, *,
                            local: bool) -> list[Effect]:
        peer = "local broker" if local else f"leader {self.leader_id}"
        if error == ErrorCode.FENCED_LEADER_EPOCH or (local and error == ErrorCode.NOT_LEADER_OR_FOLLOWER):
            self._forget(tp)
            return [LogEvent(level="info", message=f"{self._name(tp)}: removed, {peer} answered {error.name}")]
        self._delay(tp, now_ms)
        return [LogEvent(level="debug", message=(
            f"{self._name(tp)}: {peer} answered {error.name}; retrying in {self._backoff_ms} ms"))]

    # --------------------------------------------------------------- choosing the next request
    def _send_next(self, now_ms: int) -> list[Effect]:
        if self._in_flight is not None:
            return []
        self._expire_delays(now_ms)
        for kind in StepKind:
            chosen = [tp for tp, step in self._pending.items() if step.kind is kind][:REQUEST_PARTITIONS_MAX]
            if chosen:
                return self._send_steps(kind, chosen, now_ms)
        for state, build in ((_TRUNCATING, self._build_offset_for_leader_epoch), (_FETCHING, self._build_fetch)):
            chosen = [tp for tp, s in self._states.items() if s.state is state][:REQUEST_PARTITIONS_MAX]
            if chosen:
                for tp in chosen:  # round-robin: served partitions go to the back
                    self._states[tp] = self._states.pop(tp)
                return self._send("leader", *build(chosen), now_ms)
        deadline_ms = min((s.delayed_until_ms for s in self._states.values() if s.state is _DELAYED), default=-1)
        if deadline_ms < 0 or deadline_ms == self._timer_deadline_ms:
            return []
        self._timer_deadline_ms = deadline_ms
        return [ArmTimer(deadline_ms=deadline_ms)]

    def _send(self, destination: str, kind: str, request: Any, asked: dict[TopicPartition, Any],
              now_ms: int) -> list[Effect]:
        assert self._in_flight is None, "one request in flight at a time"
        assert asked and len(asked) <= REQUEST_PARTITIONS_MAX, len(asked)
        self._in_flight = InFlight(
            request=request, destination=destination, kind=kind, deadline_ms=now_ms + self._request_timeout_ms,
            asked=asked, incarnations={tp: self._incarnations[tp] for tp in asked})
        return [Send(destination=destination, message=request)]

    def _send_steps(self, kind: StepKind, chosen: list[TopicPartition], now_ms: int) -> list[Effect]:
        asked = {tp: self._pending.pop(tp).item for tp in chosen}
        if kind in (StepKind.APPEND, StepKind.TRUNCATE):
            wrap = FollowerAppendRequest if kind is StepKind.APPEND else FollowerTruncateRequest
            return self._send("local", kind.value, wrap(partitions=tuple(asked.values())), asked, now_ms)
        timestamp = LATEST_TIMESTAMP if kind is StepKind.LIST_LATEST else EARLIEST_TIMESTAMP
        grouped = _by_topic(chosen, lambda tp: ListOffsetsPartition(
            partition_index=tp[1], timestamp=timestamp, current_leader_epoch=self._states[tp].current_leader_epoch))
        request = ListOffsetsRequest(replica_id=self.broker_id, topics=tuple(
            ListOffsetsTopic(name=topic, partitions=parts) for topic, parts in grouped.items()))
        return self._send("leader", kind.value, request, asked, now_ms)

    def _build_offset_for_leader_epoch(self, chosen: list[TopicPartition]):
        def ask(tp: TopicPartition) -> OffsetForLeaderPartition:
            state = self._states[tp]
            assert state.latest_epoch != NO_EPOCH, f"{tp} is TRUNCATING with no epoch to ask about"
            return OffsetForLeaderPartition(partition=tp[1], leader_epoch=state.latest_epoch,
                                            current_leader_epoch=state.current_leader_epoch)
        request = OffsetForLeaderEpochRequest(replica_id=self.broker_id, topics=tuple(
            OffsetForLeaderTopic(topic=topic, partitions=parts) for topic, parts in _by_topic(chosen, ask).items()))
        return "epochs", request, dict.fromkeys(chosen)

    def _build_fetch(self, chosen: list[TopicPartition]):
        asked = {tp: FetchPartition(
            partition=tp[1], fetch_offset=state.fetch_offset, partition_max_bytes=self._partition_max_bytes,
            current_leader_epoch=state.current_leader_epoch,
            # Without it the leader cannot see divergence: the pre-KIP-101 behaviour.
            last_fetched_epoch=state.latest_epoch if self._policy == LEADER_EPOCH_POLICY else NO_EPOCH,
            log_start_offset=state.log_start_offset)
            for tp in chosen for state in (self._states[tp],)}
        request = self._fetch_session.build(asked).request(
            replica_id=self.broker_id, max_wait_ms=self._max_wait_ms, min_bytes=self._min_bytes,
            max_bytes=self._response_max_bytes)
        return "fetch", request, asked

    # -------------------------------------------------------------------------- answers
    def _on_response(self, destination: str, request: Any, response: Any, now_ms: int) -> list[Effect]:
        in_flight = self._in_flight
        if in_flight is None or in_flight.destination != destination or not _same_request(in_flight.request, request):
            stale = f"{self._label}: ignoring an answer to a {type(request).__name__} no longer in flight"
            return [LogEvent(level="debug", message=stale)] + self._send_next(now_ms)
        self._in_flight = None
        response_type, handler = self._ANSWERS[in_flight.kind]
        if isinstance(response, response_type):
            effects = handler(self, in_flight, response, now_ms)
        else:
            error = response if isinstance(response, ErrorCode) else ErrorCode.UNKNOWN_SERVER_ERROR
            effects = self._on_request_failed(in_flight, error, now_ms)
        return effects + self._send_next(now_ms)

    def _on_request_failed(self, in_flight: InFlight, error: ErrorCode, now_ms: int) -> list[Effect]:
        if in_flight.kind == "fetch":
            self._fetch_session.handle_error()  # the next fetch is full and closes the session
        current = [tp for tp in in_flight.asked if self._is_current(tp, in_flight)]
        for tp in current:
            self._delay(tp, now_ms)
        peer = "local broker" if in_flight.destination == "local" else f"leader {self.leader_id}"
        return [LogEvent(level="warning", message=(
            f"{self._label}: {type(in_flight.request).__name__} to {peer} failed ({error.name}); "
            f"{len(current)} partitions back off {self._backoff_ms} ms"))]

    def _answers(self, in_flight: InFlight, answered: dict[TopicPartition, Any], effects: list[Effect],
                 now_ms: int):
        """(tp, answer) for each still-current partition answered without error. A partition left
        out is delayed; an error is handled here, its effects added to ``effects``."""
        for tp in in_flight.asked:
            if not self._is_current(tp, in_flight):
                continue
            answer = answered.get(tp)
            error = ErrorCode.NONE if answer is None else _error_code(answer.error_code)
            if answer is None:
                self._delay(tp, now_ms)
            elif error == ErrorCode.NONE:
                yield tp, answer
            elif in_flight.destination == "local":
                effects += self._on_local_error(tp, answer, now_ms)
            else:
                effects += self._on_partition_error(tp, error, now_ms, local=False)

    def _on_offset_for_leader_epoch(self, in_flight: InFlight, response: OffsetForLeaderEpochResponse,
                                    now_ms: int) -> list[Effect]:
        answered = {(t.topic, p.partition): p for t in response.topics for p in t.partitions}
        effects: list[Effect] = []
        for tp, result in self._answers(in_flight, answered, effects, now_ms):
            self._truncate_step(tp, TruncationMode.TO_LEADER_EPOCH_END, leader_epoch=result.leader_epoch,
                                leader_end_offset=result.end_offset)
        return effects

    def _on_fetch(self, in_flight: InFlight, response: FetchResponse, now_ms: int) -> list[Effect]:
        error = _error_code(response.error_code)
        if not self._fetch_session.handle_response(response):
            if error not in (ErrorCode.NONE, ErrorCode.FETCH_SESSION_ID_NOT_FOUND,
                             ErrorCode.INVALID_FETCH_SESSION_EPOCH):
                return self._on_request_failed(in_flight, error, now_ms)
            # A session error or an answer that does not fit the session: fetch again at once, in full.
            return [LogEvent(level="info", message=(
                f"{self._label}: fetch session {in_flight.request.session_id} answered {error.name}; "
                f"the next fetch is a full one"))]
        answered = {(t.topic, p.partition_index): p for t in response.responses for p in t.partitions}
        effects: list[Effect] = []
        for tp, asked in in_flight.asked.items():
            data = answered.get(tp)
            # A partition the leader left out simply gets fetched again next round.
            if data is None or not self._is_current(tp, in_flight):
                continue
            assert self._states[tp].fetch_offset == asked.fetch_offset, (self._states[tp], asked)
            error = _error_code(data.error_code)
            if error == ErrorCode.NONE:
                effects += self._on_fetched_data(tp, asked, data)
            elif error == ErrorCode.OFFSET_OUT_OF_RANGE:
                self._pending[tp] = Step(StepKind.LIST_LATEST)
            else:
                effects += self._on_partition_error(tp, error, now_ms, local=False)
        return effects

    def _on_fetched_data(self, tp: TopicPartition, asked: FetchPartition, data) -> list[Effect]:
        state, diverging = self._states[tp], data.diverging_epoch
        if diverging is not None:
            self._truncate_step(tp, TruncationMode.TO_LEADER_EPOCH_END, leader_epoch=diverging.epoch,
                                leader_end_offset=diverging.end_offset)
            return [LogEvent(level="info", message=(
                f"{self._name(tp)}: leader reports divergence at epoch {diverging.epoch} ending at "
                f"{diverging.end_offset} (fetch offset {asked.fetch_offset}, last epoch {asked.last_fetched_epoch})"))]
        if (_has_records(data.records) or data.high_watermark != state.leader_high_watermark
                or data.log_start_offset != state.leader_log_start_offset):
            self._pending[tp] = Step(StepKind.APPEND, FollowerAppendPartition(
                topic=tp[0], partition=tp[1], current_leader_epoch=state.current_leader_epoch,
                fetch_offset=asked.fetch_offset, records=data.records,
                leader_high_watermark=data.high_watermark, leader_log_start_offset=data.log_start_offset))
        return []

    def _on_list_offsets(self, in_flight: InFlight, response: ListOffsetsResponse, now_ms: int) -> list[Effect]:
        latest = in_flight.kind == StepKind.LIST_LATEST.value
        answered = {(t.name, p.partition_index): p for t in response.topics for p in t.partitions}
        effects: list[Effect] = []
        for tp, result in self._answers(in_flight, answered, effects, now_ms):
            fetch_offset = self._states[tp].fetch_offset
            if result.offset < 0:  # no offset to act on: try again later
                effects += self._on_partition_error(tp, ErrorCode.OFFSET_NOT_AVAILABLE, now_ms, local=False)
            elif latest and result.offset >= fetch_offset:
                self._pending[tp] = Step(StepKind.LIST_EARLIEST)
            elif not latest and result.offset <= fetch_offset:
                effects.append(LogEvent(level="info", message=(
                    f"{self._name(tp)}: fetch offset {fetch_offset} is within the leader's log again; retrying")))
            else:  # leader LEO below ours (unclean election), or leader log start above our LEO
                mode = TruncationMode.TO_OFFSET if latest else TruncationMode.FULLY_AND_START_AT
                self._truncate_step(tp, mode, offset=result.offset)
                effects.append(LogEvent(level="warning", message=(
                    f"{self._name(tp)}: fetch offset {fetch_offset} out of range; the leader's log "
                    f"{'end' if latest else 'start'} offset is {result.offset}, truncating ({mode.value})")))
        return effects

    def _on_truncated(self, in_flight: InFlight, response: FollowerTruncateResponse, now_ms: int) -> list[Effect]:
        answered = {(p.topic, p.partition): p for p in response.partitions}
        effects: list[Effect] = []
        for tp, result in self._answers(in_flight, answered, effects, now_ms):
            asked: FollowerTruncatePartition = in_flight.asked[tp]
            before = self._states[tp].fetch_offset
            complete = result.truncation_complete or asked.mode is not TruncationMode.TO_LEADER_EPOCH_END
            self._resume_at(tp, result, truncating=not complete)
            if result.log_end_offset != before or not complete:
                effects.append(LogEvent(level="info", message=(
                    f"{self._name(tp)}: truncated ({asked.mode.value}) from {before} to {result.log_end_offset}"
                    + ("" if complete else f"; asking the leader again about epoch {result.latest_epoch}"))))
        return effects

    def _on_appended(self, in_flight: InFlight, response: FollowerAppendResponse, now_ms: int) -> list[Effect]:
        answered = {(p.topic, p.partition): p for p in response.partitions}
        effects: list[Effect] = []
        for tp, result in self._answers(in_flight, answered, effects, now_ms):
            asked: FollowerAppendPartition = in_flight.asked[tp]
            assert result.log_end_offset >= asked.fetch_offset, f"{tp}: an append shrank the log: {result}"
            self._set(tp, replace(self._states[tp], fetch_offset=result.log_end_offset,
                                  latest_epoch=result.latest_epoch, leader_high_watermark=asked.leader_high_watermark,
                                  leader_log_start_offset=asked.leader_log_start_offset,
                                  log_start_offset=result.log_start_offset))
        return effects

    def _on_local_error(self, tp: TopicPartition, result: FollowerPartitionState, now_ms: int) -> list[Effect]:
        error = _error_code(result.error_code)
        if error == ErrorCode.OFFSET_OUT_OF_RANGE and result.log_end_offset >= 0:
            # The log moved under us (e.g. the broker restarted and recovered a shorter log):
            # resume where it ends, re-checking divergence first under the leader-epoch policy.
            before = self._states[tp].fetch_offset
            self._resume_at(tp, result, truncating=True)
            return [LogEvent(level="warning", message=(
                f"{self._name(tp)}: local log ends at {result.log_end_offset}, not {before}; resuming there"))]
        return self._on_partition_error(tp, error, now_ms, local=True)

    _ANSWERS = {
        "fetch": (FetchResponse, _on_fetch), "epochs": (OffsetForLeaderEpochResponse, _on_offset_for_leader_epoch),
        "latest": (ListOffsetsResponse, _on_list_offsets), "earliest": (ListOffsetsResponse, _on_list_offsets),
        "truncate": (FollowerTruncateResponse, _on_truncated), "append": (FollowerAppendResponse, _on_appended),
    }
