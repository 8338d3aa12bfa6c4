"""The run's picture: faults become bands from the fault to its healing step, a history gives the
same per-second windows the Spark summary does, and a PNG is drawn; no Spark or Ray."""
from __future__ import annotations

from orchestration.spark.plot import draw, fault_bands, windows_from_history


def test_a_kill_lasts_until_its_restart_and_an_unhealed_pause_until_the_end():
    faults = [(3.0, "kill", "broker-1 restart=False"), (9.0, "restart", "broker-1 "),
              (12.0, "pause", "broker-2"), (1.0, "kill", "controller restart=True")]
    assert fault_bands(faults, end_s=20.0) == [
        (1.0, 1.5, "kill controller"), (3.0, 9.0, "kill broker-1"), (12.0, 20.0, "pause broker-2")]


def test_heal_ends_every_network_fault():
    faults = [(2.0, "partition", "broker-0"), (3.0, "delay", "broker-1"), (5.0, "heal", "all")]
    assert sorted(fault_bands(faults, 10.0)) == [(2.0, 5.0, "partition broker-0"), (3.0, 5.0, "delay broker-1")]


def _event(time, f, type_, value):
    return {"time": time, "process": "p", "type": type_, "f": f, "value": value}


def test_windows_from_a_history(tmp_path):
    events = [_event(0.1, "send", "invoke", {"topic": "t", "partition": None, "value": "a"}),
              _event(0.3, "send", "ok", {"topic": "t", "partition": 0, "offset": 0, "value": "a"}),
              _event(1.2, "send", "invoke", {"topic": "t", "partition": None, "value": "b"}),
              _event(1.5, "send", "ok", {"topic": "t", "partition": 0, "offset": 1, "value": "b"}),
              _event(1.6, "fault", "info", {"name": "kill", "target": "broker-0", "detail": {"restart": True}}),
              _event(1.8, "poll", "ok", {"records": [["t", 0, 0, "a"], ["t", 0, 1, "b"]], "positions_before": {}})]
    produce, consume, faults = windows_from_history(events)
    assert [(w["second"], w["records"]) for w in produce] == [(0, 1), (1, 1)]
    assert round(produce[0]["p50_ms"]) == 200
    assert consume == [{"second": 1, "records": 2}]
    assert faults == [(1.6, "kill", "broker-0 restart=True")]
    png = draw(tmp_path / "run.png", produce, consume, fault_bands(faults, 2.0), "test")
    assert (tmp_path / "run.png").stat().st_size > 1000 and png.endswith("run.png")


def test_a_chaos_run_draws_its_picture_from_its_history(tmp_path):
    from orchestration.cli import _draw_history
    from orchestration.history import HistoryWriter
    with HistoryWriter(tmp_path / "history.jsonl") as history:
        history.invoke("p", "t", None, "a", time=0.1)
        history.ok("p", "t", 0, 0, "a", time=0.2)
        history.fault("kill", "broker-0", {"restart": False}, time=0.5)
        history.fault("restart", "broker-0", time=1.5)
        history.poll("c", [["t", 0, 0, "a"]], {"t-0": 0}, time=2.0)
    assert _draw_history(tmp_path, "chaos").endswith("throughput.png")
    assert (tmp_path / "throughput.png").exists()
