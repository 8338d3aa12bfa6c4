"""A leader's Fetch answer to a follower, its records as one Ray object.

A follower's fetch names many partitions. Put into Ray's object store one payload at a time, an
answer costs the leader one ``ray.put`` per partition, and the fetcher and the follower broker one
object reference each to register, pass on and resolve. So the leader puts the payloads of one
answer together (``pack_together``): one object, a list of uint8 arrays, which Ray stores out of
band (one copy into shared memory, none more on the follower's side, where they are mapped), and
each partition's records in the answer say where they lie in it (``SharedRecords``). The fetcher
hands them to its broker unread; the broker resolves each object once (``resolve_shared_records``)
and appends each partition's array as it appended a payload of its own.

Nothing changes per partition: a partition with an error or a diverging epoch carries no records
(it is not in the object), each partition's append is checked on its own, and the fetch offset
still moves only once the append is written. Small answers stay inline bytes, as before: Ray
copies them with the call, which costs less than an object would.

How small is small follows Ray's own limit for handing an object over inside a call's message
(``max_direct_call_object_size``, 100 KiB unless ``RAY_max_direct_call_object_size`` says
otherwise in the environment Ray's processes start with; raykafka's local Rays set 2 MiB,
orchestration/admin/ray_runtime.py). An answer whose payloads come to less than a quarter of that
limit travels inline (the rest of the answer fits beside them); a bigger one as one object. Inline
above Ray's limit would be worse than either: Ray would put the whole answer into the object store
itself, and the fetcher, reading it, would copy the bytes out, to be put in again for its append.
Measured on a 2-core machine (benchmarks/replication_round.py: bare Ray actors, one round in
flight, this module's packing): under Ray's default limit a round of 64 KiB (inline) took 2.3 ms
and 2.4 ms of CPU, one of 256 KiB (an object) 4.8 ms and 6.2 ms; with the limit at 2 MiB the 256
KiB round, inline, took 2.5 ms and 2.6 ms of CPU. Scratch runs of the same shape had 700 KB inline
at 3.3 ms of CPU against 6.0-6.9 ms as an object, and 2 MB inline no cheaper than an object.

No Ray import here: the put and the get are passed in, so that the unit tests need no Ray.
"""
from __future__ import annotations

import asyncio
import dataclasses
import os
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import numpy as np

from actors.core.fetcher.follower_messages import FollowerAppendRequest

# Ray's limit for an object handed over inside a call's message, and where a process finds it.
RAY_INLINE_BYTES_ENV = "RAY_max_direct_call_object_size"
RAY_INLINE_BYTES_DEFAULT = 100 * 1024  # Ray's own default
ZERO_COPY_THRESHOLD_MIN_BYTES = 100 * 1024


def ray_inline_bytes_max(environment=os.environ) -> int:
    """Ray's inline limit in this process: its environment's setting, else Ray's default."""
    try:
        limit = int(environment.get(RAY_INLINE_BYTES_ENV, RAY_INLINE_BYTES_DEFAULT))
    except ValueError:
        return RAY_INLINE_BYTES_DEFAULT
    return limit if limit > 0 else RAY_INLINE_BYTES_DEFAULT


def zero_copy_threshold_bytes(inline_bytes_max: int) -> int:
    """Answers whose records come to at least this many bytes travel as one object in Ray's shared
    memory, which the reader maps without a copy; smaller ones inline, where Ray's copy costs less
    than an object's put, get and reference counting: a quarter of Ray's inline limit, and never
    less than 100 KiB (Ray's default limit, where raykafka always drew the line)."""
    return max(ZERO_COPY_THRESHOLD_MIN_BYTES, inline_bytes_max // 4)


ZERO_COPY_THRESHOLD_BYTES = zero_copy_threshold_bytes(ray_inline_bytes_max())


@dataclasses.dataclass(frozen=True, slots=True)
class SharedRecords:
    """One partition's records in an answer's shared object: the ``index``-th array of the list
    that ``ref`` holds, ``size_bytes`` long. Its length is that size, so that whoever only counts
    the records (the fetcher: are there any?) need not resolve the object."""
    ref: Any
    index: int
    size_bytes: int

    def __len__(self) -> int:
        return self.size_bytes


def pack_together(payloads: Sequence[Any], put: Callable[[Any], Any]) -> list[Any]:
    """Each payload as it travels: all of them in one object (``put``) when they come to
    ``ZERO_COPY_THRESHOLD_BYTES`` or more, else each as bytes (a log read may be a view)."""
    if sum(len(p) for p in payloads) < ZERO_COPY_THRESHOLD_BYTES:
        return [p if isinstance(p, bytes) else bytes(p) for p in payloads]
    ref = put([np.frombuffer(p, dtype=np.uint8) for p in payloads])
    return [SharedRecords(ref, index, len(p)) for index, p in enumerate(payloads)]


async def resolve_shared_records(request: FollowerAppendRequest,
                                 get: Callable[[Any], Awaitable[list]]) -> FollowerAppendRequest:
    """``request`` with each ``SharedRecords`` replaced by its array, each object got once. A slice
    its object does not hold (a wrong index or size) is left as it is: the broker core answers
    that partition CORRUPT_MESSAGE, as for any records that are not bytes."""
    refs = list(dict.fromkeys(p.records.ref for p in request.partitions if isinstance(p.records, SharedRecords)))
    if not refs:
        return request
    objects = dict(zip(refs, await asyncio.gather(*(get(ref) for ref in refs))))

    def resolved(records: Any) -> Any:
        if not isinstance(records, SharedRecords):
            return records
        arrays = objects[records.ref]
        if not (isinstance(arrays, list) and 0 <= records.index < len(arrays)
                and len(arrays[records.index]) == records.size_bytes):
            return records
        return arrays[records.index]
    return FollowerAppendRequest(partitions=tuple(
        p if not isinstance(p.records, SharedRecords) else dataclasses.replace(p, records=resolved(p.records))
        for p in request.partitions))
