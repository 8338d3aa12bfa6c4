"""What a consumer puts into a group: Kafka 2.4's ``ConsumerCoordinator``.

Theory of operation. It composes a ``GroupMembership`` (the generic join/sync/heartbeat protocol)
and implements its hooks with the consumer protocol:

- ``join_protocols``: one JoinGroup protocol per ``partition.assignment.strategy`` entry, in
  preference order, each carrying the subscription in Kafka's ConsumerProtocol bytes (the sticky
  assignor's also carries the previous assignment and its generation as user data).
- ``on_join_prepare``: before every JoinGroup, commit (if ``enable.auto.commit``), call the
  listener's ``on_partitions_revoked`` with everything owned, then give it all up (Kafka 2.4's
  eager protocol).
- ``perform_assignment`` (the leader only): partition counts of every member's topics from
  metadata, then the chosen assignor over the members' subscriptions.
- ``on_join_complete``: hand the assignment to the consumer (its positions come from committed
  offsets, else ``auto.offset.reset``), then call ``on_partitions_assigned``.

Offsets: ``commit_sync`` and ``fetch_committed`` go to the coordinator and retry what Kafka
retries until ``default.api.timeout.ms``; ``poll`` commits asynchronously every
``auto.commit.interval.ms``. A consumer that assigns partitions by hand but has a ``group.id``
commits outside any generation (generation -1, no member id), as Kafka's does.

The consumer side is reached through three callables: ``assign_partitions(partitions)`` replaces
the owned partitions, ``consumed_positions()`` gives ``{tp: (offset, leader_epoch)}`` to commit,
and ``partition_counts(topics)`` reads fresh metadata (topics it lacks are left out).
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from loguru import logger

from actors.core.errors import ErrorCode
from actors.core.group.assignors import ASSIGNORS, leader_assignments, subscription_metadata
from actors.core.group.consumer_protocol import decode_assignment, decode_subscription
from actors.core.group.wire import SchemaError
from actors.core.messages.join_group import JoinGroupRequestProtocol, JoinGroupResponseMember
from actors.core.messages.offset_commit import (
    OffsetCommitRequest, OffsetCommitRequestPartition, OffsetCommitRequestTopic,
)
from actors.core.messages.offset_fetch import OffsetFetchRequest, OffsetFetchRequestTopic
from orchestration.clients.group_member import (
    NO_GENERATION, CoordinatorChannel, Generation, InFlight, MembershipConfig, monotonic_ms,
)
from orchestration.clients.group_membership import GroupMembership
from orchestration.errors import KafkaError

TopicPartition = tuple[str, int]
OffsetAndEpoch = tuple[int, int]

# Bounds the retries of one commit or offset fetch; the deadline usually ends them first.
OFFSET_REQUEST_ATTEMPTS_MAX = 10_000
# While a subscribed topic is missing from metadata, the leader looks again this often, so that a
# topic created after subscribe gets assigned without waiting for metadata.max.age.ms.
MISSING_TOPIC_RECHECK_MS = 1000

_COMMIT_FAILED = frozenset({ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.ILLEGAL_GENERATION,
                            ErrorCode.REBALANCE_IN_PROGRESS})
_COMMIT_RETRIABLE = frozenset({ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                               ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR,
                               ErrorCode.REQUEST_TIMED_OUT})


class CommitFailedError(KafkaError):
    """Kafka's ``CommitFailedException``: the group rebalanced and this member's generation is
    over, so its offsets cannot be committed; ``error_code`` says what the coordinator answered.
    Retrying does not help: the partitions may belong to another member now."""

    def __init__(self, error_code: ErrorCode, message: str = "") -> None:
        super().__init__(error_code, message or "the group has rebalanced and the partitions may belong to another "
                                                "member; more time between polls than max.poll.interval.ms, or "
                                                "an expired session, causes this")

    @property
    def retriable(self) -> bool:
        return False


def parse_assignors(value: str) -> tuple[str, ...]:
    """``partition.assignment.strategy``: names in preference order; Kafka's class names work too."""
    aliases = {"org.apache.kafka.clients.consumer.rangeassignor": "range",
               "org.apache.kafka.clients.consumer.roundrobinassignor": "roundrobin",
               "org.apache.kafka.clients.consumer.stickyassignor": "sticky"}
    names = []
    for item in str(value).split(","):
        name = aliases.get(item.strip().lower(), item.strip().lower())
        if name and name not in names:
            names.append(name)
    unknown = [name for name in names if name not in ASSIGNORS]
    if not names or unknown:
        raise KafkaError(ErrorCode.INVALID_CONFIG, f"partition.assignment.strategy={value!r}; known: "
                                                   f"{', '.join(ASSIGNORS)}")
    return tuple(names)


class ConsumerCoordinator:
    def __init__(self, *, group_id: str, settings: Mapping[str, str], channel: CoordinatorChannel,
                 assign_partitions: Callable[[list[TopicPartition]], None],
                 consumed_positions: Callable[[], dict[TopicPartition, OffsetAndEpoch]],
                 partition_counts: Callable[[Iterable[str]], dict[str, int]],
                 client_id: str = "", client_host: str = "", clock_ms: Callable[[], float] = monotonic_ms,
                 heartbeat_thread: bool = True) -> None:
        self.group_id = group_id
        self.assignors = parse_assignors(settings["partition.assignment.strategy"])
        self._auto_commit = str(settings["enable.auto.commit"]).strip().lower() == "true"
        self._auto_commit_interval_ms = int(settings["auto.commit.interval.ms"])
        self._api_timeout_ms = int(settings["default.api.timeout.ms"])
        self._metadata_max_age_ms = int(settings["metadata.max.age.ms"])
        self._retry_backoff_ms = int(settings["retry.backoff.ms"])
        self._rebalance_timeout_ms = int(settings["max.poll.interval.ms"])
        self._assign_partitions = assign_partitions
        self._consumed_positions = consumed_positions
        self._partition_counts = partition_counts
        self._clock_ms = clock_ms
        self.membership = GroupMembership(MembershipConfig(
            group_id=group_id, session_timeout_ms=int(settings["session.timeout.ms"]),
            heartbeat_interval_ms=int(settings["heartbeat.interval.ms"]),
            rebalance_timeout_ms=self._rebalance_timeout_ms, retry_backoff_ms=self._retry_backoff_ms,
            request_timeout_ms=int(settings["request.timeout.ms"]), client_id=client_id, client_host=client_host,
            group_instance_id=settings.get("group.instance.id", "").strip() or None),
            self, channel, clock_ms=clock_ms, heartbeat_thread=heartbeat_thread)
        self.subscription: tuple[str, ...] | None = None  # None: not subscribed (assign mode)
        self._listener = None
        self._joined_subscription: tuple[str, ...] | None = None  # what the last JoinGroup carried
        self.assigned: list[TopicPartition] = []  # what the group gave this member
        self.is_leader = False
        self._assignment_snapshot: dict[str, int] | None = None  # the leader's partition counts
        self._group_topics: tuple[str, ...] = ()  # the leader's: every member's topics
        self._next_metadata_check_ms = 0.0
        # The sticky assignor's memory (Kafka's StickyAssignor.memberAssignment and generation).
        self._previous_assignment: tuple[TopicPartition, ...] = ()
        self._previous_generation = -1
        self._next_auto_commit_ms = clock_ms() + self._auto_commit_interval_ms
        self._auto_commit_in_flight: tuple[InFlight, Generation] | None = None
        self._offset_fetch: tuple[frozenset, InFlight] | None = None  # reused across polls

    # ------------------------------------------------------------------------ subscription
    def subscribe(self, topics: tuple[str, ...], listener=None) -> None:
        """The next poll rejoins if the topics changed; the listener applies from then on."""
        self.subscription = tuple(sorted(set(topics)))
        self._listener = listener

    def unsubscribe(self) -> None:
        """Give up every partition (listener first) and leave the group."""
        self.on_leave_prepare()
        self.membership.maybe_leave_group("the consumer unsubscribed")
        self.subscription = None
        self._joined_subscription = None
        self._listener = None

    def poll(self, deadline_ms: float) -> bool:
        """Kafka's ``ConsumerCoordinator.poll``: keep the membership alive and the assignment
        current, then auto-commit if due. False if the group is not ready by ``deadline_ms``."""
        now_ms = self._clock_ms()
        if self.subscription is not None:
            self.membership.poll_heartbeat(now_ms)
            self._check_leader_metadata(now_ms)
            if not self.membership.ensure_active_group(deadline_ms):
                return False
        self.maybe_auto_commit_async(now_ms)
        return True

    def time_to_next_poll_ms(self, now_ms: float) -> float:
        """How long poll may wait for fetched data before this coordinator needs the thread again."""
        if not self._auto_commit:
            return float("inf")
        return max(0.0, self._next_auto_commit_ms - now_ms)

    def _check_leader_metadata(self, now_ms: float) -> None:
        """The leader rebalances when the partition counts of the group's topics change (Kafka's
        assignmentSnapshot vs metadataSnapshot), e.g. a subscribed topic was created."""
        if not self.is_leader or self._assignment_snapshot is None or now_ms < self._next_metadata_check_ms:
            return
        try:
            counts = self._partition_counts(self._group_topics)
        except KafkaError as exc:
            logger.debug("group {}: metadata check failed: {}", self.group_id, exc)
            counts = self._assignment_snapshot
        self._schedule_metadata_check(now_ms, counts)
        if counts != self._assignment_snapshot:
            logger.info("group {}: partitions of subscribed topics changed ({} -> {}); rebalancing", self.group_id,
                        self._assignment_snapshot, counts)
            self.membership.request_rejoin()

    def _schedule_metadata_check(self, now_ms: float, counts: Mapping[str, int]) -> None:
        missing = any(topic not in counts for topic in self._group_topics)
        self._next_metadata_check_ms = now_ms + (min(MISSING_TOPIC_RECHECK_MS, self._metadata_max_age_ms)
                                                 if missing else self._metadata_max_age_ms)

    # ---------------------------------------------------------------------- membership hooks
    def needs_rejoin(self) -> bool:
        return self.subscription is not None and self._joined_subscription != self.subscription

    def join_protocols(self) -> tuple[JoinGroupRequestProtocol, ...]:
        topics = self.subscription or ()
        self._joined_subscription = self.subscription
        protocols = []
        for name in self.assignors:
            owned = self._previous_assignment if name == "sticky" else ()
            protocols.append(JoinGroupRequestProtocol(name=name, metadata=subscription_metadata(
                name, topics, owned_partitions=owned, generation_id=self._previous_generation)))
        return tuple(protocols)

    def on_join_prepare(self, generation: Generation) -> None:
        # Commit first, so that whoever gets these partitions next starts where this member stopped.
        if self._auto_commit:
            self._commit_quietly(self._clock_ms() + self._rebalance_timeout_ms)
        revoked = list(self.assigned)
        try:
            self._call_listener("on_partitions_revoked", revoked)
        finally:
            self.assigned = []
            self.is_leader = False
            self._assignment_snapshot = None
            self._assign_partitions([])

    def perform_assignment(self, leader_id: str, protocol_name: str,
                           members: tuple[JoinGroupResponseMember, ...]) -> dict[str, bytes]:
        if protocol_name not in self.assignors:
            raise KafkaError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, f"the coordinator chose {protocol_name!r}, "
                                                                    f"not one of {self.assignors}")
        try:
            topics = sorted({t for member in members for t in decode_subscription(member.metadata).topics})
        except SchemaError as exc:
            raise KafkaError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, f"a member's subscription: {exc}") from exc
        counts = self._partition_counts(topics)
        self.is_leader = True
        self._group_topics = tuple(topics)
        self._assignment_snapshot = dict(counts)
        self._schedule_metadata_check(self._clock_ms(), counts)
        logger.info("group {}: leader {!r} assigns {} over {} members with {}", self.group_id, leader_id, counts,
                    len(members), protocol_name)
        return leader_assignments(protocol_name, members, counts)

    def on_join_complete(self, generation: Generation, assignment: bytes) -> None:
        try:
            partitions = sorted(decode_assignment(assignment).partitions)
        except SchemaError as exc:
            raise KafkaError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, f"assignment: {exc}") from exc
        if any(topic not in (self.subscription or ()) for topic, _ in partitions):
            # The subscription changed while the rebalance ran: join again with the new one.
            logger.info("group {}: assignment {} does not match subscription {}; rejoining", self.group_id,
                        partitions, self.subscription)
            self.membership.request_rejoin()
            return
        self._previous_assignment = tuple(partitions)
        self._previous_generation = generation.generation_id
        self.assigned = partitions
        self._assign_partitions(list(partitions))
        self._next_auto_commit_ms = self._clock_ms() + self._auto_commit_interval_ms
        logger.info("group {}: generation {} assigns {}", self.group_id, generation.generation_id, partitions)
        self._call_listener("on_partitions_assigned", list(partitions))

    def on_leave_prepare(self) -> None:
        revoked = list(self.assigned)
        if self.subscription is None or not revoked:
            return
        try:
            self._call_listener("on_partitions_revoked", revoked)
        finally:
            self.assigned = []
            self._assign_partitions([])

    def _call_listener(self, method: str, partitions: list[TopicPartition]) -> None:
        callback = getattr(self._listener, method, None)
        if callback is None:
            return
        try:
            callback(partitions)
        except Exception:
            logger.exception("group {}: rebalance listener {} failed", self.group_id, method)
            raise

    # ------------------------------------------------------------------------------ offsets
    def commit_sync(self, offsets: Mapping[TopicPartition, OffsetAndEpoch], timeout_ms: int | None = None) -> None:
        """Commit and wait for the answer, retrying what Kafka retries; raises ``CommitFailedError``
        when this member's generation is over, ``KafkaError`` otherwise."""
        if not offsets:
            return
        deadline_ms = self._clock_ms() + (self._api_timeout_ms if timeout_ms is None else timeout_ms)
        error = None
        for _ in range(OFFSET_REQUEST_ATTEMPTS_MAX):
            if not self.membership.ensure_coordinator_ready(deadline_ms):
                break
            inflight, generation = self._send_commit(offsets)
            if inflight is None:
                continue  # the coordinator went away meanwhile
            if not self.membership.wait(inflight, deadline_ms):
                break
            error = self._commit_outcome(inflight, generation)
            if error is None:
                return
            if not error.retriable:
                raise error
            if not self.membership.sleep_until(self._clock_ms() + self._retry_backoff_ms, deadline_ms):
                break
        raise KafkaError(ErrorCode.REQUEST_TIMED_OUT, f"committing offsets did not finish in time (last: {error})")

    def _send_commit(self, offsets: Mapping[TopicPartition, OffsetAndEpoch]) -> tuple[InFlight | None, Generation]:
        generation = NO_GENERATION
        if self.subscription is not None:
            generation = self.membership.generation_if_stable()
            if generation is None:
                raise CommitFailedError(ErrorCode.REBALANCE_IN_PROGRESS if self.membership.rebalancing()
                                        else ErrorCode.ILLEGAL_GENERATION)
        by_topic: dict[str, list[OffsetCommitRequestPartition]] = {}
        for (topic, partition), (offset, leader_epoch) in sorted(offsets.items()):
            by_topic.setdefault(topic, []).append(OffsetCommitRequestPartition(
                partition_index=partition, committed_offset=offset, committed_leader_epoch=leader_epoch))
        request = OffsetCommitRequest(group_id=self.group_id, generation_id=generation.generation_id,
                                      member_id=generation.member_id,
                                      group_instance_id=self.membership.config.group_instance_id, topics=tuple(
                                          OffsetCommitRequestTopic(name=topic, partitions=tuple(parts))
                                          for topic, parts in by_topic.items()))
        return self.membership.send(request), generation

    def _commit_outcome(self, inflight: InFlight, generation: Generation) -> KafkaError | None:
        """Kafka's ``OffsetCommitResponseHandler``: the first partition error decides."""
        response, error = self.membership.outcome(inflight)
        if error is not None:
            return error
        for topic in response.topics:
            for partition in topic.partitions:
                code = ErrorCode(partition.error_code)
                if code == ErrorCode.NONE:
                    continue
                where = f"committing {topic.name}-{partition.partition_index}"
                if code in (ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.REQUEST_TIMED_OUT):
                    self.membership.mark_coordinator_unknown(f"OffsetCommit: {code.name}", inflight.coordinator)
                if code in _COMMIT_RETRIABLE:
                    return KafkaError(code, where)
                if code in _COMMIT_FAILED and self.subscription is not None:
                    if code == ErrorCode.REBALANCE_IN_PROGRESS:
                        self.membership.request_rejoin()
                    else:
                        self.membership.reset_generation(reset_member_id=code == ErrorCode.UNKNOWN_MEMBER_ID,
                                                         generation=generation)
                    return CommitFailedError(code)
                if code in _COMMIT_FAILED:
                    return CommitFailedError(code, "the group has members; only they can commit for it")
                return KafkaError(code, where)
        return None

    def _commit_quietly(self, deadline_ms: float) -> None:
        """Kafka's ``maybeAutoCommitOffsetsSync``: commit what was consumed, log a failure."""
        try:
            self.commit_sync(self._consumed_positions(), timeout_ms=max(0, int(deadline_ms - self._clock_ms())))
        except KafkaError as exc:
            logger.warning("group {}: auto-commit failed: {}", self.group_id, exc)

    def maybe_auto_commit_async(self, now_ms: float) -> None:
        """Every ``auto.commit.interval.ms``, send a commit of the consumed positions without waiting
        (at most one in flight; its answer is read by a later poll)."""
        if not self._auto_commit:
            return
        if self._auto_commit_in_flight is not None:
            inflight, generation = self._auto_commit_in_flight
            if not inflight.future.done() and now_ms < inflight.timeout_at_ms:
                return
            self._auto_commit_in_flight = None
            error = self._commit_outcome(inflight, generation)
            if error is not None:
                logger.warning("group {}: asynchronous auto-commit failed: {}", self.group_id, error)
                if error.retriable:
                    self._next_auto_commit_ms = now_ms + self._retry_backoff_ms
        if now_ms < self._next_auto_commit_ms:
            return
        if self.membership.coordinator_unknown():
            self.membership.ensure_coordinator_ready(deadline_ms=now_ms)  # start a lookup, no waiting
            self._next_auto_commit_ms = now_ms + self._retry_backoff_ms
            return
        self._next_auto_commit_ms = now_ms + self._auto_commit_interval_ms
        offsets = self._consumed_positions()
        if not offsets:
            return
        try:
            inflight, generation = self._send_commit(offsets)
        except CommitFailedError as exc:
            logger.debug("group {}: no auto-commit now: {}", self.group_id, exc)
            return
        if inflight is not None:
            self._auto_commit_in_flight = (inflight, generation)

    def fetch_committed(self, partitions: Iterable[TopicPartition], deadline_ms: float, *,
                        raise_on_timeout: bool = True) -> dict[TopicPartition, OffsetAndEpoch | None] | None:
        """The group's committed offsets (None for a partition without one). When the deadline
        passes first: raises, or with ``raise_on_timeout=False`` returns None and keeps the
        request for the next call with the same partitions (poll's path)."""
        wanted = frozenset(partitions)
        if not wanted:
            return {}
        for _ in range(OFFSET_REQUEST_ATTEMPTS_MAX):
            if not self.membership.ensure_coordinator_ready(deadline_ms):
                break
            inflight = self._offset_fetch[1] if self._offset_fetch and self._offset_fetch[0] == wanted else None
            if inflight is None:
                inflight = self._send_offset_fetch(wanted)
                if inflight is None:
                    continue
                self._offset_fetch = (wanted, inflight)
            if not self.membership.wait(inflight, deadline_ms):
                break
            self._offset_fetch = None
            result, error = self._offset_fetch_outcome(inflight, wanted)
            if error is None:
                return result
            if not error.retriable:
                raise error
            if not self.membership.sleep_until(self._clock_ms() + self._retry_backoff_ms, deadline_ms):
                break
        if raise_on_timeout:
            raise KafkaError(ErrorCode.REQUEST_TIMED_OUT, "fetching committed offsets did not finish in time")
        return None

    def _send_offset_fetch(self, partitions: frozenset) -> InFlight | None:
        by_topic: dict[str, list[int]] = {}
        for topic, partition in sorted(partitions):
            by_topic.setdefault(topic, []).append(partition)
        request = OffsetFetchRequest(group_id=self.group_id, topics=tuple(
            OffsetFetchRequestTopic(name=topic, partition_indexes=tuple(indexes)) for topic, indexes in by_topic.items()))
        return self.membership.send(request)

    def _offset_fetch_outcome(self, inflight: InFlight, wanted: frozenset):
        response, error = self.membership.outcome(inflight)
        if error is not None:
            return None, error
        code = ErrorCode(response.error_code)
        if code in (ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE):
            self.membership.mark_coordinator_unknown(f"OffsetFetch: {code.name}", inflight.coordinator)
        if code != ErrorCode.NONE:
            return None, KafkaError(code, "OffsetFetch")
        result: dict[TopicPartition, OffsetAndEpoch | None] = {tp: None for tp in wanted}
        for topic in response.topics:
            for partition in topic.partitions:
                if partition.error_code != ErrorCode.NONE:
                    return None, KafkaError(partition.error_code, f"OffsetFetch {topic.name}-{partition.partition_index}")
                result[(topic.name, partition.partition_index)] = (
                    (partition.committed_offset, partition.committed_leader_epoch)
                    if partition.committed_offset >= 0 else None)
        return result, None

    # -------------------------------------------------------------------------------- close
    def close(self, deadline_ms: float) -> None:
        """Kafka's close: commit (if auto-commit), revoke, leave the group."""
        try:
            if self._auto_commit and (self.subscription is None or self.membership.is_stable()):
                self._commit_quietly(deadline_ms)
        finally:
            self.membership.close(deadline_ms)
