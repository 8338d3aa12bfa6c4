"""The live progress display raykafka's long commands share (``raykafka load run``, the throughput
benchmark): a rich bar with counts, a detail field and the elapsed time on a terminal, and plain
lines where the output is not a terminal (a log file, CI, a pipe), so nothing there fills with
redrawn bars."""
from __future__ import annotations


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
