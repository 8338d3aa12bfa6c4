"""The only door from the log to a disk: the ``Storage`` protocol and an in-memory implementation.

Theory of operation. The log core does no I/O of its own; it calls an injected ``Storage`` with
'/'-joined paths relative to the storage root (``"orders-0/00000000000000000000.log"``; the root
itself is ``""``). Two implementations exist: ``actors.file_storage.FileStorage`` (real files, used
by the broker shells) and ``InMemoryStorage`` here (unit tests and the deterministic simulator).

Both follow POSIX file semantics, so code tested on one behaves the same on the other: writing a
file whose directory does not exist raises ``FileNotFoundError``; reading a missing file raises
``FileNotFoundError``; ``delete`` and ``list_dir`` tolerate a missing path.

``InMemoryStorage`` also models a machine crash. For every file it tracks how long the file was
when last fsynced; ``simulate_crash()`` cuts every file back to that length, which is what a
machine that lost its page cache sees for append-only files. Operations that Kafka-style code
makes durable on purpose (``write_file_atomically``, ``rename``, ``make_dir``, ``delete``) are
durable at once; a ``truncate`` is modelled as durable at once too (a journaled metadata change).

``delete`` and ``rename`` take ``sync``: True (the default) makes the change to the directory
durable before returning (``FileStorage`` fsyncs the parent directory); False leaves that to a
later ``fsync`` of the directory, so that the caller's thread does no disk wait (the log plans that
fsync as storage work, see actors/core/log/log_work.py). ``InMemoryStorage`` is durable at once
either way.
"""
from __future__ import annotations

from typing import Protocol, runtime_checkable


@runtime_checkable
class Storage(Protocol):
    """File operations the log needs; paths are '/'-joined and relative to the storage root."""

    def list_dir(self, path: str) -> list[str]:
        """Names (not paths) in the directory, sorted; [] if it does not exist."""

    def make_dir(self, path: str) -> None:
        """Creates the directory and its parents; a no-op if it exists."""

    def exists(self, path: str) -> bool: ...

    def file_size(self, path: str) -> int: ...

    def read(self, path: str, position: int, size: int) -> bytes:
        """Up to ``size`` bytes from ``position``; shorter only at end of file."""

    def append(self, path: str, data) -> None:
        """Appends bytes-like ``data``, creating the file if needed (its directory must exist)."""

    def truncate(self, path: str, size: int) -> None: ...

    def fsync(self, path: str) -> None: ...

    def delete(self, path: str, *, sync: bool = True) -> None:
        """Deletes a file or a whole directory tree; a no-op if the path does not exist."""

    def read_file(self, path: str) -> bytes: ...

    def write_file_atomically(self, path: str, data: bytes) -> None:
        """Replaces the file's contents all-or-nothing and durably (temp file, fsync, rename)."""

    def rename(self, src: str, dst: str, *, sync: bool = True) -> None: ...

    def volume_bytes(self) -> tuple[int, int]:
        """(total, usable) bytes of the volume the storage root is on, as Kafka's
        ``FileStore.getTotalSpace``/``getUsableSpace`` (DescribeLogDirs v4); (-1, -1) if unknown."""


def split_path(path: str) -> tuple[str, ...]:
    """The components of a relative '/'-joined path; refuses absolute paths, '.', '..' and ''."""
    if path == "":
        return ()
    parts = tuple(path.split("/"))
    for part in parts:
        if part in ("", ".", ".."):
            raise ValueError(f"bad storage path {path!r}: use relative '/'-joined names")
    return parts


def parent_of(path: str) -> str:
    parts = split_path(path)
    if not parts:
        raise ValueError("the storage root has no parent")
    return "/".join(parts[:-1])


class InMemoryStorage:
    """``Storage`` in a dict, with a crash model (see the module docstring).

    Invariants: every file's parent directory is in ``_dirs``; ``0 <= _synced_sizes[p] <=
    len(_files[p])``. ``reads`` counts ``read`` calls, so tests can check the fetch path's cost.
    """

    def __init__(self) -> None:
        self._files: dict[str, bytearray] = {}
        self._synced_sizes: dict[str, int] = {}
        self._dirs: set[str] = {""}
        self.reads = 0
        self.fsyncs = 0

    # -- helpers ---------------------------------------------------------------------------

    def _file(self, path: str) -> bytearray:
        split_path(path)
        data = self._files.get(path)
        if data is None:
            if path in self._dirs:
                raise IsADirectoryError(path)
            raise FileNotFoundError(path)
        return data

    def _require_parent(self, path: str) -> None:
        parent = parent_of(path)
        if parent not in self._dirs:
            raise FileNotFoundError(f"directory {parent!r} does not exist (writing {path!r})")
        if path in self._dirs:
            raise IsADirectoryError(path)

    def _check_invariants(self, path: str) -> None:
        assert 0 <= self._synced_sizes[path] <= len(self._files[path]), path

    # -- Storage ---------------------------------------------------------------------------

    def volume_bytes(self) -> tuple[int, int]:
        return -1, -1  # no volume under a dict

    def list_dir(self, path: str) -> list[str]:
        split_path(path)
        if path not in self._dirs:
            return []
        prefix = f"{path}/" if path else ""
        names = set()
        for name in list(self._files) + list(self._dirs):
            if name and name.startswith(prefix):
                names.add(name[len(prefix):].split("/", 1)[0])
        return sorted(names)

    def make_dir(self, path: str) -> None:
        parts = split_path(path)
        if "/".join(parts) in self._files:
            raise FileExistsError(path)
        for count in range(1, len(parts) + 1):
            ancestor = "/".join(parts[:count])
            if ancestor in self._files:
                raise NotADirectoryError(ancestor)
            self._dirs.add(ancestor)

    def exists(self, path: str) -> bool:
        split_path(path)
        return path in self._files or path in self._dirs

    def file_size(self, path: str) -> int:
        return len(self._file(path))

    def read(self, path: str, position: int, size: int) -> bytes:
        assert position >= 0 and size >= 0, (position, size)
        self.reads += 1
        data = self._file(path)
        return bytes(data[position:position + size])

    def append(self, path: str, data) -> None:
        if path not in self._files:
            self._require_parent(path)
            self._files[path] = bytearray()
            self._synced_sizes[path] = 0
        self._files[path] += data
        self._check_invariants(path)

    def truncate(self, path: str, size: int) -> None:
        assert size >= 0, size
        data = self._file(path)
        if size <= len(data):
            del data[size:]
        else:
            data.extend(bytes(size - len(data)))
        self._synced_sizes[path] = min(self._synced_sizes[path], size)
        self._check_invariants(path)

    def fsync(self, path: str) -> None:
        split_path(path)
        self.fsyncs += 1
        if path in self._dirs:
            return
        self._synced_sizes[path] = len(self._file(path))

    def delete(self, path: str, *, sync: bool = True) -> None:
        split_path(path)
        if path in self._files:
            del self._files[path]
            del self._synced_sizes[path]
            return
        if path not in self._dirs:
            return
        if path == "":
            raise ValueError("refusing to delete the storage root")
        prefix = f"{path}/"
        for name in [name for name in self._files if name.startswith(prefix)]:
            del self._files[name]
            del self._synced_sizes[name]
        self._dirs = {name for name in self._dirs if name != path and not name.startswith(prefix)}

    def read_file(self, path: str) -> bytes:
        return bytes(self._file(path))

    def write_file_atomically(self, path: str, data: bytes) -> None:
        self._require_parent(path)
        self._files[path] = bytearray(data)
        self._synced_sizes[path] = len(data)

    def rename(self, src: str, dst: str, *, sync: bool = True) -> None:
        split_path(dst)
        if src in self._files:
            self._require_parent(dst)
            self._files[dst] = self._files.pop(src)
            self._synced_sizes[dst] = self._synced_sizes.pop(src)
            return
        if src not in self._dirs or src == "":
            raise FileNotFoundError(src)
        if self.exists(dst):
            raise FileExistsError(dst)
        if parent_of(dst) not in self._dirs:
            raise FileNotFoundError(parent_of(dst))
        prefix = f"{src}/"
        for name in [name for name in self._files if name.startswith(prefix)]:
            moved = dst + name[len(src):]
            self._files[moved] = self._files.pop(name)
            self._synced_sizes[moved] = self._synced_sizes.pop(name)
        self._dirs = {dst + name[len(src):] if name == src or name.startswith(prefix) else name
                      for name in self._dirs}

    # -- test and simulation hooks ---------------------------------------------------------

    def simulate_crash(self) -> None:
        """The machine lost its page cache: every file loses the bytes appended since its fsync."""
        for path, data in self._files.items():
            del data[self._synced_sizes[path]:]

    def corrupt(self, path: str, position: int, data: bytes) -> None:
        """Overwrites bytes on 'disk' (durable, survives ``simulate_crash``), for recovery tests."""
        target = self._file(path)
        if position < 0 or position + len(data) > len(target):
            raise ValueError(f"corrupt({path!r}, {position}, {len(data)} bytes) is outside "
                             f"the file's {len(target)} bytes")
        target[position:position + len(data)] = data

    def unsynced_bytes(self, path: str) -> int:
        """How many bytes of the file a crash would lose now."""
        return len(self._file(path)) - self._synced_sizes[path]
