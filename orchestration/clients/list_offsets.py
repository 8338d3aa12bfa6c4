"""ListOffsets from a client: one partition's offset for a timestamp (earliest, latest, or a time),
asked of its leader as Kafka's consumer's ``OffsetFetcher`` asks; metadata is refreshed when the
leader is unknown or the answer says it moved."""
from __future__ import annotations

from collections.abc import Callable, Collection

from actors.core.errors import ErrorCode
from actors.core.messages.list_offsets import ListOffsetsPartition, ListOffsetsRequest, ListOffsetsTopic
from orchestration.clients.broker_directory import MetadataRefresher
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
        response = directory.call(leader, "handle_list_offsets", request)
    except KafkaError:
        refresh_metadata()
        raise
    answer = response.topics[0].partitions[0]
    if answer.error_code != ErrorCode.NONE:
        if ErrorCode(answer.error_code) in metadata_errors:
            refresh_metadata()
        raise KafkaError(answer.error_code, f"ListOffsets {tp[0]}-{tp[1]}")
    return answer.offset
