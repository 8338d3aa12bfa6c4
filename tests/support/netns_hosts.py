"""Several hosts on one machine, made of Linux network namespaces, with a Ray node on each.

Theory of operation. ``NetnsHosts(count)`` makes one namespace for a bridge and one per host; each
host has a veth (``eth0`` inside the host, ``h<i>`` on the bridge) and an address in
198.18.0.0/15 (RFC 2544's benchmarking range, routed nowhere), and a default route through
``eth0`` so that Ray finds the host's address as a real machine would. No link is ever made in
the root namespace: the bridge lives in a namespace of its own. Host 0 runs a Ray head, the
others Ray worker nodes, each with a fixed ``num_cpus`` and a custom resource naming its host
(``host_resource(i)``), so a test can pin actors to hosts.

The process running the tests stays in the root namespace and cannot reach 198.18.x: a story's
driver runs inside a host with ``run_python`` (``RAY_ADDRESS`` points it at the head), bounded
by a timeout, and hands back the JSON object it printed last.

Faults, each with its undo:
- ``kill_host(i)`` kills every process in the host's namespace at once (``ip netns pids``), as a
  machine losing power; ``restart_host(i)`` starts its Ray node again (same address, resources and
  temp dir, as a rebooted machine with its disk).
- ``cut_link(i)`` / ``restore_link(i)`` take the host's bridge port down and up: the host keeps
  its address but reaches nobody, and nobody reaches it.
- ``blackhole(a, b)`` / ``heal(a, b)`` drop every packet between two hosts in both directions
  and nothing else. Each side is given a permanent neighbour entry for the other with a MAC
  address no host has: the bridge floods such frames and every host discards them, so packets
  vanish silently (no error, no reset), as in a real partition. (This kernel has no tc
  classifiers nor netfilter here, and a ``blackhole`` route fails a sender at once with EINVAL,
  which a real partition never does.)

Everything a run makes is named ``rk-<pid>-<hex>`` (namespaces, the temp dir). ``shutdown`` (also
run by ``__exit__`` and at interpreter exit) kills every process in the namespaces, deletes them
and the temp dir; ``remove_stale`` at start removes whatever an interrupted run left behind,
recognised by an owner pid that is no longer alive, so a run going on beside this one is left be.
``netns_unavailable_reason`` says why hosts cannot be made here (not root, no ``ip``, no netns),
for a test to skip with.
"""
from __future__ import annotations

import atexit
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
PYTHON = sys.executable
RAY = str(Path(sys.executable).with_name("ray"))
NAME_PREFIX = "rk-"
# 198.18.0.10, .11, ... on a /15: every host on one bridge segment.
SUBNET_PREFIX_LENGTH = 15
FIRST_HOST_ADDRESS = (198, 18, 0, 10)
RAY_HEAD_PORT = 6379
# A MAC address that no veth is given (locally administered, unicast): frames sent to it are
# flooded by the bridge and dropped by every host.
NOWHERE_MAC = "02:00:5e:00:53:99"
OBJECT_STORE_BYTES = 100 * 1024 * 1024
COMMAND_TIMEOUT_S = 30
NODE_START_TIMEOUT_S = 90
KILL_WAIT_S = 15
_STALE_NAME = re.compile(r"^rk-(\d+)-[0-9a-f]+")


def host_resource(index: int) -> str:
    """The custom resource host ``index``'s Ray node carries (one unit): ask for a sliver of it to
    place an actor on that host."""
    return f"netns-host-{int(index)}"


def netns_unavailable_reason() -> str | None:
    """Why network-namespace hosts cannot be made on this machine, or None when they can."""
    if sys.platform != "linux":
        return "multi-host tests need Linux network namespaces"
    if os.geteuid() != 0:
        return "multi-host tests need root (CAP_NET_ADMIN and CAP_SYS_ADMIN) to make network namespaces"
    if shutil.which("ip") is None:
        return "multi-host tests need iproute2's `ip` command"
    if not Path(RAY).exists():
        return f"multi-host tests need Ray's `ray` command beside the Python that runs them ({RAY})"
    probe = f"{NAME_PREFIX}{os.getpid()}-probe{uuid.uuid4().hex[:4]}"
    made = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if made.returncode != 0:
        return f"`ip netns add` failed ({made.stderr.strip()}): multi-host tests need network namespaces"
    subprocess.run(["ip", "netns", "delete", probe], capture_output=True)
    return None


def _run(args: list[str], *, check: bool = True, timeout_s: float = COMMAND_TIMEOUT_S) -> subprocess.CompletedProcess:
    done = subprocess.run(args, capture_output=True, text=True, timeout=timeout_s)
    if check and done.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed ({done.returncode}): {done.stderr.strip()}")
    return done


def _namespaces() -> list[str]:
    listed = _run(["ip", "netns", "list"], check=False).stdout
    return [line.split()[0] for line in listed.splitlines() if line.strip()]


def namespace_pids(namespace: str) -> list[int]:
    """The processes living in ``namespace`` now (empty when it is gone)."""
    done = _run(["ip", "netns", "pids", namespace], check=False)
    return [int(pid) for pid in done.stdout.split() if pid.isdigit()]


def _kill_namespace_processes(namespace: str, wait_s: float = KILL_WAIT_S) -> list[int]:
    """SIGKILL every process in ``namespace`` (again, for any that a dying one forked) until none
    is left or ``wait_s`` passes; returns the pids killed."""
    killed: list[int] = []
    deadline = time.monotonic() + wait_s
    while True:
        pids = [pid for pid in namespace_pids(namespace) if pid != os.getpid()]
        if not pids:
            return killed
        if time.monotonic() > deadline:
            raise RuntimeError(f"processes {pids} in namespace {namespace} outlived SIGKILL for {wait_s}s")
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
            except ProcessLookupError:
                pass
        time.sleep(0.1)


def _owner_alive(name: str) -> bool:
    match = _STALE_NAME.match(name)
    if match is None:
        return True  # not ours to judge
    try:
        os.kill(int(match.group(1)), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_stale() -> list[str]:
    """Remove namespaces and temp dirs named ``rk-<pid>-...`` whose owner process is gone (an
    interrupted earlier run); returns what was removed."""
    removed = []
    for namespace in _namespaces():
        if namespace.startswith(NAME_PREFIX) and not _owner_alive(namespace):
            try:
                _kill_namespace_processes(namespace)
            finally:
                _run(["ip", "netns", "delete", namespace], check=False)
            removed.append(namespace)
    for entry in Path(tempfile.gettempdir()).glob(f"{NAME_PREFIX}*"):
        if entry.is_dir() and not _owner_alive(entry.name):
            shutil.rmtree(entry, ignore_errors=True)
            removed.append(str(entry))
    return removed


@dataclass(frozen=True)
class Host:
    index: int
    namespace: str
    ip: str
    bridge_port: str  # the veth end on the bridge
    resource: str

    @property
    def is_head(self) -> bool:
        return self.index == 0


class NetnsHosts:
    """``count`` hosts on one bridge, a Ray head on host 0 and Ray worker nodes on the others.

    Use as a context manager (or call ``start`` and ``shutdown``): everything is removed on exit,
    also when a test fails. ``ray_env`` adds environment variables to every Ray node (Ray's
    ``RAY_<config>`` overrides, say)."""

    def __init__(self, count: int = 3, *, num_cpus: int = 1, ray_env: dict[str, str] | None = None,
                 object_store_bytes: int = OBJECT_STORE_BYTES) -> None:
        if count < 1:
            raise ValueError(f"a cluster needs at least one host, not {count}")
        self.run_id = f"{NAME_PREFIX}{os.getpid()}-{uuid.uuid4().hex[:6]}"
        self.num_cpus = int(num_cpus)
        self.object_store_bytes = int(object_store_bytes)
        self.ray_env = dict(ray_env or {})
        self.bridge_namespace = f"{self.run_id}-br"
        a, b, c, d = FIRST_HOST_ADDRESS
        self.hosts = [Host(index=i, namespace=f"{self.run_id}-h{i}", ip=f"{a}.{b}.{c}.{d + i}",
                           bridge_port=f"h{i}", resource=host_resource(i)) for i in range(count)]
        self.temp_dir: Path | None = None
        self._ray_nodes: dict[int, subprocess.Popen] = {}
        self._made_namespaces: list[str] = []
        self._started = False
        self._auth_token = uuid.uuid4().hex + uuid.uuid4().hex

    # ------------------------------------------------------------------ lifecycle
    def __enter__(self) -> "NetnsHosts":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.shutdown()

    @property
    def head(self) -> Host:
        return self.hosts[0]

    @property
    def ray_address(self) -> str:
        """The Ray head's GCS address, reachable from inside any host."""
        return f"{self.head.ip}:{RAY_HEAD_PORT}"

    def start(self) -> None:
        """Make the network, then start the Ray nodes and wait until all are alive."""
        assert not self._started, "these hosts are started already"
        remove_stale()
        self._started = True
        atexit.register(self.shutdown)
        try:
            self.temp_dir = Path(tempfile.mkdtemp(prefix=f"{self.run_id}-"))
            self._make_network()
            for host in self.hosts:
                self._start_ray_node(host)
                if host.is_head:
                    self._wait_for_head()
            self.wait_for_ray_nodes(alive=[h.index for h in self.hosts])
        except BaseException:
            self.shutdown()
            raise

    def shutdown(self) -> None:
        """Kill every process in the hosts, delete the namespaces and the temp dir (idempotent)."""
        if not self._started:
            return
        self._started = False
        errors = []
        for namespace in [h.namespace for h in self.hosts] + [self.bridge_namespace]:
            if namespace not in self._made_namespaces:
                continue
            try:
                _kill_namespace_processes(namespace)
            except Exception as exc:
                errors.append(exc)
            _run(["ip", "netns", "delete", namespace], check=False)
        for process in self._ray_nodes.values():
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired as exc:
                errors.append(exc)
        self._ray_nodes.clear()
        self._made_namespaces.clear()
        if self.temp_dir is not None:
            shutil.rmtree(self.temp_dir, ignore_errors=True)
        atexit.unregister(self.shutdown)
        if errors:
            raise RuntimeError(f"tearing down hosts {self.run_id}: {errors}")

    # ------------------------------------------------------------------ network
    def _make_network(self) -> None:
        bridge = self.bridge_namespace
        _run(["ip", "netns", "add", bridge])
        self._made_namespaces.append(bridge)
        _run(["ip", "-n", bridge, "link", "add", "br0", "type", "bridge"])
        _run(["ip", "-n", bridge, "link", "set", "br0", "up"])
        for host in self.hosts:
            _run(["ip", "netns", "add", host.namespace])
            self._made_namespaces.append(host.namespace)
            # Made inside the bridge's namespace with its peer moved straight into the host's:
            # no end of it ever appears in the root namespace.
            _run(["ip", "-n", bridge, "link", "add", host.bridge_port, "type", "veth",
                  "peer", "name", "eth0", "netns", host.namespace])
            _run(["ip", "-n", bridge, "link", "set", host.bridge_port, "master", "br0", "up"])
            _run(["ip", "-n", host.namespace, "link", "set", "lo", "up"])
            _run(["ip", "-n", host.namespace, "addr", "add", f"{host.ip}/{SUBNET_PREFIX_LENGTH}", "dev", "eth0"])
            _run(["ip", "-n", host.namespace, "link", "set", "eth0", "up"])
            # Ray finds a node's address by the route to a public address: give it one through eth0.
            _run(["ip", "-n", host.namespace, "route", "add", "default", "dev", "eth0"])

    def cut_link(self, index: int) -> None:
        """Take host ``index``'s port on the bridge down: it reaches nobody and nobody reaches it."""
        _run(["ip", "-n", self.bridge_namespace, "link", "set", self.hosts[index].bridge_port, "down"])

    def restore_link(self, index: int) -> None:
        _run(["ip", "-n", self.bridge_namespace, "link", "set", self.hosts[index].bridge_port, "up"])

    def blackhole(self, a: int, b: int) -> None:
        """Drop every packet between hosts ``a`` and ``b``, both ways, silently; other traffic flows."""
        for here, there in ((self.hosts[a], self.hosts[b]), (self.hosts[b], self.hosts[a])):
            _run(["ip", "-n", here.namespace, "neigh", "replace", there.ip, "lladdr", NOWHERE_MAC,
                  "dev", "eth0", "nud", "permanent"])

    def heal(self, a: int, b: int) -> None:
        """Undo ``blackhole(a, b)``: each side resolves the other's address afresh."""
        for here, there in ((self.hosts[a], self.hosts[b]), (self.hosts[b], self.hosts[a])):
            _run(["ip", "-n", here.namespace, "neigh", "del", there.ip, "dev", "eth0"], check=False)

    # ------------------------------------------------------------------ processes
    def _env(self) -> dict[str, str]:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
        env["RAY_ADDRESS"] = self.ray_address
        env["RAY_USAGE_STATS_ENABLED"] = "0"
        # A token of this run's own for every node and driver: Ray turns token authentication on
        # when it finds one in ~/.ray, and a driver must then present the same one.
        env["RAY_AUTH_MODE"] = "token"
        env["RAY_AUTH_TOKEN"] = self._auth_token
        env.update(self.ray_env)
        return env

    def _start_ray_node(self, host: Host) -> None:
        temp_dir = self.temp_dir / f"h{host.index}"
        temp_dir.mkdir(exist_ok=True)
        role = (["--head", f"--port={RAY_HEAD_PORT}", "--include-dashboard=false"] if host.is_head
                else [f"--address={self.ray_address}"])
        args = ["ip", "netns", "exec", host.namespace, RAY, "start", *role, "--block",
                f"--node-ip-address={host.ip}", f"--num-cpus={self.num_cpus}", "--num-gpus=0",
                f"--resources={json.dumps({host.resource: 1.0})}", f"--temp-dir={temp_dir}",
                f"--object-store-memory={self.object_store_bytes}", "--disable-usage-stats"]
        log = open(temp_dir / "ray-start.log", "ab")
        try:
            self._ray_nodes[host.index] = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT,
                                                           env=self._env(), cwd=str(REPO_ROOT),
                                                           start_new_session=True)
        finally:
            log.close()

    def _wait_for_head(self) -> None:
        deadline = time.monotonic() + NODE_START_TIMEOUT_S
        probe = f"import socket; socket.create_connection(({self.head.ip!r}, {RAY_HEAD_PORT}), timeout=2).close()"
        while True:
            done = self._exec(0, [PYTHON, "-c", probe], timeout_s=10)
            if done.returncode == 0:
                return
            process = self._ray_nodes[0]
            if process.poll() is not None:
                raise RuntimeError(f"the Ray head exited ({process.returncode}); see {self.ray_log(0)}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"the Ray head did not listen on {self.ray_address} in {NODE_START_TIMEOUT_S}s; "
                                   f"see {self.ray_log(0)}")
            time.sleep(0.5)

    def ray_log(self, index: int) -> Path:
        """Where ``ray start`` on host ``index`` writes its output."""
        return self.temp_dir / f"h{index}" / "ray-start.log"

    def ray_nodes(self) -> list[dict]:
        """Ray's nodes as the head sees them: ``ip``, ``alive``, ``node_manager_port`` (the raylet's
        port) and ``resources`` (the host resource only)."""
        script = ("import json, ray\n"
                  "ray.init(log_to_driver=False)\n"
                  "print(json.dumps([{'ip': n['NodeManagerAddress'], 'alive': n['Alive'],"
                  " 'node_manager_port': n['NodeManagerPort'], 'resources':"
                  " {k: v for k, v in n['Resources'].items() if k.startswith('netns-host-')}} for n in ray.nodes()]))\n")
        return self.run_python(0, script, timeout_s=60)

    def wait_for_ray_nodes(self, alive: list[int], timeout_s: float = NODE_START_TIMEOUT_S) -> list[dict]:
        """Wait until the head lists the Ray nodes of hosts ``alive`` as alive (each at its host's
        address); returns the nodes listed."""
        wanted = {self.hosts[i].ip for i in alive}
        deadline = time.monotonic() + timeout_s
        while True:
            nodes = self.ray_nodes()
            if wanted <= {n["ip"] for n in nodes if n["alive"]}:
                return nodes
            if time.monotonic() > deadline:
                raise TimeoutError(f"Ray nodes at {sorted(wanted)} not all alive within {timeout_s}s: {nodes}")
            time.sleep(1)

    def _exec(self, index: int, args: list[str], *, timeout_s: float, env: dict | None = None,
              ) -> subprocess.CompletedProcess:
        process = self._spawn(index, args, env=env, stdout=subprocess.PIPE)
        stdout, stderr = _communicate_or_kill(process, timeout_s, f"{args[:3]} in host {index}")
        return subprocess.CompletedProcess(args, process.returncode, stdout, stderr)

    def _spawn(self, index: int, args: list[str], *, env: dict | None, stdout) -> subprocess.Popen:
        full_env = self._env()
        full_env.update(env or {})
        return subprocess.Popen(["ip", "netns", "exec", self.hosts[index].namespace, *args], stdout=stdout,
                                stderr=subprocess.PIPE, text=True, env=full_env, cwd=str(REPO_ROOT),
                                start_new_session=True)

    @staticmethod
    def _python_command(script: str | Path, args) -> list[str]:
        if isinstance(script, Path):
            return [PYTHON, str(script), *map(str, args)]
        return [PYTHON, "-c", str(script), *map(str, args)]

    def run_python(self, index: int, script: str | Path, args: list[str] = (), *, timeout_s: float = 120,
                   env: dict[str, str] | None = None):
        """Run a Python script (a ``Path`` to a file, or a ``str`` of source) inside host ``index`` with
        ``RAY_ADDRESS`` set to the head and this repo on ``PYTHONPATH``; return the JSON value on its
        last stdout line that is JSON. A non-zero exit or a timeout raises with the script's stderr."""
        done = self._exec(index, self._python_command(script, args), timeout_s=timeout_s, env=env)
        return _json_result(index, done.returncode, done.stdout, done.stderr)

    def spawn_python(self, index: int, script: str | Path, args: list[str] = (), *,
                     env: dict[str, str] | None = None) -> subprocess.Popen:
        """Start a Python script inside host ``index`` as ``run_python`` does, without waiting: a test
        injects faults while it runs, then collects its JSON with ``python_result``. Its stdout goes
        to a file (so a chatty script never blocks on a full pipe); it is killed at ``shutdown``
        with everything else in the host."""
        out = tempfile.TemporaryFile(mode="w+", dir=self.temp_dir)
        process = self._spawn(index, self._python_command(script, args), env=env, stdout=out)
        process.stdout_file = out
        process.host_index = index
        return process

    def python_result(self, process: subprocess.Popen, *, timeout_s: float):
        """Wait up to ``timeout_s`` for a ``spawn_python`` script and return its JSON (as
        ``run_python``); on timeout it is killed and its stderr tail raised."""
        _, stderr = _communicate_or_kill(process, timeout_s, f"script in host {process.host_index}")
        process.stdout_file.seek(0)
        stdout = process.stdout_file.read()
        process.stdout_file.close()
        return _json_result(process.host_index, process.returncode, stdout, stderr)

    def kill_host(self, index: int) -> list[int]:
        """Kill every process in host ``index`` at once, as a machine losing power; returns their pids."""
        killed = _kill_namespace_processes(self.hosts[index].namespace)
        process = self._ray_nodes.pop(index, None)
        if process is not None:
            process.wait(timeout=KILL_WAIT_S)
        return killed

    def restart_host(self, index: int, *, wait: bool = True) -> None:
        """Start host ``index``'s Ray node again after ``kill_host`` (same address, resources, temp dir)."""
        assert index not in self._ray_nodes, f"host {index}'s Ray node is running"
        host = self.hosts[index]
        self._start_ray_node(host)
        if host.is_head:
            self._wait_for_head()
        if wait:
            self.wait_for_ray_nodes(alive=[index])


def _communicate_or_kill(process: subprocess.Popen, timeout_s: float, what: str) -> tuple[str, str]:
    """``process``'s (stdout, stderr) once it ends; past ``timeout_s`` its process group is killed
    and a TimeoutError names ``what`` with the tail of its stderr."""
    try:
        return process.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        _, stderr = process.communicate()
        raise TimeoutError(f"{what} did not finish in {timeout_s}s; stderr tail:\n{stderr[-4000:]}") from None


def _json_result(index: int, returncode: int, stdout: str, stderr: str):
    if returncode != 0:
        raise RuntimeError(f"script in host {index} exited {returncode}; stderr tail:\n{stderr[-4000:]}")
    # Ray may print its own lines (a dead node's worker logs, say) after the script's: the result is
    # the last line that is JSON.
    for line in reversed(stdout.splitlines()):
        try:
            return json.loads(line)
        except ValueError:
            continue
    raise RuntimeError(f"script in host {index} printed no JSON line; stdout tail:\n{stdout[-2000:]}\n"
                       f"stderr tail:\n{stderr[-4000:]}")
