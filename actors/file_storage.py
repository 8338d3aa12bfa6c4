"""``Storage`` on real files under one root directory (a broker's log directory).

Theory of operation. The log core calls this with '/'-joined relative paths; each becomes a path
under ``root``. Open file descriptors are cached (LRU, ``open_files_max``, by default half the
process's descriptor limit; the evicted one is closed) so that a fetch costs one ``pread`` and an
append one ``write``. Descriptors are opened ``O_RDWR | O_APPEND`` (what Python's 'ab' mode
does, plus reads) and nothing is buffered in user space: whatever ``append`` returned is in the
kernel, so killing the actor at any moment loses nothing; only a machine crash can lose data that
was not fsynced, which is what the log's recovery handles.

Directory entries are made durable too: a new file's directory is fsynced on the file's first
fsync, and ``rename``, ``delete``, ``make_dir`` and ``write_file_atomically`` fsync the directory
they changed (``rename`` and ``delete`` with ``sync=False`` leave that to a later ``fsync`` of the
directory, which the log plans as storage work: the event loop then waits for no disk). A descriptor cached under a path is dropped whenever that path is renamed over,
replaced or deleted, so the cache never serves a file by a name it no longer has.

Thread-safe for its two users: the broker's event loop (appends, reads, truncation, new and
deleted files) and its storage worker thread (fsyncs and checkpoint writes, actors/ray_seams.py).
A lock guards the descriptor cache and every use of a cached descriptor, so no thread closes a
descriptor another is writing through; an fsync holds it only to duplicate the descriptor and then
fsyncs the duplicate without it, so an append to a segment being fsynced waits for no disk. Two
atomic replacements of one file are serialized (they share its temporary file).
"""
from __future__ import annotations

import collections
import os
import resource
import shutil
import threading

from actors.core.log.storage import split_path

OPEN_FILES_MAX_FLOOR = 64
OPEN_FILES_MAX_CEILING = 8192


def default_open_files_max() -> int:
    """Half the process's descriptor limit (RLIMIT_NOFILE), within [64, 8192]: room for a log and
    an index per partition of a broker leading hundreds of partitions, as Kafka keeps its
    segments open (a smaller cache makes round-robin appends over many partitions close and
    reopen two files per partition per request), while the other half stays for the Kafka
    listener's connections and Ray's own sockets."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return OPEN_FILES_MAX_CEILING
    return max(OPEN_FILES_MAX_FLOOR, min(OPEN_FILES_MAX_CEILING, soft // 2))


class FileStorage:
    """``actors.core.log.storage.Storage`` over the directory ``root`` (created if missing)."""

    def __init__(self, root: str, *, open_files_max: int | None = None) -> None:
        if open_files_max is None:
            open_files_max = default_open_files_max()
        assert open_files_max >= 1, open_files_max
        self.root = os.path.abspath(root)
        os.makedirs(self.root, exist_ok=True)
        self._open_files_max = open_files_max
        # Relative path -> descriptor, least recently used first. At most open_files_max entries.
        self._descriptors: collections.OrderedDict[str, int] = collections.OrderedDict()
        # Files created since their directory was last fsynced.
        self._new_files: set[str] = set()
        # Guards _descriptors, _new_files and every use of a cached descriptor (see the docstring).
        self._lock = threading.RLock()
        # Path -> the lock its write_file_atomically holds; entries are never removed (few paths).
        self._replace_locks: dict[str, threading.Lock] = {}

    # -- helpers ---------------------------------------------------------------------------

    def _full(self, path: str) -> str:
        return os.path.join(self.root, *split_path(path))

    def _descriptor(self, path: str, *, create: bool) -> int:
        descriptor = self._descriptors.get(path)
        if descriptor is not None:
            self._descriptors.move_to_end(path)
            return descriptor
        full = self._full(path)
        flags = os.O_RDWR | os.O_APPEND
        if create:
            try:
                descriptor = os.open(full, flags | os.O_CREAT | os.O_EXCL, 0o644)
                self._new_files.add(path)
            except FileExistsError:
                descriptor = os.open(full, flags)
        else:
            descriptor = os.open(full, flags)
        self._descriptors[path] = descriptor
        while len(self._descriptors) > self._open_files_max:
            _, evicted = self._descriptors.popitem(last=False)
            os.close(evicted)
        return descriptor

    def _forget(self, path: str) -> None:
        """Closes cached descriptors for ``path`` and everything under it."""
        prefix = f"{path}/"
        for name in [name for name in self._descriptors
                     if name == path or name.startswith(prefix) or path == ""]:
            os.close(self._descriptors.pop(name))
        self._new_files = {name for name in self._new_files
                           if not (name == path or name.startswith(prefix))}

    def _fsync_directory(self, full_directory: str) -> None:
        descriptor = os.open(full_directory, os.O_RDONLY)
        try:
            os.fsync(descriptor)
        finally:
            os.close(descriptor)

    def _fsync_parent(self, path: str) -> None:
        self._fsync_directory(os.path.dirname(self._full(path)) or self.root)

    # -- Storage ---------------------------------------------------------------------------

    def volume_bytes(self) -> tuple[int, int]:
        try:
            usage = shutil.disk_usage(self.root)
        except OSError:
            return -1, -1
        # ``free`` is what an unprivileged writer may still use: Java's getUsableSpace.
        return usage.total, usage.free

    def list_dir(self, path: str) -> list[str]:
        full = self._full(path)
        if not os.path.isdir(full):
            return []
        return sorted(os.listdir(full))

    def make_dir(self, path: str) -> None:
        parts = split_path(path)
        for count in range(1, len(parts) + 1):
            full = os.path.join(self.root, *parts[:count])
            if not os.path.isdir(full):
                os.mkdir(full)
                self._fsync_directory(os.path.dirname(full))

    def exists(self, path: str) -> bool:
        return os.path.exists(self._full(path))

    def file_size(self, path: str) -> int:
        with self._lock:
            descriptor = self._descriptors.get(path)
            if descriptor is not None:
                return os.fstat(descriptor).st_size
        return os.stat(self._full(path)).st_size

    def read(self, path: str, position: int, size: int) -> bytes:
        assert position >= 0 and size >= 0, (position, size)
        with self._lock:
            return self._read(self._descriptor(path, create=False), position, size)

    @staticmethod
    def _read(descriptor: int, position: int, size: int) -> bytes:
        data = os.pread(descriptor, size, position)
        if len(data) == size or not data:
            return data
        # A regular file returns short only at end of file; loop in case of a signal.
        chunks = [data]
        received = len(data)
        while received < size:
            more = os.pread(descriptor, size - received, position + received)
            if not more:
                break
            chunks.append(more)
            received += len(more)
        return b"".join(chunks)

    def append(self, path: str, data) -> None:
        view = memoryview(data).cast("B")
        with self._lock:
            descriptor = self._descriptor(path, create=True)
            written = 0
            while written < len(view):
                written += os.write(descriptor, view[written:])

    def truncate(self, path: str, size: int) -> None:
        assert size >= 0, size
        with self._lock:
            os.ftruncate(self._descriptor(path, create=False), size)

    def fsync(self, path: str) -> None:
        full = self._full(path)
        if os.path.isdir(full):
            self._fsync_directory(full)
            return
        with self._lock:
            # A duplicate stays open whatever happens to the cached descriptor meanwhile.
            duplicate = os.dup(self._descriptor(path, create=False))
            new_file = path in self._new_files
            self._new_files.discard(path)
        try:
            os.fsync(duplicate)
        except BaseException:
            if new_file:
                with self._lock:
                    self._new_files.add(path)
            raise
        finally:
            os.close(duplicate)
        if new_file:
            self._fsync_parent(path)

    def delete(self, path: str, *, sync: bool = True) -> None:
        if path == "":
            raise ValueError("refusing to delete the storage root")
        with self._lock:
            self._forget(path)
        full = self._full(path)
        # Outside the lock: removing a large tree (a deleted partition, on the storage worker)
        # must not hold up the event loop's appends to other files.
        if os.path.isdir(full) and not os.path.islink(full):
            shutil.rmtree(full, ignore_errors=False)
        else:
            try:
                os.remove(full)
            except FileNotFoundError:
                return
        if sync:
            self._fsync_parent(path)

    def read_file(self, path: str) -> bytes:
        with open(self._full(path), "rb") as file:
            return file.read()

    def write_file_atomically(self, path: str, data: bytes) -> None:
        full = self._full(path)
        temporary = f"{full}.tmp"
        with self._lock:
            replace_lock = self._replace_locks.setdefault(path, threading.Lock())
        with replace_lock:
            with open(temporary, "wb") as file:
                file.write(data)
                file.flush()
                os.fsync(file.fileno())
            with self._lock:
                self._forget(path)
                os.replace(temporary, full)
            self._fsync_parent(path)

    def rename(self, src: str, dst: str, *, sync: bool = True) -> None:
        with self._lock:
            self._forget(src)
            self._forget(dst)
            os.replace(self._full(src), self._full(dst))
        if not sync:
            return
        self._fsync_parent(dst)
        if os.path.dirname(self._full(src)) != os.path.dirname(self._full(dst)):
            self._fsync_parent(src)

    # -- lifecycle -------------------------------------------------------------------------

    def close(self) -> None:
        """Closes every cached descriptor; the instance stays usable (it reopens on demand)."""
        with self._lock:
            self._forget("")

    @property
    def open_files(self) -> int:
        with self._lock:
            return len(self._descriptors)
