"""``raykafka sim``: seeded random fault schedules over a simulated cluster, one verdict per seed.

Theory of operation. The command turns its options into ``RunOptions`` (random_faults.py) and
runs one seed after another in this process: no Ray, no files. ``--seeds 1..N`` (or a list,
``1,4,9``) or ``--seed N`` say which; ``--minutes M`` stops starting new seeds once M minutes of
wall-clock time have passed (without ``--seeds`` it runs seeds 1, 2, 3 ... until then). It prints
a row per seed (seed, steps, simulated time, faults, acknowledged, lost, verdict), and for every
failing seed the one command that replays it. While it runs, a rich progress bar shows the seeds
done and the failures so far when the output is a terminal; otherwise each seed's row is printed
as it ends. ``--json`` prints one JSON object per seed and a summary instead. ``--compacted`` runs
the keyed workload on a compacted topic with the log cleaners on (random_faults.py); its JSON rows
also carry the cleaners' figures. ``--retention`` puts the topic under time retention, and its
rows carry the log start offsets' figures. ``--scale`` runs the
scale measurement of scale.py instead of fault schedules. The exit status is 1 when any seed
failed.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Iterator

from orchestration.simulation.random_faults import FAULT_KINDS, POLICIES, RETENTION_MS, RunOptions, SeedResult, run_seed

COLUMNS = ("seed", "steps", "simulated", "faults", "acknowledged", "lost", "verdict")
DEFAULT_SEEDS = "1..10"


def parse_seeds(text: str) -> list[int]:
    """``"1..20"`` (inclusive), ``"7"`` or ``"1,4,9"``."""
    seeds: list[int] = []
    for part in text.split(","):
        if ".." in part:
            first, last = (int(x) for x in part.split("..", 1))
            if last < first:
                raise argparse.ArgumentTypeError(f"empty seed range {part!r}")
            seeds += range(first, last + 1)
        else:
            seeds.append(int(part))
    return seeds


def parse_faults(text: str) -> tuple[str, ...]:
    if text in ("none", ""):
        return ()
    faults = tuple(f.strip() for f in text.split(","))
    unknown = sorted(set(faults) - set(FAULT_KINDS))
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown faults {unknown}; known: {','.join(FAULT_KINDS)}")
    return faults


def add_arguments(parser: argparse.ArgumentParser) -> None:
    chosen = parser.add_mutually_exclusive_group()
    chosen.add_argument("--seeds", type=parse_seeds, default=None,
                        help=f"seeds to run: 1..N, or a list 1,4,9 (default: {DEFAULT_SEEDS}, or 1, 2, ... with "
                             "--minutes)")
    chosen.add_argument("--seed", type=int, default=None, help="run this one seed (to replay it)")
    parser.add_argument("--faults", type=parse_faults, default=FAULT_KINDS,
                        help=f"fault kinds to draw from, comma-separated (default: all: {','.join(FAULT_KINDS)})")
    parser.add_argument("--minutes", type=float, default=None,
                        help="start no new seed after this many minutes of wall-clock time")
    parser.add_argument("--brokers", type=int, default=3, help="brokers of the simulated cluster")
    parser.add_argument("--partitions", type=int, default=1, help="partitions of its topic")
    parser.add_argument("--policy", choices=POLICIES, default="leader-epoch",
                        help="the followers' truncation rule (raykafka.truncation.policy); high-watermark is "
                             "the rule KIP-101 replaced, which loses acknowledged records")
    parser.add_argument("--steps", type=int, default=40, help="random actions per seed (default: 40)")
    parser.add_argument("--compacted", action="store_true",
                        help="a keyed workload (some tombstones) on a compacted topic with a log cleaner per broker "
                             "(and the kill-cleaner fault), judged by the latest value per key")
    parser.add_argument("--retention", action="store_true",
                        help=f"the topic under retention.ms={RETENTION_MS} with small segments: the brokers delete "
                             "old segments while the faults happen, judged by what retention must keep")
    parser.add_argument("--json", action="store_true", help="one JSON object per seed, then a summary")
    parser.add_argument("--scale", action="store_true",
                        help="measure instead: leadership after a broker loss and a controller failover at "
                             "scale (--brokers, --partitions; see benchmarks/sim_scale.py)")


def _seeds(args: argparse.Namespace) -> Iterator[int]:
    if args.seed is not None:
        yield args.seed
    elif args.seeds is not None:
        yield from args.seeds
    elif args.minutes is not None:
        seed = 1
        while True:
            yield seed
            seed += 1
    else:
        yield from parse_seeds(DEFAULT_SEEDS)


def _row(result: SeedResult) -> tuple[str, ...]:
    return (str(result.options.seed), str(result.steps), f"{result.simulated_ms / 1000:.1f} s", str(result.faults),
            str(result.acknowledged), str(result.lost), result.verdict)


def _plain(row: tuple[str, ...]) -> str:
    widths = (6, 8, 11, 7, 13, 5, 10)
    return "  ".join(cell.rjust(width) for cell, width in zip(row, widths))


def run_seeds(args: argparse.Namespace, out=print) -> list[SeedResult]:
    """Run the chosen seeds, showing progress; returns every result."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    console = Console(stderr=True)
    live = console.is_terminal and not args.json
    deadline = None if args.minutes is None else time.monotonic() + 60 * args.minutes
    base = dict(brokers=args.brokers, partitions=args.partitions, faults=args.faults, policy=args.policy,
                schedule_steps=args.steps, compacted=args.compacted,
                retention=args.retention)
    seeds = list(_seeds(args)) if args.minutes is None else None
    results: list[SeedResult] = []
    progress = Progress(TextColumn("seeds"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[failed]}"),
                        TimeElapsedColumn(), console=console, disable=not live)
    if not args.json:
        out(_plain(COLUMNS))
    with progress:
        task = progress.add_task("seeds", total=None if seeds is None else len(seeds), failed="")
        for seed in (seeds if seeds is not None else _seeds(args)):
            if deadline is not None and time.monotonic() >= deadline:
                break
            result = run_seed(RunOptions(seed=seed, **base))
            results.append(result)
            failed = sum(not r.passed for r in results)
            progress.update(task, advance=1, failed=f"{failed} failed" if failed else "")
            if args.json:
                out(json.dumps(result.to_dict()))
            elif live:
                progress.console.print(_plain(_row(result)), highlight=False)
            else:
                out(_plain(_row(result)))
    return results


def main(args: argparse.Namespace, out=print) -> int:
    if args.scale:
        from orchestration.simulation.scale import run_scale
        figures = run_scale(brokers=args.brokers, partitions=args.partitions, seed=args.seed or 1,
                            out=None if args.json else out)
        out(json.dumps(figures, indent=None if args.json else 2))
        return 0
    started = time.monotonic()
    results = run_seeds(args, out)
    wall_s = time.monotonic() - started
    failed = [r for r in results if not r.passed]
    per_minute = 60 * len(results) / wall_s if wall_s > 0 else 0.0
    if args.json:
        out(json.dumps({"seeds": len(results), "failed": [r.options.seed for r in failed],
                        "wall_clock_s": round(wall_s, 1), "seeds_per_minute": round(per_minute, 1)}))
        return 1 if failed else 0
    out(f"\n{len(results)} seeds, {len(failed)} failed, {wall_s:.1f} s wall-clock ({per_minute:.1f} seeds/minute)")
    for result in failed:
        out(f"\nseed {result.options.seed}: {result.verdict}: {result.detail}")
        out(f"  replay: {result.options.replay_command()}")
    return 1 if failed else 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="raykafka sim")
    add_arguments(parser)
    sys.exit(main(parser.parse_args()))
