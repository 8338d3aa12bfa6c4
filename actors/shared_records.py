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

No Ray import here: the put and the get are passed in, so that the unit tests need no Ray.
"""
from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import numpy as np

from actors.core.fetcher.follower_messages import FollowerAppendRequest

# Answers whose records come to at least this many bytes travel as one object in Ray's shared
# memory, which the reader maps without a copy (Ray inlines small objects, where a copy is cheap).
ZERO_COPY_THRESHOLD_BYTES = 100 * 1024


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
