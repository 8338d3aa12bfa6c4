"""Incremental fetch sessions (KIP-227), the fetcher's side: Kafka's FetchSessionHandler.java.

Theory of operation. One handler per (fetcher, broker). Before each Fetch to that broker the
fetcher gives ``build`` every partition it wants with its parameters; the handler says what the
request must carry (``FetchRequestData``):

- With no session (``session_id`` 0, epoch 0 "INITIAL"), or after an error (the same id, epoch 0:
  close it and start over), a full fetch naming every partition; the answer's ``session_id``
  opens the session (0: the broker had no room, and the next fetch is full again).
- In a session (epoch >= 1), an incremental fetch naming only partitions that are new or whose
  parameters (fetch offset, leader epoch, ...) changed since the session last heard of them, and
  ``forgotten`` for partitions no longer wanted. The broker reads every session partition and
  answers only those with something new.

``handle_response`` checks the answer (a full answer must name exactly the session's
partitions, an incremental one no partition outside them) and moves the epoch on; it returns
False when the answer must be ignored: a session error (FETCH_SESSION_ID_NOT_FOUND starts
afresh, INVALID_FETCH_SESSION_EPOCH and any other error close the session) or a malformed
answer, after which the next fetch is full. ``handle_error`` (no answer: timeout, unreachable
broker) also makes the next fetch a full one that closes the session.
"""
from __future__ import annotations

from dataclasses import dataclass

from actors.core.errors import ErrorCode
from actors.core.messages.fetch import (
    FINAL_EPOCH, INITIAL_EPOCH, INVALID_SESSION_ID, FetchPartition, FetchRequest, FetchResponse, FetchTopic,
    ForgottenTopic, next_epoch,
)

TopicPartition = tuple[str, int]


@dataclass(frozen=True, slots=True)
class FetchRequestData:
    """What one Fetch carries: its session fields, the partitions it names and those it forgets."""
    session_id: int
    session_epoch: int
    to_send: dict[TopicPartition, FetchPartition]
    forgotten: tuple[TopicPartition, ...]

    @property
    def is_full(self) -> bool:
        return self.session_epoch in (INITIAL_EPOCH, FINAL_EPOCH)

    def topics(self) -> tuple[FetchTopic, ...]:
        grouped: dict[str, list[FetchPartition]] = {}
        for (topic, _), asked in self.to_send.items():
            grouped.setdefault(topic, []).append(asked)
        return tuple(FetchTopic(topic=topic, partitions=tuple(asked)) for topic, asked in grouped.items())

    def request(self, **fields) -> FetchRequest:
        """The FetchRequest that carries this; ``fields`` are its other fields (max_wait_ms, ...)."""
        return FetchRequest(topics=self.topics(), session_id=self.session_id, session_epoch=self.session_epoch,
                            forgotten_topics_data=self.forgotten_topics(), **fields)

    def forgotten_topics(self) -> tuple[ForgottenTopic, ...]:
        grouped: dict[str, list[int]] = {}
        for topic, partition in self.forgotten:
            grouped.setdefault(topic, []).append(partition)
        return tuple(ForgottenTopic(topic=topic, partitions=tuple(partitions)) for topic, partitions in grouped.items())


class FetchSessionHandler:
    def __init__(self) -> None:
        self.session_id = INVALID_SESSION_ID
        self.epoch = INITIAL_EPOCH  # of the next request
        self._session_partitions: dict[TopicPartition, FetchPartition] = {}

    def build(self, wanted: dict[TopicPartition, FetchPartition]) -> FetchRequestData:
        """The next request for ``wanted`` (in the order given); updates the session's view."""
        if self.epoch == INITIAL_EPOCH:
            self._session_partitions = dict(wanted)
            return FetchRequestData(self.session_id, self.epoch, dict(wanted), ())
        forgotten = tuple(tp for tp in self._session_partitions if tp not in wanted)
        for tp in forgotten:
            del self._session_partitions[tp]
        to_send: dict[TopicPartition, FetchPartition] = {}
        for tp, asked in wanted.items():
            if self._session_partitions.get(tp) != asked:
                self._session_partitions[tp] = asked
                to_send[tp] = asked
        return FetchRequestData(self.session_id, self.epoch, to_send, forgotten)

    def build_request(self, wanted: dict[TopicPartition, tuple[int, int]], partition_max_bytes: int,
                      max_wait_ms: int, min_bytes: int, max_bytes: int) -> FetchRequest:
        """``build`` and ``request`` for a consumer: ``wanted`` maps partitions to (fetch offset,
        current leader epoch)."""
        return self.build({tp: FetchPartition(partition=tp[1], fetch_offset=offset, current_leader_epoch=epoch,
                                              partition_max_bytes=partition_max_bytes)
                           for tp, (offset, epoch) in wanted.items()}).request(
            max_wait_ms=max_wait_ms, min_bytes=min_bytes, max_bytes=max_bytes)

    def handle_response(self, response: FetchResponse) -> bool:
        """Move the session on from ``response``; False when its partitions must be ignored."""
        error = ErrorCode(response.error_code) if response.error_code in ErrorCode._value2member_map_ else None
        if error != ErrorCode.NONE:
            if error == ErrorCode.FETCH_SESSION_ID_NOT_FOUND:
                self.session_id = INVALID_SESSION_ID
            self.epoch = INITIAL_EPOCH  # with the session id: the broker closes it
            return False
        answered = {(topic.topic, data.partition_index) for topic in response.responses for data in topic.partitions}
        full = self.epoch == INITIAL_EPOCH
        expected = set(self._session_partitions)
        if (answered != expected) if full else not answered <= expected:
            # A full answer must cover the session exactly, an incremental one stay inside it.
            self.session_id, self.epoch = (INVALID_SESSION_ID if full else self.session_id), INITIAL_EPOCH
            return False
        if response.session_id == INVALID_SESSION_ID:
            self.session_id, self.epoch = INVALID_SESSION_ID, INITIAL_EPOCH  # none made, or closed
        elif full:
            self.session_id, self.epoch = response.session_id, next_epoch(INITIAL_EPOCH)
        else:
            self.epoch = next_epoch(self.epoch)
        return True

    def handle_error(self) -> None:
        """No answer came: the next fetch is full and closes the session the broker may still hold."""
        self.epoch = INITIAL_EPOCH
