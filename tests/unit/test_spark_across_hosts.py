"""The load pipeline on a Ray cluster of several hosts, without starting one: its brokers listen on
their node's IP (unless the workload names listeners), and the run says which hosts its executors
and clients were on."""
from __future__ import annotations

from orchestration.chaos.runner import FAST_FAILOVER_CONFIG
from orchestration.spark.pipeline import NODE_LISTENERS, _where_line, broker_config
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
