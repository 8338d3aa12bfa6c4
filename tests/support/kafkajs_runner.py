"""KafkaJS for the wire tests: installed from npm into a cache outside the repository (``npm install``
into ``~/.cache/raykafka/npm`` the first time), and one inline Node.js script run against it with a
bounded timeout; a test that needs it is skipped, saying so, where Node.js or npm is missing."""
from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

KAFKAJS_VERSION = "2.2.4"
NPM_CACHE_DIR = Path(os.environ.get("RAYKAFKA_NPM_DIR", Path.home() / ".cache" / "raykafka" / "npm"))
NPM_INSTALL_TIMEOUT_S = 300


def kafkajs_modules() -> Path:
    """The node_modules directory holding KafkaJS, installed if need be; skips without Node.js."""
    for tool in ("node", "npm"):
        if shutil.which(tool) is None:
            pytest.skip(f"KafkaJS tests need Node.js: `{tool}` is not on PATH (install nodejs and npm to run them)")
    marker = NPM_CACHE_DIR / "node_modules" / "kafkajs" / "package.json"
    NPM_CACHE_DIR.mkdir(parents=True, exist_ok=True)
    with open(NPM_CACHE_DIR / ".install.lock", "w") as lock:  # one install at a time, across processes
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not marker.exists() or json.loads(marker.read_text()).get("version") != KAFKAJS_VERSION:
            result = subprocess.run(["npm", "install", "--prefix", str(NPM_CACHE_DIR), "--no-audit", "--no-fund",
                                     f"kafkajs@{KAFKAJS_VERSION}"], capture_output=True, text=True,
                                    timeout=NPM_INSTALL_TIMEOUT_S)
            assert result.returncode == 0 and marker.exists(), (
                f"npm install kafkajs@{KAFKAJS_VERSION} into {NPM_CACHE_DIR} failed: {result.stderr[-2000:]}")
    return NPM_CACHE_DIR / "node_modules"


def run_kafkajs(script: str, *, timeout_s: float) -> dict:
    """Run ``script`` (JavaScript with ``require('kafkajs')`` available) and return the JSON it printed
    on its last line of output."""
    env = dict(os.environ, NODE_PATH=str(kafkajs_modules()))
    try:
        result = subprocess.run(["node", "-e", script], capture_output=True, text=True, timeout=timeout_s, env=env)
    except subprocess.TimeoutExpired as exc:
        raise AssertionError(f"the KafkaJS script did not finish within {timeout_s}s; it printed "
                             f"{exc.stdout!r} {exc.stderr!r}") from None
    lines = result.stdout.strip().splitlines()
    assert result.returncode == 0 and lines, (f"node exited with {result.returncode}: stdout "
                                              f"{result.stdout[-3000:]!r} stderr {result.stderr[-3000:]!r}")
    return json.loads(lines[-1])
