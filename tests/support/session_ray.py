"""One local Ray head for a whole integration test session, which each module joins as a job of its own.

Starting a local Ray in every module cost 4-11 s and shutting it down about 1.5 s, some 30 times a
run. The head is ``ray start --head --block`` in a process group and a temporary directory of its
own (``orchestration.admin.detached`` starts ``raykafka cluster start --local``'s head the same
way, node IP 127.0.0.1), with the tests' fixed CPU count. It writes its address only under that
directory, never to ``/tmp/ray/ray_current_cluster``, so a plain ``ray.init()`` elsewhere (a module
that starts a Ray of its own, the CLI's head, the multi-host tests' nodes) never joins it, and it
is stopped as ``raykafka cluster stop`` stops its head (``stop_local_head``; never ``ray stop``).

Each module connects a driver with a namespace of its own and disconnects at its end. Ray ends a
job's actors and placement groups when its driver leaves; ``wait_until_only_this_job_runs`` waits
for that before a module starts, so no module shares the head with what the one before left.
"""
from __future__ import annotations

import json
import os
import subprocess
import tempfile
import time

import ray

from orchestration.admin.detached import free_port, ray_executable, stop_local_head
from orchestration.admin.ray_runtime import LOCAL_RAY_SYSTEM_CONFIG, with_raykafka_ray_environment

HEAD_START_TIMEOUT_S = 120
# A busy machine can make one of Ray's processes miss Ray's own start-up limits (as
# orchestration.admin.ray_runtime.start_local_ray says); a failed head is stopped whole before the next try.
HEAD_START_ATTEMPTS = 3
# What the module before left (its actors, their placement groups) is ended by Ray as its driver
# leaves, in well under a second on a quiet machine.
EARLIER_JOBS_GONE_TIMEOUT_S = 60
POLL_S = 0.2


_RUNNING: list["SessionRayHead"] = []


def start_session_head(num_cpus: int, attempts: int = HEAD_START_ATTEMPTS) -> "SessionRayHead":
    """A running head, after up to ``attempts`` tries; the last failure is raised."""
    for attempt in range(1, attempts + 1):
        try:
            return SessionRayHead(num_cpus)
        except RuntimeError:
            if attempt == attempts:
                raise
            time.sleep(attempt)
    raise AssertionError("unreachable")


def stop_every_head() -> None:
    """Stop every head still running (the session's end, when an interrupted run skipped its fixture's
    teardown: the head runs in a process group of its own and would outlive pytest)."""
    while _RUNNING:
        _RUNNING[-1].stop()


class SessionRayHead:
    """``ray start --head`` for this test session: ``address`` while it runs; ``stop()`` ends it."""

    def __init__(self, num_cpus: int):
        port = free_port()
        # A short path: Ray's socket paths live under it and Unix sockets allow ~107 characters.
        self.temp_dir = tempfile.mkdtemp(prefix="rk-test-ray-", dir="/tmp")
        self.address = f"127.0.0.1:{port}"
        command = [ray_executable(), "start", "--head", "--block", f"--port={port}", "--node-ip-address=127.0.0.1",
                   f"--temp-dir={self.temp_dir}", f"--num-cpus={num_cpus}", "--include-dashboard=false",
                   "--disable-usage-stats", f"--system-config={json.dumps(LOCAL_RAY_SYSTEM_CONFIG)}"]
        env = with_raykafka_ray_environment(dict(os.environ))
        env.pop("RAY_ADDRESS", None)
        # No token authentication: the test drivers join with ray.init(address=...), which sends none.
        env["RAY_AUTH_MODE"] = "disabled"
        self._log = open(os.path.join(self.temp_dir, "ray-start.log"), "wb")
        self._head = subprocess.Popen(command, stdout=self._log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                      start_new_session=True, env=env)
        _RUNNING.append(self)
        self._wait_started()

    def _wait_started(self) -> None:
        """Poll until the head's node is registered with its CPUs (a driver connecting earlier could
        find no node), or fail with where its output is."""
        deadline = time.monotonic() + HEAD_START_TIMEOUT_S
        address_file = os.path.join(self.temp_dir, "ray_current_cluster")
        while not os.path.exists(address_file):
            if self._head.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"the test session's Ray head did not start in {HEAD_START_TIMEOUT_S} s "
                                   f"(exit code {self._head.poll()}); its output is in {self.temp_dir}/ray-start.log")
            time.sleep(POLL_S)

    def connect(self, namespace: str) -> None:
        """Join the head as a new job in ``namespace``, once everything earlier jobs started is gone."""
        ray.init(address=self.address, namespace=namespace, log_to_driver=False)
        try:
            wait_until_only_this_job_runs()
        except BaseException:
            ray.shutdown()
            raise

    def stop(self) -> dict:
        if self in _RUNNING:
            _RUNNING.remove(self)
        try:
            return stop_local_head(self._head.pid, temp_dir=self.temp_dir)
        finally:
            self._log.close()


def _left_behind() -> list[str]:
    """What jobs other than this driver's still hold: live actors and placement groups."""
    me = ray.get_runtime_context().get_job_id()
    actors = [f"actor {info.get('Name') or info['ActorID']} of job {info['JobID']} ({info['State']})"
              for info in ray._private.state.actors().values()
              if info["State"] != "DEAD" and info["JobID"] != me]
    groups = [f"placement group {group.get('name') or pg_id} ({group['state']})"
              for pg_id, group in ray.util.placement_group_table().items() if group["state"] != "REMOVED"]
    return actors + groups


def wait_until_only_this_job_runs(timeout_s: float = EARLIER_JOBS_GONE_TIMEOUT_S) -> None:
    """Poll the head until no earlier job's actor or placement group is left and every CPU is free
    again; bounded, naming what was left if it never went."""
    deadline = time.monotonic() + timeout_s
    while True:
        left = _left_behind()
        free = ray.available_resources().get("CPU", 0.0)
        total = ray.cluster_resources().get("CPU", 0.0)
        if not left and free == total:
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"waited {timeout_s} s for what earlier modules started on the session's Ray to end; "
                               f"still there: {left or 'none'}, CPUs free {free} of {total}")
        time.sleep(POLL_S)
