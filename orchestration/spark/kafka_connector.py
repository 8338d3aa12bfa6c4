"""Spark's own Kafka connector (``spark-sql-kafka-0-10``) on a RayDP session.

With it a Spark user reads and writes a raykafka cluster with Spark's API as it is:
``spark.read.format("kafka")``, ``spark.readStream.format("kafka")``, ``df.write.format("kafka")``
and ``df.writeStream.format("kafka")``, pointed at the brokers' Kafka listeners with
``kafka.bootstrap.servers`` (``kafka_options(cluster)`` gives it). raykafka adds nothing to the data
path: the connector's Java consumers, admin client and producers speak Kafka's wire protocol.

The jars are not shipped with PySpark. ``connector_jars`` fetches them from Maven Central the first
time through ``ci/spark-kafka/fetch.sh`` (the pom pins the Spark version, which must equal the
installed PySpark's) into raykafka's cache (``~/.cache/raykafka``) and reuses them after.
``connector_configs`` puts them on the classpath of each JVM RayDP starts: the driver through
``spark.driver.extraClassPath`` (RayDP appends its own jars after it) and the app master and
executors through ``raydp.executor.extraClassPath`` (RayDP's own key for them). The paths are local:
on a Ray cluster of several hosts each host needs the same cache (run ``ci/spark-kafka/fetch.sh``
on each, or share the cache directory).
"""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
POM = REPO_ROOT / "ci" / "spark-kafka" / "pom.xml"
FETCH_SCRIPT = REPO_ROOT / "ci" / "spark-kafka" / "fetch.sh"
FETCH_TIMEOUT_S = 600.0
DRIVER_CLASSPATH = "spark.driver.extraClassPath"
EXECUTOR_CLASSPATH = "raydp.executor.extraClassPath"  # RayDP: the app master's and executors' classpath


class ConnectorUnavailable(RuntimeError):
    """Spark's Kafka connector cannot be had here; the message says what is missing."""


def pinned_spark_version() -> str:
    text = POM.read_text(encoding="utf-8")
    return text.split("<spark.version>", 1)[1].split("</spark.version>", 1)[0].strip()


def unavailable_reason() -> str | None:
    """Why the connector cannot be put on a session here (Java, Maven or a Spark mismatch), or None."""
    import pyspark
    pinned = pinned_spark_version()
    if pyspark.__version__ != pinned:
        return (f"ci/spark-kafka/pom.xml pins Spark {pinned}'s Kafka connector but PySpark {pyspark.__version__} "
                f"is installed; set <spark.version> in that pom to {pyspark.__version__}")
    if shutil.which("java") is None:
        return "Spark's Kafka connector needs Java 17 (Debian: apt-get install openjdk-17-jre-headless)"
    if shutil.which("mvn") is None and _cached_jars() is None:
        return ("fetching Spark's Kafka connector (spark-sql-kafka-0-10) needs Maven "
                "(Debian: apt-get install maven), or its jars already in the cache")
    return None


def _cache_dir() -> Path:
    return Path(os.environ.get("RAYKAFKA_CACHE_DIR")
                or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "raykafka")


def _cached_jars() -> Path | None:
    """A complete copy for this pom (fetch.sh's layout), without running Maven."""
    import hashlib
    digest = hashlib.sha256(POM.read_bytes()).hexdigest()[:12]
    home = _cache_dir() / f"spark-sql-kafka-{pinned_spark_version()}-{digest}"
    return home / "jars" if (home / "complete").exists() else None


def connector_jars(timeout_s: float = FETCH_TIMEOUT_S) -> list[str]:
    """The connector's jars (fetched the first time); raises ``ConnectorUnavailable`` naming the fix."""
    reason = unavailable_reason()
    if reason:
        raise ConnectorUnavailable(reason)
    jars_dir = _cached_jars()
    if jars_dir is None:
        done = subprocess.run(["bash", str(FETCH_SCRIPT)], capture_output=True, text=True, timeout=timeout_s)
        if done.returncode != 0:
            raise ConnectorUnavailable(f"ci/spark-kafka/fetch.sh failed ({done.returncode}): "
                                       f"{done.stderr.strip()[-2000:]}")
        jars_dir = Path(done.stdout.strip().splitlines()[-1])
    jars = sorted(str(jar) for jar in jars_dir.glob("*.jar"))
    if not any("spark-sql-kafka" in Path(jar).name for jar in jars):
        raise ConnectorUnavailable(f"{jars_dir} holds no spark-sql-kafka jar; remove it and fetch again")
    return jars


def connector_configs(jars: list[str], configs: dict | None = None) -> dict[str, str]:
    """``configs`` with ``jars`` added to the driver's and the executors' classpaths (after any
    classpath already given there)."""
    merged = {str(k): str(v) for k, v in (configs or {}).items()}
    for key in (DRIVER_CLASSPATH, EXECUTOR_CLASSPATH):
        given = [entry for entry in merged.get(key, "").split(os.pathsep) if entry]
        merged[key] = os.pathsep.join(given + [jar for jar in jars if jar not in given])
    return merged


def kafka_options(cluster_or_servers) -> dict[str, str]:
    """The option Spark's Kafka source and sink need to reach a raykafka cluster, from a ``Cluster``
    (its brokers' listeners), a ``RayTarget`` or a ``host:port,...`` string:
    ``spark.read.format("kafka").options(**kafka_options(cluster))``."""
    servers = cluster_or_servers if isinstance(cluster_or_servers, str) else cluster_or_servers.bootstrap_servers
    if not servers:
        raise ValueError("the cluster's brokers registered no Kafka listener (set 'listeners' in the broker config)")
    return {"kafka.bootstrap.servers": servers}
