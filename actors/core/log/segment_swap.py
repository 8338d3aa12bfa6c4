"""Swapping cleaned segments into a log, crash-safe: Kafka's ``Log.replaceSegments`` and the
swap-file half of ``Log.loadSegments``.

Theory of operation. A cleaned segment replaces the segment of the same base offset in steps,
each one file operation, so that a crash after any of them leaves files from which ``Log.open``
(segment_loading.py, with ``recover_swaps``) rebuilds a whole log, either the old one or the new:

1. the cleaned batches are written to ``<base>.log.cleaned`` and fsynced;
2. ``.cleaned`` is renamed to ``<base>.log.swap`` (the commit point: from here on recovery rolls
   forward);
3. the original segment's files are renamed to ``.deleted``;
4. ``.swap`` is renamed to ``<base>.log`` (its indexes are rebuilt from it when it is loaded);
5. the ``.deleted`` files are removed.

Recovery, before segments are loaded: ``.deleted`` files are removed; every ``.cleaned`` file is
removed (a swap not yet committed), and so is every ``.swap`` file at or above the lowest of
their base offsets (Kafka's rule: a swap that a later, uncommitted one belongs with); each other
``.swap`` file replaces the segment of its base offset (its old files are removed, then it is
renamed to ``.log``). A log cleaned in several segments commits them from the highest base offset
down, so the rule rolls the whole cleaning back unless every one of them was committed.
"""
from __future__ import annotations

from collections.abc import Callable

from actors.core.log.segment import (
    DELETED_FILE_SUFFIX, INDEX_FILE_SUFFIX, LOG_FILE_SUFFIX, LogSegment, parse_segment_file_name, segment_file_name,
)
from actors.core.log.storage import Storage
from actors.core.log.time_index import TIME_INDEX_FILE_SUFFIX

__all__ = ["CLEANED_FILE_SUFFIX", "SWAP_FILE_SUFFIX", "recover_swaps", "swap_steps"]

CLEANED_FILE_SUFFIX = ".cleaned"
SWAP_FILE_SUFFIX = ".swap"


def _log_path(directory: str, base_offset: int) -> str:
    return f"{directory}/{segment_file_name(base_offset, LOG_FILE_SUFFIX)}"


def write_cleaned(storage: Storage, directory: str, base_offset: int, data: bytes) -> None:
    """Step 1 for one segment (several segments: all their step 1s come first)."""
    path = _log_path(directory, base_offset) + CLEANED_FILE_SUFFIX
    storage.delete(path)
    storage.append(path, data)
    storage.fsync(path)


def swap_steps(storage: Storage, segments: list[LogSegment], directory: str) -> list[Callable[[], None]]:
    """Steps 2 to 5 for ``segments`` (the originals, whose cleaned files step 1 wrote), one
    callable per file operation, in the order ``Log.replace_segments`` runs them."""
    steps: list[Callable[[], None]] = []
    ordered = sorted(segments, key=lambda s: s.base_offset)
    for segment in reversed(ordered):  # commit from the highest base offset down
        path = _log_path(directory, segment.base_offset)
        steps.append(lambda path=path: storage.rename(path + CLEANED_FILE_SUFFIX, path + SWAP_FILE_SUFFIX))
    deleted: list[str] = []
    for segment in ordered:
        for path in (segment.log_path, segment.index_path, segment.time_index_path):
            def rename(path=path):
                if storage.exists(path):
                    storage.rename(path, path + DELETED_FILE_SUFFIX)
            steps.append(rename)
            deleted.append(path + DELETED_FILE_SUFFIX)
    for segment in ordered:
        path = _log_path(directory, segment.base_offset)
        steps.append(lambda path=path: storage.rename(path + SWAP_FILE_SUFFIX, path))
    for path in deleted:
        steps.append(lambda path=path: storage.delete(path))
    return steps


def recover_swaps(storage: Storage, directory: str) -> None:
    """Finishes or rolls back what a crash left of a swap (see the module docstring)."""
    cleaned, swaps = [], []
    for name in storage.list_dir(directory):
        for suffix, found in ((CLEANED_FILE_SUFFIX, cleaned), (SWAP_FILE_SUFFIX, swaps)):
            if name.endswith(suffix):
                parsed = parse_segment_file_name(name[:-len(suffix)])
                if parsed is None or parsed[1] != LOG_FILE_SUFFIX:
                    storage.delete(f"{directory}/{name}")  # not ours to make sense of: a swap's index
                else:
                    found.append(parsed[0])
    lowest_uncommitted = min(cleaned, default=None)
    for base_offset in cleaned:
        storage.delete(_log_path(directory, base_offset) + CLEANED_FILE_SUFFIX)
    for base_offset in sorted(swaps):
        path = _log_path(directory, base_offset)
        if lowest_uncommitted is not None and base_offset >= lowest_uncommitted:
            storage.delete(path + SWAP_FILE_SUFFIX)
            continue
        for suffix in (LOG_FILE_SUFFIX, INDEX_FILE_SUFFIX, TIME_INDEX_FILE_SUFFIX):
            storage.delete(f"{directory}/{segment_file_name(base_offset, suffix)}")
        storage.rename(path + SWAP_FILE_SUFFIX, path)
