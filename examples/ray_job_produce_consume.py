"""A Ray job that uses a raykafka cluster started by ``raykafka cluster start``: it connects to the
cluster by its namespace, creates a topic if it is missing, produces records with acks=all and
reads them back with a consumer group, then prints one JSON line with what it did.

Submit it to the Ray cluster the raykafka cluster runs on (see "A Ray job" in docs/python-api.md):

    ray job submit --working-dir . -- python examples/ray_job_produce_consume.py --namespace demo

Inside a Ray job ``address="auto"`` finds the job's Ray cluster; ``Cluster.connect`` then reaches the
detached controller and brokers by name in the namespace. ``close`` disconnects and leaves the
cluster running.
"""
from __future__ import annotations

import argparse
import json
import time

from orchestration import Cluster
from orchestration.errors import KafkaError


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--namespace", default="raykafka", help="the raykafka cluster's Ray namespace")
    parser.add_argument("--address", default="auto", help="the Ray cluster (auto inside a Ray job)")
    parser.add_argument("--topic", default="job-events")
    parser.add_argument("--records", type=int, default=100)
    args = parser.parse_args()

    cluster = Cluster.connect(namespace=args.namespace, address=args.address)
    try:
        try:
            cluster.create_topic(args.topic, partitions=3, replication_factor=min(3, len(cluster.broker_ids)))
        except KafkaError as exc:
            if exc.name != "TOPIC_ALREADY_EXISTS":
                raise
        producer = cluster.producer({"acks": "all"})
        run = f"{time.time_ns()}"
        futures = [producer.send(args.topic, key=f"{i}".encode(), value=f"{run}:{i}".encode())
                   for i in range(args.records)]
        producer.flush(timeout=120)
        acknowledged = [f.result(timeout=60) for f in futures]

        consumer = cluster.consumer({"group.id": f"job-{run}", "auto.offset.reset": "earliest"})
        consumer.subscribe([args.topic])
        mine = set()
        deadline = time.monotonic() + 120
        while len(mine) < args.records and time.monotonic() < deadline:
            for record in consumer.poll(timeout_ms=1000):
                if record.value.decode().startswith(f"{run}:"):
                    mine.add(record.value)
        consumer.commit()
        print(json.dumps({"topic": args.topic, "produced": len(acknowledged), "consumed": len(mine),
                          "partitions": sorted({m.partition for m in acknowledged})}))
        if len(mine) != args.records:
            raise SystemExit(f"read back {len(mine)} of {args.records} records")
    finally:
        cluster.close()


if __name__ == "__main__":
    main()
