"""The Spark load job on a Ray cluster of several hosts, run from inside the head's host (network
namespace) by tests/integration/test_multihost_spark.py: ``raykafka load run``'s own
``run_workload`` joins the cluster at ``RAY_ADDRESS``, starts one broker per host, Spark with two
one-CPU executors spread over the Ray nodes (``SPREAD``, as its default sizing for a cluster of
several nodes), and a small load through librdkafka (producers and consumers) to the brokers'
advertised listeners. Prints one JSON line: the counts, the checker's verdict,
the bootstrap servers, and where Spark's executors and each client ran.

Usage: python multihost_spark_load.py OUTPUT_DIR
"""
from __future__ import annotations

import json
import os
import sys

from orchestration.spark.pipeline import run_workload
from orchestration.spark.session import SparkSizing
from orchestration.spark.workload import parse_workload

# Small: two producers and two consumers (one group), 600 records with acks=all on RF=3.
WORKLOAD = {"name": "multihost-spark", "client": "confluent-kafka", "consumerClient": "confluent-kafka",
            "topics": 1, "partitionsPerTopic": 3, "messageSize": 128, "keyDistributor": "KEY_ROUND_ROBIN",
            "producersPerTopic": 2, "producerRate": 0, "subscriptionsPerTopic": 1, "consumerPerSubscription": 2,
            "recordCount": 600, "brokers": 3, "replicationFactor": 3, "acks": "all", "min.insync.replicas": 2,
            "producerConfig": {"linger.ms": 5}, "consumeTimeoutSeconds": 90}
# Two executors of two task slots: the four clients run at once, on at least two hosts.
SIZING = SparkSizing(num_executors=2, executor_cpus=1.0, task_slots=2, executor_memory="512m",
                     placement_strategy="SPREAD")


def main(output_dir: str) -> dict:
    lines: list[str] = []

    def out(line: str) -> None:
        lines.append(line)
        print(line, file=sys.stderr, flush=True)

    result = run_workload(parse_workload(WORKLOAD), address=os.environ["RAY_ADDRESS"], output_dir=output_dir,
                          show_progress=False, spark_sizing=SIZING, out=out)
    summary = result.summary
    return {"acknowledged": result.acknowledged, "in_summary": summary["produce"]["acknowledged"],
            "sent": summary["produce"]["sent"], "consumed": result.consumed, "lost": result.lost,
            "valid": result.report.valid, "anomalies": {k: v for k, v in result.report.counts.items() if v},
            "bootstrap_servers": summary["bootstrap_servers"], "executors": summary["executors"],
            "clients": summary["clients"], "spark_startup_s": result.spark_startup_s, "output": lines}


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1])))
