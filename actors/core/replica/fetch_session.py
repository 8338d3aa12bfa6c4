"""Incremental fetch sessions (KIP-227), the broker's side: Kafka 2.4's FetchSession.scala.

Theory of operation. A fetcher that follows many partitions but finds new data in few of them
should not name every partition in every request, nor get every partition back in every answer.
So a broker keeps a ``FetchSessionCache``: per session (a positive id the broker picks, and an
epoch that both sides count up), the partitions the fetcher follows and what it last asked and
was told about each (``CachedPartition``). A request's ``session_id``/``session_epoch`` say what
it is (``new_context``):

- id 0, epoch -1 (FINAL): a sessionless full fetch, as before KIP-227 (librdkafka sends this).
- epoch 0 (INITIAL): a full fetch that asks for a new session (closing session ``id`` if one is
  named); the answer names every partition and carries the new session's id, or 0 when the cache
  has no room for it (the client then keeps sending full fetches).
- id > 0, epoch > 0: an incremental fetch in that session. It names only the partitions that are
  new or whose fetch parameters changed, and ``forgotten_topics_data`` names those to drop; the
  others are read with their cached parameters. Its answer leaves out every partition with
  nothing new for the client: no records, no error, and the same high watermark and log start
  offset as last sent. An unknown id is FETCH_SESSION_ID_NOT_FOUND and an epoch other than the
  session's next is INVALID_FETCH_SESSION_EPOCH (a duplicate or lost request); either answer
  names no partition, and the client falls back to a full fetch. A session left with no
  partition is closed and the fetch answered as sessionless.

The epoch moves when the request is taken in (so a duplicate of it is refused) and is checked
again when the answer is made, which for a fetch parked in the purgatory is later
(``FetchContext.respond``). Epochs count 1, 2, ... up to 2^31-1 and wrap to 1 (``next_epoch``,
with the session constants, in actors/core/messages/fetch.py).

Limits: at most ``max.incremental.fetch.session.cache.slots`` sessions (Kafka's default 1000).
A new session takes a slot when one is free, else evicts, as Kafka's ``tryEvict`` does, the
least recently used session if it has been idle for ``EVICTION_MS``, or else the least valuable
session older than ``EVICTION_MS`` if the new one is worth more: a follower's session (privileged)
outranks a consumer's, then more partitions outrank fewer. Otherwise the fetch is answered
without a session. Session ids come from a generator seeded per broker process, so a restarted
broker does not hand out the ids its predecessor did.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from actors.core.errors import ErrorCode
from actors.core.messages.fetch import (
    FINAL_EPOCH, INITIAL_EPOCH, INVALID_SESSION_ID, FetchableTopicResponse, FetchPartition, FetchPartitionData,
    FetchRequest, FetchResponse, FetchTopic, next_epoch,
)

# Kafka's MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS: how long a session is safe from eviction.
EVICTION_MS = 120_000
SESSION_CACHE_SLOTS_KEY = "max.incremental.fetch.session.cache.slots"

TopicPartition = tuple[str, int]


@dataclass(slots=True)
class CachedPartition:
    """What a session remembers of one partition: the fetcher's last parameters for it, and the
    high watermark and log start offset last sent (-1: not sent, or an error was)."""
    asked: FetchPartition
    high_watermark: int = -1
    log_start_offset: int = -1

    def must_respond(self, data: FetchPartitionData) -> bool:
        """Kafka's ``maybeUpdateResponseData``: whether the client needs this partition's answer;
        records what it is sent."""
        must = len(data.records) > 0 or data.preferred_read_replica >= 0 or data.diverging_epoch is not None
        if data.high_watermark != self.high_watermark or data.log_start_offset != self.log_start_offset:
            must = True
            self.high_watermark, self.log_start_offset = data.high_watermark, data.log_start_offset
        if data.error_code != ErrorCode.NONE:
            # Sent again when the error clears: -1 never equals a real high watermark.
            self.high_watermark, must = -1, True
        return must


@dataclass(slots=True)
class FetchSession:
    session_id: int
    privileged: bool  # a follower's: outranks consumers' sessions in eviction
    partitions: dict[TopicPartition, CachedPartition]  # insertion order: the order partitions are read
    creation_ms: int
    last_used_ms: int
    epoch: int  # the epoch the next incremental request must carry


@dataclass(frozen=True, slots=True)
class FetchContext:
    """One fetch's view of its session: ``request`` names every partition to read (the cached
    ones filled in); ``respond`` turns the read into the answer the client is sent."""
    request: FetchRequest
    kind: str  # "sessionless", "full", "incremental" or "error"
    error_code: ErrorCode = ErrorCode.NONE
    session_id: int = INVALID_SESSION_ID
    expected_epoch: int = INITIAL_EPOCH  # for "incremental": the session's epoch after this request

    def respond(self, cache: "FetchSessionCache", response: FetchResponse | None, now_ms: int) -> FetchResponse:
        """The answer to send for ``response`` (None only for a session error, which reads nothing)."""
        if self.kind == "error":
            return FetchResponse(responses=(), error_code=self.error_code, session_id=self.session_id)
        if self.kind == "sessionless":
            assert response.session_id == INVALID_SESSION_ID, response.session_id
            return response
        if self.kind == "full":
            session_id = cache.maybe_create_session(self.request, response, now_ms)
            return replace(response, session_id=session_id)
        session = cache.sessions.get(self.session_id)
        if session is None or session.epoch != self.expected_epoch:
            # The session moved on (or was evicted) while this fetch waited: a newer request of it won.
            return FetchResponse(responses=(), error_code=ErrorCode.INVALID_FETCH_SESSION_EPOCH,
                                 session_id=self.session_id)
        return replace(_omit_idle(session, response), session_id=session.session_id)


def _omit_idle(session: FetchSession, response: FetchResponse) -> FetchResponse:
    """The incremental answer: only partitions with something new. Partitions sent move to the back
    of the session's order, so a response byte limit does not starve the later ones."""
    topics = []
    for topic in response.responses:
        kept = []
        for data in topic.partitions:
            tp = (topic.topic, data.partition_index)
            cached = session.partitions.get(tp)
            if cached is None or cached.must_respond(data):
                kept.append(data)
                if cached is not None:
                    session.partitions[tp] = session.partitions.pop(tp)
        if kept:
            topics.append(FetchableTopicResponse(topic=topic.topic, partitions=tuple(kept)))
    return replace(response, responses=tuple(topics))


def _partitions_of(request: FetchRequest) -> dict[TopicPartition, FetchPartition]:
    return {(topic.topic, asked.partition): asked for topic in request.topics for asked in topic.partitions}


def _request_for(request: FetchRequest, partitions: dict[TopicPartition, FetchPartition]) -> FetchRequest:
    """``request`` naming ``partitions`` (grouped by topic, in their order)."""
    grouped: dict[str, list[FetchPartition]] = {}
    for (topic, _), asked in partitions.items():
        grouped.setdefault(topic, []).append(asked)
    return replace(request, topics=tuple(FetchTopic(topic=topic, partitions=tuple(asked))
                                         for topic, asked in grouped.items()), forgotten_topics_data=())


class FetchSessionCache:
    """The broker's fetch sessions (Kafka's FetchSessionCache and FetchManager.newContext)."""

    def __init__(self, *, slots_max: int, eviction_ms: int = EVICTION_MS, seed: int = 0) -> None:
        assert slots_max >= 0, slots_max
        self.slots_max = slots_max
        self.eviction_ms = eviction_ms
        self.sessions: dict[int, FetchSession] = {}
        self.evictions = 0
        self._random_state = (seed & 0xFFFFFFFF) or 0x9E3779B9  # xorshift32 must not start at 0

    def __len__(self) -> int:
        return len(self.sessions)

    # ----------------------------------------------------------------------------- requests
    def new_context(self, request: FetchRequest, now_ms: int) -> FetchContext:
        """Kafka's ``FetchManager.newContext``: what this fetch is, and what it reads."""
        session_id, epoch = request.session_id, request.session_epoch
        if epoch in (INITIAL_EPOCH, FINAL_EPOCH):  # a full fetch
            if session_id != INVALID_SESSION_ID:
                self.sessions.pop(session_id, None)  # any session a full fetch names is closed
            # A full fetch is read as it came (a forgotten list means nothing without a session).
            return FetchContext(request=request, kind="sessionless" if epoch == FINAL_EPOCH else "full")
        session = self.sessions.get(session_id)
        if session is None or session_id == INVALID_SESSION_ID:
            return FetchContext(request=request, kind="error", error_code=ErrorCode.FETCH_SESSION_ID_NOT_FOUND)
        if session.epoch != epoch:
            return FetchContext(request=request, kind="error", error_code=ErrorCode.INVALID_FETCH_SESSION_EPOCH,
                                session_id=session_id)
        self._update(session, request)
        if not session.partitions:
            del self.sessions[session_id]
            return FetchContext(request=_request_for(request, {}), kind="sessionless")
        session.last_used_ms = now_ms
        session.epoch = next_epoch(session.epoch)
        every = {tp: cached.asked for tp, cached in session.partitions.items()}
        return FetchContext(request=_request_for(request, every), kind="incremental", session_id=session_id,
                            expected_epoch=session.epoch)

    @staticmethod
    def _update(session: FetchSession, request: FetchRequest) -> None:
        """Kafka's ``FetchSession.update``: new and changed partitions, then the forgotten ones."""
        for tp, asked in _partitions_of(request).items():
            cached = session.partitions.get(tp)
            if cached is None:
                session.partitions[tp] = CachedPartition(asked=asked)
            else:
                cached.asked = asked
        for forgotten in request.forgotten_topics_data:
            for partition in forgotten.partitions:
                session.partitions.pop((forgotten.topic, partition), None)

    # ------------------------------------------------------------------------------ the cache
    def maybe_create_session(self, request: FetchRequest, response: FetchResponse, now_ms: int) -> int:
        """A session for a full fetch's partitions, as answered; INVALID_SESSION_ID when there is
        no room for it."""
        privileged = request.replica_id >= 0
        asked = _partitions_of(request)
        if not asked or (len(self.sessions) >= self.slots_max and not self._try_evict(privileged, len(asked), now_ms)):
            return INVALID_SESSION_ID
        partitions = {tp: CachedPartition(asked=a) for tp, a in asked.items()}
        for topic in response.responses:
            for data in topic.partitions:
                cached = partitions.get((topic.topic, data.partition_index))
                if cached is not None:
                    cached.must_respond(data)
        session = FetchSession(session_id=self._new_session_id(), privileged=privileged, partitions=partitions,
                               creation_ms=now_ms, last_used_ms=now_ms, epoch=next_epoch(INITIAL_EPOCH))
        self.sessions[session.session_id] = session
        return session.session_id

    def _try_evict(self, privileged: bool, size: int, now_ms: int) -> bool:
        """Kafka's ``tryEvict``: a stale session first, else a less valuable one past its grace."""
        if not self.sessions:
            return False
        least_recent = min(self.sessions.values(), key=lambda s: (s.last_used_ms, s.session_id))
        if now_ms - least_recent.last_used_ms > self.eviction_ms:
            return self._evict(least_recent)
        # A consumer may evict only sessions past their grace; a follower also any consumer's.
        evictable = [s for s in self.sessions.values() if now_ms - s.creation_ms > self.eviction_ms
                     or (privileged and not s.privileged)]
        if not evictable:
            return False
        least_valuable = min(evictable, key=lambda s: (s.privileged, len(s.partitions), s.session_id))
        if (privileged, size) <= (least_valuable.privileged, len(least_valuable.partitions)):
            return False  # Kafka's new key sorts first on a tie (its id is 0): no eviction
        return self._evict(least_valuable)

    def _evict(self, session: FetchSession) -> bool:
        del self.sessions[session.session_id]
        self.evictions += 1
        return True

    def _new_session_id(self) -> int:
        """A positive id not in use (xorshift32, 31 bits kept)."""
        while True:
            x = self._random_state
            x ^= (x << 13) & 0xFFFFFFFF
            x ^= x >> 17
            x ^= (x << 5) & 0xFFFFFFFF
            self._random_state = x
            session_id = x & 0x7FFFFFFF
            if session_id != INVALID_SESSION_ID and session_id not in self.sessions:
                return session_id
