"""raykafka load run's live progress display: a bar per phase with counts and rates, drawn with rich."""
import io

from rich.console import Console

from orchestration.spark import jobs, pipeline

ZERO = {"sent": 0, "acknowledged": 0, "failed": 0, "read": 0}


def _display(monkeypatch, snapshots, enabled=True):
    answers = iter(snapshots)
    monkeypatch.setattr(jobs, "snapshot", lambda progress: {"counts": next(answers)})
    stream = io.StringIO()
    console = Console(file=stream, force_terminal=False, width=120)
    return pipeline._Display(progress=None, enabled=enabled, console=console), stream


def test_the_load_bar_counts_acknowledged_and_failed_records_toward_the_record_count(monkeypatch):
    display, stream = _display(monkeypatch, [
        ZERO,
        {"sent": 40, "acknowledged": 30, "failed": 2, "read": 0},
        {"sent": 100, "acknowledged": 97, "failed": 3, "read": 5}])
    display.start("load", 100)
    display.update()
    bar = display._bar
    counts = display.update(final=True)
    display.done()
    assert counts["acknowledged"] == 97
    assert (bar.tasks[0].completed, bar.tasks[0].total) == (100, 100)
    text = stream.getvalue()
    assert "load" in text and "100/100" in text and "acked 97" in text and "failed 3" in text and "mean" in text


def test_the_consume_bar_counts_records_read_toward_those_acknowledged(monkeypatch):
    display, stream = _display(monkeypatch, [
        {"sent": 10, "acknowledged": 10, "failed": 0, "read": 4},
        {"sent": 10, "acknowledged": 10, "failed": 0, "read": 7}])
    display.start("consume", 10)
    display.update()
    bar = display._bar
    display.done()
    assert (bar.tasks[0].completed, bar.tasks[0].total) == (7, 10)
    assert "consume" in stream.getvalue() and "read 7" in stream.getvalue()


def test_each_phase_draws_only_its_own_bar(monkeypatch):
    one = {"sent": 1, "acknowledged": 1, "failed": 0, "read": 1}
    display, stream = _display(monkeypatch, [ZERO, one, one, one])
    display.start("load", None)
    assert display._bar.tasks[0].total is None  # a timed load has no record count
    display.update(final=True)
    display.done()
    display.start("consume", 1)
    display.update(final=True)
    display.done()
    assert stream.getvalue().count("load") == 1 and stream.getvalue().count("consume") == 1


def test_a_disabled_display_draws_nothing_and_still_reports_counts(monkeypatch):
    display, stream = _display(monkeypatch, [ZERO, {"sent": 1, "acknowledged": 1, "failed": 0, "read": 0}],
                               enabled=False)
    display.start("load", 5)
    assert display.update()["sent"] == 1
    display.done()
    assert stream.getvalue() == ""


def test_a_consume_job_that_read_alongside_the_load_reports_its_mean_rate_since_it_started(monkeypatch):
    # The consume job ran while the load did, so by the time its phase is shown it has read
    # everything: its mean rate counts from the job's start, not from the phase's (which was 0/s).
    clock = iter([100.0, 110.0, 110.0])
    monkeypatch.setattr(pipeline.time, "monotonic", lambda: next(clock))
    everything = {"sent": 500, "acknowledged": 500, "failed": 0, "read": 500}
    display, stream = _display(monkeypatch, [everything, everything])
    display.start("consume", 500, since=(90.0, 0))
    display.update(final=True)
    display.done()
    assert "25/s mean" in stream.getvalue()  # 500 records in the 20 s since the job started
