"""Spark on the raykafka Ray cluster: a RayDP session, sized to the cluster, ready for Java 17.

RayDP starts three kinds of JVM: the Spark driver (PySpark's spark-submit, in this process), the
RayDP app master (a Ray actor that launches ``java`` itself) and the executors (Ray Java actors).
On Java 17 each of them needs the ``--add-opens`` options Spark's own launcher adds, or some
operations (Arrow, Netty, serialization) fail with ``InaccessibleObjectException``: the driver
gets them through ``spark.driver.extraJavaOptions`` (passed to spark-submit, which puts them on the
driver's command line in client mode), the executors through ``spark.executor.extraJavaOptions``
and the app master through ``spark.ray.raydp_app_master.extraJavaOptions``. Spark's Python
workers run this interpreter (``spark.pyspark.python``) with this project on their path, and reach
the brokers through ``RayTarget``: the exact Ray address (a shared machine may run several Rays,
so ``"auto"`` could find the wrong one) and the cluster's namespace.

``check_java`` looks for Java 17 first (fast, no Spark start) and names the fix when it is missing.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from loguru import logger

REQUIRED_JAVA_MAJOR = 17
_OPENED_PACKAGES = (
    "java.lang", "java.lang.invoke", "java.lang.reflect", "java.io", "java.net", "java.nio", "java.util",
    "java.util.concurrent", "java.util.concurrent.atomic", "sun.nio.ch", "sun.nio.cs", "sun.security.action",
    "sun.util.calendar",
)
# What Spark's launcher adds on Java 17 (JavaModuleOptions), for every JVM RayDP starts.
JAVA17_OPTIONS = " ".join([f"--add-opens=java.base/{package}=ALL-UNNAMED" for package in _OPENED_PACKAGES]
                          + ["-Djdk.reflect.useDirectMethodHandle=false", "-Dio.netty.tryReflectionSetAccessible=true"])
PROJECT_ROOT = str(Path(__file__).resolve().parents[2])
DEFAULT_APP_NAME = "raykafka"
# Spark task slots per executor. raykafka's tasks spend their time waiting for brokers, so an
# executor runs more tasks than the Ray CPUs it holds (one per producer or consumer of a job).
DEFAULT_TASK_SLOTS = 4
DEFAULT_EXECUTOR_MEMORY = "1g"
JAVA_VERSION_TIMEOUT_S = 30


class JavaNotFoundError(RuntimeError):
    """No Java 17 where Spark will look for it; the message says how to fix that."""


def _java_candidates(env: dict) -> list[str]:
    """Where spark-submit and RayDP find ``java``: $JAVA_HOME/bin/java first, else the PATH."""
    java_home = env.get("JAVA_HOME")
    if java_home:
        return [str(Path(java_home) / "bin" / "java")]
    found = shutil.which("java", path=env.get("PATH", ""))
    return [found] if found else []


def _java_major(java: str) -> int | None:
    try:
        answer = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=JAVA_VERSION_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired):
        return None
    match = re.search(r'version "(\d+)(?:\.(\d+))?', answer.stderr + answer.stdout)
    if not match:
        return None
    major = int(match.group(1))
    return int(match.group(2)) if major == 1 and match.group(2) else major  # "1.8" is Java 8


def _installed_java17() -> str | None:
    for home in sorted(Path("/usr/lib/jvm").glob("*17*")) if Path("/usr/lib/jvm").is_dir() else []:
        if (home / "bin" / "java").exists():
            return str(home)
    return None


def check_java(env: dict | None = None) -> str:
    """The path of the Java 17 that Spark will run; raises ``JavaNotFoundError`` naming the fix."""
    env = dict(os.environ if env is None else env)
    candidates = _java_candidates(env)
    installed = _installed_java17()
    fix = (f"set JAVA_HOME={installed} (a Java 17 is installed there)" if installed else
           "install Java 17 (e.g. 'apt-get install openjdk-17-jdk-headless', or a Temurin 17) and set "
           "JAVA_HOME to it or put its bin/ first on PATH")
    if not candidates or not os.access(candidates[0], os.X_OK):
        where = f"JAVA_HOME={env['JAVA_HOME']} has no bin/java" if env.get("JAVA_HOME") else "no 'java' on PATH"
        raise JavaNotFoundError(f"raykafka's Spark jobs need Java {REQUIRED_JAVA_MAJOR}, and there is none "
                                f"({where}). To fix: {fix}.")
    major = _java_major(candidates[0])
    if major != REQUIRED_JAVA_MAJOR:
        found = f"Java {major}" if major else "a java that does not report its version"
        raise JavaNotFoundError(f"raykafka's Spark jobs need Java {REQUIRED_JAVA_MAJOR} (RayDP 1.6 with "
                                f"PySpark 3.5), but {candidates[0]} is {found}. To fix: {fix}.")
    return candidates[0]


@dataclass(frozen=True)
class RayTarget:
    """How a Spark task reaches the raykafka cluster: Ray's address, the cluster's namespace and
    the brokers to bootstrap from. Small and picklable: it travels with every task."""
    address: str
    namespace: str
    bootstrap_broker_ids: tuple[int, ...] = (0,)
    bootstrap_servers: str = ""  # the brokers' Kafka listeners, for stock clients ("host:port,...")

    @classmethod
    def of(cls, cluster) -> "RayTarget":
        """The target of a running ``Cluster`` (this process must be connected to its Ray)."""
        import ray
        return cls(ray.get_runtime_context().gcs_address, cluster.namespace, tuple(cluster.broker_ids),
                   cluster.bootstrap_servers)

    def directory(self):
        """A ``BrokerDirectory`` for this cluster, connecting this process to Ray first if it is
        not yet (a Spark Python worker connects once and keeps the connection for its next tasks)."""
        import ray

        from orchestration.clients.broker_directory import BrokerDirectory
        if not ray.is_initialized():
            ray.init(address=self.address, namespace=self.namespace, log_to_driver=False,
                     logging_level="WARNING", configure_logging=False)
        return BrokerDirectory(namespace=self.namespace, bootstrap_broker_ids=list(self.bootstrap_broker_ids))


@dataclass
class SparkSizing:
    """What the session asks RayDP for. ``executor_cpus`` is what Ray reserves per executor;
    ``task_slots`` is Spark's ``spark.executor.cores`` (tasks running at once per executor)."""
    num_executors: int = 1
    executor_cpus: float = 1.0
    task_slots: int = DEFAULT_TASK_SLOTS
    executor_memory: str = DEFAULT_EXECUTOR_MEMORY

    @classmethod
    def for_ray(cls, available_cpus: float, *, task_slots: int = DEFAULT_TASK_SLOTS) -> "SparkSizing":
        """One executor per two free CPUs (brokers and the load's own Ray calls need the rest),
        at least one; on a 2-core machine that is one executor, one CPU, 1 GB."""
        return cls(num_executors=max(1, int(available_cpus // 2)), executor_cpus=1.0 if available_cpus >= 1 else 0.0,
                   task_slots=task_slots)


def spark_configs(sizing: SparkSizing, extra: dict | None = None) -> dict[str, str]:
    configs = {
        "spark.driver.extraJavaOptions": JAVA17_OPTIONS,
        "spark.executor.extraJavaOptions": JAVA17_OPTIONS,
        "spark.ray.raydp_app_master.extraJavaOptions": JAVA17_OPTIONS,
        "spark.ray.raydp_spark_executor.actor.resource.cpu": str(sizing.executor_cpus),
        # The app master only relays; it needs no CPU of its own.
        "spark.ray.raydp_spark_master.actor.resource.CPU": "0",
        "spark.pyspark.python": sys.executable,
        "spark.pyspark.driver.python": sys.executable,
        "spark.executorEnv.PYSPARK_PYTHON": sys.executable,
        # Python workers import this project's code (not another checkout the venv may point to).
        "spark.executorEnv.PYTHONPATH": PROJECT_ROOT,
        # A producer task run twice writes its records twice (Spark's Kafka sink is at-least-once
        # for the same reason); a failed task fails the job, with its Kafka error.
        "spark.task.maxFailures": "1",
        "spark.ui.showConsoleProgress": "false",
        "spark.ui.enabled": "false",
        "spark.sql.shuffle.partitions": "4",
        "spark.driver.memory": "1g",
    }
    configs.update({str(k): str(v) for k, v in (extra or {}).items()})
    return configs


@dataclass
class SparkOnRay:
    """A running RayDP session; ``stop`` ends Spark (not Ray)."""
    spark: object
    sizing: SparkSizing
    startup_s: float
    configs: dict = field(default_factory=dict)

    @classmethod
    def start(cls, app_name: str = DEFAULT_APP_NAME, sizing: SparkSizing | None = None,
              configs: dict | None = None) -> "SparkOnRay":
        """Start Spark on the Ray this process is connected to (start Ray first)."""
        import ray
        check_java()
        if not ray.is_initialized():
            raise RuntimeError("connect to Ray (or start a Cluster) before starting Spark on it")
        if sizing is None:
            sizing = SparkSizing.for_ray(ray.available_resources().get("CPU", 0.0))
        os.environ["PYSPARK_PYTHON"] = sys.executable
        os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
        import raydp
        settings = spark_configs(sizing, configs)
        started = time.monotonic()
        spark = raydp.init_spark(app_name, sizing.num_executors, sizing.task_slots, sizing.executor_memory,
                                 configs=dict(settings))
        spark.sparkContext.setLogLevel("ERROR")
        startup_s = time.monotonic() - started
        logger.info("Spark on Ray up in {:.1f}s: {} executor(s), {} task slots each, {}", startup_s,
                    sizing.num_executors, sizing.task_slots, sizing.executor_memory)
        return cls(spark, sizing, startup_s, settings)

    def stop(self) -> None:
        import raydp
        try:
            raydp.stop_spark()
        except Exception as exc:  # Ray already gone: nothing left to stop
            logger.warning("stopping Spark: {!r}", exc)

    def __enter__(self) -> "SparkOnRay":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()
