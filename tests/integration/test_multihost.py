"""raykafka on a real multi-host Ray cluster: three hosts made of network namespaces on this machine
(tests.support.netns_hosts), a Ray node and a broker on each, with the stories' drivers run inside
the head's host and asserting on the JSON they print."""
from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest

from tests.support.multihost_stories import Steps

pytestmark = [pytest.mark.integration, pytest.mark.multihost]

PROBE_TIMEOUT_S = 2.0
DRIVER = Path(__file__).resolve().parents[1] / "support" / "multihost_stories.py"
# The stories' drivers start the controller here, away from the clients on the head's host.
CONTROLLER_HOST = 2


def _reachable(hosts, source: int, target_ip: str, port: int) -> bool:
    """Whether a TCP connection from host ``source`` to ``target_ip:port`` opens within the probe timeout."""
    script = ("import json, socket, sys\n"
              "try:\n"
              f"    socket.create_connection(({target_ip!r}, {port}), timeout={PROBE_TIMEOUT_S}).close(); print('true')\n"
              "except OSError:\n"
              "    print('false')\n")
    return hosts.run_python(source, script, timeout_s=30)


def test_each_host_runs_a_ray_node_at_its_own_address_and_faults_cut_exactly_their_hosts(netns_hosts):
    nodes = netns_hosts.wait_for_ray_nodes(alive=[0, 1, 2])
    alive = {node["ip"]: node for node in nodes if node["alive"]}
    assert sorted(alive) == ["198.18.0.10", "198.18.0.11", "198.18.0.12"], nodes
    for host in netns_hosts.hosts:
        assert alive[host.ip]["resources"] == {host.resource: 1.0}, (host, alive[host.ip])
    port_of = {ip: node["node_manager_port"] for ip, node in alive.items()}
    one, two = netns_hosts.hosts[1], netns_hosts.hosts[2]
    assert _reachable(netns_hosts, 1, two.ip, port_of[two.ip])
    netns_hosts.blackhole(1, 2)
    try:
        assert not _reachable(netns_hosts, 1, two.ip, port_of[two.ip]), "a blackhole drops host 1 -> host 2"
        assert not _reachable(netns_hosts, 2, one.ip, port_of[one.ip]), "a blackhole drops host 2 -> host 1"
        assert _reachable(netns_hosts, 1, netns_hosts.head.ip, port_of[netns_hosts.head.ip]), \
            "a blackhole between hosts 1 and 2 leaves host 1 -> head alone"
    finally:
        netns_hosts.heal(1, 2)
    assert _reachable(netns_hosts, 1, two.ip, port_of[two.ip]), "healed"
    netns_hosts.cut_link(2)
    try:
        assert not _reachable(netns_hosts, 1, two.ip, port_of[two.ip]), "a cut link isolates host 2"
    finally:
        netns_hosts.restore_link(2)
    assert _reachable(netns_hosts, 1, two.ip, port_of[two.ip]), "a restored link reaches host 2 again"


# ------------------------------------------------------------------------------ the stories
def _story(netns_hosts, tmp_path, story: str, faults=None, timeout_s: float = 300) -> dict:
    """Run ``story``'s driver in the head's host; ``faults(steps)`` plays the test's part of its steps."""
    work_dir = netns_hosts.temp_dir / f"{story}-{tmp_path.name}"
    driver = netns_hosts.spawn_python(0, DRIVER, [story, work_dir])

    def driver_alive():
        if driver.poll() is not None:
            netns_hosts.python_result(driver, timeout_s=5)  # raises with the driver's stderr
            raise AssertionError(f"the {story} driver ended before its steps")
    try:
        if faults is not None:
            faults(Steps(work_dir / "steps", on_wait=driver_alive))
        result = netns_hosts.python_result(driver, timeout_s=timeout_s)
    finally:
        if driver.poll() is None:
            os.killpg(driver.pid, signal.SIGKILL)
            driver.wait()
    print(f"{story}: {json.dumps(result)}")
    return result


def test_every_broker_is_advertised_at_its_own_host_and_serves_clients_alone(netns_hosts, tmp_path):
    result = _story(netns_hosts, tmp_path, "addresses")
    expected = result["expected_brokers"]
    assert expected == {"0": "198.18.0.10:9092", "1": "198.18.0.11:9092", "2": "198.18.0.12:9092"}
    assert sorted(result["bootstrap_servers"].split(",")) == sorted(expected.values())
    assert sorted(result["by_bootstrap"]) == sorted(expected.values())
    for address, seen in result["by_bootstrap"].items():
        assert seen["metadata_brokers"] == expected, f"bootstrapped on {address} alone, metadata lists every broker"
        assert seen["unacknowledged"] == 0 and seen["acknowledged"] == 60, (address, seen)
        assert seen["read"] == seen["acknowledged"] and seen["mismatched"] == 0, (address, seen)
    # Replication between the hosts went over the leaders' fetch channels (TCP on each host's own
    # address), none of it through Ray.
    for broker_id, (kind, host, _) in result["fetch_channels"].items():
        assert kind == "tcp" and f"{host}:9092" == expected[broker_id], result["fetch_channels"]
    for broker_id, carried in result["fetches_carried"].items():
        assert carried["leader_calls channel"] > 0 and carried["leader_calls ray"] == 0, (broker_id, carried)


def _assert_nothing_acknowledged_lost(result: dict) -> None:
    assert result["acknowledged"] > 0 and result["read"] >= result["acknowledged"], result
    assert result["lost"] == 0 and not result["loss_anomalies"], result["examples"]


# A fault story of about a minute: `make chaos` runs it (CI runs both), keeping `make test` near 25 minutes.
@pytest.mark.chaos
def test_a_lost_host_fails_over_and_rejoins_with_nothing_acknowledged_lost(netns_hosts, tmp_path):
    def faults(steps):
        victim = steps.wait("ready")["victim_broker"]
        at = time.monotonic()
        netns_hosts.kill_host(victim)
        steps.tell("fault", at=at)
        steps.wait("failed-over", timeout_s=180)
        netns_hosts.restart_host(victim)
        steps.tell("restored")
    result = _story(netns_hosts, tmp_path, "host-loss", faults)
    assert result["leader_before"] == 1 and result["leader_during"] != 1, result
    assert result["epoch_during"] > result["epoch_before"], result
    assert sorted(result["isr_after"]) == [0, 1, 2], result
    _assert_nothing_acknowledged_lost(result)


# A fault story of about a minute: `make chaos` runs it (CI runs both), keeping `make test` near 25 minutes.
@pytest.mark.chaos
def test_a_host_cut_from_the_controller_is_fenced_and_rejoins_with_nothing_acknowledged_lost(netns_hosts, tmp_path):
    def faults(steps):
        victim = steps.wait("ready")["victim_broker"]
        at = time.monotonic()
        netns_hosts.blackhole(victim, CONTROLLER_HOST)
        steps.tell("fault", at=at)
        try:
            steps.wait("failed-over", timeout_s=180)
        finally:
            netns_hosts.heal(victim, CONTROLLER_HOST)
        steps.tell("restored")
    result = _story(netns_hosts, tmp_path, "host-partition", faults)
    assert result["leader_before"] == 1 and result["leader_during"] != 1, result
    assert result["epoch_during"] > result["epoch_before"], result
    assert sorted(result["isr_after"]) == [0, 1, 2], result
    assert all(hw <= result["new_epoch_start_offset"] for hw in result["zombie_high_watermarks"]), \
        "the old leader never commits past where the new leader's epoch starts"
    after = result["victim_after"]
    assert after is not None and not after["is_leader"] and after["leader_epoch"] >= result["epoch_during"], \
        f"the healed broker follows the new epoch: {after}"
    _assert_nothing_acknowledged_lost(result)
