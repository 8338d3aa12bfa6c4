"""actors/process_memory.py: with glibc keeping freed memory, a process that receives a buffer,
drops it and receives the next (a broker, round after round) reuses the same pages instead of
faulting in new ones; off, or where the operator set glibc's own variables, it changes nothing.
Each case runs in a fresh interpreter, since the settings are per process."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _glibc() -> bool:
    try:
        return sys.platform.startswith("linux") and bool(os.confstr("CS_GNU_LIBC_VERSION"))
    except (ValueError, OSError):  # a libc that does not name itself glibc
        return False


glibc_only = pytest.mark.skipif(not _glibc(), reason="glibc's malloc only")

# 100 rounds of 8 buffers of 1 MiB held together, each filled as a socket would fill it, then all
# dropped, as a broker does with the partitions of each round's records; counts the minor page
# faults of the last 90 rounds.
_PROGRAM = r"""
import json, resource, sys
sys.path.insert(0, sys.argv[1])
from actors.process_memory import keep_freed_memory
applied = keep_freed_memory(json.loads(sys.argv[2]))
def faults():
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt
size = 1024 * 1024
for round_ in range(100):
    if round_ == 10:
        before = faults()
    buffers = [bytearray(size) for _ in range(8)]
    for buffer in buffers:
        buffer[::4096] = b"x" * len(range(0, size, 4096))
    del buffers, buffer
print(json.dumps({"applied": applied, "faults_per_round": (faults() - before) / 90}))
"""


def _run(config: dict, env: dict | None = None) -> dict:
    completed = subprocess.run([sys.executable, "-c", _PROGRAM, str(ROOT), json.dumps(config)],
                               capture_output=True, text=True, timeout=120,
                               env={**os.environ, **(env or {})})
    assert completed.returncode == 0, completed.stderr
    return json.loads(completed.stdout.strip().splitlines()[-1])


@glibc_only
def test_a_dropped_buffers_pages_serve_the_next_one():
    kept = _run({})
    assert kept["applied"] == {"MALLOC_TRIM_THRESHOLD_": 256 << 20, "MALLOC_TOP_PAD_": 16 << 20,
                               "MALLOC_MMAP_THRESHOLD_": 32 << 20}
    # A round's 8 MiB are 2,048 pages: reused, next to none of them fault again.
    assert kept["faults_per_round"] < 50, kept


@glibc_only
def test_off_leaves_glibc_to_hand_freed_buffers_back():
    returned = _run({"raykafka.process.keep.freed.memory.enable": "false"})
    assert returned["applied"] == {}
    # glibc's default gives the top of its heap back once more than twice the largest buffer is
    # free there: the round's pages fault in anew every round.
    assert returned["faults_per_round"] > 1000, returned


@glibc_only
def test_glibcs_own_variables_set_by_the_operator_win():
    mine = _run({}, env={"MALLOC_TRIM_THRESHOLD_": str(1 << 20)})
    assert "MALLOC_TRIM_THRESHOLD_" not in mine["applied"]
    assert set(mine["applied"]) == {"MALLOC_TOP_PAD_", "MALLOC_MMAP_THRESHOLD_"}


def test_a_bad_setting_is_refused_by_the_configuration():
    from actors.core.errors import ErrorCode, KafkaProtocolError
    from actors.process_memory import keep_freed_memory
    with pytest.raises(KafkaProtocolError) as refused:
        keep_freed_memory({"raykafka.process.keep.freed.memory.enable": "sometimes"})
    assert refused.value.error_code == ErrorCode.INVALID_CONFIG
