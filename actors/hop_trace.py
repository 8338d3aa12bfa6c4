"""An opt-in trace of the replication round trip's hops, for benchmarks/ack_hops.py.

With ``RAYKAFKA_HOP_TRACE`` set to a directory (in the environment Ray's workers inherit), each
process appends ``<monotonic s> <event>`` lines to a file of its own there, at the points the
broker and fetcher shells call ``hop``: a request's arrival at a broker and its answer leaving, a
fetcher's call sent and its answer back. ``time.monotonic`` is one clock for every process on a
machine, so the lines of all processes merge into one timeline. Unset (always, outside that
benchmark), ``hop`` is one test of a module constant.
"""
from __future__ import annotations

import os
import time

_DIRECTORY = os.environ.get("RAYKAFKA_HOP_TRACE") or None
_file = None


def hop(event: str) -> None:
    """Note ``event`` at this moment, if tracing is on."""
    if _DIRECTORY is None:
        return
    global _file
    if _file is None:
        _file = open(os.path.join(_DIRECTORY, f"hops-{os.getpid()}.txt"), "a", buffering=1)
    _file.write(f"{time.monotonic():.6f} {event}\n")


def enabled() -> bool:
    return _DIRECTORY is not None
