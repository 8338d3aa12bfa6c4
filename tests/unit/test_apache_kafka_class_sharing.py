"""Kafka's tools share their classes between runs: a tool's first successful run writes a
class-data-sharing archive beside the jars, its later runs map it, a failed run keeps nothing, and
the JVM's own warnings go to stderr (no JVM started: the options and files are checked)."""
from __future__ import annotations

from orchestration.apache_kafka import JVM_LOG_TO_STDERR, _class_sharing, _keep_archive

MAIN = "org.apache.kafka.tools.TopicCommand"


def test_a_successful_run_leaves_an_archive_its_later_runs_map(tmp_path):
    libs = tmp_path / "libs"
    libs.mkdir()
    options, pending = _class_sharing(libs, MAIN, write=True)
    assert pending is not None and options == (f"-XX:ArchiveClassesAtExit={pending}", *JVM_LOG_TO_STDERR)
    pending.write_bytes(b"archive")  # what the JVM writes as it exits
    _keep_archive(pending, 0)
    assert not pending.exists()
    options, again = _class_sharing(libs, MAIN, write=True)
    archive = options[0].removeprefix("-XX:SharedArchiveFile=")
    assert again is None and options[0].startswith("-XX:SharedArchiveFile=") and MAIN in archive
    assert open(archive, "rb").read() == b"archive"
    assert _class_sharing(libs, "org.apache.kafka.tools.ConfigCommand", write=False) == (JVM_LOG_TO_STDERR, None)


def test_a_failed_run_keeps_no_archive(tmp_path):
    libs = tmp_path / "libs"
    libs.mkdir()
    _, pending = _class_sharing(libs, MAIN, write=True)
    pending.write_bytes(b"half")
    _keep_archive(pending, 1)
    assert list((tmp_path / "class-sharing").iterdir()) == []
    assert _class_sharing(libs, MAIN, write=False) == (JVM_LOG_TO_STDERR, None)

