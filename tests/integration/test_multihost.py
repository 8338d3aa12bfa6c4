"""raykafka on a real multi-host Ray cluster: three hosts made of network namespaces on this machine
(tests.support.netns_hosts), a Ray node and a broker on each, with the stories' drivers run inside
the head's host and asserting on the JSON they print."""
from __future__ import annotations

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.multihost]

PROBE_TIMEOUT_S = 2.0


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
