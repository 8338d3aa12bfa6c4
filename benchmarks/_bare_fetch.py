"""A bare Fetch: the consumer's own Fetch call to the leader broker, bytes only, no decoding.

A client actor (as a follower's fetcher is one) reads each partition of a topic from offset 0 to
its high watermark with Fetch requests of ``fetch.max.bytes`` (the payload its Ray ceiling moves),
counting the record bytes that come back and moving its offset past the last whole batch. Beside
Ray's transfer of the same payload size, it shows what the broker's Fetch path costs over Ray's
own; ``poll`` adds the consumer's decoding on top.
"""
from __future__ import annotations

import sys
import time

import ray
from ray import cloudpickle

# The actor travels to Ray's workers by value: a worker need not have benchmarks/ on its path.
cloudpickle.register_pickle_by_value(sys.modules[__name__])

FETCH_BYTES = 1024 * 1024
TIMEOUT_S = 600


@ray.remote(num_cpus=0)
class _BareFetcher:
    def read(self, namespace: str, broker_ids: list[int], topic: str, ends: dict[int, int], max_bytes: int) -> dict:
        from actors.core.messages.fetch import FetchPartition, FetchRequest, FetchTopic
        from actors.codecs.record_batches import next_offset_after
        from orchestration.clients.broker_directory import BrokerDirectory
        directory = BrokerDirectory(namespace=namespace, bootstrap_broker_ids=broker_ids)
        leaders = {partition: directory.broker(directory.leader_for(topic, partition)[0]) for partition in ends}

        def fetch(partition: int, offset: int):
            request = FetchRequest(max_wait_ms=0, min_bytes=1, max_bytes=max_bytes, topics=(FetchTopic(
                topic=topic, partitions=(FetchPartition(partition=partition, fetch_offset=offset,
                                                        partition_max_bytes=max_bytes),)),))
            return ray.get(leaders[partition].handle.remote(request), timeout=60).responses[0].partitions[0]
        for partition in leaders:  # the first call to each leader sets up its connection: outside the timing
            fetch(partition, 0)
        moved, calls = 0, 0
        started = time.perf_counter()
        for partition, end in sorted(ends.items()):
            offset = 0
            while offset < end and time.perf_counter() < started + TIMEOUT_S:
                data = fetch(partition, offset)
                calls += 1
                records_bytes = len(data.records)
                moved += records_bytes
                if records_bytes:
                    offset = next_offset_after(data.records, offset)
        return {"bytes": moved, "calls": calls, "seconds": time.perf_counter() - started}


def bare_fetch(cluster, topic: str, partitions: int, progress: list[int], max_bytes: int = FETCH_BYTES) -> dict:
    """Read the topic once through bare Fetch calls from a client actor; ``records`` is the record
    count the fetched range holds (its high watermarks), ``bytes`` the batch bytes fetched."""
    ends = {p.partition: p.high_watermark for p in cluster.describe_topic(topic)}
    fetcher = _BareFetcher.remote()
    try:
        figures = ray.get(fetcher.read.remote(cluster.namespace, list(cluster.broker_ids), topic, ends, max_bytes),
                          timeout=TIMEOUT_S + 60)
    finally:
        ray.kill(fetcher)
    progress[0] = sum(ends.values())
    return {"records": sum(ends.values()), "bytes": figures["bytes"], "calls": figures["calls"],
            "seconds": figures["seconds"]}
