"""The progress display degrades to plain lines when its stream is not a terminal: one line each
time a row changes, nothing repeated; and chaos phases become rows in order."""
from __future__ import annotations

import io

from orchestration.progress import ProgressDisplay


def test_plain_lines_when_not_a_terminal_one_per_change():
    stream = io.StringIO()
    with ProgressDisplay(stream=stream) as display:
        display.update("p0", "orders-0", completed=1, total=2, detail="in progress")
        display.update("p0", "orders-0", completed=1, total=2, detail="in progress")  # unchanged: no line
        display.update("p0", "orders-0", completed=2, total=2, detail="complete")
        display.note("done")
    assert stream.getvalue().splitlines() == ["orders-0: 1/2 in progress", "orders-0: 2/2 complete", "done"]


def test_a_live_display_on_a_terminal_writes_no_plain_lines():
    stream = io.StringIO()
    with ProgressDisplay(stream=stream, enabled=True) as display:
        display.update("p0", "orders-0", completed=1, total=2, detail="in progress")
    assert "orders-0: 1/2" not in stream.getvalue()
