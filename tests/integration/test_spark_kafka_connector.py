"""Spark's own Kafka source and sink on a RayDP session against a raykafka cluster: records written
with headers by ``df.write.format("kafka")`` and by ``write_topic`` read back the same through
``spark.read.format("kafka")`` and ``read_topic``, and the streaming workload (readStream ->
count and sum per key -> writeStream) run across a leader kill ends with every key's totals equal
to the input topic's and every acknowledged record in it."""
from __future__ import annotations

import pytest

from orchestration.chaos.runner import FAST_FAILOVER_CONFIG
from orchestration.spark.kafka_connector import kafka_options
from orchestration.spark.session import RayTarget, SparkOnRay, SparkSizing, check_java
from orchestration.spark.streaming import run_streaming
from orchestration.spark.topics import read_topic, write_topic
from orchestration.spark.workload import parse_workload
from tests.support.clusters import running_cluster

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

STREAMING_WORKLOAD = {"name": "stream-kill", "job": "streaming-aggregate", "topics": 1, "partitionsPerTopic": 2,
                      "recordCount": 600, "producerRate": 150, "acks": "all", "min.insync.replicas": 2,
                      "consumeTimeoutSeconds": 120,
                      "faults": [{"after_acks": 200, "do": "kill", "target": "leader", "restart": True,
                                  "wait_for": "new-leader"}]}


@pytest.fixture(scope="module")
def cluster(ray_session, tmp_path_factory):
    with running_cluster(tmp_path_factory, config=FAST_FAILOVER_CONFIG) as started:
        yield started


@pytest.fixture(scope="module")
def spark_on_ray(ray_session):
    try:
        check_java()
    except Exception as exc:
        pytest.skip(f"no Java 17: {exc}")
    from orchestration.spark.kafka_connector import unavailable_reason
    if unavailable_reason():
        pytest.skip(unavailable_reason())
    session = SparkOnRay.start("raykafka-test-connector", SparkSizing(num_executors=1, executor_cpus=1.0, task_slots=4),
                               kafka_connector=True)
    try:
        yield session
    finally:
        session.stop()


def test_records_with_headers_read_back_through_sparks_kafka_source_and_read_topic(spark_on_ray, cluster):
    from pyspark.sql import functions as F
    spark, options = spark_on_ray.spark, kafka_options(cluster)
    cluster.create_topic("headers", partitions=2, replication_factor=3, config={"min.insync.replicas": "2"})
    rows = spark.range(40).select(
        F.concat(F.lit("k-"), (F.col("id") % 4).cast("string")).alias("key"), F.col("id").cast("string").alias("value"),
        F.array(F.struct(F.lit("origin").alias("key"), F.lit("spark").cast("binary").alias("value")),
                F.struct(F.lit("n").alias("key"), F.col("id").cast("string").cast("binary").alias("value")))
        .alias("headers"))
    rows.write.format("kafka").options(**options).option("topic", "headers").save()
    written = spark.createDataFrame([("ray-1", "r1", [("origin", b"ray")])],
                                    "key string, value string, headers array<struct<key:string,value:binary>>")
    assert write_topic(written, RayTarget.of(cluster), "headers", {"acks": "all"}).records == 1

    read = (spark.read.format("kafka").options(**options).option("subscribe", "headers")
            .option("includeHeaders", "true").load())
    assert dict(read.dtypes)["headers"] == "array<struct<key:string,value:binary>>"
    got = {bytes(r.value).decode(): [(h.key, bytes(h.value)) for h in r.headers] for r in read.collect()}
    assert got == {**{str(i): [("origin", b"spark"), ("n", str(i).encode())] for i in range(40)},
                   "r1": [("origin", b"ray")]}
    native = read_topic(spark, RayTarget.of(cluster), "headers", include_headers=True)
    assert {bytes(r.value).decode(): [(h.key, bytes(h.value)) for h in r.headers] for r in native.collect()} == got


def test_a_streaming_aggregation_across_a_leader_kill_totals_every_input_record(spark_on_ray, cluster, tmp_path):
    result = run_streaming(cluster, spark_on_ray, parse_workload(STREAMING_WORKLOAD), tmp_path)
    check = result.summary["check"]
    assert any("fault: kill" in note for note in result.notes), result.notes
    assert check["acknowledged"] > 0 and check["input_records"] >= check["acknowledged"]
    assert check["lost"] == 0, check
    assert check["keys"] == 10 and not check["keys_with_wrong_totals"], check
    assert not check["impossible_output_records"], check
    assert result.passed
    assert result.summary["output_headers"] == [("source", "stream-kill-0")]
