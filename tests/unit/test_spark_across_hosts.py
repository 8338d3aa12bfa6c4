"""The load pipeline on a Ray cluster of several hosts, without starting one: its brokers listen on
their node's IP (unless the workload names listeners), and the run says which hosts its executors
and clients were on."""
from __future__ import annotations

from orchestration.chaos.runner import FAST_FAILOVER_CONFIG
from actors.wire.listeners import NODE_LISTENERS
from orchestration.spark.pipeline import _where_line, broker_config
from orchestration.spark.workload import parse_workload

WORKLOAD = {"name": "w", "recordCount": 10}


def test_brokers_listen_on_their_nodes_ip_when_the_cluster_may_span_hosts():
    assert NODE_LISTENERS == "PLAINTEXT://{node_ip}:0"
    assert broker_config(parse_workload(WORKLOAD), several_hosts=True) == {**FAST_FAILOVER_CONFIG,
                                                                           "listeners": NODE_LISTENERS}
    assert "listeners" not in broker_config(parse_workload(WORKLOAD), several_hosts=False)


def test_the_workloads_own_listeners_win():
    for named in ({"listeners": "PLAINTEXT://10.0.0.5:9092"},
                  {"advertised.listeners": "PLAINTEXT://kafka.example:9092"}):
        config = broker_config(parse_workload({**WORKLOAD, "brokerConfig": named}), several_hosts=True)
        assert {k: v for k, v in config.items() if "listeners" in k} == named


def test_the_run_says_which_hosts_its_executors_and_clients_ran_on():
    where = {"executors": {"0": "198.18.0.11", "1": "198.18.0.12", "2": "198.18.0.11"},
             "clients": {"producer-t-0": "198.18.0.11", "producer-t-1": "198.18.0.12", "consumer-t-0": "198.18.0.12"}}
    assert _where_line(where) == ("Spark executors on 198.18.0.11 (2), 198.18.0.12 (1); "
                                  "clients on 198.18.0.11 (1), 198.18.0.12 (2)")
    assert _where_line({"executors": {}, "clients": {}}) == "Spark executors on none; clients on none"


class _Message:
    def __init__(self, offset, value, error=None):
        self._offset, self._value, self._error = offset, value, error

    def error(self): return self._error
    def topic(self): return "t"
    def partition(self): return 1
    def offset(self): return self._offset
    def timestamp(self): return (1, 1700000000000 + self._offset)
    def key(self): return None
    def value(self): return self._value


class _Librdkafka:
    """What ConfluentLoadConsumer asks of confluent_kafka.Consumer: one owned partition at position 7."""

    def __init__(self, config):
        from confluent_kafka import TopicPartition
        self.config, self.batches = config, [[_Message(7, b"p:7|xx"), _Message(8, b"p:8|xx")], []]
        self.owned = [TopicPartition("t", 1)]

    def assignment(self): return self.owned

    def position(self, partitions):
        from confluent_kafka import TopicPartition
        return [TopicPartition("t", 1, 7), TopicPartition("t", 2, -1001)]  # -1001: no position yet

    def consume(self, count, timeout): return self.batches.pop(0)


def test_a_librdkafka_consumer_records_its_polls_with_the_positions_before_them(monkeypatch):
    import confluent_kafka

    from orchestration.spark.confluent_consumer import ConfluentLoadConsumer
    from orchestration.spark.jobs import TaskHistory
    monkeypatch.setattr(confluent_kafka, "Consumer", _Librdkafka)
    history = TaskHistory()
    consumer = ConfluentLoadConsumer("198.18.0.10:9092", {"group.id": "g"}, history=history, process="c")
    assert consumer._consumer.config == {"group.id": "g", "bootstrap.servers": "198.18.0.10:9092"}
    records = consumer.poll(timeout_ms=200)
    assert [(r.topic, r.partition, r.offset, r.value) for r in records] == [("t", 1, 7, b"p:7|xx"), ("t", 1, 8, b"p:8|xx")]
    assert consumer.poll(timeout_ms=200) == []
    [(_, process, type_, f, value)] = history.events  # an empty poll is not recorded
    assert (process, type_, f) == ("c", "ok", "poll")
    assert value == {"records": [["t", 1, 7, "p:7"], ["t", 1, 8, "p:8"]], "positions_before": {"t-1": 7}}


def test_a_spark_tasks_history_takes_every_send_the_producer_records():
    """The raykafka producer hands its history sink a send's key and tombstone flag; a Spark task's
    in-memory history must take the same calls as the file history, or every send fails."""
    import inspect

    from orchestration.history import HistoryWriter
    from orchestration.spark.jobs import TaskHistory
    assert list(inspect.signature(TaskHistory.invoke).parameters) == list(inspect.signature(HistoryWriter.invoke).parameters)
    history = TaskHistory()
    history.invoke("p", "t", None, b"p:1|xx", key="k1")
    history.invoke("p", "t", 0, b"p:2|xx", key="k1", tombstone=True)
    history.invoke("p", "t", 0, b"p:3|xx")
    assert [event[4] for event in history.events] == [
        {"topic": "t", "partition": None, "value": "p:1", "key": "k1"},
        {"topic": "t", "partition": 0, "value": "p:2", "key": "k1", "tombstone": True},
        {"topic": "t", "partition": 0, "value": "p:3"}]
