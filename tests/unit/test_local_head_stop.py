"""``stop_local_head`` (what ``raykafka cluster stop`` ends a ``--local`` Ray head with) returns only
once every process of the head's tree has exited, the ones in process groups of their own (as
Ray's workers are) and the ones that ignore SIGTERM (killed after the grace period) included, and
says which it stopped and how; and that the head is asked first and alone, so that it stops its own
processes in its order (as ``ray start`` stops the raylet before the GCS); shown on stand-in trees
of shell and sleep processes, no Ray."""
from __future__ import annotations

import subprocess
import time

import psutil
import pytest

from orchestration.admin import detached

# The stand-in head: a process group leader (as ``start_local_head`` starts ``ray start --block``)
# with a child in the group, a child in a session of its own (a Ray worker), and a child that
# ignores SIGTERM.
HEAD_SCRIPT = "sleep 300 & setsid sleep 301 & (trap '' TERM; exec sleep 302) & wait"
TREE_WAIT_S = 10


def start_stand_in_head() -> tuple[subprocess.Popen, list[psutil.Process]]:
    head = subprocess.Popen(["bash", "-c", HEAD_SCRIPT], start_new_session=True)
    deadline = time.monotonic() + TREE_WAIT_S
    while time.monotonic() < deadline:
        children = psutil.Process(head.pid).children(recursive=True)
        if sorted(" ".join(c.cmdline()) for c in children if c.name() == "sleep") == \
                ["sleep 300", "sleep 301", "sleep 302"]:
            return head, [psutil.Process(head.pid), *children]
        time.sleep(0.05)
    head.kill()
    raise AssertionError(f"the stand-in head did not start its three children within {TREE_WAIT_S}s")


def running(process: psutil.Process) -> bool:
    return process.is_running() and process.status() != psutil.STATUS_ZOMBIE



def _kill_all(processes) -> None:
    """Whatever of a test's stand-in processes still runs, killed."""
    for process in processes:
        try:
            process.kill()
        except psutil.NoSuchProcess:
            pass

def test_stop_waits_for_every_process_of_the_head_and_reports_them(monkeypatch):
    monkeypatch.setattr(detached, "HEAD_STOP_TIMEOUT_S", 1.0)
    head, processes = start_stand_in_head()
    ignoring = next(p.pid for p in processes if p.cmdline() == ["sleep", "302"])
    try:
        answer = detached.stop_local_head(head.pid)
        assert [p for p in processes if running(p)] == [], "every process has exited when stop returns"
        assert answer["head_pid"] == head.pid and answer["still_running"] == []
        assert {p["pid"] for p in answer["processes"]} == {p.pid for p in processes}
        assert answer["killed"] == [ignoring], f"only the process that ignores SIGTERM is killed: {answer}"
        assert set(answer["terminated"]) | set(answer["killed"]) == {p.pid for p in processes}
    finally:
        _kill_all(processes)


def test_a_head_already_gone_is_reported_with_nothing_stopped():
    head = subprocess.Popen(["true"], start_new_session=True)
    head.wait()
    assert detached.stop_local_head(head.pid) == {"head_pid": head.pid, "processes": [], "terminated": [],
                                                  "killed": [], "still_running": []}


@pytest.fixture(autouse=True)
def fast_polling(monkeypatch):
    monkeypatch.setattr(detached, "HEAD_STOP_POLL_S", 0.05, raising=False)


def test_a_pid_now_held_by_another_program_is_left_alone():
    """The state file outlived its head and the pid went to some other program: not touched."""
    other, _ = start_stand_in_head()
    try:
        answer = detached.stop_local_head(other.pid, temp_dir="/tmp/rk-ray-gone")
        assert answer["processes"] == [] and other.poll() is None, "the other program still runs"
    finally:
        for process in [psutil.Process(other.pid), *psutil.Process(other.pid).children(recursive=True)]:
            process.kill()


# A stand-in head that stops its child itself, in its own time, when told to stop: on SIGTERM it
# marks that it has begun, then sends the child SIGTERM. The child notes whether the head had begun
# when its own SIGTERM came, that is whether it heard it from the head or from someone else first.
ORDERED_HEAD_SCRIPT = """
child() { trap 'if [ -e "$1/head-stopping" ]; then echo by-head; else echo directly; fi > "$1/child"; exit 0' TERM
          sleep 300 & wait; }
child "$1" & pid=$!
trap 'sleep 0.5; touch "$1/head-stopping"; kill -TERM $pid; wait $pid; exit 0' TERM
sleep 301 & wait
"""


def test_the_head_is_asked_to_stop_first_and_stops_its_own_processes_in_its_order(tmp_path):
    head = subprocess.Popen(["bash", "-c", ORDERED_HEAD_SCRIPT, "stand-in-head", str(tmp_path)],
                            start_new_session=True)
    processes = [psutil.Process(head.pid)]
    try:
        deadline = time.monotonic() + TREE_WAIT_S
        while len(processes[0].children(recursive=True)) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        processes += processes[0].children(recursive=True)
        answer = detached.stop_local_head(head.pid)
        assert answer["still_running"] == [] and answer["killed"] == [], answer
        assert (tmp_path / "child").read_text().strip() == "by-head", \
            "the child got SIGTERM before its head had begun to stop it"
    finally:
        _kill_all(processes)
