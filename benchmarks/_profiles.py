"""What a throughput run measures: its points, grouped into named profiles, narrowed by filters.

A point is one measurement: an operation (``produce``, ``consume``, ``fetch`` or ``catchup``), the client
that does it (``python``: raykafka's own producer and consumer through Ray; ``confluent``:
confluent-kafka over Kafka's wire protocol to the brokers' listeners; ``replica``: a follower's
fetcher, for catch-up), the topic's partitions and replication factor, the record size and, for a
produce, ``acks``. Every point is also measured, in the same run, against its ceilings (see
``throughput.py``).

The profiles (``PROFILES``) say which points a run has and how much data each moves:

- ``smoke``: the smallest run that still touches every kind of point once: 1 partition, 1 KiB
  records, both clients producing (RF=1 acks=1) and consuming, a bare fetch, the Python producer
  at RF=3 acks=all, one follower catch-up, and Kafka's perf tools once (RF=1 acks=1); 1 MiB per
  point, about 25 s, and about 40 s more with Apache Kafka. ``make test`` runs it and checks counts.
- ``default`` (``make bench``): every dimension at least once with its ceilings, about three
  minutes on a 2-core machine (161 s measured): at 1 partition and 1 KiB, both clients produce
  with acks 0/1/all at RF=1 and acks 1/all at RF=3, consume, a bare fetch, and a follower catches
  up; at 8 and 64
  partitions (1 KiB) and at 100 B and 10 KiB (1 partition), both clients produce (RF=1 acks=1, and
  RF=3 acks=all at 8 and 64 partitions) and consume, a bare fetch, and a follower catches up;
  48 MiB per point (at most 200,000 records); a catch-up copies what the Python consume point of
  its partitions and size reads (144 MiB at 1 partition and 1 KiB); Kafka's perf tools at 1
  partition RF=1 acks=1 and at 8 partitions RF=3 acks=all.
- ``full``: the whole cross product: both clients x 1/8/64 partitions x 100 B/1 KiB/10 KiB x
  (acks 0/1/all at RF=1, acks 1/all at RF=3, consume; a bare fetch for the Python API), and
  catch-up for each partitions x size; Kafka's perf tools at 1/8/64 partitions, RF=1 acks=1 and
  RF=3 acks=all; 64 MiB per point (at most 400,000 records). Not timed
  here yet; from the default run's pace, about half an hour.

The ``python`` client's ``fetch`` point is the consumer's own Fetch call to the broker actor, bytes
only (``_bare_fetch``), beside ``poll``, which also decodes. Its ``consume-batches`` and
``consume-arrow`` points read the same records as its ``consume`` point, with
``Consumer.poll_batches`` (whole v2 batches, no decoding) and ``Consumer.poll_arrow`` (Arrow
columns, no Python object per record): what the batch-level API buys over ``poll``.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

OPS = ("produce", "consume", "consume-batches", "consume-arrow", "fetch", "catchup")
# Not a point: Kafka's perf tools against raykafka and Apache Kafka (``PerfTest``); ``--ops`` names it too.
PERF_TEST_OP = "perf-test"
# The Python consumer's batch-level reads, each beside ``consume`` (``poll``) on the same data.
BATCH_CONSUME_OPS = ("consume-batches", "consume-arrow")
CLIENTS = ("python", "confluent")
PARTITIONS = (1, 8, 64)
SIZES = (100, 1024, 10240)
ACKS = ("0", "1", "all")
MIB = 1024 * 1024


@dataclass(frozen=True, order=True)
class Point:
    op: str
    client: str
    partitions: int
    record_bytes: int
    acks: str = "-"
    replication_factor: int = 1

    @property
    def label(self) -> str:
        size = f"{self.record_bytes // 1024}KiB" if self.record_bytes >= 1024 else f"{self.record_bytes}B"
        what = {"produce": f"produce RF={self.replication_factor} acks={self.acks}",
                "consume": f"consume RF={self.replication_factor}",
                "consume-batches": f"consume poll_batches RF={self.replication_factor}",
                "consume-arrow": f"consume poll_arrow RF={self.replication_factor}",
                "fetch": f"bare fetch RF={self.replication_factor}",
                "catchup": f"catch-up RF={self.replication_factor}"}[self.op]
        return f"{what} {self.client} p={self.partitions} {size}"


@dataclass(frozen=True, order=True)
class PerfTest:
    """A run of Kafka's own ``kafka-producer-perf-test`` into a fresh topic, then
    ``kafka-consumer-perf-test`` reading it back, against raykafka and against Apache Kafka."""
    partitions: int
    record_bytes: int
    replication_factor: int = 1
    acks: str = "1"

    @property
    def label(self) -> str:
        size = f"{self.record_bytes // 1024}KiB" if self.record_bytes >= 1024 else f"{self.record_bytes}B"
        return f"perf-test RF={self.replication_factor} acks={self.acks} p={self.partitions} {size}"


@dataclass(frozen=True)
class Profile:
    name: str
    points: tuple[Point, ...]
    megabytes: float  # moved by each point
    records_max: int  # per point, so that 100 B records do not take all the time
    ceiling_seconds: float  # each Ray transfer ceiling is timed this long
    perf_tests: tuple[PerfTest, ...] = ()  # each moves as many records as a point of its record size


def _produce_consume(client: str, partitions: int, size: int, produce: list[tuple[int, str]]) -> list[Point]:
    points = [Point("produce", client, partitions, size, acks, rf) for rf, acks in produce]
    points.append(Point("consume", client, partitions, size, "-", 1))
    if client == "python":  # whole batches and Arrow columns, and the consumer's Fetch call alone, beside poll
        points += [Point(op, client, partitions, size, "-", 1) for op in BATCH_CONSUME_OPS]
        points.append(Point("fetch", client, partitions, size, "-", 1))
    return points


def _catchup(partitions: int, size: int) -> Point:
    return Point("catchup", "replica", partitions, size, "1", 2)


def _smoke() -> list[Point]:
    points = []
    for client in CLIENTS:
        points += _produce_consume(client, 1, 1024, [(1, "1")])
    return points + [Point("produce", "python", 1, 1024, "all", 3), _catchup(1, 1024)]


def _default() -> list[Point]:
    every_acks = [(1, "0"), (1, "1"), (1, "all"), (3, "1"), (3, "all")]
    points = []
    for client in CLIENTS:
        points += _produce_consume(client, 1, 1024, every_acks)
        for partitions in (8, 64):
            points += _produce_consume(client, partitions, 1024, [(1, "1"), (3, "all")])
        for size in (100, 10240):
            points += _produce_consume(client, 1, size, [(1, "1")])
    return points + [_catchup(1, 1024), _catchup(8, 1024), _catchup(64, 1024), _catchup(1, 100),
                     _catchup(1, 10240)]


def _full() -> list[Point]:
    every_acks = [(1, "0"), (1, "1"), (1, "all"), (3, "1"), (3, "all")]
    points = [p for client in CLIENTS for partitions in PARTITIONS for size in SIZES
              for p in _produce_consume(client, partitions, size, every_acks)]
    return points + [_catchup(partitions, size) for partitions in PARTITIONS for size in SIZES]


PERF_TESTS = {"smoke": (PerfTest(1, 1024),),
              "default": (PerfTest(1, 1024), PerfTest(8, 1024, 3, "all")),
              "full": tuple(PerfTest(partitions, 1024, rf, acks) for partitions in PARTITIONS
                            for rf, acks in ((1, "1"), (3, "all")))}
PROFILES = {
    "smoke": Profile("smoke", tuple(_smoke()), megabytes=1, records_max=2_000, ceiling_seconds=0.2,
                     perf_tests=PERF_TESTS["smoke"]),
    "default": Profile("default", tuple(_default()), megabytes=48, records_max=200_000, ceiling_seconds=1.0,
                       perf_tests=PERF_TESTS["default"]),
    "full": Profile("full", tuple(_full()), megabytes=64, records_max=400_000, ceiling_seconds=2.0,
                    perf_tests=PERF_TESTS["full"]),
}


def select(profile: Profile, *, ops=None, clients=None, partitions=None, sizes=None, acks=None,
           replication_factors=None, megabytes=None) -> Profile:
    """The profile narrowed to the points every given filter admits (a filter left as None admits
    all); ``megabytes`` replaces the data each point moves."""
    def admitted(point: Point) -> bool:
        return ((ops is None or point.op in ops)
                and (clients is None or point.client in clients or point.op == "catchup")
                and (partitions is None or point.partitions in partitions)
                and (sizes is None or point.record_bytes in sizes)
                and (acks is None or point.op != "produce" or point.acks in acks)
                and (replication_factors is None or point.op == "catchup"
                     or point.replication_factor in replication_factors))
    def perf_admitted(test: PerfTest) -> bool:
        return ((ops is None or PERF_TEST_OP in ops) and (partitions is None or test.partitions in partitions)
                and (sizes is None or test.record_bytes in sizes) and (acks is None or test.acks in acks)
                and (replication_factors is None or test.replication_factor in replication_factors))
    chosen = tuple(p for p in profile.points if admitted(p))
    return replace(profile, points=chosen, megabytes=megabytes or profile.megabytes,
                   perf_tests=tuple(t for t in profile.perf_tests if perf_admitted(t)))


def records_for(profile: Profile, record_bytes: int) -> int:
    return max(1, min(profile.records_max, int(profile.megabytes * MIB) // record_bytes))


def parse_size(text: str) -> int:
    """``100``, ``100B``, ``1KiB``, ``1k``, ``10KiB`` -> bytes."""
    cleaned = text.strip().lower().removesuffix("ib").removesuffix("b")
    if cleaned.endswith("k"):
        return int(float(cleaned[:-1]) * 1024)
    return int(cleaned)
