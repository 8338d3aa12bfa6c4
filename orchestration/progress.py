"""A live progress display for long commands: one row per task (a partition being moved, a chaos
run's phase), each with a bar toward its total and a line of detail. On a terminal it is a rich
``Progress``; when the output is not a terminal (a pipe, a CI log, ``--json`` scripts) it degrades
to plain lines, one each time a row changes, so logs stay readable and nothing is redrawn.

It writes to stderr, so a command's answer on stdout (JSON included) stays clean.
"""
from __future__ import annotations

import sys
from typing import Any, TextIO


class ProgressDisplay:
    def __init__(self, *, enabled: bool | None = None, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stderr
        self.live = self.stream.isatty() if enabled is None else enabled
        self._progress = None
        self._tasks: dict[Any, Any] = {}
        self._last_line: dict[Any, str] = {}
        if self.live:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
            self._progress = Progress(TextColumn("[bold]{task.description}"), BarColumn(bar_width=20),
                                      MofNCompleteColumn(), TextColumn("{task.fields[detail]}"), TimeElapsedColumn(),
                                      console=Console(file=self.stream), refresh_per_second=4)
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
