"""DescribeLogDirs (API key 35): an admin client asks one broker about its log directories.

The broker answers for itself only (admin clients send the request to every broker): each log
directory with its error code and, per hosted partition asked for (``topics`` None: every one),
the log's size in bytes, its offset lag (how far its log end is behind the high watermark, 0 for a
current replica), and whether it is a future replica (never: raykafka does not move replicas
between directories, KIP-113). From v3 the answer has a top-level error code (NONE: raykafka
authorizes everything) and from v4 each directory the size of its volume and the bytes free on it
(-1 for a failed directory, as in Kafka).
"""
from __future__ import annotations

from typing import ClassVar

from actors.core.errors import ErrorCode
from actors.core.messages._base import message



@message
class DescribableLogDirTopic:
    topic: str
    partitions: tuple[int, ...]


@message
class DescribeLogDirsRequest:
    API_KEY: ClassVar[int] = 35
    topics: tuple[DescribableLogDirTopic, ...] | None = None  # None: every partition the broker hosts


@message
class DescribeLogDirsPartition:
    partition_index: int
    partition_size: int
    offset_lag: int
    is_future_key: bool = False


@message
class DescribeLogDirsTopic:
    name: str
    partitions: tuple[DescribeLogDirsPartition, ...]


@message
class DescribeLogDirsResult:
    log_dir: str
    error_code: ErrorCode = ErrorCode.NONE
    topics: tuple[DescribeLogDirsTopic, ...] = ()
    total_bytes: int = -1  # v4+: the volume's size and what is free on it; -1 unknown
    usable_bytes: int = -1


@message
class DescribeLogDirsResponse:
    results: tuple[DescribeLogDirsResult, ...]
    throttle_time_ms: int = 0
    error_code: ErrorCode = ErrorCode.NONE  # v3+: the request's own (Kafka: only an authorization failure)
