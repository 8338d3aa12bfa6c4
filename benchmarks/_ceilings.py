"""Ray's own ceiling: how fast one actor moves a payload of a given size to another, per call.

A client actor calls a peer actor in a loop for a fixed time, one call in flight, as a client
calls a broker. ``send`` passes the payload as the call's argument (a produce's direction: client
to broker); ``return`` has the peer return it (a fetch's direction: broker to client or follower).
The payload is ``bytes`` (what Ray pickles) or a numpy ``uint8`` array (which Ray can hand over
from its shared-memory object store without a copy). Each (direction, kind, size) is measured once
per run and shared by every point with that payload size.
"""
from __future__ import annotations

import sys
import time

import numpy
import ray
from ray import cloudpickle

# The actors below travel to Ray's workers by value: a worker need not have benchmarks/ on its path.
cloudpickle.register_pickle_by_value(sys.modules[__name__])



def _payload(kind: str, size: int):
    return b"\x01" * size if kind == "bytes" else numpy.ones(size, dtype=numpy.uint8)


@ray.remote(num_cpus=0)
class _Peer:
    def __init__(self) -> None:
        self._payloads: dict = {}

    def take(self, payload) -> int:
        return len(payload)

    def give(self, kind: str, size: int):
        if (kind, size) not in self._payloads:
            self._payloads[(kind, size)] = _payload(kind, size)
        return self._payloads[(kind, size)]


@ray.remote(num_cpus=0)
class _Caller:
    def measure(self, peer, direction: str, kind: str, size: int, seconds: float) -> dict:
        payload = _payload(kind, size)
        call = (lambda: peer.take.remote(payload)) if direction == "send" else (lambda: peer.give.remote(kind, size))
        ray.get(call())  # the first call pays for set-up, outside the timing
        moved, calls = 0, 0
        started = time.perf_counter()
        while time.perf_counter() - started < seconds or calls < 3:
            answer = ray.get(call())
            moved += size if direction == "send" else len(answer)
            calls += 1
        return {"bytes": moved, "calls": calls, "seconds": time.perf_counter() - started}


class RayCeilings:
    """Measures on first use and remembers: ``mb_per_s(direction, kind, size)``."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._measured: dict[tuple[str, str, int], dict] = {}
        self._caller = self._peer = None

    def mb_per_s(self, direction: str, kind: str, size: int) -> float:
        key = (direction, kind, int(size))
        if key not in self._measured:
            if self._caller is None:
                self._caller, self._peer = _Caller.remote(), _Peer.remote()
            figures = ray.get(self._caller.measure.remote(self._peer, direction, kind, int(size), self.seconds),
                              timeout=120 + 10 * self.seconds)
            figures["mb_per_s"] = figures["bytes"] / figures["seconds"] / 1e6
            self._measured[key] = figures
        return self._measured[key]["mb_per_s"]

    def table(self) -> list[dict]:
        return [{"direction": d, "kind": k, "payload_bytes": s, **figures}
                for (d, k, s), figures in sorted(self._measured.items())]

    def close(self) -> None:
        for actor in (self._caller, self._peer):
            if actor is not None:
                ray.kill(actor)
        self._caller = self._peer = None
