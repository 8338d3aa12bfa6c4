"""Storage faults on purpose: a full disk, a failing write, a failing fsync, at the storage seam.

Theory of operation. ``FaultyStorage`` wraps any ``Storage`` (``InMemoryStorage`` in unit tests
and the simulator, ``actors.file_storage.FileStorage`` in the Ray broker) and passes every call
through until ``inject`` arms a fault; from then on the calls the fault breaks raise ``OSError``
as the kernel would, until ``clear``:

- ``disk-full`` (ENOSPC): an append writes what still fits in ``room_bytes`` and then fails, so
  the first append past the room leaves a partial batch at the end of the file, as a ``write``
  that ran out of blocks does; later appends write nothing; making a directory or replacing a
  file (a checkpoint) fails. Truncating, deleting and fsyncing what was written still work.
- ``write-error`` (EIO): every append, truncation, directory, rename and file replacement fails
  and writes nothing.
- ``fsync-error`` (EIO): every fsync fails (and every file replacement, which fsyncs).

Reads are never broken: the point is what the broker does with what it wrote. A fault belongs to
one process of a broker (the shells hold it in memory): a restarted broker finds the disk healthy
again, which is the "disk replaced, broker restarted" of an operator. Thread-safe enough for its
two users: the fault is set and read as single attributes, and only the event loop appends.
"""
from __future__ import annotations

import errno

from actors.core.log.storage import Storage

DISK_FULL, WRITE_ERROR, FSYNC_ERROR = "disk-full", "write-error", "fsync-error"
STORAGE_FAULTS = (DISK_FULL, WRITE_ERROR, FSYNC_ERROR)


class FaultyStorage:
    """``Storage`` that fails as ``fault`` says (see the module docstring); other attributes of the
    wrapped storage (a simulator's ``simulate_crash``, counters) are reached through it."""

    def __init__(self, inner: Storage) -> None:
        self.inner = inner
        self.fault: str | None = None
        self.room_bytes = 0  # what disk-full still lets appends write

    def inject(self, fault: str, *, room_bytes: int = 0) -> None:
        if fault not in STORAGE_FAULTS:
            raise ValueError(f"unknown storage fault {fault!r}; known: {', '.join(STORAGE_FAULTS)}")
        assert room_bytes >= 0, room_bytes
        self.room_bytes = room_bytes
        self.fault = fault

    def clear(self) -> None:
        self.fault = None

    def __getattr__(self, name: str):
        return getattr(self.inner, name)

    def _fail(self, code: int, path: str) -> OSError:
        return OSError(code, f"{errno.errorcode[code]} ({self.fault}, injected)", path)

    def _refuse_writes(self, path: str, *, fsyncs: bool = False) -> None:
        if self.fault == DISK_FULL:
            raise self._fail(errno.ENOSPC, path)
        if self.fault == WRITE_ERROR or (fsyncs and self.fault == FSYNC_ERROR):
            raise self._fail(errno.EIO, path)

    # -- Storage ---------------------------------------------------------------------------

    def list_dir(self, path: str) -> list[str]:
        return self.inner.list_dir(path)

    def make_dir(self, path: str) -> None:
        if not self.inner.exists(path):
            self._refuse_writes(path)
        self.inner.make_dir(path)

    def exists(self, path: str) -> bool:
        return self.inner.exists(path)

    def file_size(self, path: str) -> int:
        return self.inner.file_size(path)

    def read(self, path: str, position: int, size: int) -> bytes:
        return self.inner.read(path, position, size)

    def append(self, path: str, data) -> None:
        if self.fault == DISK_FULL:
            view = memoryview(data).cast("B")
            if len(view) > self.room_bytes:
                if self.room_bytes:
                    self.inner.append(path, view[:self.room_bytes])
                    self.room_bytes = 0
                raise self._fail(errno.ENOSPC, path)
            self.room_bytes -= len(view)
        elif self.fault == WRITE_ERROR:
            raise self._fail(errno.EIO, path)
        self.inner.append(path, data)

    def truncate(self, path: str, size: int) -> None:
        if self.fault == WRITE_ERROR:
            raise self._fail(errno.EIO, path)
        self.inner.truncate(path, size)

    def fsync(self, path: str) -> None:
        if self.fault == FSYNC_ERROR:
            raise self._fail(errno.EIO, path)
        self.inner.fsync(path)

    def delete(self, path: str, *, sync: bool = True) -> None:
        self.inner.delete(path, sync=sync)

    def read_file(self, path: str) -> bytes:
        return self.inner.read_file(path)

    def write_file_atomically(self, path: str, data: bytes) -> None:
        self._refuse_writes(path, fsyncs=True)
        self.inner.write_file_atomically(path, data)

    def rename(self, src: str, dst: str, *, sync: bool = True) -> None:
        if self.fault == WRITE_ERROR:
            raise self._fail(errno.EIO, dst)
        self.inner.rename(src, dst, sync=sync)
