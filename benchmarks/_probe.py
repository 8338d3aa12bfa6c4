"""What a broker costs while a point runs: CPU seconds and peak resident memory of its processes.

raykafka's broker side is several processes: each broker actor (which also serves its Kafka
listener) and each replica fetcher actor. Their pids come from Ray's actor table (GCS), filtered
by actor class; Tansu is one process. ``BrokerProbe`` samples those processes with psutil on a
background thread: CPU time (user + system) at the start and end of a point, and the sum of their
resident set sizes, whose maximum over the point is its peak. A fetcher that starts during a point
counts from zero; one that ends counts up to its last sample.
"""
from __future__ import annotations

import os
import threading
import time

import psutil

BROKER_SIDE_ACTOR_CLASSES = ("BrokerActor", "ReplicaFetcherActor")
SAMPLE_INTERVAL_S = 0.2
PIDS_REFRESH_S = 1.0


def raykafka_broker_pids() -> list[int]:
    """The pids of this Ray's live broker and fetcher actors (Ray's actor table; the state API
    would need the dashboard, which the benchmark's Ray runs without)."""
    from ray._private import state
    return [entry["Pid"] for entry in state.actors().values()
            if entry.get("ActorClassName") in BROKER_SIDE_ACTOR_CLASSES and entry.get("State") == "ALIVE"
            and entry.get("Pid")]


# The parts of a process's RSS (Linux /proc/PID/status): ``anon`` is its own heap (Python objects,
# buffers), ``shmem`` the shared memory it has touched, here mostly Ray's object store (plasma),
# where fetch answers of 100 KiB and more are put: those pages belong to the node's object store,
# whose size Ray bounds, and count in every process that touched them. ``file`` is mapped files.
RSS_KINDS = {"anon": "RssAnon", "file": "RssFile", "shmem": "RssShmem"}


def _rss_kinds(pid: int) -> dict[str, int]:
    """The process's RSS split by ``RSS_KINDS``, in bytes; empty where /proc does not say."""
    try:
        with open(f"/proc/{pid}/status") as handle:
            lines = handle.read().splitlines()
    except FileNotFoundError:
        raise psutil.NoSuchProcess(pid) from None
    fields = {line.split(":")[0]: line.split(":")[1] for line in lines if ":" in line}
    return {kind: int(fields[name].split()[0]) * 1024 for kind, name in RSS_KINDS.items() if name in fields}


def process_cpu_seconds(pid: int) -> float:
    """The process's CPU seconds: the sum of its threads' run time from /proc (nanoseconds), where
    psutil's user + system time counts in 10 ms ticks, too coarse for a short point. Raises
    FileNotFoundError where the process (or /proc's schedstat) is not there."""
    total_ns = 0
    for task in os.scandir(f"/proc/{pid}/task"):
        try:
            with open(f"{task.path}/schedstat") as handle:
                total_ns += int(handle.read().split()[0])
        except (FileNotFoundError, ProcessLookupError):
            continue  # a thread that just ended
    return total_ns / 1e9


class BrokerProbe:
    """Samples the processes ``pids()`` names; ``on_sample`` (if given) is called after each
    sample, which the live display uses as its clock."""

    def __init__(self, pids, on_sample=None) -> None:
        self._pids_source = pids
        self._on_sample = on_sample
        self._lock = threading.Lock()
        self._processes: dict[int, psutil.Process] = {}
        self._cpu_first: dict[int, float] = {}
        self._cpu_last: dict[int, float] = {}
        self._rss_peak = 0
        self._rss_series: list[tuple[float, int]] = []
        self._rss_kinds_series: list[tuple[float, dict[str, int]]] = []
        self._pids_read_at = 0.0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._started_at = 0.0

    def _refresh_pids(self, *, first: bool) -> None:
        for pid in self._pids_source():
            if pid not in self._processes:
                try:
                    self._processes[pid] = psutil.Process(pid)
                except psutil.NoSuchProcess:
                    continue
                # A process already running when the point began counts from there; one that
                # started later counts from its start.
                self._cpu_first[pid] = self._cpu(pid) if first else 0.0
        self._pids_read_at = time.monotonic()

    def _cpu(self, pid: int) -> float:
        """The process's CPU seconds (``process_cpu_seconds``), from psutil where /proc has no schedstat."""
        try:
            return process_cpu_seconds(pid)
        except FileNotFoundError:
            if not self._processes[pid].is_running():
                raise psutil.NoSuchProcess(pid)
            times = self._processes[pid].cpu_times()  # no /proc schedstat here
            return times.user + times.system

    def sample(self) -> None:
        with self._lock:
            if time.monotonic() - self._pids_read_at > PIDS_REFRESH_S:
                self._refresh_pids(first=False)
            rss, kinds = 0, dict.fromkeys(RSS_KINDS, 0)
            for pid in list(self._processes):
                try:
                    self._cpu_last[pid] = self._cpu(pid)
                    rss += self._processes[pid].memory_info().rss
                    for kind, size in _rss_kinds(pid).items():
                        kinds[kind] += size
                except psutil.NoSuchProcess:
                    del self._processes[pid]
            self._rss_peak = max(self._rss_peak, rss)
            at = time.monotonic() - self._started_at
            self._rss_series.append((at, rss))
            self._rss_kinds_series.append((at, kinds))

    def _run(self) -> None:
        while not self._stop.wait(SAMPLE_INTERVAL_S):
            try:
                self.sample()
            except Exception:  # a sample lost to a process going away: the next one counts
                pass
            if self._on_sample is not None:
                self._on_sample()

    def __enter__(self) -> "BrokerProbe":
        self._started_at = time.monotonic()
        with self._lock:
            self._refresh_pids(first=True)
        self.sample()
        self._thread = threading.Thread(target=self._run, name="bench-probe", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        self.sample()

    @property
    def cpu_seconds(self) -> float:
        return sum(self._cpu_last.get(pid, first) - first for pid, first in self._cpu_first.items())

    @property
    def rss_peak_bytes(self) -> int:
        return self._rss_peak

    @property
    def rss_series(self) -> list[tuple[float, int]]:
        """(seconds since the start, summed RSS bytes) for every sample."""
        return list(self._rss_series)

    @property
    def rss_kinds_series(self) -> list[tuple[float, dict[str, int]]]:
        """(seconds since the start, summed RSS bytes by kind, ``RSS_KINDS``) for every sample."""
        return list(self._rss_kinds_series)

    @property
    def process_count(self) -> int:
        return len(self._cpu_first)
