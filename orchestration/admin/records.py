"""DeleteRecords from outside the cluster: Kafka's ``AdminClient.deleteRecords``.

Each partition's request goes to its leader as the metadata names it, one DeleteRecords per leader
broker; the answer is each partition's low watermark (its new log start offset on every in-sync
replica). A partition refused with a sign of stale metadata (NOT_LEADER_OR_FOLLOWER, no leader,
a broker unreachable) makes the caller refresh the metadata and try the partitions not yet done
again; any other refusal (OFFSET_OUT_OF_RANGE, POLICY_VIOLATION, ...) is raised.
"""
from __future__ import annotations

from actors.core.errors import ErrorCode
from actors.core.messages.delete_records import DeleteRecordsPartition, DeleteRecordsRequest, DeleteRecordsTopic
from orchestration.clients.broker_directory import BrokerDirectory
from orchestration.errors import KafkaError

TopicPartition = tuple[str, int]


def delete_records_once(directory: BrokerDirectory, offsets: dict[TopicPartition, int],
                        done: dict[TopicPartition, int], *, timeout_ms: int) -> None:
    """One round: DeleteRecords to each leader of the partitions of ``offsets`` not yet in ``done``,
    which gets each answered low watermark. Raises the first refusal (after the round)."""
    by_leader: dict[int, dict[TopicPartition, int]] = {}
    for topic_partition, offset in offsets.items():
        if topic_partition in done:
            continue
        leader, _ = directory.leader_for(*topic_partition)
        if leader < 0:
            raise KafkaError(ErrorCode.LEADER_NOT_AVAILABLE, f"{topic_partition[0]}-{topic_partition[1]}")
        by_leader.setdefault(leader, {})[topic_partition] = offset
    refused: KafkaError | None = None
    for leader, asked in sorted(by_leader.items()):
        topics: dict[str, list[DeleteRecordsPartition]] = {}
        for (topic, partition), offset in sorted(asked.items()):
            topics.setdefault(topic, []).append(DeleteRecordsPartition(partition_index=partition, offset=offset))
        request = DeleteRecordsRequest(timeout_ms=timeout_ms, topics=tuple(
            DeleteRecordsTopic(name=topic, partitions=tuple(parts)) for topic, parts in topics.items()))
        # The broker answers within the request's timeout; wait a little longer for its answer.
        answer = directory.call(leader, request, timeout_ms=timeout_ms + 5_000)
        for topic in answer.topics:
            for result in topic.partitions:
                if result.error_code == ErrorCode.NONE:
                    done[(topic.name, result.partition_index)] = result.low_watermark
                elif refused is None:
                    refused = KafkaError(ErrorCode(result.error_code),
                                         f"DeleteRecords {topic.name}-{result.partition_index} at broker {leader}")
    if refused is not None:
        raise refused
