"""The live progress displays raykafka's long commands share: ``raykafka load run``, the throughput
benchmark, ``reassign-partitions --execute --wait`` and ``chaos run``. On a terminal each is a rich
``Progress`` (a bar with counts, a detail field and the elapsed time); where the output is not a
terminal (a log file, CI, a pipe, ``--json`` scripts) it degrades to plain lines, so nothing there
fills with redrawn bars.

``rich_progress`` gives the columns every display uses; ``StepProgress`` counts a run of steps (a
benchmark's points); ``ProgressDisplay`` keeps one row per task (a partition being moved, a chaos
run's phase) and writes to stderr, so a command's answer on stdout (JSON included) stays clean.
"""
from __future__ import annotations

import sys
from typing import Any, TextIO


def rich_progress(console=None, *, disable: bool = False):
    """rich's ``Progress`` with the columns every raykafka display uses: the description, a bar,
    done/total, a free ``detail`` field (set it with ``update(task, detail=...)``) and the time."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
    return Progress(TextColumn("[bold]{task.description:>7}"), BarColumn(bar_width=20), MofNCompleteColumn(),
                    TextColumn("{task.fields[detail]}"), TimeElapsedColumn(),
                    console=console or Console(stderr=True), refresh_per_second=2, disable=disable)


class StepProgress:
    """Progress over a run of ``total`` steps: ``step`` names the one starting, ``detail`` updates
    its live figures, ``done`` ends it with a line of results. On a terminal (and ``enabled``)
    that is a bar with the finished lines printed above it; elsewhere only the finished lines,
    through ``out``."""

    def __init__(self, total: int, *, enabled: bool = True, out=print, console=None) -> None:
        from rich.console import Console
        self.console = console or Console()
        self.live = enabled and self.console.is_terminal
        self.out = out
        self._progress = rich_progress(self.console, disable=not self.live)
        self._task = self._progress.add_task("", total=total, detail="")

    def __enter__(self) -> "StepProgress":
        self._progress.start()
        return self

    def __exit__(self, *exc) -> None:
        self._progress.stop()

    def step(self, description: str) -> None:
        self._progress.update(self._task, description=description, detail="")

    def detail(self, text: str) -> None:
        self._progress.update(self._task, detail=text)

    def done(self, line: str | None = None) -> None:
        self._progress.update(self._task, advance=1, detail="")
        self.say(line)

    def say(self, line: str | None) -> None:
        """A line of output, above the bar on a terminal."""
        if line is None:
            return
        if self.live:
            self._progress.console.print(line, highlight=False, markup=False)
        else:
            self.out(line)


class ProgressDisplay:
    """One row per task, on ``stream`` (stderr by default): a bar on a terminal, else a plain line
    each time a row changes."""

    def __init__(self, *, enabled: bool | None = None, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stderr
        self.live = self.stream.isatty() if enabled is None else enabled
        self._progress = None
        self._tasks: dict[Any, Any] = {}
        self._last_line: dict[Any, str] = {}
        if self.live:
            from rich.console import Console
            self._progress = rich_progress(Console(file=self.stream))
            self._progress.start()

    def __enter__(self) -> ProgressDisplay:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def update(self, key: Any, description: str, *, completed: int, total: int | None, detail: str = "") -> None:
        """Create or move the row ``key``."""
        if self._progress is not None:
            if key not in self._tasks:
                self._tasks[key] = self._progress.add_task(description, total=total, detail=detail)
            self._progress.update(self._tasks[key], description=description, completed=completed, total=total,
                                  detail=detail)
            return
        line = f"{description}: {completed}/{'?' if total is None else total} {detail}".rstrip()
        if self._last_line.get(key) != line:
            self._last_line[key] = line
            print(line, file=self.stream, flush=True)

    def note(self, message: str) -> None:
        """A one-off line above the rows (a phase starting, a fault injected)."""
        if self._progress is not None:
            self._progress.console.print(message)
        else:
            print(message, file=self.stream, flush=True)

    def close(self) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None
