"""ListOffsets from a client: one partition's offset for a timestamp (earliest, latest, or a time),
asked of its leader as Kafka's consumer's ``OffsetFetcher`` asks; metadata is refreshed when the
leader is unknown or the answer says it moved. ``OffsetLookups`` is the consumer's use of it."""
from __future__ import annotations

from collections.abc import Callable, Collection

from actors.core.errors import ErrorCode
from actors.core.messages.list_offsets import (
    EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, ListOffsetsPartition, ListOffsetsRequest, ListOffsetsTopic,
)
from orchestration.clients.broker_directory import MetadataRefresher, call_with_retries
from orchestration.errors import KafkaError


def list_offset(directory, metadata: MetadataRefresher, tp: tuple[str, int], timestamp: int, *,
                refresh_metadata: Callable[[], None], metadata_errors: Collection[ErrorCode]) -> int:
    """The offset the leader of ``tp`` answers for ``timestamp``; raises KafkaError."""
    metadata.update_if_due()
    try:
        leader, epoch = directory.leader_for(*tp)
    except KafkaError:
        metadata.request_update()  # a topic not in the metadata yet: ask again later
        raise
    if leader < 0:
        metadata.request_update()
        raise KafkaError(ErrorCode.LEADER_NOT_AVAILABLE, f"{tp[0]}-{tp[1]}")
    request = ListOffsetsRequest(topics=(ListOffsetsTopic(name=tp[0], partitions=(
        ListOffsetsPartition(partition_index=tp[1], timestamp=timestamp, current_leader_epoch=epoch),)),))
    try:
        response = directory.call(leader, request)
    except KafkaError:
        refresh_metadata()
        raise
    answer = response.topics[0].partitions[0]
    if answer.error_code != ErrorCode.NONE:
        if ErrorCode(answer.error_code) in metadata_errors:
            refresh_metadata()
        raise KafkaError(answer.error_code, f"ListOffsets {tp[0]}-{tp[1]}")
    return answer.offset


# The errors after which a consumer asks for metadata again before it retries.
METADATA_ERRORS = {ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                   ErrorCode.LEADER_NOT_AVAILABLE, ErrorCode.FENCED_LEADER_EPOCH,
                   ErrorCode.UNKNOWN_LEADER_EPOCH, ErrorCode.NETWORK_EXCEPTION,
                   ErrorCode.REQUEST_TIMED_OUT}


class OffsetLookups:
    """The consumer's ListOffsets: resets per ``auto.offset.reset`` and the waiting lookups behind
    ``position``, ``seek_to_*``, ``end_offsets`` and ``offsets_for_times``; mixed into
    ``Consumer``, whose state it uses."""

    def _reset(self, tp: tuple[str, int], *, waiting: bool = False) -> None:
        """Set a position per ``auto.offset.reset``: one attempt (poll's path: a retriable error
        leaves the position unknown for the next poll), or ``waiting`` until default.api.timeout.ms."""
        if self._reset_policy == "none":
            raise KafkaError(ErrorCode.OFFSET_OUT_OF_RANGE, f"{tp[0]}-{tp[1]} has no position and "
                                                             "auto.offset.reset is none")
        timestamp = EARLIEST_TIMESTAMP if self._reset_policy == "earliest" else LATEST_TIMESTAMP
        self._position_epochs.forget(tp)
        self._positions[tp] = (self._list_offset_waiting(tp, timestamp) if waiting
                               else self._list_offset(tp, timestamp))

    def _list_offset_waiting(self, tp: tuple[str, int], timestamp: int) -> int:
        """ListOffsets, retrying retriable errors until ``default.api.timeout.ms``, as Kafka's
        consumer does for position(), beginningOffsets() and endOffsets()."""
        return call_with_retries(lambda _deadline: self._list_offset(tp, timestamp), timeout_ms=self._api_timeout_ms,
                                 retry_backoff_ms=self._retry_backoff_ms, what=f"ListOffsets {tp[0]}-{tp[1]}")

    def _list_offset(self, tp: tuple[str, int], timestamp: int) -> int:
        return list_offset(self._directory, self._metadata, tp, timestamp,
                           refresh_metadata=self._refresh_metadata_quietly, metadata_errors=METADATA_ERRORS)

