"""Leadership at a scale Ray cannot host here: a simulated cluster loses a broker, then loses
another while its controller fails over; measures the simulated time until every partition is led
again and the wall-clock time the simulation took (orchestration/simulation/scale.py). No Ray: the
shipped drivers run over the deterministic simulator, invariants checked after every step.
Prints the figures and saves JSON; asserts nothing.

    python benchmarks/sim_scale.py [--brokers 100] [--partitions 10000] [--seed 1]
                                   [--out benchmarks/results/sim_scale.json]
"""
from __future__ import annotations

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks._common import default_out, save_results  # noqa: E402
from orchestration.simulation.scale import run_scale  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--brokers", type=int, default=100)
    parser.add_argument("--partitions", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", default=default_out("sim_scale"))
    args = parser.parse_args()
    figures = run_scale(brokers=args.brokers, partitions=args.partitions, seed=args.seed,
                        out=lambda line: print(line, flush=True))
    print(json.dumps(figures, indent=2))
    save_results(args.out, figures)


if __name__ == "__main__":
    main()
