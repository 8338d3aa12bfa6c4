"""What one replication round costs on Ray: bare actors beside raykafka's own rounds.

A follower's replication round in raykafka is two Ray actor calls its replica fetcher makes: a
Fetch to the leader broker, answered with the records (100 KiB or more as one object in Ray's
shared memory, the answer carrying its reference; less, inline bytes: actors/shared_records.py),
and a FollowerAppend to its own broker, which resolves the object and writes the records to its
log. An acks=all write is answered once each follower's next Fetch shows it holds it. Whatever
raykafka does around them, a round costs at least what Ray charges for those two calls and that
object. This program measures that floor and raykafka's rounds against it, in one run.

``bare``: three async actors on this run's local Ray (2 CPUs), a leader, a fetcher and a
follower, one round in flight, ``--seconds`` per payload size and shape. The leader packs its
payload with raykafka's own ``pack_together``; the fetcher hands the follower a
``FollowerAppendRequest`` of it; the follower resolves it with raykafka's
``resolve_shared_records`` and appends the bytes to a file (a new file every 64 MiB, the old one
removed, as a log rolls and retention deletes). Shapes:

- ``ray``: both legs Ray calls, as raykafka's shells make them.
- ``socket-append``: the Fetch leg the same; the append leg over raykafka's local channel
  (actors/broker_channel.py: a Unix socket, the same ``FollowerAppendRequest`` pickled, records
  out of band; the fetcher reads an object's records into it first).
- ``sockets``: both legs over raykafka's channels, as raykafka's fetchers send them now: a Fetch
  over TCP to the leader's fetch channel, whose answer's records come out of band (a uint8 array
  from a quarter of Ray's inline limit up, bytes below), and the append over the local channel.

Per (shape, size): ms per round (wall) and CPU ms per round, summed over the three actors'
processes, the raylet and the GCS (each process's thread run time from /proc).

``raykafka``: a 3-broker cluster with the throughput benchmark's settings; per ``--partitions``
count, a topic at RF=1 and one at RF=3 (``min.insync.replicas`` 2), each written ``--megabytes``
of 1 KiB records by confluent-kafka with acks=all (the RF=3 one after a first acks=all write to
each partition, so every follower is fetching before the clock starts). The replica fetchers
count the Fetch calls naming the topic (``describe``); each is one round. The replication's CPU
is the RF=3 write's CPU less the RF=1 write's (brokers, fetchers, raylet and GCS): what the
followers' copies added to the same write. Per point: rounds, MB per round (both followers'),
replication CPU ms per round, and the floor at that round size (interpolated linearly between the
sizes measured) with raykafka ÷ floor: the floor of ``--floor-shape``, by default ``sockets``,
the carriers raykafka's rounds use unless ``raykafka.replica.fetch.channel.enable`` is false
(then ``ray`` is the shape to set them against).

The Ray it starts is raykafka's local Ray (orchestration/admin/ray_runtime.py), which hands
objects of up to 2 MiB over inline; ``RAY_max_direct_call_object_size=102400`` in the environment
runs it with Ray's default instead, for the same comparison. It prints a table and saves JSON;
it asserts nothing about speed.

    python benchmarks/replication_round.py [--sizes 1KiB,64KiB,256KiB,1MiB,4MiB,16MiB]
        [--shapes ray,socket-append,sockets] [--floor-shape sockets] [--seconds 3] [--partitions 1,8,64]
        [--megabytes 48] [--no-raykafka]
"""
from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import sys
import tempfile
import time
import uuid

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import numpy as np  # noqa: E402
import ray  # noqa: E402

from actors.core.fetcher.follower_messages import FollowerAppendPartition, FollowerAppendRequest  # noqa: E402
from actors.broker_channel import ChannelClient, ChannelServer  # noqa: E402
from actors.core.messages.fetch import FetchPartition, FetchRequest, FetchTopic  # noqa: E402
from actors.shared_records import (  # noqa: E402
    ZERO_COPY_THRESHOLD_BYTES, pack_together, ray_inline_bytes_max, resolve_shared_records, zero_copy_threshold_bytes,
)
from benchmarks._common import default_out, save_results  # noqa: E402

SHAPES = ("ray", "socket-append", "sockets")
DEFAULT_SIZES = "1KiB,64KiB,256KiB,1MiB,4MiB,16MiB"
RECORD_BYTES = 1024
ROLL_BYTES = 64 * 1024 * 1024  # the bare follower's file is replaced past this, as a log rolls
UNITS = {"kib": 1024, "mib": 1024 * 1024, "b": 1}


def parse_size(text: str) -> int:
    """``64KiB`` -> 65536; a bare number is bytes."""
    lowered = text.strip().lower()
    for unit, factor in UNITS.items():
        if lowered.endswith(unit) and lowered[:-len(unit)].strip().isdigit():
            return int(lowered[:-len(unit)]) * factor
    if lowered.isdigit():
        return int(lowered)
    raise ValueError(f"not a size: {text!r} (e.g. 64KiB, 1MiB, 512)")


def floor_at(size: float, measured: list[tuple[int, float]]) -> float | None:
    """The floor at ``size`` bytes from (size, value) points: linear between the two measured
    sizes around it, the nearest end's value outside them; None with nothing measured."""
    points = sorted(measured)
    if not points:
        return None
    if size <= points[0][0]:
        return points[0][1]
    for (low, low_value), (high, high_value) in zip(points, points[1:]):
        if size <= high:
            return low_value + (high_value - low_value) * (size - low) / (high - low)
    return points[-1][1]


def round_figures(*, bytes_written: int, followers: int, rounds: int, cpu_rf3_s: float, cpu_rf1_s: float,
                  seconds: float, floor: list[tuple[int, float]]) -> dict:
    """One raykafka point's per-round figures: what the followers copied per round, the CPU the
    copies added per round, and that ÷ the bare floor at the same round size."""
    if rounds <= 0:
        return {"rounds": rounds, "mb_per_round": None, "replication_cpu_ms_per_round": None,
                "floor_cpu_ms_per_round": None, "ratio_to_floor": None, "rounds_per_s": 0.0}
    per_round = bytes_written * followers / rounds
    added_ms = (cpu_rf3_s - cpu_rf1_s) * 1000 / rounds
    at_floor = floor_at(per_round, floor)
    return {"rounds": rounds, "mb_per_round": round(per_round / 1e6, 3),
            "replication_cpu_ms_per_round": round(added_ms, 2),
            "floor_cpu_ms_per_round": None if at_floor is None else round(at_floor, 2),
            "ratio_to_floor": round(added_ms / at_floor, 2) if at_floor else None,
            "rounds_per_s": round(rounds / seconds, 1) if seconds > 0 else None}


def bare_table(rows: list[dict]) -> list[str]:
    lines = [f"{'shape':<14} {'payload':>10} {'rounds':>7} {'ms/round':>9} {'CPU ms/round':>13} {'MB/s':>8}"]
    for row in rows:
        lines.append(f"{row['shape']:<14} {row['size_bytes']:>10,} {row['rounds']:>7} {row['ms_per_round']:>9.2f} "
                     f"{row['cpu_ms_per_round']:>13.2f} {row['mb_per_s']:>8.1f}")
    return lines


def raykafka_table(rows: list[dict]) -> list[str]:
    def cell(value, spec):
        return format(value, spec) if value is not None else "-"
    lines = [f"{'p':>3} {'RF=3 MB/s':>10} {'rounds':>7} {'MB/round':>9} {'repl. CPU ms/round':>19} "
             f"{'floor ms':>9} {'÷ floor':>8}"]
    for row in rows:
        lines.append(f"{row['partitions']:>3} {row['rf3_mb_per_s']:>10.1f} {row['rounds']:>7} "
                     f"{cell(row['mb_per_round'], '9.3f'):>9} {cell(row['replication_cpu_ms_per_round'], '19.2f'):>19} "
                     f"{cell(row['floor_cpu_ms_per_round'], '9.2f'):>9} {cell(row['ratio_to_floor'], '8.2f'):>8}")
    return lines


# ---------------------------------------------------------------------------------- bare actors
async def _resolve(ref):
    return await ref


def _serving(server: ChannelServer, listen) -> ChannelServer:
    """``server`` listening (``listen(server)``) and serving on the running loop, as a broker's are."""
    if not listen(server):
        raise RuntimeError("the channel cannot listen here")
    asyncio.get_running_loop().create_task(server.serve())
    return server


# A follower's Fetch as the ``sockets`` shape sends it to the bare leader's channel.
BARE_FETCH = FetchRequest(max_wait_ms=0, min_bytes=1, max_bytes=1 << 30, replica_id=2, topics=(
    FetchTopic(topic="t", partitions=(FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=1 << 30),)),))


@ray.remote(num_cpus=0)
class Leader:
    def __init__(self, size: int) -> None:
        self._payload = os.urandom(size)
        self._channel = None

    def pid(self) -> int:
        return os.getpid()

    async def fetch(self):
        # A log read gives new bytes each time; the leader packs them as its shell does.
        return pack_together([memoryview(self._payload)], ray.put)[0]

    async def _fetch_over_channel(self, request):
        # As a broker's driver packs a Fetch answer that goes over its fetch channel.
        if len(self._payload) < ZERO_COPY_THRESHOLD_BYTES:
            return self._payload
        return np.frombuffer(self._payload, dtype=np.uint8)

    async def serve(self) -> tuple[tuple, bytes]:
        """Listen on a fetch channel (TCP, loopback), as a broker does; its address and secret."""
        self._channel = _serving(ChannelServer("bare-leader", self._fetch_over_channel, (FetchRequest,)),
                                 lambda server: server.listen_tcp("127.0.0.1"))
        return self._channel.address, self._channel.secret

    def close(self) -> None:
        if self._channel is not None:
            self._channel.close()


@ray.remote(num_cpus=0)
class Follower:
    def __init__(self, directory: str) -> None:
        self._directory = directory
        self._file = None
        self._written = 0
        self._files = 0
        self._channel = None

    def pid(self) -> int:
        return os.getpid()

    def _append(self, data) -> int:
        if self._file is None or self._written >= ROLL_BYTES:
            if self._file is not None:
                os.close(self._file)
                os.unlink(os.path.join(self._directory, f"{self._files - 1}.log"))
            self._file = os.open(os.path.join(self._directory, f"{self._files}.log"),
                                 os.O_CREAT | os.O_WRONLY | os.O_APPEND, 0o644)
            self._files, self._written = self._files + 1, 0
        view = memoryview(data).cast("B")
        done = 0
        while done < len(view):
            done += os.write(self._file, view[done:])
        self._written += len(view)
        return len(view)

    async def append(self, request) -> int:
        request = await resolve_shared_records(request, _resolve)
        return sum(self._append(p.records) for p in request.partitions)

    async def serve(self) -> tuple[tuple, bytes]:
        """Listen on a local channel, as a broker does; its address and secret."""
        self._channel = _serving(ChannelServer("bare-follower", self.append, (FollowerAppendRequest,)),
                                 ChannelServer.listen_unix)
        return self._channel.address, self._channel.secret

    def close(self) -> None:
        if self._channel is not None:
            self._channel.close()
        if self._file is not None:
            os.close(self._file)


@ray.remote(num_cpus=0)
class Fetcher:
    def __init__(self, leader, follower) -> None:
        self._leader, self._follower = leader, follower
        self._channel = self._leader_channel = None

    def pid(self) -> int:
        return os.getpid()

    def connect(self, local: tuple[tuple, bytes], fetch: tuple[tuple, bytes] | None) -> None:
        self._channel = ChannelClient(*local)
        self._leader_channel = None if fetch is None else ChannelClient(*fetch)

    async def run(self, shape: str, seconds: float) -> dict:
        rounds, moved = 0, 0
        started = time.perf_counter()
        while time.perf_counter() - started < seconds:
            if shape == "sockets":
                records = await self._leader_channel.call(BARE_FETCH)
            else:
                records = await self._leader.fetch.remote()
                if shape != "ray" and not isinstance(records, bytes):
                    records = (await records.ref)[records.index]
            request = FollowerAppendRequest(partitions=(FollowerAppendPartition(
                topic="t", partition=0, current_leader_epoch=0, fetch_offset=0, records=records,
                leader_high_watermark=0),))
            if shape == "ray":
                moved += await self._follower.append.remote(request)
            else:
                moved += await self._channel.call(request)
            rounds += 1
        return {"rounds": rounds, "seconds": time.perf_counter() - started, "bytes": moved}

    def close(self) -> None:
        for channel in (self._channel, self._leader_channel):
            if channel is not None:
                channel.close()


def _ray_pids() -> list[int]:
    """The raylet's and the GCS's processes (what every call and object passes through)."""
    import psutil
    found = []
    for process in psutil.process_iter(["pid", "cmdline"]):
        command = " ".join(process.info["cmdline"] or [])
        if "raylet" in command.split(" ")[0] or "gcs_server" in command.split(" ")[0]:
            found.append(process.info["pid"])
    return found


def _cpu_s(pids: list[int]) -> float:
    from benchmarks._probe import process_cpu_seconds
    total = 0.0
    for pid in pids:
        try:
            total += process_cpu_seconds(pid)
        except (FileNotFoundError, ProcessLookupError):
            pass
    return total


def measure_bare(sizes: list[int], shapes: list[str], seconds: float, say=print) -> list[dict]:
    rows = []
    for size in sizes:
        directory = tempfile.mkdtemp(prefix="raykafka-round-")
        leader, follower = Leader.remote(size), Follower.remote(directory)
        fetcher = Fetcher.remote(leader, follower)
        try:
            if set(shapes) - {"ray"}:
                fetch_channel = ray.get(leader.serve.remote(), timeout=60) if "sockets" in shapes else None
                ray.get(fetcher.connect.remote(ray.get(follower.serve.remote(), timeout=60), fetch_channel),
                        timeout=60)
            pids = ray.get([a.pid.remote() for a in (leader, fetcher, follower)], timeout=60) + _ray_pids()
            ray.get(fetcher.run.remote(shapes[0], min(0.5, seconds)), timeout=120)  # warm: imports, first objects
            for shape in shapes:
                cpu_before = _cpu_s(pids)
                done = ray.get(fetcher.run.remote(shape, seconds), timeout=seconds + 120)
                cpu_s = _cpu_s(pids) - cpu_before
                row = {"shape": shape, "size_bytes": size, "rounds": done["rounds"],
                       "ms_per_round": round(done["seconds"] * 1000 / done["rounds"], 3),
                       "cpu_ms_per_round": round(cpu_s * 1000 / done["rounds"], 3),
                       "mb_per_s": round(done["bytes"] / 1e6 / done["seconds"], 1)}
                rows.append(row)
                say(bare_table([row])[1])
        finally:
            for actor in (fetcher, follower, leader):
                try:
                    ray.get(actor.close.remote(), timeout=30)
                except Exception:  # an actor that failed: its process goes with the kill below
                    pass
            for actor in (fetcher, follower, leader):
                ray.kill(actor)
            shutil.rmtree(directory, ignore_errors=True)
    return rows


# ----------------------------------------------------------------------------- raykafka's rounds
def _fetches_naming(cluster, topic: str) -> int:
    total = 0
    for broker_id in cluster.broker_ids:
        for entry in ray.get(cluster.broker(broker_id).fetchers.remote(), timeout=60).values():
            times = ray.get(entry["actor"].describe.remote(), timeout=60)["topic_times"].get(topic)
            if times:
                total += times["fetches"]
    return total


def measure_raykafka(partitions_list: list[int], megabytes: float, floor: list[tuple[int, float]],
                     say=print) -> list[dict]:
    from benchmarks import _python_api as api
    from benchmarks import _wire as wire
    from benchmarks._probe import raykafka_broker_pids
    from benchmarks.throughput import CLUSTER_CONFIG
    from orchestration import Cluster
    records = int(megabytes * 1024 * 1024 / RECORD_BYTES)
    rows = []
    with Cluster.start(brokers=3, config=CLUSTER_CONFIG) as cluster:
        for partitions in partitions_list:
            point = {"partitions": partitions}
            for rf in (1, 3):
                topic = f"round-p{partitions}-rf{rf}-{uuid.uuid4().hex[:6]}"
                api.create_topic(cluster, topic, partitions, rf)
                wire.first_acknowledged_writes(cluster.bootstrap_servers, topic, partitions)
                api.wait_replicated(cluster, topic)
                pids = raykafka_broker_pids() + _ray_pids()
                fetches_before = _fetches_naming(cluster, topic) if rf > 1 else 0
                cpu_before = _cpu_s(pids)
                figures = wire.produce(cluster.bootstrap_servers, topic, partitions, records, RECORD_BYTES, "all", [0])
                if figures.get("failed"):
                    raise RuntimeError(f"p={partitions} RF={rf}: {figures['failed']} records not acknowledged")
                api.wait_replicated(cluster, topic)  # the followers' last rounds counted too
                point[f"cpu_rf{rf}_s"] = _cpu_s(pids) - cpu_before
                point[f"rf{rf}_mb_per_s"] = round(figures["records"] * RECORD_BYTES / 1e6 / figures["seconds"], 1)
                if rf > 1:
                    point["rounds_measured"] = _fetches_naming(cluster, topic) - fetches_before
                    point["seconds"] = figures["seconds"]
                cluster.delete_topic(topic)
            point.update(round_figures(bytes_written=records * RECORD_BYTES, followers=2,
                                       rounds=point["rounds_measured"], cpu_rf3_s=point["cpu_rf3_s"],
                                       cpu_rf1_s=point["cpu_rf1_s"], seconds=point["seconds"], floor=floor))
            rows.append(point)
            say(raykafka_table([point])[1])
    return rows


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--sizes", default=DEFAULT_SIZES, help="bare round payload sizes")
    parser.add_argument("--shapes", default=",".join(SHAPES), help=f"bare round shapes, of {', '.join(SHAPES)}")
    parser.add_argument("--floor-shape", default="sockets", help="the bare shape raykafka's rounds are set against")
    parser.add_argument("--seconds", type=float, default=3.0, help="seconds per bare (shape, size)")
    parser.add_argument("--partitions", default="1,8,64", help="raykafka partition counts ('' for none)")
    parser.add_argument("--megabytes", type=float, default=48, help="MiB each raykafka write produces")
    parser.add_argument("--no-raykafka", action="store_true", help="the bare floor alone")
    parser.add_argument("--out", default=default_out("replication_round"))
    args = parser.parse_args(argv)
    try:
        args.sizes = sorted({parse_size(s) for s in args.sizes.split(",") if s.strip()})
    except ValueError as exc:
        parser.error(str(exc))
    args.shapes = [s.strip() for s in args.shapes.split(",") if s.strip()]
    if not args.sizes or not args.shapes or any(s not in SHAPES for s in args.shapes):
        parser.error(f"--sizes needs a size and --shapes one of {', '.join(SHAPES)}")
    if args.floor_shape not in args.shapes and not args.no_raykafka:
        parser.error(f"raykafka's rounds are set against the {args.floor_shape!r} shape's floor: keep it in --shapes")
    args.partitions = [] if args.no_raykafka else [int(p) for p in args.partitions.split(",") if p.strip()]
    if args.seconds <= 0 or args.megabytes <= 0 or any(p < 1 for p in args.partitions):
        parser.error("--seconds, --megabytes and --partitions must be positive")
    return args


def main(argv=None) -> int:
    from benchmarks.throughput import _start_ray
    args = parse_args(argv)
    owns_ray = _start_ray()
    try:
        inline_max = ray_inline_bytes_max()
        print(f"Ray hands objects of up to {inline_max:,} bytes over inline; a leader's answer travels as an object "
              f"from {zero_copy_threshold_bytes(inline_max):,} bytes of records")
        print("bare rounds: leader -> fetcher -> follower, one in flight")
        print(bare_table([])[0])
        bare = measure_bare(args.sizes, args.shapes, args.seconds)
        floor = [(row["size_bytes"], row["cpu_ms_per_round"]) for row in bare if row["shape"] == args.floor_shape]
        rounds = []
        if args.partitions:
            print(f"\nraykafka's rounds: RF=3 acks=all through confluent-kafka, less the same RF=1 write's CPU; "
                  f"the floor is the {args.floor_shape!r} shape's")
            print(raykafka_table([])[0])
            rounds = measure_raykafka(args.partitions, args.megabytes, floor)
    finally:
        if owns_ray:
            ray.shutdown()
    inline_max = ray_inline_bytes_max()  # as this run's Ray processes read it (they inherit this environment)
    when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    save_results(args.out, {"benchmark": "replication_round", "when": when,
                            "seconds_per_bare_point": args.seconds, "megabytes": args.megabytes,
                            "ray_inline_bytes_max": inline_max, "floor_shape": args.floor_shape,
                            "zero_copy_threshold_bytes": zero_copy_threshold_bytes(inline_max),
                            "bare": bare, "raykafka": rounds})
    return 0


if __name__ == "__main__":
    sys.exit(main())
