"""The data pipeline on Spark against a real cluster: one local Ray, one RayDP session for the
module; a DataFrame written to a topic reads back as exactly the acknowledged records at their
offsets, a refused record fails the job with its Kafka error, and a small workload runs end to end
(acknowledged = in the summary = consumed, and the checker finds nothing), also against
the cluster's Kafka listener with Kafka clients only, as `load run --bootstrap-server` runs it."""
from __future__ import annotations

import pytest

from orchestration.chaos.runner import FAST_FAILOVER_CONFIG
from orchestration.errors import KafkaError
from orchestration.history import read_history
from orchestration.spark.jobs import record_id
from orchestration.spark.pipeline import run_on
from orchestration.spark.session import RayTarget, SparkOnRay, SparkSizing, check_java
from orchestration.spark.topics import KAFKA_SOURCE_COLUMNS, read_topic, write_topic
from orchestration.spark.workload import parse_workload
from tests.support.clusters import running_cluster

# Spark start-up alone takes minutes on a busy 2-core machine.
pytestmark = [pytest.mark.integration, pytest.mark.timeout(1200)]


SMALL_WORKLOAD = {"name": "spark-small", "topics": 1, "partitionsPerTopic": 2, "messageSize": 64,
                  "keyDistributor": "KEY_ROUND_ROBIN", "producersPerTopic": 2, "producerRate": 0,
                  "subscriptionsPerTopic": 1, "consumerPerSubscription": 2, "recordCount": 400,
                  "acks": "all", "min.insync.replicas": 2, "consumeTimeoutSeconds": 300}


@pytest.fixture(scope="module")
def cluster(ray_session, tmp_path_factory):
    # Small offsets topic and short group delays: the consume job's groups form quickly.
    with running_cluster(tmp_path_factory, config=FAST_FAILOVER_CONFIG) as started:
        yield started


@pytest.fixture(scope="module")
def spark_on_ray(ray_session):
    try:
        check_java()
    except Exception as exc:
        pytest.skip(f"no Java 17: {exc}")
    session = SparkOnRay.start("raykafka-test", SparkSizing(num_executors=1, executor_cpus=1.0, task_slots=4))
    print(f"Spark start-up took {session.startup_s:.1f}s")
    try:
        yield session
    finally:
        session.stop()


@pytest.fixture(scope="module")
def spark(spark_on_ray):
    return spark_on_ray.spark


@pytest.fixture(scope="module")
def target(cluster):
    return RayTarget.of(cluster)


def test_a_written_dataframe_reads_back_as_exactly_the_acknowledged_records(spark, cluster, target):
    cluster.create_topic("spark-rw", partitions=3, replication_factor=3, config={"min.insync.replicas": "2"})
    rows = [(f"key-{i % 7}", f"value-{i}") for i in range(300)]
    frame = spark.createDataFrame(rows, ["key", "value"]).repartition(2)
    written = write_topic(frame, target, "spark-rw", {"kafka.acks": "all", "linger.ms": "5"}, collect_metadata=True)
    assert written.records == 300
    acknowledged = {(partition, offset): (key, value) for _, partition, offset, key, value in written.acknowledged}
    assert len(acknowledged) == 300, "two records acknowledged at one offset"

    read = read_topic(spark, target, "spark-rw")
    assert tuple(read.columns) == KAFKA_SOURCE_COLUMNS
    assert dict(read.dtypes) == {"key": "binary", "value": "binary", "topic": "string", "partition": "int",
                                 "offset": "bigint", "timestamp": "timestamp", "timestampType": "int"}
    assert read.rdd.getNumPartitions() == 3, "one Spark partition per topic partition"
    got = {(r.partition, r.offset): (bytes(r.key), bytes(r.value)) for r in read.collect()}
    assert got == acknowledged

    split = read_topic(spark, target, "spark-rw", max_records_per_partition=40)
    assert split.rdd.getNumPartitions() > 3
    assert {(r.partition, r.offset) for r in split.select("partition", "offset").collect()} == set(acknowledged)

    first = min(offset for partition, offset in acknowledged if partition == 0)
    window = read_topic(spark, target, "spark-rw", starting_offsets={"spark-rw": {"0": first + 2}},
                        ending_offsets={"spark-rw": {"0": first + 5, "1": -2, "2": -2}})
    assert sorted((r.partition, r.offset) for r in window.collect()) == [(0, first + 2), (0, first + 3),
                                                                          (0, first + 4)]


def test_a_refused_record_fails_the_job_with_its_kafka_error(spark, cluster, target):
    cluster.create_topic("spark-small", partitions=1, replication_factor=1, config={"max.message.bytes": "200"})
    frame = spark.createDataFrame([("x" * 1000,)], ["value"])
    with pytest.raises(KafkaError) as caught:
        write_topic(frame, target, "spark-small", {"acks": "1"})
    assert caught.value.name in ("MESSAGE_TOO_LARGE", "RECORD_LIST_TOO_LARGE")


def test_a_small_workload_runs_end_to_end(spark_on_ray, spark, cluster, target, tmp_path):
    workload = parse_workload(SMALL_WORKLOAD)
    result = run_on(cluster, spark_on_ray, workload, tmp_path, show_progress=False)

    events = list(read_history(tmp_path / "history.jsonl"))
    acknowledged = {(e["value"]["partition"], e["value"]["offset"]): e["value"]["value"]
                    for e in events if e["f"] == "send" and e["type"] == "ok"}
    assert len(acknowledged) == 400, "every send of a fault-free run is acknowledged"
    assert result.summary["produce"]["acknowledged"] == len(acknowledged)
    assert result.consumed == len(acknowledged)
    consumed = {row.value for row in spark.read.parquet(str(tmp_path / "consume.parquet")).select("value").collect()}
    assert consumed == set(acknowledged.values())
    assert result.report.valid and result.lost == 0, result.report.table()

    topic = workload.topic_names()[0]
    read = {(r.partition, r.offset): record_id(bytes(r.value)) for r in read_topic(spark, target, topic).collect()}
    assert read == acknowledged
    for name in ("summary.json", "throughput.png", "verdict.txt"):
        assert (tmp_path / name).exists(), name


def test_a_small_workload_runs_against_a_kafka_listener(spark_on_ray, cluster, tmp_path):
    """``load run --bootstrap-server``'s path: topics through confluent-kafka's AdminClient, the
    jobs' clients confluent-kafka's, no replica sampler, on the module's cluster's listener."""
    import ray

    from orchestration.spark.listener_load import ListenerCluster, listener_workload
    listener = ListenerCluster(cluster.bootstrap_servers, ray.get_runtime_context().namespace)
    try:
        workload = listener_workload(parse_workload({**SMALL_WORKLOAD, "recordCount": 200}))
        result = run_on(listener, spark_on_ray, workload, tmp_path, show_progress=False, topics=["over-listener"])
    finally:
        listener.close()
    assert result.acknowledged == 200 and result.consumed == 200
    assert result.report.valid and result.lost == 0, result.report.table()
    assert not [e for e in read_history(tmp_path / "history.jsonl") if e["f"] == "sample"]
