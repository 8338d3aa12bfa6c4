"""Reading a topic back for a loss check: every partition from its start up to its high
watermark (and at least past the highest offset the test knows was acknowledged), however many
records that is.

Counting records instead (stop once as many were read as were acknowledged) ends too early when
the log holds duplicates, which a producer's retries may write, and then reports acknowledged
records as lost that were only not read yet.
"""
from __future__ import annotations

import time

READ_TIMEOUT_S = 120


def read_to_high_watermark(cluster, topic: str, partitions: int, *, at_least: dict[int, int] | None = None,
                           timeout_s: float = READ_TIMEOUT_S) -> dict[tuple[int, int], object]:
    """Every record of ``topic`` below each partition's end, keyed by (partition, offset).

    The end of a partition is its high watermark when the read starts, or ``at_least[partition]``
    when that is higher (a leader elected a moment ago may not have caught its high watermark up
    yet). Raises ``AssertionError`` naming the partitions it could not read to their end within
    ``timeout_s``, or the first offset the consumer returned twice."""
    consumer = cluster.consumer({"auto.offset.reset": "earliest", "enable.auto.commit": "false"})
    try:
        wanted = [(topic, partition) for partition in range(partitions)]
        consumer.assign(wanted)
        consumer.seek_to_beginning(wanted)
        ends = {tp: max(end, (at_least or {}).get(tp[1], 0)) for tp, end in consumer.end_offsets(wanted).items()}
        seen: dict[tuple[int, int], object] = {}
        deadline = time.monotonic() + timeout_s
        while True:
            short = {tp: (consumer.position(tp), end) for tp, end in ends.items() if consumer.position(tp) < end}
            if not short:
                return seen
            if time.monotonic() >= deadline:
                raise AssertionError(f"could not read {topic} to its end within {timeout_s}s: "
                                     + ", ".join(f"partition {p} at {at} of {end}" for (_, p), (at, end) in short.items()))
            for record in consumer.poll(timeout_ms=500):
                key = (record.partition, record.offset)
                assert key not in seen, f"the consumer returned {topic}-{key[0]} offset {key[1]} twice"
                seen[key] = record
    finally:
        consumer.close()
