"""raykafka load run's live progress display: counts, rates and a bar per phase, drawn with rich."""
import io

from rich.console import Console

from orchestration.spark import jobs, pipeline


def _display(monkeypatch, snapshots):
    answers = iter(snapshots)
    monkeypatch.setattr(jobs, "snapshot", lambda progress: {"counts": next(answers)})
    stream = io.StringIO()
    console = Console(file=stream, force_terminal=False, width=200)
    return pipeline._Display(progress=None, enabled=True, console=console), stream


def test_the_load_bar_counts_acknowledged_and_failed_records_toward_the_record_count(monkeypatch):
    display, stream = _display(monkeypatch, [
        {"sent": 40, "acknowledged": 30, "failed": 2, "read": 0},
        {"sent": 100, "acknowledged": 97, "failed": 3, "read": 5}])
    display.start("load", 100)
    display.update()
    counts = display.update()
    task = display._bar.tasks[0]
    display.done()
    assert counts["acknowledged"] == 97
    assert (task.completed, task.total) == (100, 100)
    text = stream.getvalue()
    assert "load" in text and "acknowledged 97" in text and "failed 3" in text and "read 5" in text


def test_the_consume_bar_counts_records_read_toward_those_acknowledged(monkeypatch):
    display, stream = _display(monkeypatch, [{"sent": 10, "acknowledged": 10, "failed": 0, "read": 7}])
    display.start("consume", 10)
    display.update()
    task = display._bar.tasks[0]
    display.done()
    assert (task.completed, task.total) == (7, 10)
    assert "consume" in stream.getvalue()


def test_a_timed_load_has_no_total_and_a_disabled_display_draws_nothing(monkeypatch):
    display, _ = _display(monkeypatch, [{"sent": 1, "acknowledged": 1, "failed": 0, "read": 0}])
    display.start("load", None)
    display.update()
    assert display._bar.tasks[0].total is None
    display.done()
    monkeypatch.setattr(jobs, "snapshot", lambda progress: {"counts": {"sent": 1, "acknowledged": 1, "failed": 0,
                                                                          "read": 0}})
    quiet = pipeline._Display(progress=None, enabled=False)
    quiet.start("load", 5)
    assert quiet.update()["sent"] == 1
    quiet.done()
