"""Proves raykafka used as a library prints nothing (loguru's convention: its loggers are off until
the application enables them), by running a client retry, which logs at DEBUG, in a fresh
interpreter with loguru's default stderr handler, with and without ``logger.enable``."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]

RETRY_ONCE = """
import sys
from loguru import logger
import orchestration
from actors.core.errors import ErrorCode
from orchestration.clients.broker_directory import call_with_retries
from orchestration.errors import KafkaError
if sys.argv[1] == "enabled":
    logger.enable("orchestration")
attempts = []
def attempt(deadline):
    attempts.append(1)
    if len(attempts) == 1:
        raise KafkaError(ErrorCode.LEADER_NOT_AVAILABLE, "first attempt")
    return "done"
print(call_with_retries(attempt, timeout_ms=5000, what="a retried call", retry_backoff_ms=1))
"""


def run(mode: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", RETRY_ONCE, mode], capture_output=True, text=True,
                          cwd=REPO_ROOT, timeout=120, env={"PYTHONPATH": str(REPO_ROOT), "PATH": "/usr/bin:/bin"})


def test_a_library_user_sees_no_raykafka_log_lines():
    done = run("default")
    assert done.returncode == 0 and done.stdout.strip() == "done", done.stderr
    assert "retrying" not in done.stderr, done.stderr


def test_an_application_that_enables_raykafka_sees_its_log_lines():
    done = run("enabled")
    assert done.returncode == 0, done.stderr
    assert "a retried call: retrying after" in done.stderr, done.stderr
