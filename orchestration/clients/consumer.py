"""The consumer: positions per partition, pipelined fetches, ``auto.offset.reset``, and group mode.

``poll`` returns records from what earlier fetches brought and keeps one Fetch request in flight per
leader broker, in a fetch session (KIP-227), so the next batch of data travels while the caller
works (Kafka's consumer pipelines the same way). A position with no committed start is reset with
ListOffsets per ``auto.offset.reset``; a fetch answered ``OFFSET_OUT_OF_RANGE`` resets the same way,
or raises ``KafkaError(OFFSET_OUT_OF_RANGE)`` when the policy is ``none``. Leadership errors refresh
metadata and the fetch is retried against the new leader, once the position is validated against
that leader's log (KIP-320, ``ValidatingPositions``: a truncation moves it to where the logs diverge,
or raises ``LogTruncationError`` when the policy is ``none``). As in Kafka's consumer, a partition whose
leader is unknown (-1 in the metadata last read) makes the consumer ask for metadata again, no more
often than every ``retry.backoff.ms``, and ``metadata.max.age.ms`` refreshes it anyway
(``MetadataRefresher``); ``position``, ``seek_to_beginning``, ``seek_to_end`` and ``end_offsets``
retry retriable errors (no leader, leadership moving) until ``default.api.timeout.ms``.

Partitions come from ``assign`` (assign mode, as before) or, with a ``group.id``, from
``subscribe``: then each ``poll`` first keeps the group membership current (``ConsumerCoordinator``:
FindCoordinator, JoinGroup/SyncGroup, the listener's callbacks, auto-commit) and only then
fetches, as Kafka's ``KafkaConsumer.poll`` does. A newly owned partition (either way, when there
is a ``group.id``) starts at the group's committed offset, else per ``auto.offset.reset``; it is
not fetched until that lookup answered. What is committed is the position after the last record
``poll`` returned, not after what fetches buffered. ``poll_batches`` and ``poll_arrow``
(``BatchPolling``) hand out the same data as whole record batches or Arrow columns.

With a ``HistoryWriter`` every poll that returns records is recorded (``HistoryWriter.poll``) with
the records and ``positions_before``: per owned partition whose position is known, the offset of
the next record ``poll`` would have returned just before this one (``position()``, read from what
the consumer holds, never asked of a broker), so a checker can tell a seek or a rebalance from a
consumer going backwards.
"""
from __future__ import annotations

import collections
import itertools
import socket
import time
from concurrent import futures
from concurrent.futures import Future

from ray.exceptions import ActorDiedError

from actors.core.errors import ErrorCode
from actors.core.messages._base import NO_EPOCH
from actors.core.fetcher.fetch_session_handler import FetchSessionHandler
from actors.core.messages.list_offsets import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP
from orchestration.history import HistoryWriter, topic_partition_key
from orchestration.clients.broker_directory import BrokerDirectory, MetadataRefresher, as_future, as_kafka_error
from orchestration.clients.consumer_config import (  # noqa: F401 (the consumer's API)
    CONSUMER_DEFAULTS, CONSUMER_KEYS,
)
from orchestration.clients.consumer_coordinator import ConsumerCoordinator
from orchestration.clients.group_member import monotonic_ms
from orchestration.clients.list_offsets import METADATA_ERRORS as _METADATA_ERRORS, OffsetLookups
from orchestration.clients.batch_poll import BatchPolling
from orchestration.clients.fetched import FetchBuffer, FetchedPartition
from orchestration.clients.position_validation import PositionEpochs, ValidatingPositions
from actors.codecs.record_batches import ConsumerRecord, fetch_extent
from orchestration.errors import KafkaError

CLOSE_TIMEOUT_MS = 30000  # Kafka's KafkaConsumer.close() default
_CLIENT_IDS = itertools.count(1)

_RESET_POLICIES = ("earliest", "latest", "none")


def _topic_partition(value) -> tuple[str, int]:
    topic, partition = value
    return str(topic), int(partition)


class Consumer(BatchPolling, ValidatingPositions, OffsetLookups):
    def __init__(self, directory: BrokerDirectory, config: dict | None = None, *,
                 coordinator_channel=None, heartbeat_thread: bool = True,
                 history: HistoryWriter | None = None, process: str | None = None) -> None:
        """``coordinator_channel`` replaces the Ray transport to group coordinators and
        ``heartbeat_thread=False`` leaves heartbeats to the caller; both for tests. ``history``
        records every poll that returns records under ``process`` (default: the client id, with a
        number added when ``client.id`` is configured, so that it is unique in this Python process)."""
        settings = CONSUMER_KEYS.settings(config)
        self.config = settings
        self._reset_policy = settings["auto.offset.reset"].lower()
        if self._reset_policy not in _RESET_POLICIES:
            raise KafkaError(ErrorCode.INVALID_CONFIG, f"auto.offset.reset={settings['auto.offset.reset']!r}")
        self._min_bytes = int(settings["fetch.min.bytes"])
        self._max_wait_ms = int(settings["fetch.max.wait.ms"])
        self._max_bytes = int(settings["fetch.max.bytes"])
        self._partition_max_bytes = int(settings["max.partition.fetch.bytes"])
        self._max_poll_records = max(1, int(settings["max.poll.records"]))
        self._request_timeout_ms = int(settings["request.timeout.ms"])
        self._retry_backoff_ms = int(settings["retry.backoff.ms"])
        self._directory = directory
        self._metadata = MetadataRefresher(directory, retry_backoff_ms=self._retry_backoff_ms,
                                           metadata_max_age_ms=int(settings["metadata.max.age.ms"]))
        self._positions: dict[tuple[str, int], int | None] = {}
        self._buffered = FetchBuffer()  # fetch answers not all handed out yet
        # Per Fetch awaiting its answer, keyed by the answer's future: (broker id, the call's
        # ObjectRef, held until the answer is in, {topic_partition: fetch offset}).
        self._in_flight: dict[Future, tuple] = {}
        self._fetch_sessions: dict[int, FetchSessionHandler] = {}  # per broker id (KIP-227)
        # KIP-320: each position's epochs, and the OffsetForLeaderEpoch requests out, as _in_flight's.
        self._position_epochs = PositionEpochs()
        self._validations: dict[Future, tuple] = {}
        self._backoff_until: dict[int, float] = {}
        self._closed = False
        group_id = settings["group.id"].strip()
        self.client_id = settings["client.id"] or (f"consumer-{group_id}-{next(_CLIENT_IDS)}" if group_id
                                                   else f"consumer-{next(_CLIENT_IDS)}")
        self._history = history
        self.process = process or (f"{self.client_id}-{next(_CLIENT_IDS)}" if settings["client.id"]
                                   else self.client_id)
        self._api_timeout_ms = int(settings["default.api.timeout.ms"])
        self._awaiting_committed: set[tuple[str, int]] = set()  # owned, waiting for the committed offset
        self._consumed_epochs: dict[tuple[str, int], int] = {}  # leader epoch of the last record returned
        self._coordinator: ConsumerCoordinator | None = None
        if group_id:
            if coordinator_channel is None:
                from orchestration.clients.group_channel import RayCoordinatorChannel
                coordinator_channel = RayCoordinatorChannel(directory)
            self._coordinator = ConsumerCoordinator(
                group_id=group_id, settings=settings, channel=coordinator_channel,
                assign_partitions=self._set_partitions, consumed_positions=self._consumed_positions,
                partition_counts=self._partition_counts, client_id=self.client_id, client_host=socket.gethostname(),
                heartbeat_thread=heartbeat_thread)

    # ----------------------------------------------------------------------------- user API
    def assign(self, partitions) -> None:
        """Take these partitions; as in Kafka, a partition the cluster does not know yet is not an
        error here: ``poll`` returns nothing for it until metadata names its leader."""
        if self._coordinator is not None and self._coordinator.subscription is not None:
            raise RuntimeError("assign() and subscribe() are mutually exclusive; call unsubscribe() first")
        if self._coordinator is not None:
            self._coordinator.maybe_auto_commit_async(monotonic_ms())
        self._set_partitions([_topic_partition(p) for p in partitions])

    def assignment(self) -> set[tuple[str, int]]:
        """The partitions this consumer owns: assigned, or given by the group's last rebalance."""
        return set(self._positions)

    def subscribe(self, topics, listener=None) -> None:
        """Consume ``topics`` as a member of ``group.id`` (Kafka's subscribe): partitions arrive with
        the rebalance the next ``poll`` runs. ``listener`` may have ``on_partitions_revoked(list)``,
        called before every rebalance and on close, and ``on_partitions_assigned(list)``, called
        after it; both run inside ``poll``. An empty list is ``unsubscribe()``."""
        coordinator = self._require_group("subscribe")
        topics = [topics] if isinstance(topics, str) else list(topics)
        if not topics:
            self.unsubscribe()
            return
        if any(not isinstance(topic, str) or not topic.strip() for topic in topics):
            raise ValueError(f"topic names must be non-empty strings, not {topics!r}")
        if coordinator.subscription is None and self._positions:
            raise RuntimeError("subscribe() and assign() are mutually exclusive; call unsubscribe() first")
        coordinator.subscribe(tuple(topics), listener)

    def unsubscribe(self) -> None:
        """Drop every partition; a group member calls ``on_partitions_revoked`` and leaves the group."""
        if self._coordinator is not None and self._coordinator.subscription is not None:
            self._coordinator.unsubscribe()
        self._set_partitions([])

    def commit(self, offsets=None) -> None:
        """Commit synchronously (Kafka's commitSync): by default the position after the last
        record ``poll`` returned for every owned partition; else ``{(topic, partition): offset}``
        (the offset of the next record to read). Raises ``CommitFailedError`` when the group has
        rebalanced meanwhile, ``KafkaError`` for other failures."""
        coordinator = self._require_group("commit")
        if offsets is None:
            wanted = self._consumed_positions()
        else:
            wanted = {}
            for partition, offset in dict(offsets).items():
                offset, epoch = offset if isinstance(offset, tuple) else (offset, NO_EPOCH)
                if not isinstance(offset, int) or offset < 0:
                    raise ValueError(f"offset must be a non-negative integer, not {offset!r}")
                wanted[_topic_partition(partition)] = (offset, epoch)
        coordinator.commit_sync(wanted)

    def committed(self, partitions) -> dict[tuple[str, int], int | None]:
        """The group's committed offset per partition, None where there is none."""
        coordinator = self._require_group("committed")
        wanted = [_topic_partition(p) for p in partitions]
        found = coordinator.fetch_committed(wanted, monotonic_ms() + self._api_timeout_ms)
        return {tp: found[tp][0] if found.get(tp) is not None else None for tp in wanted}

    def seek(self, partition, offset: int) -> None:
        tp = self._assigned(partition)
        if not isinstance(offset, int) or offset < 0:
            raise ValueError(f"offset must be a non-negative integer, not {offset!r}")
        self._set_position(tp, offset)

    def seek_to_beginning(self, partitions=None) -> None:
        for tp in self._selected(partitions):
            self._set_position(tp, self._list_offset_waiting(tp, EARLIEST_TIMESTAMP))

    def seek_to_end(self, partitions=None) -> None:
        for tp in self._selected(partitions):
            self._set_position(tp, self._list_offset_waiting(tp, LATEST_TIMESTAMP))

    def position(self, partition) -> int:
        tp = self._assigned(partition)
        if tp in self._awaiting_committed:
            self._refresh_committed_positions(monotonic_ms() + self._api_timeout_ms, raise_on_timeout=True)
        if self._positions[tp] is None:
            self._reset(tp, waiting=True)
        # As in Kafka: the offset of the next record poll will return, not how far fetches reached.
        return self._buffered.positions().get(tp, self._positions[tp])

    def offsets_for_times(self, timestamps: dict) -> dict[tuple[str, int], int | None]:
        """Kafka's ``offsetsForTimes``: per partition, the offset of the first committed record
        whose timestamp (ms) is at or after the one given, or None when no record is that late."""
        found: dict[tuple[str, int], int | None] = {}
        for partition, timestamp_ms in timestamps.items():
            if int(timestamp_ms) < 0:
                raise ValueError(f"timestamp {timestamp_ms} of {partition} is negative")
            offset = self._list_offset_waiting(_topic_partition(partition), int(timestamp_ms))
            found[_topic_partition(partition)] = None if offset < 0 else offset
        return found

    def end_offsets(self, partitions) -> dict[tuple[str, int], int]:
        return {_topic_partition(p): self._list_offset_waiting(_topic_partition(p), LATEST_TIMESTAMP)
                for p in partitions}

    def poll(self, timeout_ms: int = 0) -> list[ConsumerRecord]:
        """Records from the owned partitions, at most ``max.poll.records``, waiting up to
        ``timeout_ms`` for some; one ``ConsumerRecord`` per record."""
        return self._poll(timeout_ms, self._take_records, [])

    def _poll(self, timeout_ms: int, take, nothing):
        """Wait up to ``timeout_ms`` for buffered fetch answers, then hand them out with ``take``
        (which returns something falsy when the answers held no data, e.g. only markers)."""
        if self._closed:
            raise KafkaError(ErrorCode.UNKNOWN_SERVER_ERROR, "consumer is closed")
        deadline = time.monotonic() + max(0, timeout_ms) / 1000
        while True:
            if self._coordinator is not None and not self._update_assignment(deadline * 1000):
                return nothing  # the rebalance or the coordinator lookup goes on in the next poll
            if self._buffered:
                handed_out = take()
                if handed_out:
                    self._send_fetches()  # pipelining: the next data travels while the caller works
                    return handed_out
            self._send_fetches()
            remaining_s = deadline - time.monotonic()
            # A group member comes back to its coordinator (auto-commit) while waiting for data.
            wait_s = remaining_s if self._coordinator is None else min(
                remaining_s, self._coordinator.time_to_next_poll_ms(monotonic_ms()) / 1000)
            if not self._in_flight and not self._validations:
                if remaining_s <= 0:
                    return nothing
                time.sleep(max(0.0, min(wait_s, self._retry_backoff_ms / 1000)))
                continue
            done, _ = futures.wait([*self._in_flight, *self._validations], timeout=max(0.0, wait_s),
                                   return_when=futures.FIRST_COMPLETED)
            for answer in done:
                if answer in self._validations:
                    self._handle_validation(answer)
                else:
                    self._handle_response(answer)
            # Checked whether or not a fetch answered: fetches answered at once with nothing
            # (fetch.max.wait.ms=0, at the log end) must not keep poll past its timeout.
            if not self._buffered and time.monotonic() >= deadline:
                return nothing

    def close(self, timeout_ms: int = CLOSE_TIMEOUT_MS) -> None:
        """A group member commits (if ``enable.auto.commit``), calls ``on_partitions_revoked`` and
        leaves the group, all within ``timeout_ms``."""
        if self._closed:
            return
        try:
            if self._coordinator is not None:
                self._coordinator.close(monotonic_ms() + timeout_ms)
        finally:
            self._closed = True
            self._in_flight.clear()
            self._validations.clear()
            self._buffered.clear()

    def __enter__(self) -> "Consumer":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ------------------------------------------------------------------------------- fetching
    def _send_fetches(self) -> None:
        self._metadata.update_if_due()
        busy = {tp for _, _, offsets in self._in_flight.values() for tp in offsets} | self._validating_partitions()
        busy_leaders = {leader for leader, _, _ in self._in_flight.values()}  # one fetch per session at a time
        buffered = self._buffered.topic_partitions()
        by_leader: dict[int, dict[tuple[str, int], tuple[int, int]]] = collections.defaultdict(dict)
        to_validate: dict[int, dict[tuple[str, int], int]] = {}
        now = time.monotonic()
        for tp in self._positions:
            if tp in busy or tp in self._awaiting_committed:
                continue
            if self._positions[tp] is None:
                try:
                    self._reset(tp)
                except KafkaError as exc:
                    if exc.error_code == ErrorCode.OFFSET_OUT_OF_RANGE or not exc.retriable:
                        raise
                    continue
            try:
                leader, epoch = self._directory.leader_for(*tp)
            except KafkaError:
                leader, epoch = -1, -1
            if leader < 0:
                # Kafka's Fetcher: no known leader, so ask for metadata again (once the backoff allows).
                self._metadata.request_update()
                continue
            if self._backoff_until.get(leader, 0) > now:
                continue
            # KIP-320: a position whose leader epoch moved is validated before it is fetched.
            if not self._fetchable_after_validation(tp, leader, epoch, buffered, to_validate):
                continue
            if tp in buffered or leader in busy_leaders:
                continue
            by_leader[leader][tp] = (self._positions[tp], epoch)
        self._send_validations(to_validate)
        for leader, wanted in by_leader.items():  # KIP-227: only partitions whose position moved are named
            request = self._fetch_sessions.setdefault(leader, FetchSessionHandler()).build_request(
                wanted, self._partition_max_bytes, self._max_wait_ms, self._min_bytes, self._max_bytes)
            try:
                ref = self._directory.broker(leader).handle.remote(request)
            except KafkaError:
                self._fetch_sessions[leader].handle_error()
                self._on_broker_trouble(leader)
                continue
            self._in_flight[as_future(ref)] = (leader, ref, {tp: offset for tp, (offset, _) in wanted.items()})

    def _handle_response(self, answer: Future) -> None:
        leader, _, offsets = self._in_flight.pop(answer)
        try:
            response = answer.result()
        except Exception as exc:
            if isinstance(exc, ActorDiedError):
                self._directory.forget(leader)
            self._fetch_sessions[leader].handle_error()  # the next fetch is full and closes the session
            error = as_kafka_error(exc)
            if not error.retriable:
                raise error
            self._on_broker_trouble(leader)
            return
        if not self._fetch_sessions[leader].handle_response(response):
            return  # a fetch session error: the next fetch to this broker is a full one
        for topic in response.responses:
            for data in topic.partitions:
                tp = (topic.topic, data.partition_index)
                fetched_at = offsets.get(tp)
                if fetched_at is None or self._positions.get(tp) != fetched_at:
                    continue  # reassigned or sought meanwhile: this data is stale
                record_count = self._handle_partition(tp, fetched_at, data)
                if record_count:
                    # Decoded (or sliced into batches) only when handed out, and then after the
                    # next fetches are sent (_pop_whole).
                    self._buffered.append(FetchedPartition(*tp, data.records, fetched_at, self._positions[tp],
                                                           record_count))

    def _handle_partition(self, tp, fetched_at: int, data) -> int:
        """Act on one partition's answer; for records, move the position past its last whole batch
        (Kafka's next fetch offset) and return how many records (at most) are still to be decoded."""
        code = ErrorCode(data.error_code)
        if code == ErrorCode.NONE:
            next_offset, record_count, last_leader_epoch = fetch_extent(data.records, fetched_at)
            if next_offset > fetched_at:
                self._positions[tp] = next_offset
                self._position_epochs.fetched(tp, last_leader_epoch)
                return max(record_count, 1)
        elif code == ErrorCode.OFFSET_OUT_OF_RANGE:
            if self._reset_policy == "none":
                raise KafkaError(code, f"{tp[0]}-{tp[1]} offset {fetched_at} is outside "
                                       f"[{data.log_start_offset}, {data.high_watermark}]")
            self._positions[tp] = None
        elif code in _METADATA_ERRORS:
            self._refresh_metadata_quietly()
        else:
            raise KafkaError(code, f"fetching {tp[0]}-{tp[1]} at {fetched_at}")
        return 0

    def _on_broker_trouble(self, broker_id: int) -> None:
        self._backoff_until[broker_id] = time.monotonic() + self._retry_backoff_ms / 1000
        self._refresh_metadata_quietly()

    def _refresh_metadata_quietly(self) -> None:
        """Ask for metadata now, or as soon as retry.backoff.ms allows (the next poll's fetches)."""
        self._metadata.refresh_now()

    # ---------------------------------------------------------------------------- group mode
    def _require_group(self, operation: str) -> ConsumerCoordinator:
        if self._coordinator is None:
            raise KafkaError(ErrorCode.INVALID_GROUP_ID, f"{operation} needs a group.id in the consumer's config")
        return self._coordinator

    def _update_assignment(self, deadline_ms: float) -> bool:
        """Kafka's ``updateAssignmentMetadataIfNeeded``: the group's part of poll, then the
        committed offsets of newly owned partitions. False if the group is not ready yet."""
        if not self._coordinator.poll(deadline_ms):
            return False
        self._refresh_committed_positions(deadline_ms, raise_on_timeout=False)
        return True

    def _refresh_committed_positions(self, deadline_ms: float, *, raise_on_timeout: bool) -> None:
        waiting = sorted(self._awaiting_committed)
        if not waiting:
            return
        committed = self._coordinator.fetch_committed(waiting, deadline_ms, raise_on_timeout=raise_on_timeout)
        if committed is None:
            return  # not answered yet: these partitions wait, unfetched, for a later poll
        for tp in waiting:
            self._awaiting_committed.discard(tp)
            found = committed.get(tp)
            if found is not None and tp in self._positions and self._positions[tp] is None:
                self._positions[tp], self._consumed_epochs[tp] = found
                self._position_epochs.restored(tp, found[1])  # KIP-320: validated before it is fetched

    def _set_partitions(self, partitions: list[tuple[str, int]]) -> None:
        """Own exactly ``partitions``: positions of kept ones stay, new ones start unknown (with a
        group, at the committed offset once it is known)."""
        wanted = [_topic_partition(p) for p in partitions]
        if self._coordinator is not None:
            self._awaiting_committed |= {tp for tp in wanted if self._positions.get(tp) is None}
        self._positions = {tp: self._positions.get(tp) for tp in wanted}
        self._awaiting_committed &= set(self._positions)
        self._consumed_epochs = {tp: e for tp, e in self._consumed_epochs.items() if tp in self._positions}
        self._position_epochs.keep_only(self._positions)
        self._drop_buffered(lambda tp: tp not in self._positions)

    def _set_position(self, tp: tuple[str, int], offset: int) -> None:
        self._positions[tp] = offset
        self._awaiting_committed.discard(tp)
        self._consumed_epochs.pop(tp, None)
        self._position_epochs.forget(tp)  # a seek has no epoch: Kafka does not validate it
        self._drop_buffered(lambda other: other == tp)

    def _consumed_positions(self) -> dict[tuple[str, int], tuple[int, int]]:
        """What a commit stores: per owned partition with a position, the offset of the first record
        not yet handed out (its buffered fetch answer's position, else the fetch position), and the
        leader epoch of the last record handed out."""
        first_buffered = self._buffered.positions()
        positions = {}
        for tp, position in self._positions.items():
            offset = first_buffered.get(tp, position)
            if offset is not None:
                positions[tp] = (offset, self._consumed_epochs.get(tp, NO_EPOCH))
        return positions

    def _known_positions(self) -> dict[str, int]:
        """``position()`` of every owned partition whose position is known, keyed for the
        history; a partition still waiting for its committed offset or for a reset is left out,
        since finding its position would mean asking a broker."""
        return {topic_partition_key(*tp): offset for tp, (offset, _) in self._consumed_positions().items()
                if tp not in self._awaiting_committed}

    def _partition_counts(self, topics) -> dict[str, int]:
        """Partition counts from fresh metadata; topics the cluster does not have are left out."""
        self._directory.refresh_metadata()
        counts = {}
        for topic in topics:
            try:
                counts[topic] = len(self._directory.partitions_for(topic, refresh_if_missing=False))
            except KafkaError:
                continue
        return counts

    def _assigned(self, partition) -> tuple[str, int]:
        tp = _topic_partition(partition)
        if tp not in self._positions:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"{tp[0]}-{tp[1]} is not assigned")
        return tp

    def _selected(self, partitions) -> list[tuple[str, int]]:
        return list(self._positions) if partitions is None else [self._assigned(p) for p in partitions]

    def _drop_buffered(self, predicate) -> None:
        self._buffered.drop(predicate)
