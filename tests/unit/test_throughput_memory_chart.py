"""The backlog benchmark's memory chart draws the brokers' heap (RssAnon) and shared memory
(RssShmem, Ray's object store) apart, beside their sum: the lines it draws are computed from a
hand-made probe series and the PNG is written, no Ray."""
from __future__ import annotations

from benchmarks import _report as report

SERIES = [(0.0, 500_000_000), (1.0, 800_000_000)]
KINDS = [(0.0, {"anon": 300_000_000, "file": 200_000_000, "shmem": 0}),
         (1.0, {"anon": 350_000_000, "file": 200_000_000, "shmem": 250_000_000})]


def test_the_memory_chart_draws_heap_and_shared_memory_apart_and_their_sum():
    lines = {label.split(" (")[0]: ys for label, _, ys in report.memory_lines(SERIES, KINDS)}
    assert lines == {"heap": [300.0, 350.0], "shared memory": [0.0, 250.0], "mapped files": [200.0, 200.0],
                     "RSS, all parts": [500.0, 800.0]}
    assert [label for label, _, _ in report.memory_lines(SERIES, None)] == ["RSS, all parts"]


def test_the_memory_chart_is_written(tmp_path):
    path = report.draw_memory(str(tmp_path / "memory.png"), SERIES, [(0.0, "produce"), (0.5, "consume")],
                              "broker memory", KINDS)
    assert (tmp_path / "memory.png").stat().st_size > 0 and path.endswith("memory.png")
