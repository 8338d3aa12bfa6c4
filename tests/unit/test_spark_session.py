"""The Spark session's Java check and settings, without starting Spark: a missing or wrong Java is
reported with the fix, and every JVM RayDP starts gets Java 17's --add-opens options."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from orchestration.spark.session import (
    JAVA17_OPTIONS, JavaNotFoundError, SparkSizing, check_java, java_major_accepted, parse_java_major, spark_configs,
)

JDK17 = next((str(p) for p in sorted(Path("/usr/lib/jvm").glob("*17*")) if (p / "bin" / "java").exists()), None) \
    if Path("/usr/lib/jvm").is_dir() else None


def test_no_java_on_path_names_the_fix(tmp_path):
    with pytest.raises(JavaNotFoundError) as caught:
        check_java({"PATH": str(tmp_path)})
    message = str(caught.value)
    assert "Java 17" in message and "no 'java' on PATH" in message
    assert "JAVA_HOME" in message


def test_java_home_without_java_names_the_fix(tmp_path):
    with pytest.raises(JavaNotFoundError, match=r"JAVA_HOME=.* has no bin/java.*To fix"):
        check_java({"PATH": "", "JAVA_HOME": str(tmp_path)})


def _fake_java(tmp_path, version: str) -> str:
    fake = tmp_path / "bin" / "java"
    fake.parent.mkdir(exist_ok=True)
    fake.write_text(f'#!/bin/sh\necho \'openjdk version "{version}" 2025-10-21\' >&2\n')
    fake.chmod(0o755)
    return str(fake)


@pytest.mark.parametrize("version, major", [("11.0.1", 11), ("25.0.1", 25)])
def test_a_java_older_than_17_or_newer_than_spark_35_runs_on_is_refused(tmp_path, version, major):
    _fake_java(tmp_path, version)
    with pytest.raises(JavaNotFoundError, match=rf"need Java 17 to 22 .* is Java {major}\. To fix"):
        check_java({"PATH": "", "JAVA_HOME": str(tmp_path)})


@pytest.mark.parametrize("version", ["17.0.9", "21.0.2"])
def test_java_17_or_newer_is_accepted(tmp_path, version):
    java = _fake_java(tmp_path, version)
    assert check_java({"PATH": "", "JAVA_HOME": str(tmp_path)}) == java


@pytest.mark.parametrize("text, major", [("21.0.2", 21), ("17.0.9", 17), ("11.0.1", 11), ("1.8.0_392", 8),
                                         ('openjdk version "21.0.2" 2024-01-16', 21), ("22", 22),
                                         ('java version "1.8.0_392"', 8), ("no version here", None)])
def test_java_versions_are_read_as_java_writes_them(text, major):
    assert parse_java_major(text) == major
    assert java_major_accepted(major) == (major is not None and 17 <= major <= 22)


@pytest.mark.skipif(JDK17 is None, reason="no Java 17 installed under /usr/lib/jvm")
def test_java_17_is_found():
    assert check_java({"PATH": "", "JAVA_HOME": JDK17}) == os.path.join(JDK17, "bin", "java")


def test_every_jvm_gets_the_java17_options_and_python_workers_this_interpreter():
    configs = spark_configs(SparkSizing())
    for key in ("spark.driver.extraJavaOptions", "spark.executor.extraJavaOptions",
                "spark.ray.raydp_app_master.extraJavaOptions"):
        assert configs[key] == JAVA17_OPTIONS
    for package in ("java.lang", "java.nio", "sun.nio.ch", "sun.util.calendar", "java.util.concurrent.atomic"):
        assert f"--add-opens=java.base/{package}=ALL-UNNAMED" in JAVA17_OPTIONS
    assert "-Djdk.reflect.useDirectMethodHandle=false" in JAVA17_OPTIONS
    assert configs["spark.pyspark.python"] == sys.executable
    assert configs["spark.task.maxFailures"] == "1"


@pytest.mark.parametrize("cpus, executors", [(2, 1), (1, 1), (0.5, 1), (8, 4)])
def test_sizing_fits_the_ray_cluster(cpus, executors):
    sizing = SparkSizing.for_ray(cpus)
    assert sizing.num_executors == executors
    assert sizing.executor_cpus <= cpus


def test_on_several_nodes_the_executors_spread_and_each_bundle_is_what_an_executor_asks_for():
    assert SparkSizing.for_ray(8).placement_strategy is None
    sizing = SparkSizing.for_ray(8, nodes=3)
    assert sizing.placement_strategy == "SPREAD"
    # RayDP's executor actor asks for its CPUs and spark.executor.memory as Ray's memory resource.
    assert sizing.bundles() == [{"CPU": 1.0, "memory": float(1 << 30)}] * sizing.num_executors
    assert SparkSizing(num_executors=2, executor_cpus=0.0, executor_memory="512m").bundles() == \
        [{"memory": float(512 << 20)}] * 2
    with pytest.raises(ValueError, match="placement_strategy must be one of PACK, SPREAD"):
        SparkSizing(placement_strategy="EVERYWHERE")


def test_a_python_worker_joins_ray_on_its_own_hosts_node(monkeypatch):
    import ray

    from orchestration.spark import session
    joined = {}
    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray, "init", lambda **kwargs: joined.update(kwargs))
    monkeypatch.setattr(session, "node_ip_toward", lambda address: {"198.18.0.10:6379": "198.18.0.11"}[address])
    session.RayTarget("198.18.0.10:6379", "ns").directory()
    assert joined["address"] == "198.18.0.10:6379"
    assert joined["_node_ip_address"] == "198.18.0.11", "Ray would attach the worker to the head's node"


def test_the_node_ip_is_the_one_this_host_has_toward_the_gcs():
    from orchestration.spark.session import node_ip_toward
    assert node_ip_toward("127.0.0.1:6379") == "127.0.0.1"
