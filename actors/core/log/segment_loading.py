"""Finding a log's segments on open: which to trust as they are and which to recover.

Theory of operation. ``load_segments`` first finishes or rolls back a swap of cleaned segments a
crash interrupted (segment_swap.py), then lists a partition directory's segment files, deletes index
files (offset and time) without a log file, loads the segments wholly below the recovery point as
they are (their data was fsynced) and recovers the rest with CRC checks, as Kafka's ``recoverLog`` does: recovery
stops at the first segment that lost bytes or does not continue its predecessor, and every later
segment is deleted. (A cleaned segment has gaps between its batches, never after its last one: the
cleaner keeps a segment's last batch, empty if need be, so that this check still finds lost data.)
It is a part of ``Log.open`` (actors/core/log/log.py); all I/O goes through the injected ``Storage``.
"""
from __future__ import annotations

from actors.core.log.log_config import LogConfig
from actors.core.log.segment_swap import recover_swaps
from actors.core.log.segment import DELETED_FILE_SUFFIX, INDEX_FILE_SUFFIX, LOG_FILE_SUFFIX, LogSegment, parse_segment_file_name
from actors.core.log.time_index import TIME_INDEX_FILE_SUFFIX
from actors.core.log.storage import Storage


def _segment_base_offsets(storage: Storage, directory: str) -> list[int]:
    """Base offsets of the .log files, ascending; index files with no .log are deleted, and so are
    the ``.deleted`` files of segments whose deletion a crash interrupted (Kafka's loadSegmentFiles)."""
    log_bases, index_files = set(), []
    for name in storage.list_dir(directory):
        if name.endswith(DELETED_FILE_SUFFIX):
            storage.delete(f"{directory}/{name}")
            continue
        parsed = parse_segment_file_name(name)
        if parsed is not None:
            if parsed[1] == LOG_FILE_SUFFIX:
                log_bases.add(parsed[0])
            else:
                index_files.append((parsed[0], name))
    for base_offset, name in sorted(index_files):
        if base_offset not in log_bases:
            storage.delete(f"{directory}/{name}")
    return sorted(log_bases)


def load_segments(storage: Storage, directory: str, config: LogConfig,
                  recovery_point: int) -> list[LogSegment]:
    """Loads segments wholly below the recovery point as they are; recovers the rest.

    Recovery stops at the first segment that lost bytes or does not continue its predecessor:
    every later segment is deleted, as Kafka's ``recoverLog`` does.
    """
    recover_swaps(storage, directory)
    bases = _segment_base_offsets(storage, directory)
    segments: list[LogSegment] = []
    for index, base_offset in enumerate(bases):
        following = bases[index + 1] if index + 1 < len(bases) else None
        if following is not None and following <= recovery_point:
            segments.append(LogSegment.load_trusted(
                storage, directory, base_offset,
                index_interval_bytes=config.index_interval_bytes, next_offset=following))
            continue
        if segments and segments[-1].next_offset != base_offset:
            _delete_segment_files(storage, directory, bases[index:])
            break
        segment, dropped_bytes = LogSegment.recover_from_files(
            storage, directory, base_offset, index_interval_bytes=config.index_interval_bytes)
        segments.append(segment)
        if dropped_bytes:
            _delete_segment_files(storage, directory, bases[index + 1:])
            break
    return segments


def _delete_segment_files(storage: Storage, directory: str, base_offsets: list[int]) -> None:
    for base_offset in sorted(base_offsets, reverse=True):
        for suffix in (LOG_FILE_SUFFIX, INDEX_FILE_SUFFIX, TIME_INDEX_FILE_SUFFIX):
            storage.delete(f"{directory}/{base_offset:020d}{suffix}")
