"""Which of a log's segments retention deletes: Kafka's ``Log.deleteOldSegments``.

Theory of operation. Every ``log.retention.check.interval.ms`` the broker asks each log to delete
its old segments (``Log.delete_old_segments``), which takes the deletions from ``plan_deletions``
one rule at a time, in Kafka's order, each judged on what the rules before it left:

1. ``retention.ms`` (cleanup.policy with ``delete``, a limit >= 0): a segment whose greatest
   timestamp is more than retention.ms before now.
2. ``retention.bytes`` (the same, a limit >= 0): the oldest segments, as long as the log without
   them is still at least retention.bytes.
3. the log start offset (whatever the policy): a segment whose successor starts at or below it
   (DeleteRecords, or the leader's start offset on a follower, moved it there).

Each rule deletes a run of whole segments from the oldest, stopping at the first segment it
keeps. As Kafka's ``deletableSegments`` does, it never deletes a segment holding offsets at or
above the high watermark, so the log start offset never passes it, nor an empty last segment;
unlike Kafka 2.4 it never deletes the active segment either (Kafka rolls a new one first): a
partition that stopped receiving records keeps its last segment, which the next roll releases.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator

__all__ = ["plan_deletions"]


def _deletable_count(segments, high_watermark: int, predicate: Callable[[object], bool]) -> int:
    """How many segments from the oldest the rule deletes: each is not the active one, lies wholly
    below the high watermark (its successor starts at or below it), and the rule wants it gone."""
    count = 0
    for segment, following in zip(segments, segments[1:]):
        if following.base_offset > high_watermark or not predicate(segment, following):
            break
        count += 1
    return count


def plan_deletions(log, now_ms: int, high_watermark: int) -> Iterator[tuple[str, int]]:
    """(reason, how many of the oldest segments to delete) per rule that deletes any; the caller
    deletes them before asking for the next rule (a generator over the log as it is then)."""
    config = log.config
    if config.delete and config.retention_ms >= 0:
        def breaches_time(segment, _following) -> bool:
            return now_ms - segment.largest_timestamp > config.retention_ms
        count = _deletable_count(log.segments, high_watermark, breaches_time)
        if count:
            yield f"retention time {config.retention_ms}ms breach", count
    if config.delete and config.retention_bytes >= 0 and log.size_in_bytes >= config.retention_bytes:
        excess_bytes = log.size_in_bytes - config.retention_bytes

        def breaches_size(segment, _following) -> bool:
            nonlocal excess_bytes
            if excess_bytes - segment.size_bytes < 0:
                return False
            excess_bytes -= segment.size_bytes
            return True
        count = _deletable_count(log.segments, high_watermark, breaches_size)
        if count:
            yield f"retention size in bytes {config.retention_bytes} breach", count
    start = log.log_start_offset
    count = _deletable_count(log.segments, high_watermark, lambda _segment, following: following.base_offset <= start)
    if count:
        yield f"log start offset {start} breach", count
