"""The consumer in assign mode: positions per partition, pipelined fetches, ``auto.offset.reset``.

``poll`` returns records from what earlier fetches brought and keeps one Fetch request in flight
per leader broker, so the next batch of data travels while the caller works (Kafka's consumer
pipelines the same way). A position with no committed start is reset with ListOffsets per
``auto.offset.reset``; a fetch answered ``OFFSET_OUT_OF_RANGE`` resets the same way, or raises
``KafkaError(OFFSET_OUT_OF_RANGE)`` when the policy is ``none``. Leadership errors refresh metadata
and the fetch is retried against the new leader.
"""
from __future__ import annotations

import collections
import time

import ray
from ray.exceptions import ActorDiedError

from actors.core.errors import ErrorCode
from actors.core.messages.fetch import FetchPartition, FetchRequest, FetchTopic
from actors.core.messages.list_offsets import (
    EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, ListOffsetsPartition, ListOffsetsRequest, ListOffsetsTopic,
)
from orchestration.client import BrokerDirectory, as_kafka_error
from orchestration.errors import KafkaError
from orchestration.records import ConsumerRecord, read_records

CONSUMER_DEFAULTS = {
    "auto.offset.reset": "latest",
    "fetch.min.bytes": "1",
    "fetch.max.wait.ms": "500",
    "fetch.max.bytes": "52428800",
    "max.partition.fetch.bytes": "1048576",
    "max.poll.records": "500",
    "request.timeout.ms": "30000",
    "retry.backoff.ms": "100",
}

_RESET_POLICIES = ("earliest", "latest", "none")
_METADATA_ERRORS = {ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                    ErrorCode.LEADER_NOT_AVAILABLE, ErrorCode.FENCED_LEADER_EPOCH,
                    ErrorCode.UNKNOWN_LEADER_EPOCH, ErrorCode.NETWORK_EXCEPTION,
                    ErrorCode.REQUEST_TIMED_OUT}


def _topic_partition(value) -> tuple[str, int]:
    topic, partition = value
    return str(topic), int(partition)


class Consumer:
    def __init__(self, directory: BrokerDirectory, config: dict | None = None) -> None:
        settings = {**CONSUMER_DEFAULTS, **{k: str(v) for k, v in (config or {}).items()}}
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
        self._positions: dict[tuple[str, int], int | None] = {}
        self._buffered: collections.deque[ConsumerRecord] = collections.deque()
        self._in_flight: dict = {}  # ObjectRef -> (broker id, {topic_partition: fetch offset})
        self._backoff_until: dict[int, float] = {}
        self._closed = False

    # ----------------------------------------------------------------------------- user API
    def assign(self, partitions) -> None:
        """Take these partitions; as in Kafka, a partition the cluster does not know yet is not an
        error here: ``poll`` returns nothing for it until metadata names its leader."""
        wanted = [_topic_partition(p) for p in partitions]
        self._positions = {tp: self._positions.get(tp) for tp in wanted}
        self._drop_buffered(lambda tp: tp not in self._positions)

    def assignment(self) -> set[tuple[str, int]]:
        return set(self._positions)

    def seek(self, partition, offset: int) -> None:
        tp = self._assigned(partition)
        if not isinstance(offset, int) or offset < 0:
            raise ValueError(f"offset must be a non-negative integer, not {offset!r}")
        self._positions[tp] = offset
        self._drop_buffered(lambda other: other == tp)

    def seek_to_beginning(self, partitions=None) -> None:
        for tp in self._selected(partitions):
            self._positions[tp] = self._list_offset(tp, EARLIEST_TIMESTAMP)
            self._drop_buffered(lambda other, tp=tp: other == tp)

    def seek_to_end(self, partitions=None) -> None:
        for tp in self._selected(partitions):
            self._positions[tp] = self._list_offset(tp, LATEST_TIMESTAMP)
            self._drop_buffered(lambda other, tp=tp: other == tp)

    def position(self, partition) -> int:
        tp = self._assigned(partition)
        if self._positions[tp] is None:
            self._reset(tp)
        return self._positions[tp]

    def end_offsets(self, partitions) -> dict[tuple[str, int], int]:
        return {_topic_partition(p): self._list_offset(_topic_partition(p), LATEST_TIMESTAMP) for p in partitions}

    def poll(self, timeout_ms: int = 0) -> list[ConsumerRecord]:
        if self._closed:
            raise KafkaError(ErrorCode.UNKNOWN_SERVER_ERROR, "consumer is closed")
        deadline = time.monotonic() + max(0, timeout_ms) / 1000
        while True:
            if self._buffered:
                records = [self._buffered.popleft() for _ in range(min(len(self._buffered), self._max_poll_records))]
                self._send_fetches()  # pipelining: the next data travels while the caller works
                return records
            self._send_fetches()
            remaining_s = deadline - time.monotonic()
            if not self._in_flight:
                if remaining_s <= 0:
                    return []
                time.sleep(min(remaining_s, self._retry_backoff_ms / 1000))
                continue
            done, _ = ray.wait(list(self._in_flight), num_returns=1, timeout=max(0.0, remaining_s))
            for ref in done:
                self._handle_response(ref)
            if not done and time.monotonic() >= deadline:
                return []

    def close(self) -> None:
        self._closed = True
        self._in_flight.clear()
        self._buffered.clear()

    def __enter__(self) -> "Consumer":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ------------------------------------------------------------------------------- fetching
    def _send_fetches(self) -> None:
        busy = {tp for _, offsets in self._in_flight.values() for tp in offsets}
        buffered = {(r.topic, r.partition) for r in self._buffered}
        by_leader: dict[int, dict[tuple[str, int], tuple[int, int]]] = collections.defaultdict(dict)
        now = time.monotonic()
        for tp in self._positions:
            if tp in busy or tp in buffered:
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
                continue
            if leader < 0 or self._backoff_until.get(leader, 0) > now:
                continue
            by_leader[leader][tp] = (self._positions[tp], epoch)
        for leader, wanted in by_leader.items():
            topics: dict[str, list[FetchPartition]] = collections.defaultdict(list)
            for (topic, partition), (offset, epoch) in wanted.items():
                topics[topic].append(FetchPartition(partition=partition, fetch_offset=offset,
                                                    partition_max_bytes=self._partition_max_bytes,
                                                    current_leader_epoch=epoch))
            request = FetchRequest(max_wait_ms=self._max_wait_ms, min_bytes=self._min_bytes,
                                   max_bytes=self._max_bytes, topics=tuple(
                                       FetchTopic(topic=t, partitions=tuple(ps)) for t, ps in topics.items()))
            try:
                ref = self._directory.broker(leader).handle_fetch.remote(request)
            except KafkaError:
                self._on_broker_trouble(leader)
                continue
            self._in_flight[ref] = (leader, {tp: offset for tp, (offset, _) in wanted.items()})

    def _handle_response(self, ref) -> None:
        leader, offsets = self._in_flight.pop(ref)
        try:
            response = ray.get(ref)
        except Exception as exc:
            if isinstance(exc, ActorDiedError):
                self._directory.forget(leader)
            error = as_kafka_error(exc)
            if not error.retriable:
                raise error
            self._on_broker_trouble(leader)
            return
        for topic in response.responses:
            for data in topic.partitions:
                tp = (topic.topic, data.partition_index)
                fetched_at = offsets.get(tp)
                if fetched_at is None or self._positions.get(tp) != fetched_at:
                    continue  # reassigned or sought meanwhile: this data is stale
                self._handle_partition(tp, fetched_at, data)

    def _handle_partition(self, tp, fetched_at: int, data) -> None:
        code = ErrorCode(data.error_code)
        if code == ErrorCode.NONE:
            records = read_records(tp[0], tp[1], data.records, fetched_at)
            if records:
                self._positions[tp] = records[-1].offset + 1
                self._buffered.extend(records)
        elif code == ErrorCode.OFFSET_OUT_OF_RANGE:
            if self._reset_policy == "none":
                raise KafkaError(code, f"{tp[0]}-{tp[1]} offset {fetched_at} is outside "
                                       f"[{data.log_start_offset}, {data.high_watermark}]")
            self._positions[tp] = None
        elif code in _METADATA_ERRORS:
            self._refresh_metadata_quietly()
        else:
            raise KafkaError(code, f"fetching {tp[0]}-{tp[1]} at {fetched_at}")

    def _on_broker_trouble(self, broker_id: int) -> None:
        self._backoff_until[broker_id] = time.monotonic() + self._retry_backoff_ms / 1000
        self._refresh_metadata_quietly()

    def _refresh_metadata_quietly(self) -> None:
        try:
            self._directory.refresh_metadata()
        except KafkaError:
            pass  # no broker answered; the next poll asks again

    # -------------------------------------------------------------------------------- offsets
    def _reset(self, tp: tuple[str, int]) -> None:
        if self._reset_policy == "none":
            raise KafkaError(ErrorCode.OFFSET_OUT_OF_RANGE, f"{tp[0]}-{tp[1]} has no position and "
                                                             "auto.offset.reset is none")
        timestamp = EARLIEST_TIMESTAMP if self._reset_policy == "earliest" else LATEST_TIMESTAMP
        self._positions[tp] = self._list_offset(tp, timestamp)

    def _list_offset(self, tp: tuple[str, int], timestamp: int) -> int:
        leader, epoch = self._directory.leader_for(*tp)
        if leader < 0:
            raise KafkaError(ErrorCode.LEADER_NOT_AVAILABLE, f"{tp[0]}-{tp[1]}")
        request = ListOffsetsRequest(topics=(ListOffsetsTopic(name=tp[0], partitions=(
            ListOffsetsPartition(partition_index=tp[1], timestamp=timestamp, current_leader_epoch=epoch),)),))
        try:
            response = self._directory.call(leader, "handle_list_offsets", request)
        except KafkaError:
            self._refresh_metadata_quietly()
            raise
        answer = response.topics[0].partitions[0]
        if answer.error_code != ErrorCode.NONE:
            if ErrorCode(answer.error_code) in _METADATA_ERRORS:
                self._refresh_metadata_quietly()
            raise KafkaError(answer.error_code, f"ListOffsets {tp[0]}-{tp[1]}")
        return answer.offset

    def _assigned(self, partition) -> tuple[str, int]:
        tp = _topic_partition(partition)
        if tp not in self._positions:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"{tp[0]}-{tp[1]} is not assigned")
        return tp

    def _selected(self, partitions) -> list[tuple[str, int]]:
        return list(self._positions) if partitions is None else [self._assigned(p) for p in partitions]

    def _drop_buffered(self, predicate) -> None:
        self._buffered = collections.deque(r for r in self._buffered if not predicate((r.topic, r.partition)))
