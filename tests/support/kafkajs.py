"""KafkaJS for the wire tests: installed from npm into a cache outside the repository, run by Node.js.

``kafkajs_modules()`` returns the ``node_modules`` directory holding KafkaJS (``npm install`` into
``~/.cache/raykafka/npm`` the first time, so a clean CI machine gets it by itself), or skips the
calling test with a message saying what is missing when Node.js or npm is not installed.
``run_node`` runs one of the scripts in ``tests/support/node``, ``run_kafkajs`` an inline one, each
with a bounded timeout, and returns what it printed as JSON on its last line.
"""
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
NODE_SCRIPTS_DIR = Path(__file__).parent / "node"
NPM_INSTALL_TIMEOUT_S = 300


def kafkajs_modules() -> Path:
    """The node_modules directory with KafkaJS in it, installed if need be; skips without Node.js."""
    for tool in ("node", "npm"):
        if shutil.which(tool) is None:
            pytest.skip(f"KafkaJS tests need Node.js: `{tool}` is not on PATH (install nodejs and npm to run them)")
    modules = NPM_CACHE_DIR / "node_modules"
    marker = modules / "kafkajs" / "package.json"
    NPM_CACHE_DIR.mkdir(parents=True, exist_ok=True)
    # One install at a time, also across test processes sharing the cache.
    with open(NPM_CACHE_DIR / ".install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not marker.exists() or json.loads(marker.read_text()).get("version") != KAFKAJS_VERSION:
            result = subprocess.run(
                ["npm", "install", "--prefix", str(NPM_CACHE_DIR), "--no-audit", "--no-fund",
                 f"kafkajs@{KAFKAJS_VERSION}"],
                capture_output=True, text=True, timeout=NPM_INSTALL_TIMEOUT_S)
            assert result.returncode == 0 and marker.exists(), (
                f"npm install kafkajs@{KAFKAJS_VERSION} into {NPM_CACHE_DIR} failed: {result.stderr[-2000:]}")
    return modules


def run_node(script: str, *args: str, timeout_s: float) -> dict:
    """Run ``tests/support/node/<script>`` with KafkaJS on NODE_PATH; its last stdout line as JSON."""
    return _run(["node", str(NODE_SCRIPTS_DIR / script), *args], f"node {script}", timeout_s)


def run_kafkajs(script: str, *, timeout_s: float) -> dict:
    """Run ``script`` (JavaScript with ``require('kafkajs')`` available); its last stdout line as JSON."""
    return _run(["node", "-e", script], "the KafkaJS script", timeout_s)


def _run(argv: list[str], what: str, timeout_s: float) -> dict:
    env = dict(os.environ, NODE_PATH=str(kafkajs_modules()))
    try:
        result = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s, env=env)
    except subprocess.TimeoutExpired as exc:
        raise AssertionError(f"{what} did not finish within {timeout_s}s; it printed: "
                             f"{exc.stdout!r} {exc.stderr!r}") from None
    lines = result.stdout.strip().splitlines()
    assert result.returncode == 0 and lines, (
        f"{what} exited with {result.returncode}: stdout {result.stdout[-3000:]!r} "
        f"stderr {result.stderr[-3000:]!r}")
    return json.loads(lines[-1])
