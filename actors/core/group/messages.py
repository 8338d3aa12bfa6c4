"""Messages between the group coordinator core, its broker link and its broker that are not Kafka client APIs.

- ``OffsetsLogAppendRequest`` / ``OffsetsLogAppendResponse``: the coordinator asks its broker to
  append records to one ``__consumer_offsets`` partition with acks=all (Kafka's
  ``GroupMetadataManager.appendForGroup``). The core emits the request as
  ``Send(destination=OFFSETS_LOG_DESTINATION, message=request)``; the ``BrokerLink`` builds a record batch
  from ``records`` (each a key and a value, None for a tombstone, all with ``timestamp_ms``),
  appends it to ``__consumer_offsets``-``partition`` as the partition's leader, waits for the
  high watermark to pass it (or ``timeout_ms``), and hands the outcome back with
  ``GroupCoordinatorCore.on_offsets_log_response(request, response, now_ms)`` where response is an
  ``OffsetsLogAppendResponse`` or, if the append could not even be attempted, a bare ``ErrorCode``.
  The produce path's error codes are expected: ``NOT_LEADER_OR_FOLLOWER``,
  ``NOT_ENOUGH_REPLICAS(_AFTER_APPEND)``, ``REQUEST_TIMED_OUT``, ``MESSAGE_TOO_LARGE``, ...
- ``DeleteGroupsRequest`` / ``DeleteGroupsResponse`` (Kafka API key 42, the one group API with
  no module in ``actors.core.messages`` yet): delete Empty groups and their offsets.
"""
from __future__ import annotations

from typing import ClassVar

from actors.core.errors import ErrorCode
from actors.core.messages._base import message
from actors.core.topics import OFFSETS_TOPIC
from actors.core.messages.produce import ProduceRequest

OFFSETS_LOG_DESTINATION = "offsets-log"
GROUP_METADATA_TOPIC_NAME = OFFSETS_TOPIC
ACKS_ALL = -1


@message
class OffsetsLogAppendRequest:
    append_id: int  # unique per coordinator core; matches the response to the request
    partition: int  # the __consumer_offsets partition, owned by this broker
    records: tuple[tuple[bytes, bytes | None], ...]  # (key, value); value None is a tombstone
    timestamp_ms: int  # every record's timestamp (CREATE_TIME, as Kafka's coordinator stamps them)
    required_acks: int = ACKS_ALL
    timeout_ms: int = 5000  # offsets.commit.timeout.ms


@message
class OffsetsLogAppendResponse:
    append_id: int
    partition: int
    error_code: ErrorCode = ErrorCode.NONE
    base_offset: int = -1  # where the first record landed, when known


@message
class DeleteGroupsRequest:
    API_KEY: ClassVar[int] = 42
    groups_names: tuple[str, ...]


@message
class DeletableGroupResult:
    group_id: str
    error_code: ErrorCode = ErrorCode.NONE


@message
class DeleteGroupsResponse:
    results: tuple[DeletableGroupResult, ...]
    throttle_time_ms: int = 0


# --------------------------------------------------------------------------- coordinator <-> broker
# A group coordinator's calls to its own broker (``BrokerLink`` sends them with destination
# "broker"): reads of an offsets partition for a load, the broker's state for the fate-sharing
# watch, and the internal produce that carries every write to ``__consumer_offsets``.


@message
class OffsetsLogReadRequest:
    partition: int
    offset: int
    max_bytes: int


@message
class OffsetsLogReadResponse:
    records: bytes  # whole batches from the one holding ``offset`` (empty when none)
    next_offset: int
    log_end_offset: int


@message
class BrokerStateRequest:
    include_leaderships: bool = False


@message
class BrokerStateResponse:
    incarnation_id: str
    metadata: object = None  # CoordinatorMetadataUpdate, with include_leaderships
    offsets_partitions_led: tuple[tuple[int, int], ...] = ()  # (partition, leader epoch)


@message
class InternalProduceRequest:
    produce: ProduceRequest  # to __consumer_offsets, which only the coordinator may write
