"""``raykafka cluster stop --delete-data`` removes the directories ``cluster start`` made (each
broker's log directory holding its meta.properties, the cluster's log directory when start created
it and nothing else is in it, the ``--local`` Ray head's ``/tmp/rk-ray-*``) and refuses, leaving in
place, every other path it is given; shown on directories built in a temporary directory, no Ray."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from orchestration.admin.data_dirs import delete_cluster_data


def broker_dir(log_dir: Path, broker_id: int, names: int | None = None) -> Path:
    """A log directory as broker ``broker_id`` leaves it (its meta.properties naming ``names``)."""
    path = log_dir / f"broker-{broker_id}"
    (path / "t-0").mkdir(parents=True)
    (path / "t-0" / "00000000000000000000.log").write_bytes(b"\0" * 64)
    (path / "meta.properties").write_text(
        f"version=1\nbroker.id={broker_id if names is None else names}\ndirectory.id=d{broker_id}\n")
    return path


def test_removes_every_broker_directory_and_the_log_directory_start_created(tmp_path):
    log_dir = tmp_path / "logs"
    dirs = {b: str(broker_dir(log_dir, b)) for b in range(3)}
    answer = delete_cluster_data(log_dir=str(log_dir), broker_log_dirs=dirs, log_dir_created=True)
    assert answer["refused"] == [] and answer["missing"] == []
    assert answer["deleted"] == [*dirs.values(), str(log_dir)]
    assert not log_dir.exists()


def test_a_log_directory_that_existed_before_start_stays_with_what_else_it_holds(tmp_path):
    log_dir = tmp_path / "mine"
    log_dir.mkdir()
    (log_dir / "notes.txt").write_text("the user's own file")
    dirs = {0: str(broker_dir(log_dir, 0))}
    answer = delete_cluster_data(log_dir=str(log_dir), broker_log_dirs=dirs, log_dir_created=False)
    assert answer["deleted"] == [dirs[0]] and answer["kept"] == [str(log_dir)]
    assert (log_dir / "notes.txt").read_text() == "the user's own file"


def test_a_created_log_directory_holding_other_files_is_refused_not_emptied(tmp_path):
    log_dir = tmp_path / "logs"
    dirs = {0: str(broker_dir(log_dir, 0))}
    (log_dir / "other").write_text("x")
    answer = delete_cluster_data(log_dir=str(log_dir), broker_log_dirs=dirs, log_dir_created=True)
    assert answer["deleted"] == [dirs[0]]
    assert [r["path"] for r in answer["refused"]] == [str(log_dir)] and "other" in answer["refused"][0]["reason"]
    assert (log_dir / "other").exists()


@pytest.mark.parametrize("case", ["no meta.properties", "another broker's", "outside the log dir",
                                  "wrong name", "symlink"])
def test_refuses_a_path_no_broker_of_the_cluster_made(tmp_path, case):
    log_dir = tmp_path / "logs"
    log_dir.mkdir()
    if case == "no meta.properties":
        target = log_dir / "broker-0"
        target.mkdir()
        (target / "keep.txt").write_text("x")
    elif case == "another broker's":
        target = broker_dir(log_dir, 0, names=7)
    elif case == "outside the log dir":
        target = broker_dir(tmp_path / "elsewhere", 0)
    elif case == "wrong name":
        target = tmp_path / "logs" / "home"
        target.mkdir()
        (target / "meta.properties").write_text("broker.id=0\n")
    else:
        real = broker_dir(tmp_path / "real", 0)
        target = log_dir / "broker-0"
        target.symlink_to(real, target_is_directory=True)
    answer = delete_cluster_data(log_dir=str(log_dir), broker_log_dirs={0: str(target)}, log_dir_created=True)
    assert str(target) not in answer["deleted"]
    assert [r["path"] for r in answer["refused"]][0] == str(target)
    assert target.exists() and any(target.iterdir())


def test_a_directory_not_on_this_machine_is_reported_missing(tmp_path):
    answer = delete_cluster_data(log_dir=str(tmp_path / "logs"), broker_log_dirs={1: str(tmp_path / "logs" / "broker-1")})
    assert answer == {"deleted": [], "refused": [], "missing": [str(tmp_path / "logs" / "broker-1")], "kept": []}


def test_the_local_heads_temporary_directory_goes_and_no_other(tmp_path):
    ray_temp = Path(tempfile.mkdtemp(prefix="rk-ray-", dir="/tmp"))
    (ray_temp / "session_latest").mkdir()
    other = Path(tempfile.mkdtemp(prefix="not-ray-", dir="/tmp"))
    nested = tmp_path / "rk-ray-x"
    nested.mkdir()
    try:
        answer = delete_cluster_data(log_dir=str(tmp_path / "logs"), broker_log_dirs={}, ray_temp_dir=str(ray_temp))
        assert answer["deleted"] == [str(ray_temp)] and not ray_temp.exists()
        for path in (other, nested):
            answer = delete_cluster_data(log_dir=str(tmp_path / "logs"), broker_log_dirs={}, ray_temp_dir=str(path))
            assert answer["deleted"] == [] and [r["path"] for r in answer["refused"]] == [str(path)]
            assert path.exists()
    finally:
        for path in (ray_temp, other):
            if path.exists():
                os.rmdir(path)
