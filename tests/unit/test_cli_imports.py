"""A ``raykafka`` command other than ``sim`` does not import the simulator (about a second of every
CLI process), while ``sim`` still parses its own options: checked in a fresh interpreter."""
from __future__ import annotations

import json
import subprocess
import sys

SIMULATOR = "orchestration.simulation.random_faults"


def _imports_simulator(argv: list[str]) -> tuple[bool, list[int] | None]:
    """Whether ``main(argv)`` (stopped after parsing) imported the simulator, and ``--seeds`` as parsed."""
    code = f"""
import json, sys
from orchestration import cli
parsed = {{}}
finish = cli.options.finish
def finish_and_stop(parser, args):
    args = finish(parser, args)
    parsed["seeds"] = getattr(args, "seeds", None)
    args.run = lambda args: 0  # parsing is what this checks: run nothing
    return args
cli.options.finish = finish_and_stop
try:
    cli.main({argv!r})
except SystemExit:
    pass
print(json.dumps([{SIMULATOR!r} in sys.modules, parsed.get("seeds")]))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    return tuple(json.loads(done.stdout.strip().splitlines()[-1]))


def test_a_command_other_than_sim_does_not_import_the_simulator():
    assert _imports_simulator(["--version"])[0] is False
    assert _imports_simulator(["topics", "list", "--namespace", "nowhere"])[0] is False


def test_sim_still_parses_its_options():
    assert _imports_simulator(["sim", "--seeds", "1..3"]) == (True, [1, 2, 3])
