"""What one Ray actor call that returns a 1 MiB numpy ``uint8`` array costs, actor by actor kind.

A caller actor (as the bare fetch's client is one) calls a peer in a loop, one call in flight, and
the peer returns the same payload size each time. The peers differ in one thing at a time, from
Ray's plain actor (the ceiling ``benchmarks/_ceilings.py`` measures) to the options and the call
shape of raykafka's broker actor: an async method, ``max_concurrency=1000``, ``max_restarts=-1``
with ``max_task_retries=0``, a name in a namespace, a concurrency group, a fresh array per call
(as a log read gives), and the array inside a ``FetchResponse``; and the caller's ``ray.get`` with
a timeout, as the bare fetch's client calls it. Each variant is measured in turn for
``--seconds``, and the whole round ``--rounds`` times, so that load from other work on the
machine spreads over all of them. Prints milliseconds per call and MB/s; it asserts nothing.

    PYTHONPATH=$PWD python benchmarks/actor_call_cost.py --seconds 2 --rounds 3
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
import uuid

import numpy
import ray
from ray import cloudpickle

cloudpickle.register_pickle_by_value(sys.modules[__name__])

PAYLOAD_BYTES = 1024 * 1024


def _response(array):
    from actors.core.messages.fetch import (
        FetchableTopicResponse,
        FetchPartitionData,
        FetchResponse,
    )
    return FetchResponse(responses=(FetchableTopicResponse(topic="t", partitions=(FetchPartitionData(
        partition_index=0, records=array, high_watermark=1, last_stable_offset=1, log_start_offset=0),)),))


class _Sync:
    def __init__(self, shape: str = "array") -> None:
        self._array = numpy.ones(PAYLOAD_BYTES, dtype=numpy.uint8)
        self._shape = shape

    def give(self):
        return self._array if self._shape == "array" else _response(self._array)


class _Async:
    def __init__(self, shape: str = "array") -> None:
        self._array = numpy.ones(PAYLOAD_BYTES, dtype=numpy.uint8)
        self._bytes = bytes(self._array)
        self._shape = shape

    async def give(self):
        if self._shape == "fresh":  # a new array per call, as each log read gives one
            return numpy.frombuffer(bytearray(self._bytes), dtype=numpy.uint8)
        return self._array if self._shape == "array" else _response(self._array)


class _AsyncGroups(_Async):
    async def give(self):
        return self._array


_AsyncGroupsRemote = ray.remote(concurrency_groups={"io": 2})(_AsyncGroups)
BROKER_OPTIONS = dict(max_restarts=-1, max_task_retries=0, max_concurrency=1000)

# (name, remote class, options, constructor argument)
VARIANTS = (
    ("sync (the ceiling's peer)", ray.remote(_Sync), {}, "array"),
    ("sync, max_restarts=-1", ray.remote(_Sync), dict(max_restarts=-1, max_task_retries=0), "array"),
    ("async", ray.remote(_Async), {}, "array"),
    ("async, max_concurrency=1000", ray.remote(_Async), dict(max_concurrency=1000), "array"),
    ("async, broker options", ray.remote(_Async), BROKER_OPTIONS, "array"),
    ("async, broker options, named", ray.remote(_Async), BROKER_OPTIONS | {"name": True}, "array"),
    ("async, concurrency group", _AsyncGroupsRemote, {}, "array"),
    ("async, broker options, fresh array", ray.remote(_Async), BROKER_OPTIONS, "fresh"),
    ("async, broker options, FetchResponse", ray.remote(_Async), BROKER_OPTIONS, "response"),
    ("sync, FetchResponse", ray.remote(_Sync), {}, "response"),
)


@ray.remote(num_cpus=0)
class _Caller:
    def measure(self, peer, seconds: float, timeout_s: float | None) -> dict:
        def size(answer):
            return len(answer) if not hasattr(answer, "responses") else len(answer.responses[0].partitions[0].records)
        ray.get(peer.give.remote())  # the first call pays for set-up, outside the timing
        moved, calls = 0, 0
        started = time.perf_counter()
        while time.perf_counter() - started < seconds or calls < 3:
            moved += size(ray.get(peer.give.remote(), timeout=timeout_s))
            calls += 1
        elapsed = time.perf_counter() - started
        return {"ms_per_call": 1000 * elapsed / calls, "mb_per_s": moved / elapsed / 1e6}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    namespace = f"actor-call-cost-{uuid.uuid4().hex[:8]}"
    ray.init(num_cpus=2, namespace=namespace, include_dashboard=False, log_to_driver=False)
    try:
        caller = _Caller.remote()
        peers = []
        for name, remote, options, shape in VARIANTS:
            options = dict(options, num_cpus=0)
            if options.get("name"):
                options.update(name=f"peer-{len(peers)}", namespace=namespace)
            peers.append(remote.options(**options).remote(shape))
        cases = [(name, peer, None) for (name, *_), peer in zip(VARIANTS, peers)]
        cases.append(("sync, caller's ray.get with timeout=60", peers[0], 60.0))
        cases.append(("async, broker options, ray.get with timeout=60", peers[4], 60.0))
        results: dict[str, list[dict]] = {name: [] for name, _, _ in cases}
        for _ in range(args.rounds):
            for name, peer, timeout_s in cases:
                results[name].append(ray.get(caller.measure.remote(peer, args.seconds, timeout_s)))
        print(f"{'peer':55} {'ms/call':>8} {'MB/s':>8}  (median of {args.rounds} rounds of {args.seconds}s)")
        for name, figures in results.items():
            print(f"{name:55} {statistics.median(f['ms_per_call'] for f in figures):8.3f} "
                  f"{statistics.median(f['mb_per_s'] for f in figures):8.1f}")
    finally:
        ray.shutdown()


if __name__ == "__main__":
    main()
