"""``raykafka load run --namespace NS`` loads the raykafka cluster already running in NS instead of
starting one: run through ``run_workload`` with stand-ins for the cluster, Spark and the jobs (no
Ray, no JVM), it connects, runs the workload on topics of its own run, and leaves the cluster
running; from the command line with no such cluster it says how to start one. With
``--bootstrap-server`` it runs with Kafka clients against that listener, and refuses faults."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from orchestration.cli import main
from orchestration.spark import pipeline
from orchestration.spark.workload import parse_workload

WORKLOAD = {"name": "on-existing", "topics": 1, "partitionsPerTopic": 2, "messageSize": 64,
            "keyDistributor": "KEY_ROUND_ROBIN", "producersPerTopic": 1, "producerRate": 0,
            "subscriptionsPerTopic": 1, "consumerPerSubscription": 1, "recordCount": 10}


class StandInCluster:
    def __init__(self) -> None:
        self.broker_ids, self.bootstrap_servers, self.closed = [0, 1, 2], "127.0.0.1:9092", False

    def close(self) -> None:
        self.closed = True

    def shutdown(self) -> None:
        raise AssertionError("a cluster the load did not start is never shut down")


def test_with_a_namespace_the_load_runs_on_that_cluster_and_leaves_it_running(monkeypatch, tmp_path):
    from orchestration.admin.cluster import Cluster
    from orchestration.spark import session
    cluster, asked = StandInCluster(), {}
    monkeypatch.setattr(session, "check_java", lambda env=None: "java")
    monkeypatch.setattr(Cluster, "start", classmethod(lambda cls, **kw: pytest.fail("started a cluster")))
    monkeypatch.setattr(Cluster, "connect", classmethod(
        lambda cls, namespace, address=None: asked.update(namespace=namespace, address=address) or cluster))
    spark = SimpleNamespace(startup_s=1.0, sizing=SimpleNamespace(num_executors=1, task_slots=2),
                            stop=lambda: asked.update(spark_stopped=True))
    monkeypatch.setattr(session.SparkOnRay, "start", classmethod(lambda cls, *a, **kw: spark))

    def run_on(on, spark_on_ray, workload, output, *, show_progress, out, topics):
        asked.update(run_on=(on, spark_on_ray), topics=topics)
        return "result"
    monkeypatch.setattr(pipeline, "run_on", run_on)
    lines = []
    assert pipeline.run_workload(parse_workload(WORKLOAD), namespace="ns", address="10.0.0.1:6379",
                                 output_dir=tmp_path, out=lines.append) == "result"
    assert (asked["namespace"], asked["address"], asked["run_on"]) == ("ns", "10.0.0.1:6379", (cluster, spark))
    (topic,) = asked["topics"]
    assert topic.startswith("on-existing-0-") and len(topic) > len("on-existing-0-")
    assert cluster.closed and asked["spark_stopped"]
    assert "3 brokers already running" in lines[0] and "127.0.0.1:9092" in lines[0]


def test_load_run_with_a_namespace_and_no_cluster_there_says_how_to_start_one(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("RAYKAFKA_HOME", str(tmp_path))
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    from orchestration.spark import session
    monkeypatch.setattr(session, "check_java", lambda env=None: "java")
    workload = tmp_path / "w.yaml"
    workload.write_text("name: w\ntopics: 1\npartitionsPerTopic: 1\nmessageSize: 10\nproducersPerTopic: 1\n"
                        "producerRate: 0\nsubscriptionsPerTopic: 1\nconsumerPerSubscription: 1\nrecordCount: 1\n")
    assert main(["load", "run", str(workload), "--namespace", "elsewhere", "--output", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    assert "no raykafka cluster in namespace 'elsewhere'" in err and "raykafka cluster start" in err


def test_with_a_bootstrap_server_the_load_uses_kafka_clients_on_topics_of_its_run(monkeypatch, tmp_path):
    import ray

    import confluent_kafka.admin

    from orchestration.spark import listener_load, session
    made, asked = [], {}

    class StandInAdmin:
        def __init__(self, config):
            made.append(config["bootstrap.servers"])

        def describe_cluster(self):
            nodes = [SimpleNamespace(id=2), SimpleNamespace(id=1)]
            return SimpleNamespace(result=lambda timeout: SimpleNamespace(nodes=nodes))
    monkeypatch.setattr(confluent_kafka.admin, "AdminClient", StandInAdmin)
    monkeypatch.setattr(ray, "get_runtime_context", lambda: SimpleNamespace(namespace="run-ns"))
    spark = SimpleNamespace(startup_s=1.0, sizing=SimpleNamespace(num_executors=1, task_slots=2), stop=lambda: None)
    monkeypatch.setattr(session.SparkOnRay, "start", classmethod(lambda cls, *a, **kw: spark))

    def run_on(on, spark_on_ray, workload, output, *, show_progress, out, topics):
        asked.update(cluster=on, workload=workload, topics=topics)
        return "result"
    lines = []
    assert listener_load.run_on_listener(parse_workload(WORKLOAD), "10.0.0.9:9092", tmp_path, False, None,
                                         lines.append, run_on) == "result"
    cluster = asked["cluster"]
    assert made == ["10.0.0.9:9092"]
    assert (cluster.namespace, cluster.broker_ids, cluster.bootstrap_servers, cluster.samples_replicas) == (
        "run-ns", [1, 2], "10.0.0.9:9092", False)
    assert (asked["workload"].client, asked["workload"].consumer_client) == ("confluent-kafka", "confluent-kafka")
    (topic,) = asked["topics"]
    assert topic.startswith("on-existing-0-") and "10.0.0.9:9092: 2 broker(s)" in lines[0]


def test_load_run_with_a_bootstrap_server_refuses_faults_before_starting_anything(tmp_path, capsys):
    workload = tmp_path / "w.yaml"
    workload.write_text("name: w\ntopics: 1\npartitionsPerTopic: 1\nmessageSize: 10\nproducersPerTopic: 1\n"
                        "producerRate: 0\nsubscriptionsPerTopic: 1\nconsumerPerSubscription: 1\nrecordCount: 1\n"
                        "faults:\n  - {at: 1, do: kill, target: leader}\n")
    assert main(["load", "run", str(workload), "--bootstrap-server", "127.0.0.1:9"]) == 2
    assert "run it with --namespace" in capsys.readouterr().err


@pytest.mark.parametrize("where", [["--bootstrap-server", "127.0.0.1:9"], ["--namespace", "elsewhere"]])
def test_the_streaming_job_on_an_existing_cluster_is_refused_before_starting_anything(where, tmp_path, capsys):
    """The streaming-aggregate job starts its own cluster; pointed at another, it says so rather
    than running the plain load job in its place."""
    assert main(["load", "run", "benchmarks/workloads/streaming-broker-kill.yaml", *where]) == 2
    assert "--namespace and --bootstrap-server take the load job only" in capsys.readouterr().err
