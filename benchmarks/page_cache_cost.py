"""What a GB written into the page cache costs this machine, by where its pages come from.

Every byte of a replicated write lands in three brokers' page caches: the leader's and two
followers'. On a virtual machine whose host takes back the memory the guest frees (virtio-balloon
free page reporting, ``/sys/module/page_reporting``), a page the guest gave back costs far more to
write into than one it freed a moment before: the host must hand it back, page by page, while the
write copies into it. So what a replicated point costs depends on how much memory was freed just
before it and how much of that the guest has not yet given back, and an RF=3 point, which needs
three times the pages of an RF=1 point, runs out of such pages first. This program measures it, so
a reader of the throughput figures (docs/throughput.md) can tell this machine's cost from raykafka's.

In a temporary directory on ``--dir``'s filesystem (the system's temporary directory by default,
where a local cluster keeps its logs), in writes of ``--write-bytes`` (a follower's round is a few
MB), timed by this process's CPU (user + system) and the wall clock:

1. ``kept``: ``--slices`` slices of ``--megabytes`` each, into files that are all kept. Each slice
   takes pages no file of this run has freed: the first may still take memory something else freed
   lately, the later ones memory the guest gave back.
2. ``freed at once``: every file deleted, then one slice written straight after.
3. ``freed N s before``: for each N of ``--wait-s``, every file deleted, N seconds of waiting,
   then one slice.

Where the kernel has free page reporting, its parameters are saved, and with each slice the KiB
the guest had given back to the host when it started (and how many more since the last slice).
Prints a table and saves JSON; it asserts nothing. Run it on a quiet machine, never beside
another benchmark.

    python benchmarks/page_cache_cost.py [--megabytes 256] [--slices 8] [--write-bytes 5767168]
        [--wait-s 5,30] [--dir DIR] [--out FILE]
"""
from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from benchmarks._common import default_out, save_results  # noqa: E402

MIB = 1024 * 1024
GB = 1e9
FOLLOWER_ROUND_BYTES = 5_767_168  # what a follower of one partition appends a round under a bulk write (5.5 MiB)
PAGE_REPORTING = "/sys/module/page_reporting/parameters"


def page_reporting() -> dict | None:
    """The kernel's free page reporting parameters (``reported_kib`` among them, where it counts
    them), or None where it has none."""
    if not os.path.isdir(PAGE_REPORTING):
        return None
    found = {}
    for name in sorted(os.listdir(PAGE_REPORTING)):
        try:
            with open(os.path.join(PAGE_REPORTING, name)) as handle:
                text = handle.read().strip()
        except OSError:
            continue
        found[name] = int(text) if text.lstrip("-").isdigit() else text
    return found


def reported_kib() -> int | None:
    value = (page_reporting() or {}).get("reported_kib")
    return value if isinstance(value, int) else None


def write_slice(path: str, size: int, write_bytes: int) -> dict:
    """Write ``size`` bytes to a new file at ``path`` in writes of ``write_bytes``; what it cost."""
    chunk = memoryview(os.urandom(write_bytes))
    reported_before = reported_kib()
    descriptor = os.open(path, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o600)
    try:
        cpu_before, started = time.process_time(), time.perf_counter()
        written = 0
        while written < size:
            piece = chunk[:min(write_bytes, size - written)]
            while piece:
                count = os.write(descriptor, piece)
                piece, written = piece[count:], written + count
        cpu_s, seconds = time.process_time() - cpu_before, time.perf_counter() - started
    finally:
        os.close(descriptor)
    figures = {"bytes": written, "seconds": round(seconds, 4), "cpu_s": round(cpu_s, 4),
               "cpu_s_per_gb": round(cpu_s / (written / GB), 3), "mb_per_s": round(written / 1e6 / seconds, 1)}
    if reported_before is not None:
        figures["reported_kib_at_start"] = reported_before
    return figures


def delete_all(directory: str) -> None:
    for name in os.listdir(directory):
        os.unlink(os.path.join(directory, name))


def run(*, megabytes: int, slices: int, write_bytes: int, waits_s: list[float], parent: str | None, out=print) -> dict:
    started = time.time()
    size = megabytes * MIB
    directory = tempfile.mkdtemp(prefix="raykafka-page-cache-", dir=parent)
    free = shutil.disk_usage(directory).free
    if free < (slices + 1) * size:
        shutil.rmtree(directory, ignore_errors=True)
        raise OSError(f"{slices} slices of {megabytes} MiB need {(slices + 1) * size / GB:.1f} GB free at "
                      f"{directory}; {free / GB:.1f} GB are")
    rows = []

    def note(phase: str, figures: dict) -> None:
        previous = rows[-1].get("reported_kib_at_start") if rows else None
        if previous is not None and figures.get("reported_kib_at_start") is not None:
            figures["given_back_kib_since_previous_slice"] = figures["reported_kib_at_start"] - previous
        rows.append({"phase": phase, **figures})
        gave_back = figures.get("given_back_kib_since_previous_slice")
        shown = ("" if gave_back is None
                 else f"   given back to the host since the last slice: {gave_back / 1024:,.0f} MiB")
        out(f"{phase:<22} {figures['cpu_s_per_gb']:6.2f} CPU s/GB {figures['mb_per_s']:8.0f} MB/s{shown}")

    try:
        out(f"{slices} x {megabytes} MiB in writes of {write_bytes:,} bytes, in {directory}")
        for index in range(slices):
            note(f"kept, slice {index + 1}", write_slice(os.path.join(directory, f"kept-{index}"), size, write_bytes))
        delete_all(directory)
        note("freed at once", write_slice(os.path.join(directory, "at-once"), size, write_bytes))
        for wait_s in waits_s:
            delete_all(directory)
            time.sleep(wait_s)
            note(f"freed {wait_s:g} s before", write_slice(os.path.join(directory, f"after-{wait_s:g}"), size,
                                                          write_bytes))
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    kept = [row["cpu_s_per_gb"] for row in rows if row["phase"].startswith("kept")]
    at_once = rows[slices]["cpu_s_per_gb"]
    summary = {"kept_first_slice_cpu_s_per_gb": kept[0], "kept_last_slice_cpu_s_per_gb": kept[-1],
               "kept_median_cpu_s_per_gb": statistics.median(kept), "freed_at_once_cpu_s_per_gb": at_once,
               "freed_before_cpu_s_per_gb": {f"{wait_s:g}": row["cpu_s_per_gb"]
                                             for wait_s, row in zip(waits_s, rows[slices + 1:])},
               "kept_last_slice_over_freed_at_once": round(kept[-1] / at_once, 2) if at_once else None}
    out(f"last kept slice / freed at once: {summary['kept_last_slice_over_freed_at_once']}x")
    return {"started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
            "machine": {"cpus": os.cpu_count(), "kernel": platform.release(), "page_reporting": page_reporting()},
            "settings": {"megabytes": megabytes, "slices": slices, "write_bytes": write_bytes, "waits_s": waits_s},
            "rows": rows, "summary": summary}


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=int, default=256, help="MiB per slice")
    parser.add_argument("--slices", type=int, default=8, help="slices written into kept files")
    parser.add_argument("--write-bytes", type=int, default=FOLLOWER_ROUND_BYTES,
                        help="bytes per write() (a follower's round)")
    parser.add_argument("--wait-s", default="5,30", help="waits between freeing and writing, seconds, comma-separated")
    parser.add_argument("--dir", default=None, help="where to write (default: the system's temporary directory)")
    parser.add_argument("--out", default=default_out("page_cache_cost"))
    args = parser.parse_args(argv)
    try:
        waits_s = [float(text) for text in args.wait_s.split(",") if text.strip()]
    except ValueError:
        parser.error(f"--wait-s: numbers of seconds, comma-separated, not {args.wait_s!r}")
    if args.megabytes <= 0 or args.slices <= 0 or args.write_bytes <= 0 or any(wait < 0 for wait in waits_s):
        parser.error("--megabytes, --slices and --write-bytes must be positive, --wait-s not negative")
    try:
        results = run(megabytes=args.megabytes, slices=args.slices, write_bytes=args.write_bytes, waits_s=waits_s,
                      parent=args.dir)
    except OSError as exc:  # no room, or the directory cannot be written
        raise SystemExit(f"page_cache_cost: {exc}") from exc
    results["command"] = " ".join(["benchmarks/page_cache_cost.py", *(argv if argv is not None else sys.argv[1:])])
    save_results(args.out, results)
    return results


if __name__ == "__main__":
    main()
