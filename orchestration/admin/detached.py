"""A raykafka cluster that outlives the command that started it, and the local Ray head it may run on.

A cluster started with ``detached=True`` creates its controller, brokers and group coordinators as
detached Ray actors (``lifetime="detached"``): they stay up when the starting process exits, until
``Cluster.stop`` removes them. What a second process needs to steer the same cluster (its broker
ids, log directory, configuration, and whether it is detached) is kept in Ray's internal key-value
store under the cluster's Ray namespace, beside the controller's own state, as a ``ClusterInfo``;
``Cluster.connect(namespace=..., address=...)`` reads it back.

``raykafka cluster start --local`` starts a Ray head of its own: ``ray start --head --block`` as a
child process in its own process group, on 127.0.0.1, with its own temporary directory (so that it
never takes over ``/tmp/ray/session_latest`` of another Ray on the machine). ``LocalRayHead``
remembers the head's address and process id in a state file (``RAYKAFKA_HOME``, default
``~/.raykafka``, one file per namespace), so that later commands find the address by namespace and
``raykafka cluster stop`` ends exactly that Ray: a signal to the ``ray start --block`` process, then
to whatever of its process tree is left, never ``ray stop``, which would stop every Ray on the
machine, and a wait until each process of that head (its workers included) has exited
(``stop_local_head``).
"""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import psutil
from ray.experimental import internal_kv

from actors.ray_metadata_store import kv_namespace
from orchestration.admin.ray_runtime import with_raykafka_ray_environment

CLUSTER_INFO_KEY = "/raykafka/cluster-info"
DEFAULT_NAMESPACE = "raykafka"
HEAD_START_TIMEOUT_S = 120
# How long the ``ray start --block`` process gets to stop its Ray after SIGTERM, then how long what
# is left of its tree gets after SIGTERM before the ones still running get SIGKILL, and then how
# long to wait for those. Signalled alone, ``ray start`` stops its processes in Ray's order (the
# raylet first) and the whole head is gone in about 2 s; signalled together, each process handled
# SIGTERM on its own, the raylet and the autoscaler's monitor kept calling a GCS that was going away
# and the GCS and ``ray start`` were seen still draining 30 s later. ``cluster stop`` has removed
# every actor by then, so nothing is lost by ending a drain.
HEAD_STOP_TIMEOUT_S = 10
HEAD_KILL_WAIT_S = 10
HEAD_STOP_POLL_S = 0.2
AUTH_MODE = "token"


@dataclass(frozen=True)
class ClusterInfo:
    namespace: str
    broker_ids: list[int]
    log_dir: str
    config: dict[str, str] = field(default_factory=dict)
    detached: bool = True
    # BrokerPlacement.describe(): the strategy in force and the placement group's name.
    placement: dict | None = None
    # Each broker's log directory as resolved on its node when the cluster started.
    node_log_dirs: dict = field(default_factory=dict)


def _info_namespace(namespace: str) -> str:
    # Not the controller's key-value namespace: Cluster.start clears that one for a new cluster.
    return kv_namespace(namespace) + "-cluster"


def save_cluster_info(info: ClusterInfo) -> None:
    internal_kv._internal_kv_put(CLUSTER_INFO_KEY, json.dumps(asdict(info)).encode(), overwrite=True,
                                 namespace=_info_namespace(info.namespace))


def load_cluster_info(namespace: str) -> ClusterInfo | None:
    raw = internal_kv._internal_kv_get(CLUSTER_INFO_KEY, namespace=_info_namespace(namespace))
    if raw is None:
        return None
    fields = json.loads(raw)
    fields["broker_ids"] = [int(b) for b in fields["broker_ids"]]
    return ClusterInfo(**fields)


def delete_cluster_info(namespace: str) -> None:
    internal_kv._internal_kv_del(CLUSTER_INFO_KEY, namespace=_info_namespace(namespace))


# ------------------------------------------------------------------------------ local Ray head
def raykafka_home() -> Path:
    return Path(os.environ.get("RAYKAFKA_HOME") or Path.home() / ".raykafka")


def _state_file(namespace: str) -> Path:
    return raykafka_home() / "clusters" / f"{namespace}.json"


def remembered_cluster(namespace: str) -> dict | None:
    """What ``cluster start`` remembered for ``namespace``: its Ray address, its log directory and,
    for ``--local``, the head's process id and temporary directory."""
    path = _state_file(namespace)
    return json.loads(path.read_text()) if path.is_file() else None


def remember_cluster(namespace: str, **state) -> None:
    path = _state_file(namespace)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(state, indent=2))


def forget_cluster(namespace: str) -> None:
    _state_file(namespace).unlink(missing_ok=True)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def ray_executable() -> str:
    """The ``ray`` command of this interpreter's environment (the one raykafka is installed in)."""
    beside = Path(sys.executable).parent / "ray"
    return str(beside) if beside.exists() else "ray"


def start_local_head(*, num_cpus: int | None = None, metrics_export_port: int | None = None) -> dict:
    """Start a Ray head on 127.0.0.1 as a child process group; returns once it takes connections:
    ``{"address", "head_pid", "temp_dir", "metrics_export_port"}``."""
    port = free_port()
    metrics_export_port = metrics_export_port or free_port()
    # A short path: Ray's socket paths live under it and Unix sockets allow ~107 characters.
    temp_dir = tempfile.mkdtemp(prefix="rk-ray-", dir="/tmp")
    command = [ray_executable(), "start", "--head", "--block", f"--port={port}", "--node-ip-address=127.0.0.1",
               f"--temp-dir={temp_dir}", f"--metrics-export-port={metrics_export_port}",
               "--include-dashboard=false", "--disable-usage-stats"]
    if num_cpus is not None:
        command.append(f"--num-cpus={num_cpus}")
    output = open(os.path.join(temp_dir, "ray-start.log"), "wb")
    # Ray's token authentication (the token in ~/.ray/auth_token), said explicitly so that every
    # later command connects with the same mode (use_auth_mode).
    use_auth_mode(AUTH_MODE)
    head = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            start_new_session=True, env=with_raykafka_ray_environment(dict(os.environ)))
    address = f"127.0.0.1:{port}"
    deadline = time.monotonic() + HEAD_START_TIMEOUT_S
    while not _accepts(port):
        if head.poll() is not None or time.monotonic() > deadline:
            stop_local_head(head.pid, temp_dir=temp_dir)
            raise RuntimeError(f"the local Ray head did not start (exit code {head.poll()}); "
                               f"its output is in {temp_dir}/ray-start.log")
        time.sleep(0.5)
    return {"address": address, "head_pid": head.pid, "temp_dir": temp_dir,
            "metrics_export_port": metrics_export_port, "auth_mode": AUTH_MODE}


def use_auth_mode(mode: str | None) -> None:
    """Connect to Ray with authentication ``mode`` (Ray's RAY_AUTH_MODE), as the head was started."""
    if mode and os.environ.get("RAY_AUTH_MODE") != mode:
        os.environ["RAY_AUTH_MODE"] = mode
        # Ray reads its configuration once, when it is imported; read it again for the new mode.
        from ray._raylet import Config
        Config.initialize("")


def join_with_rays_auth() -> None:
    """Before joining a running Ray cluster: authenticate as ``ray start`` decided for it. Ray 2.60's
    ``ray start`` turns token authentication on when RAY_AUTH_MODE is unset and a token exists
    (~/.ray/auth_token, RAY_AUTH_TOKEN or RAY_AUTH_TOKEN_PATH), but ``ray.init(address=...)`` does
    not, so a driver joining such a head is refused ("Authentication token is missing or
    incorrect"). This applies ``ray start``'s rule to this process; RAY_AUTH_MODE, when set, wins."""
    if os.environ.get("RAY_AUTH_MODE"):
        return
    from ray._private.authentication.authentication_token_setup import maybe_enable_token_auth_if_token_available
    maybe_enable_token_auth_if_token_available(warn_if_disabled=False)


def _accepts(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


def stop_local_head(head_pid: int, *, temp_dir: str | None = None) -> dict:
    """End the Ray head ``ray start --block`` process ``head_pid`` leads and wait until every process
    it started has exited: its process group (GCS, raylet, dashboard, ...) and the workers that run
    in process groups of their own (Ray's idle workers, the detached actors' processes).

    The processes are those in the head's process tree when the stop begins (taken before any
    signal, as a worker whose raylet exits is re-parented and leaves the tree). The head process
    gets SIGTERM first and alone, so that Ray shuts down as it does on Ctrl-C, each process in
    Ray's order; once it has exited (or HEAD_STOP_TIMEOUT_S passed), the group and each process of
    the tree outside it that still runs get SIGTERM; whatever of the tree still runs
    HEAD_STOP_TIMEOUT_S after that gets SIGKILL, and the wait goes on up to HEAD_KILL_WAIT_S more.
    Only those processes are touched: with ``temp_dir`` (the head's ``--temp-dir``), a process
    ``head_pid`` whose command line does not name it is another program that got the pid later,
    and the head counts as gone. Returns:
    ``{"head_pid", "processes": [{"pid", "name"}], "terminated", "killed", "still_running"}``
    (``still_running`` empty when the head is gone)."""
    processes = _process_tree(head_pid, temp_dir)
    answer = {"head_pid": head_pid, "processes": [{"pid": p.pid, "name": _name(p)} for p in processes],
              "terminated": [], "killed": [], "still_running": []}
    if not processes:
        return answer  # already gone
    _signal_each(processes[:1], signal.SIGTERM)  # the head: Ray stops its processes in its order
    _wait_exited(processes[:1], HEAD_STOP_TIMEOUT_S)
    left = [p for p in processes if _running(p)]
    if any(_group_of(p) == head_pid for p in left):
        try:
            os.killpg(head_pid, signal.SIGTERM)
        except (ProcessLookupError, PermissionError):
            pass
    _signal_each([p for p in left if _group_of(p) != head_pid], signal.SIGTERM)  # workers' own groups
    running = _wait_exited(processes, HEAD_STOP_TIMEOUT_S)
    answer["terminated"] = [p.pid for p in processes if p not in running]
    if running:
        _signal_each(running, signal.SIGKILL)
        answer["killed"] = [p.pid for p in running]
        running = _wait_exited(running, HEAD_KILL_WAIT_S)
    answer["still_running"] = [{"pid": p.pid, "name": _name(p)} for p in running]
    return answer


def _process_tree(head_pid: int, temp_dir: str | None) -> list[psutil.Process]:
    try:
        head = psutil.Process(head_pid)
        if temp_dir is not None and f"--temp-dir={temp_dir}" not in head.cmdline():
            return []
        return [head, *head.children(recursive=True)]
    except psutil.Error:
        return []


def _group_of(process: psutil.Process) -> int | None:
    try:
        return os.getpgid(process.pid)
    except ProcessLookupError:
        return None


def _name(process: psutil.Process) -> str:
    try:
        return process.name()
    except psutil.Error:
        return "?"


def _running(process: psutil.Process) -> bool:
    """Still running: a zombie has exited (its parent, or init, has yet to reap it)."""
    try:
        if process.ppid() == os.getpid():
            os.waitpid(process.pid, os.WNOHANG)  # our own child (``start_local_head`` in this process)
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except (psutil.NoSuchProcess, ChildProcessError):
        return False


def _signal_each(processes: list[psutil.Process], signum: int) -> None:
    for process in processes:
        try:
            if _running(process):  # is_running checks the pid was not reused
                process.send_signal(signum)
        except psutil.NoSuchProcess:
            pass


def _wait_exited(processes: list[psutil.Process], timeout_s: float) -> list[psutil.Process]:
    """Poll until every one of ``processes`` has exited or ``timeout_s`` passed; those still running."""
    deadline = time.monotonic() + timeout_s
    running = [p for p in processes if _running(p)]
    while running and time.monotonic() < deadline:
        time.sleep(HEAD_STOP_POLL_S)
        running = [p for p in running if _running(p)]
    return running
