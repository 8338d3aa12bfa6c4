"""The whole test session's end: the exit status is pytest's, whatever native threads still run.

Every `ray.init` leaves native threads behind after `ray.shutdown` (gRPC's event engine and timer
threads, the GCS client's io service), and the Spark and Kafka client libraries leave their own. A
native thread that runs while Python tears its modules down can crash the interpreter after every
test has passed: CI once saw `make test` print "2926 passed" and then fail with a segmentation
fault, no test to blame. So at the session's end this shuts Ray down if a module left it up,
collects garbage while every module is still whole (unreferenced clients run their destructors now),
names any Python thread still running, and then leaves the process with pytest's own exit status
without Python's interpreter teardown, which nothing here needs (output is flushed first).
The Makefile runs pytest with `-X faulthandler`, so a crash at any earlier point still prints every
thread's stack. A pytest-xdist worker (``make test`` runs the unit and scenario tests on two) is
left to end as xdist ends it; only the controller leaves this way.
"""
from __future__ import annotations

import gc
import os
import sys
import threading

import pytest
import ray


def pytest_sessionfinish(session, exitstatus):
    session.config.stash[_EXIT_STATUS] = int(exitstatus)
    if ray.is_initialized():
        ray.shutdown()
    session_ray = sys.modules.get("tests.support.session_ray")
    if session_ray is not None:
        session_ray.stop_every_head()  # normally stopped already, by its fixture
    gc.collect()
    lingering = [t for t in threading.enumerate() if t is not threading.main_thread() and t.is_alive() and not t.daemon]
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if lingering and reporter is not None:
        reporter.write_line("non-daemon threads still running at the session's end: "
                            + ", ".join(t.name for t in lingering))


_EXIT_STATUS = pytest.StashKey[int]()


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    status = config.stash.get(_EXIT_STATUS, None)
    if status is None:
        return  # the session never ran (e.g. --help, a usage error): leave the exit to pytest
    if hasattr(config, "workerinput"):
        return  # a pytest-xdist worker: its controller ends it, and reports its status
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)
