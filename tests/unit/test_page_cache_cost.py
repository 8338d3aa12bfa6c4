"""benchmarks/page_cache_cost.py, small: every phase writes exactly its slice (the last write of a
slice shorter than the others), each row says what it cost, nothing is left on disk, and bad
arguments are refused before anything is written."""
from __future__ import annotations

import json
import os
import types

import pytest

from benchmarks import page_cache_cost


def test_each_phase_writes_its_slice_and_leaves_nothing_behind(tmp_path):
    lines = []
    results = page_cache_cost.run(megabytes=1, slices=2, write_bytes=65_537, waits_s=[0, 0.01],
                                  parent=str(tmp_path), out=lines.append)
    assert [row["phase"] for row in results["rows"]] == [
        "kept, slice 1", "kept, slice 2", "freed at once", "freed 0 s before", "freed 0.01 s before"]
    for row in results["rows"]:
        assert row["bytes"] == page_cache_cost.MIB  # 16 writes of 65,537 bytes and a shorter 17th
        assert row["seconds"] > 0 and row["cpu_s"] >= 0 and row["mb_per_s"] > 0
    assert set(results["summary"]["freed_before_cpu_s_per_gb"]) == {"0", "0.01"}
    assert os.listdir(tmp_path) == [], "the slices' files and their directory are removed"
    assert any(line.startswith("kept, slice 2") for line in lines)
    reporting = results["machine"]["page_reporting"]
    if os.path.isdir(page_cache_cost.PAGE_REPORTING):  # the kernel's free page reporting, as it was set
        assert isinstance(reporting["page_reporting_order"], int)
        assert all(isinstance(row["reported_kib_at_start"], int) for row in results["rows"])
    else:
        assert reporting is None and not any("reported_kib_at_start" in row for row in results["rows"])


def test_main_saves_its_figures(tmp_path):
    out = tmp_path / "figures.json"
    page_cache_cost.main(["--megabytes", "1", "--slices", "1", "--wait-s", "0", "--dir", str(tmp_path),
                          "--out", str(out)])
    saved = json.loads(out.read_text())
    assert saved["settings"] == {"megabytes": 1, "slices": 1, "write_bytes": 5_767_168, "waits_s": [0.0]}
    assert saved["command"].startswith("benchmarks/page_cache_cost.py --megabytes 1")
    assert os.listdir(tmp_path) == ["figures.json"]


@pytest.mark.parametrize("argv", [["--wait-s", "five"], ["--megabytes", "0"], ["--wait-s", "-1"],
                                  ["--write-bytes", "0"]])
def test_bad_arguments_are_refused_before_writing(tmp_path, argv):
    with pytest.raises(SystemExit):
        page_cache_cost.main([*argv, "--dir", str(tmp_path), "--out", str(tmp_path / "never.json")])
    assert os.listdir(tmp_path) == []


def test_a_directory_without_room_is_refused_before_writing(tmp_path, monkeypatch):
    monkeypatch.setattr(page_cache_cost.shutil, "disk_usage", lambda _path: types.SimpleNamespace(free=1024))
    with pytest.raises(OSError, match="need"):
        page_cache_cost.run(megabytes=1, slices=2, write_bytes=4096, waits_s=[], parent=str(tmp_path), out=print)
    assert os.listdir(tmp_path) == []
    with pytest.raises(SystemExit, match="page_cache_cost: 1 slices of 1 MiB need"):
        page_cache_cost.main(["--megabytes", "1", "--slices", "1", "--dir", str(tmp_path),
                              "--out", str(tmp_path / "never.json")])


def test_the_throughput_run_carries_the_page_cache_figures(tmp_path, monkeypatch):
    from benchmarks import throughput
    monkeypatch.setattr(throughput, "PAGE_CACHE_SLICE_MIB", 1)
    monkeypatch.setattr(throughput, "PAGE_CACHE_KEPT_SLICES", 2)
    monkeypatch.setattr(page_cache_cost.tempfile, "tempdir", str(tmp_path))
    figures = throughput.page_cache_figures()
    assert len(figures["slices_cpu_s_per_gb"]) == 3  # two kept, one freed at once
    assert figures["new_pages_cpu_s_per_gb"] == figures["slices_cpu_s_per_gb"][1]
    assert figures["freed_at_once_cpu_s_per_gb"] == figures["slices_cpu_s_per_gb"][2]
    assert "into pages new to it took" in throughput.describe_page_cache(figures)
    assert os.listdir(tmp_path) == []
    monkeypatch.setattr(page_cache_cost.shutil, "disk_usage", lambda _path: types.SimpleNamespace(free=0))
    skipped = throughput.page_cache_figures()
    assert skipped["skipped"].startswith("OSError") and "not measured" in throughput.describe_page_cache(skipped)
