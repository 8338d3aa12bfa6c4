"""raykafka through its own Python API: the producer and consumer (Ray calls to the brokers), and a
follower's catch-up (a broker stopped, a backlog produced, the broker started again and timed by
its fetchers' own clock from their first Fetch of the topic to their last append of its records).

The clients take the settings confluent-kafka gets in ``_wire`` where the Python API has the same
Kafka key, so the two clients are measured alike.
"""
from __future__ import annotations

import time

import ray

from benchmarks._wire import read_figures, reading
from orchestration.admin.wait import wait_until

TIMEOUT_S = 600
PRODUCER = {"linger.ms": "5", "batch.size": "1000000", "enable.idempotence": "false"}
CONSUMER = {"fetch.max.bytes": "52428800", "max.partition.fetch.bytes": "10485760", "max.poll.records": "100000",
            "auto.offset.reset": "earliest", "enable.auto.commit": "false"}
CATCH_UP_POLL_S = 0.05


def produce(cluster, topic: str, partitions: int, records: int, size: int, acks: str, progress: list[int]) -> dict:
    """Send ``records`` values of ``size`` bytes round-robin over the partitions; the time runs
    from the first send to the end of ``flush``. ``progress[0]`` counts completed sends."""
    producer = cluster.producer({**PRODUCER, "acks": acks})
    value = b"x" * size
    failed = []

    def done(future) -> None:
        if future.exception() is None:
            progress[0] += 1
        else:
            failed.append(future.exception())
    try:
        started = time.perf_counter()
        for i in range(records):
            producer.send(topic, value=value, partition=i % partitions).add_done_callback(done)
        producer.flush(timeout=TIMEOUT_S)
        seconds = time.perf_counter() - started
    finally:
        producer.close(timeout=60)
    return {"records": progress[0], "failed": len(failed), "seconds": seconds}


def consume(cluster, topic: str, partitions: int, records: int, progress: list[int], how: str = "poll") -> dict:
    """Read ``records`` records from offset 0 of every partition; timed as ``_wire.read_figures``
    says. ``how``: ``poll`` (one ``ConsumerRecord`` per record), ``batches`` (``poll_batches``:
    whole v2 batches, counted from their headers, values not read) or ``arrow`` (``poll_arrow``:
    one Arrow table per poll, values counted from its value column)."""
    import pyarrow.compute as pc
    consumer = cluster.consumer(CONSUMER)
    assigned = [(topic, p) for p in range(partitions)]
    consumer.assign(assigned)
    consumer.end_offsets(assigned)  # metadata and the leaders found before the clock starts
    for partition in assigned:  # a new topic's log start: no ListOffsets inside the timing
        consumer.seek(partition, 0)
    value_bytes, started, first = 0, time.perf_counter(), None
    last_progress = (started, 0)
    try:
        while progress[0] < records and reading(started, last_progress):
            if how == "batches":
                batches = [b for per_partition in consumer.poll_batches(timeout_ms=1000).values()
                           for b in per_partition]
                progress[0] += sum(b.record_count for b in batches)
                value_bytes += sum(len(b.data) for b in batches)  # batch bytes: headers included
            elif how == "arrow":
                table = consumer.poll_arrow(timeout_ms=1000)
                progress[0] += table.num_rows
                value_bytes += pc.sum(pc.binary_length(table.column("value"))).as_py() or 0
            else:
                batch = consumer.poll(timeout_ms=1000)
                progress[0] += len(batch)
                value_bytes += sum(len(record.value) for record in batch)
            if first is None and progress[0]:
                first = (time.perf_counter(), progress[0])
            if progress[0] > last_progress[1]:
                last_progress = (time.perf_counter(), progress[0])
        finished = time.perf_counter()
    finally:
        consumer.close()
    return read_figures(progress[0], value_bytes, started, first, finished)


def end_offsets(cluster, topic: str) -> int:
    """The sum of the partitions' high watermarks: how many records a read from the start gets."""
    return sum(p.high_watermark for p in cluster.describe_topic(topic))


def create_topic(cluster, topic: str, partitions: int, replication_factor: int) -> None:
    config = {"min.insync.replicas": str(min(2, replication_factor))}
    cluster.create_topic(topic, partitions=partitions, replication_factor=replication_factor, config=config)
    wait_until(lambda: all(len(p.isr) == replication_factor for p in cluster.describe_topic(topic)), 60,
               f"every partition of {topic!r} with its full ISR")


def wait_replicated(cluster, topic: str) -> None:
    """Wait until every partition of ``topic`` has its full ISR and its high watermark at its log
    end, so that a point starts with nothing left to replicate: after an acks=1 or acks=0 point the
    followers may still be copying its records, and the next point would pay for that copy."""
    wait_until(lambda: all(len(p.isr) == len(p.replicas) and p.high_watermark == p.log_end_offset
                           for p in cluster.describe_topic(topic)), TIMEOUT_S,
               f"every replica of {topic!r} to hold the whole log")


class CatchUp:
    """A topic whose every partition has a follower on the last broker, that follower stopped
    while a backlog is produced (``prepare``), then started again and timed (``run``)."""

    def __init__(self, cluster, topic: str, partitions: int) -> None:
        self.cluster, self.topic, self.partitions = cluster, topic, partitions
        self.follower = cluster.broker_ids[-1]
        self.leaders = [b for b in cluster.broker_ids if b != self.follower]
        self.end = 0
        self._fetchers = None  # the follower's fetchers, once they follow every partition of the topic

    def prepare(self, records: int, size: int) -> dict:
        """Stop the follower, produce the backlog with acks=1; returns the produce's figures."""
        assignment = [[self.leaders[p % len(self.leaders)], self.follower] for p in range(self.partitions)]
        self.cluster.create_topic(self.topic, assignment=assignment, config={"min.insync.replicas": "1"})
        wait_until(lambda: all(len(p.isr) == 2 for p in self.cluster.describe_topic(self.topic)), 60,
                   f"every partition of {self.topic!r} with its follower in the ISR")
        self.cluster.controlled_shutdown(self.follower)
        produced = produce(self.cluster, self.topic, self.partitions, records, size, "1", [0])
        self.end = sum(p.log_end_offset for p in self.cluster.describe_topic(self.topic))
        return produced

    def restart(self) -> float:
        """Start the follower again; returns once it has registered, with the seconds it took."""
        started = time.perf_counter()
        self.cluster.restart_broker(self.follower)
        return time.perf_counter() - started

    def run(self, progress: list[int]) -> dict:
        """Sample the follower's fetchers until they have appended everything up to the leaders'
        log end offsets. The rate is timed by the fetchers' own clock, from the first Fetch that
        named the topic to the return of the last append that carried its records, as a consume
        is timed from its first poll to its last record; the sampling (every CATCH_UP_POLL_S)
        only says when to look, so its period is no error in the figure. ``seconds_total`` is
        from the restart's end to the sample that saw the end."""
        started = time.perf_counter()
        deadline = started + TIMEOUT_S
        times: list[dict] = []
        while time.perf_counter() < deadline:
            progress[0], times = self._fetcher_progress()
            if progress[0] >= self.end:
                break
            time.sleep(CATCH_UP_POLL_S)
        finished = time.perf_counter()
        firsts = [t["first_fetch_s"] for t in times if t["first_fetch_s"] is not None]
        lasts = [t["last_records_append_s"] for t in times if t["last_records_append_s"] is not None]
        if progress[0] < self.end or not firsts or not lasts:
            return {"records": progress[0], "failed": self.end - progress[0], "seconds": finished - started,
                    "timed_records": 0, "timed_seconds": 0.0, "seconds_total": finished - started}
        # Each fetcher's own window from the first one's first Fetch (seconds, start and end), and
        # its Fetches and appends of the topic: a fetcher started late (one per leader broker)
        # shows here, and its wait counts in the figure.
        windows = [[round(t["first_fetch_s"] - min(firsts), 4), round(t["last_records_append_s"] - min(firsts), 4),
                    t["fetches"], t["appends"]]
                   for t in times if t["first_fetch_s"] is not None and t["last_records_append_s"] is not None]
        return {"records": progress[0], "failed": 0, "seconds": finished - started,
                "timed_records": self.end, "timed_seconds": max(lasts) - min(firsts),
                "seconds_total": finished - started, "fetcher_windows_s": windows}

    def _fetcher_progress(self) -> tuple[int, list[dict]]:
        """(the sum of the fetch offsets of the topic's partitions over the follower's fetchers,
        and each fetcher's times for the topic). The follower broker is asked for its fetchers only
        until they follow every partition of the topic: a sample then costs the measured broker
        nothing (handing out actor handles is not cheap, and it shares two cores with the copy)."""
        if self._fetchers is None:
            fetchers = ray.get(self.cluster.broker(self.follower).fetchers.remote(), timeout=30)
            handles = [entry["actor"] for entry in fetchers.values()]
        else:
            handles = self._fetchers
        described = ray.get([handle.describe.remote() for handle in handles], timeout=30)
        prefix = f"{self.topic}-"
        offsets = [max(0, state["fetch_offset"]) for d in described for name, state in d["partitions"].items()
                   if name.startswith(prefix) and name[len(prefix):].isdigit()]
        if len(offsets) == self.partitions:
            self._fetchers = handles
        return sum(offsets), [d["topic_times"][self.topic] for d in described if self.topic in d["topic_times"]]
