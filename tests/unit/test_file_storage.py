"""Proves FileStorage and InMemoryStorage honour the same Storage contract (every contract test
runs on both), that FileStorage keeps a bounded LRU of descriptors, serves a read with one pread
and never serves a replaced file through a stale descriptor, that data it appended survives a
SIGKILL of the writing process, that appends stay whole while another thread fsyncs the same
files, and that InMemoryStorage's crash model drops exactly the un-fsynced tails."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading

import pytest

from actors.core.log.storage import InMemoryStorage, Storage
from actors.file_storage import FileStorage

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_both_implement_the_protocol(tmp_path):
    assert isinstance(InMemoryStorage(), Storage)
    assert isinstance(FileStorage(str(tmp_path)), Storage)


def test_directories(storage):
    assert storage.list_dir("missing") == []
    storage.make_dir("a/b/c")
    storage.make_dir("a/b/c")  # idempotent
    storage.make_dir("a/b2")
    assert storage.exists("a/b/c")
    assert storage.list_dir("a") == ["b", "b2"]
    assert storage.list_dir("") == ["a"]


def test_append_read_and_size(storage):
    storage.make_dir("d")
    storage.append("d/f", b"hello ")
    storage.append("d/f", bytearray(b"world"))
    storage.append("d/f", memoryview(b"!!"))
    assert storage.file_size("d/f") == 13
    assert storage.read("d/f", 0, 5) == b"hello"
    assert storage.read("d/f", 6, 100) == b"world!!"  # short at end of file
    assert storage.read("d/f", 13, 10) == b""
    assert storage.read_file("d/f") == b"hello world!!"
    storage.append("d/empty", b"")
    assert storage.exists("d/empty") and storage.file_size("d/empty") == 0


def test_list_dir_is_sorted(storage):
    storage.make_dir("d")
    for name in ["c", "a", "b"]:
        storage.append(f"d/{name}", b"x")
    assert storage.list_dir("d") == ["a", "b", "c"]


@pytest.mark.parametrize("operation", [
    lambda s: s.append("nodir/f", b"x"),
    lambda s: s.write_file_atomically("nodir/f", b"x"),
    lambda s: s.read("missing", 0, 1),
    lambda s: s.read_file("missing"),
    lambda s: s.file_size("missing"),
    lambda s: s.truncate("missing", 0),
    lambda s: s.fsync("missing"),
])
def test_missing_paths_raise_file_not_found(storage, operation):
    with pytest.raises(FileNotFoundError):
        operation(storage)


@pytest.mark.parametrize("path", ["/abs", "a/../b", "a//b", "./a", "a/"])
def test_bad_paths_are_refused(storage, path):
    with pytest.raises(ValueError):
        storage.exists(path)


def test_truncate(storage):
    storage.append("f", b"0123456789")
    storage.truncate("f", 4)
    assert storage.read_file("f") == b"0123"
    storage.append("f", b"ab")
    assert storage.read_file("f") == b"0123ab"


def test_delete_file_tree_and_missing(storage):
    storage.make_dir("t/sub")
    storage.append("t/sub/f", b"x")
    storage.append("t/g", b"y")
    storage.append("keep", b"z")
    storage.delete("t/g")
    assert not storage.exists("t/g")
    storage.delete("t")
    assert not storage.exists("t") and not storage.exists("t/sub/f")
    assert storage.list_dir("") == ["keep"]
    storage.delete("t")  # already gone: no error


def test_write_file_atomically_replaces_and_leaves_no_temp_file(storage):
    storage.write_file_atomically("cp", b"one")
    storage.write_file_atomically("cp", b"two")
    assert storage.read_file("cp") == b"two"
    assert storage.list_dir("") == ["cp"]


def test_rename_file_and_directory(storage):
    storage.append("a", b"1")
    storage.rename("a", "b")
    assert not storage.exists("a") and storage.read_file("b") == b"1"
    storage.make_dir("d1")
    storage.append("d1/f", b"2")
    storage.rename("d1", "d2")
    assert storage.list_dir("") == ["b", "d2"]
    assert storage.read_file("d2/f") == b"2"


def test_rename_and_delete_without_sync_leave_the_directory_fsync_to_a_later_call(tmp_path, monkeypatch):
    storage = FileStorage(str(tmp_path / "root"))
    storage.make_dir("t-0")
    storage.append("t-0/f", b"1")
    storage.fsync("t-0/f")
    synced_directories = []
    monkeypatch.setattr(storage, "_fsync_directory", synced_directories.append)
    storage.rename("t-0", "t-0.0-delete", sync=False)
    storage.delete("t-0.0-delete/f", sync=False)
    assert synced_directories == [], "no directory fsync on the caller's thread"
    assert storage.list_dir("") == ["t-0.0-delete"] and storage.list_dir("t-0.0-delete") == []
    storage.fsync("")  # the work that follows makes both durable
    storage.delete("t-0.0-delete")
    assert len(synced_directories) == 2 and storage.list_dir("") == []


def test_cached_descriptor_never_serves_a_replaced_file(storage):
    storage.append("f", b"old contents")
    assert storage.read("f", 0, 3) == b"old"  # FileStorage now caches a descriptor for f
    storage.write_file_atomically("f", b"new")
    assert storage.read("f", 0, 100) == b"new"
    storage.append("g", b"from g")
    storage.rename("g", "f")
    assert storage.read("f", 0, 100) == b"from g"
    storage.delete("f")
    storage.append("f", b"again")
    assert storage.read("f", 0, 100) == b"again"


# -- FileStorage specifics ------------------------------------------------------------------

def test_descriptor_cache_is_bounded_lru(tmp_path):
    storage = FileStorage(str(tmp_path), open_files_max=4)
    for index in range(10):
        storage.append(f"f{index}", bytes([index]))
    assert storage.open_files == 4
    for index in range(10):  # evicted files reopen on demand
        assert storage.read(f"f{index}", 0, 1) == bytes([index])
    assert storage.open_files == 4
    storage.close()
    assert storage.open_files == 0
    assert storage.read("f3", 0, 1) == b"\x03"  # usable after close
    storage.close()


def test_a_broker_leading_hundreds_of_partitions_appends_without_reopening_files(tmp_path, monkeypatch):
    """By default the cache holds a log and an index for each of hundreds of partitions, as
    Kafka keeps its segments open: round-robin appends over them open each file once, rather
    than closing and reopening two files per partition per produce."""
    import resource
    monkeypatch.setattr(resource, "getrlimit", lambda which: (1024, 1024))  # a common default
    storage = FileStorage(str(tmp_path))
    paths = [f"t-{partition}/{name}" for partition in range(200) for name in ("0.log", "0.index")]
    for partition in range(200):
        storage.make_dir(f"t-{partition}")
    opened = []
    real_open = os.open
    monkeypatch.setattr(os, "open", lambda path, *args: opened.append(path) or real_open(path, *args))
    for _ in range(3):
        for path in paths:
            storage.append(path, b"x")
    assert len(opened) == len(paths), f"{len(opened)} opens for {len(paths)} files"
    storage.close()


def test_the_default_descriptor_cache_leaves_most_of_the_process_limit_to_sockets(monkeypatch):
    """The default bound is a share of RLIMIT_NOFILE (the Kafka listener's connections and Ray's
    own sockets need the rest), and never below the old fixed 64."""
    import resource

    from actors import file_storage
    monkeypatch.setattr(resource, "getrlimit", lambda which: (1024, 4096))
    assert file_storage.default_open_files_max() == 512
    monkeypatch.setattr(resource, "getrlimit", lambda which: (100, 100))
    assert file_storage.default_open_files_max() == 64
    monkeypatch.setattr(resource, "getrlimit", lambda which: (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    assert file_storage.default_open_files_max() == file_storage.OPEN_FILES_MAX_CEILING


def test_a_read_is_one_pread(tmp_path, monkeypatch):
    storage = FileStorage(str(tmp_path))
    storage.append("f", b"x" * 100_000)
    storage.read("f", 0, 1)  # open the descriptor
    calls = []
    real_pread = os.pread
    monkeypatch.setattr(os, "pread", lambda *args: calls.append(args) or real_pread(*args))
    assert len(storage.read("f", 10, 50_000)) == 50_000
    assert len(calls) == 1
    storage.close()


def test_files_live_under_the_root(tmp_path):
    storage = FileStorage(str(tmp_path / "root"))
    storage.make_dir("t-0")
    storage.append("t-0/00000000000000000000.log", b"abc")
    assert (tmp_path / "root" / "t-0" / "00000000000000000000.log").read_bytes() == b"abc"
    storage.close()


def test_appended_data_survives_sigkill(tmp_path):
    """A broker actor killed at any moment loses nothing it appended: nothing is buffered."""
    script = textwrap.dedent(f"""
        import os, signal, sys
        sys.path.insert(0, {REPO_ROOT!r})
        from actors.file_storage import FileStorage
        storage = FileStorage({str(tmp_path)!r})
        storage.make_dir("d")
        for index in range(100):
            storage.append("d/f", b"%04d" % index)
        os.kill(os.getpid(), signal.SIGKILL)
    """)
    result = subprocess.run([sys.executable, "-c", script], check=False)
    assert result.returncode == -signal.SIGKILL
    storage = FileStorage(str(tmp_path))
    assert storage.read_file("d/f") == b"".join(b"%04d" % index for index in range(100))
    storage.close()


def test_a_log_killed_mid_stream_reopens_with_everything_it_appended(tmp_path):
    """SIGKILL after unflushed appends (a killed broker actor): the reopened log has them all."""
    from kafka.record.default_records import DefaultRecordBatchBuilder

    from actors.core.log.log import Log

    from actors.core.log.log_config import LogConfig

    builder = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False,
                                        producer_id=-1, producer_epoch=-1, base_sequence=-1,
                                        batch_size=1 << 20)
    for index in range(3):
        builder.append(index, timestamp=1000, key=None, value=b"v" * 50, headers=[])
    batch_hex = bytes(builder.build()).hex()
    script = textwrap.dedent(f"""
        import os, signal, sys
        sys.path.insert(0, {REPO_ROOT!r})
        from actors.file_storage import FileStorage
        from actors.core.log.log import Log
        from actors.core.log.log_config import LogConfig
        log = Log.open(FileStorage({str(tmp_path)!r}), "t-0", LogConfig(segment_bytes=2000))
        batch = bytes.fromhex({batch_hex!r})
        for index in range(50):
            log.append_as_leader(batch, leader_epoch=index // 20)
        os.kill(os.getpid(), signal.SIGKILL)
    """)
    result = subprocess.run([sys.executable, "-c", script], check=False)
    assert result.returncode == -signal.SIGKILL
    storage = FileStorage(str(tmp_path))
    log = Log.open(storage, "t-0", LogConfig(segment_bytes=2000))
    assert log.log_end_offset == 150
    assert log.number_of_segments > 1
    assert [tuple(entry) for entry in log.leader_epoch_cache.entries] == [(0, 0), (1, 60), (2, 120)]
    storage.close()


# -- InMemoryStorage's crash model ----------------------------------------------------------

def test_simulate_crash_drops_unsynced_tails_only():
    storage = InMemoryStorage()
    storage.make_dir("d")
    storage.append("d/a", b"durable")
    storage.fsync("d/a")
    storage.append("d/a", b" lost")
    storage.append("d/b", b"never synced")
    storage.write_file_atomically("d/c", b"atomic")
    assert storage.unsynced_bytes("d/a") == 5
    storage.simulate_crash()
    assert storage.read_file("d/a") == b"durable"
    assert storage.read_file("d/b") == b""
    assert storage.read_file("d/c") == b"atomic"


def test_truncate_lowers_the_synced_length():
    storage = InMemoryStorage()
    storage.append("f", b"0123456789")
    storage.fsync("f")
    storage.truncate("f", 3)
    storage.append("f", b"xyz")
    storage.simulate_crash()
    assert storage.read_file("f") == b"012"


def test_corrupt_overwrites_durably_and_checks_bounds():
    storage = InMemoryStorage()
    storage.append("f", b"abcdef")
    storage.fsync("f")
    storage.corrupt("f", 2, b"ZZ")
    storage.simulate_crash()
    assert storage.read_file("f") == b"abZZef"
    with pytest.raises(ValueError):
        storage.corrupt("f", 5, b"too long")


def test_reads_are_counted():
    storage = InMemoryStorage()
    storage.append("f", b"abc")
    storage.read("f", 0, 1)
    storage.read("f", 1, 1)
    assert storage.reads == 2


def test_appends_stay_whole_while_another_thread_fsyncs_and_replaces_checkpoints(tmp_path):
    # The broker's event loop appends while its storage worker fsyncs the same segments and writes
    # checkpoints; with one descriptor slot every call evicts another's descriptor, so an
    # unguarded cache closes a descriptor in use (EBADF) or writes through one reused for another file.
    storage = FileStorage(str(tmp_path / "root"), open_files_max=1)
    paths = ["a.log", "b.log", "c.log"]
    rounds = 3_000
    failures: list[BaseException] = []
    stop = threading.Event()

    def worker() -> None:
        index = 0
        while not stop.is_set():
            try:
                storage.fsync(paths[index % len(paths)])
                if index % 50 == 0:
                    storage.write_file_atomically("checkpoint", f"{index}\n".encode())
            except FileNotFoundError:
                pass  # not appended to yet
            except BaseException as exc:  # noqa: BLE001 - reported below
                failures.append(exc)
                return
            index += 1

    thread = threading.Thread(target=worker)
    thread.start()
    try:
        for index in range(rounds):
            storage.append(paths[index % len(paths)], f"{index:06d}".encode())
    finally:
        stop.set()
        thread.join(timeout=60)
    assert not thread.is_alive(), "the fsync thread did not stop within 60 s"
    assert not failures, f"the fsync thread failed: {failures[0]!r}"
    for number, path in enumerate(paths):
        expected = b"".join(f"{i:06d}".encode() for i in range(number, rounds, len(paths)))
        assert storage.read_file(path) == expected, f"{path} holds bytes it was not given"
    storage.close()
