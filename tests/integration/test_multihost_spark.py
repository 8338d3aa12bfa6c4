"""The Spark load job runs with executors on more than one host: three hosts made of network
namespaces, a Ray node and a broker on each, and ``raykafka load run``'s pipeline run from the
head's host produces and consumes through librdkafka at the brokers' advertised 198.18 addresses
from Spark tasks on several hosts; the summary counts every acknowledged record and the consume job
reads them all, as the checker confirms."""
from __future__ import annotations

import ipaddress
import json
from pathlib import Path

import pytest

from orchestration.spark.session import check_java

pytestmark = [pytest.mark.integration, pytest.mark.multihost, pytest.mark.timeout(420)]

STORY = Path(__file__).resolve().parents[1] / "support" / "multihost_spark_load.py"
# Three hosts (conftest's netns_hosts) of one CPU each: room for the story's two one-CPU executors
# on two of them (brokers hold no CPU).
NETNS_HOST_COUNT = 3
NETNS_NUM_CPUS = 1
STORY_TIMEOUT_S = 300
BENCHMARK_NETWORK = ipaddress.ip_network("198.18.0.0/15")


@pytest.fixture(scope="module")
def hosts(request):
    try:
        check_java()  # before any host is made
    except Exception as exc:
        pytest.skip(f"no Java 17: {exc}")
    return request.getfixturevalue("netns_hosts")


def _ip(host_port: str) -> ipaddress.IPv4Address:
    return ipaddress.ip_address(host_port.rsplit(":", 1)[0])


def test_the_spark_load_job_runs_with_executors_on_several_hosts(hosts, tmp_path):
    result = hosts.run_python(0, STORY, [tmp_path / "load-results"], timeout_s=STORY_TIMEOUT_S)
    print(json.dumps({k: v for k, v in result.items() if k != "output"}, indent=1))
    print("\n".join(result["output"]))
    host_ips = {ipaddress.ip_address(h.ip) for h in hosts.hosts}

    brokers = [_ip(address) for address in result["bootstrap_servers"].split(",")]
    assert set(brokers) == host_ips, "one broker per host, each advertised at its host's address"
    executors = {ipaddress.ip_address(ip) for ip in result["executors"].values()}
    assert executors <= host_ips and len(executors) >= 2, f"executors on {sorted(map(str, executors))}"
    clients = {ipaddress.ip_address(ip) for ip in result["clients"].values()}
    assert all(ip in BENCHMARK_NETWORK for ip in clients) and len(clients) >= 2, result["clients"]
    assert {process.split("-")[0] for process in result["clients"]} == {"producer", "consumer"}

    assert result["sent"] == 600 and result["acknowledged"] == 600, "a fault-free run acknowledges every send"
    assert result["in_summary"] == result["acknowledged"]
    assert result["consumed"] == result["acknowledged"]
    assert result["valid"] and result["lost"] == 0, result["anomalies"]
