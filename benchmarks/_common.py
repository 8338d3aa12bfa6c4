"""What every benchmark program shares: where results go and how they are saved."""
from __future__ import annotations

import json
import os

RESULTS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")


def default_out(name: str) -> str:
    return os.path.join(RESULTS_DIR, f"{name}.json")


def save_results(path: str, results: dict) -> None:
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as handle:
        json.dump(results, handle, indent=2)
    print(f"\nsaved {path}")
