"""DescribeLogDirs on a broker: Kafka 2.4's ``ReplicaManager.describeLogDirs``.

Theory of operation. A raykafka broker has one log directory (``log_dir``, the absolute path its
shell resolved). The answer names it with NONE, or KAFKA_STORAGE_ERROR and no partitions once the
directory failed (log_dir_failure.py); otherwise it lists each partition asked for that has a log
here (a partition asked for and not hosted is left out, as Kafka leaves it out) with the log's
size in bytes (every segment's), its offset lag, Kafka's ``max(high watermark - log end offset,
0)``, and ``is_future_key`` false, and (v4) its volume's total and usable bytes, which the storage
measures (Kafka's ``FileStore``). Nothing changes.
"""
from __future__ import annotations

from actors.core.effects import Effect, Respond
from actors.core.errors import ErrorCode
from actors.core.messages.describe_log_dirs import (
    DescribeLogDirsPartition, DescribeLogDirsRequest, DescribeLogDirsResponse, DescribeLogDirsResult,
    DescribeLogDirsTopic,
)


def describe_log_dirs(replica_manager, log_dir: str, request_id: int,
                      request: DescribeLogDirsRequest) -> list[Effect]:
    if replica_manager.log_dir_failure_channel.offline:
        result = DescribeLogDirsResult(log_dir=log_dir, error_code=ErrorCode.KAFKA_STORAGE_ERROR)
        return [Respond(request_id=request_id, response=DescribeLogDirsResponse(results=(result,)))]
    hosted = replica_manager.partitions
    if request.topics is None:
        wanted = sorted(hosted)
    else:
        wanted = sorted({(t.topic, p) for t in request.topics for p in t.partitions} & set(hosted))
    by_topic: dict[str, list[DescribeLogDirsPartition]] = {}
    for topic, index in wanted:
        partition = hosted[(topic, index)]
        by_topic.setdefault(topic, []).append(DescribeLogDirsPartition(
            partition_index=index, partition_size=partition.log.size_in_bytes,
            offset_lag=max(partition.high_watermark - partition.log_end_offset, 0)))
    total_bytes, usable_bytes = replica_manager.storage.volume_bytes()
    result = DescribeLogDirsResult(log_dir=log_dir, total_bytes=total_bytes, usable_bytes=usable_bytes, topics=tuple(
        DescribeLogDirsTopic(name=t, partitions=tuple(ps)) for t, ps in by_topic.items()))
    return [Respond(request_id=request_id, response=DescribeLogDirsResponse(results=(result,)))]


__all__ = ["describe_log_dirs"]
