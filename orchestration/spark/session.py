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

On a Ray cluster of several hosts nothing here names loopback: RayDP binds and advertises the
driver (``spark.driver.host`` and ``bindAddress``), the app master and each executor at its Ray
node's IP; a Python worker joins Ray as a driver on its own host's node (``RayTarget.directory``,
from the address its host has toward the GCS, as ``ray start --address`` chooses a worker node's);
and ``SparkSizing.placement_strategy`` spreads the executors over the nodes with a Ray placement
group (``for_ray`` picks ``SPREAD`` when the cluster has more than one node).

``check_java`` looks for a Java from 17 to 22 first (fast, no Spark start) and names the fix when
there is none: 17 is the oldest these options and RayDP 1.6's own CI use; from Java 23 on,
``Subject.getSubject`` throws unless a security manager is allowed, and the Hadoop client in
PySpark 3.5 calls it for the current user, so Spark 3.5 does not start there.
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

MIN_JAVA_MAJOR = 17  # the --add-opens options below, and RayDP 1.6's CI
MAX_JAVA_MAJOR = 22  # Java 23 made Subject.getSubject throw; PySpark 3.5's Hadoop client calls it
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
PLACEMENT_TIMEOUT_S = 60
EXECUTORS_REGISTER_TIMEOUT_S = 120
EXECUTORS_POLL_S = 0.2


class JavaNotFoundError(RuntimeError):
    """No Java from 17 to 22 where Spark will look for it; the message says how to fix that."""


def _java_candidates(env: dict) -> list[str]:
    """Where spark-submit and RayDP find ``java``: $JAVA_HOME/bin/java first, else the PATH."""
    java_home = env.get("JAVA_HOME")
    if java_home:
        return [str(Path(java_home) / "bin" / "java")]
    found = shutil.which("java", path=env.get("PATH", ""))
    return [found] if found else []


def parse_java_major(text: str) -> int | None:
    """The major version in ``java -version``'s words (``openjdk version "21.0.2" ...``) or in a bare
    version ("17.0.9", "1.8.0_392" is Java 8); None when there is none."""
    match = re.search(r'version "(\d+)(?:\.(\d+))?', text) or re.fullmatch(r"\s*(\d+)(?:\.(\d+))?\S*\s*", text)
    if not match:
        return None
    major = int(match.group(1))
    return int(match.group(2)) if major == 1 and match.group(2) else major


def java_major_accepted(major: int | None) -> bool:
    return major is not None and MIN_JAVA_MAJOR <= major <= MAX_JAVA_MAJOR


def _java_major(java: str) -> int | None:
    try:
        answer = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=JAVA_VERSION_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return parse_java_major(answer.stderr + answer.stdout)


def _installed_java17() -> str | None:
    """A Java home under /usr/lib/jvm whose name says an accepted version (17 first)."""
    homes = sorted(Path("/usr/lib/jvm").iterdir()) if Path("/usr/lib/jvm").is_dir() else []
    named = [(int(m.group(1)), home) for home in homes if (m := re.search(r"(?<!\d)(\d{2})(?!\d)", home.name))]
    for major, home in sorted(named, key=lambda pair: pair[0]):
        if java_major_accepted(major) and (home / "bin" / "java").exists():
            return str(home)
    return None


def check_java(env: dict | None = None) -> str:
    """The path of the Java (17 to 22) that Spark will run; raises ``JavaNotFoundError`` naming the fix."""
    env = dict(os.environ if env is None else env)
    candidates = _java_candidates(env)
    installed = _installed_java17()
    fix = (f"set JAVA_HOME={installed} (a Java {_java_major(str(Path(installed) / 'bin' / 'java'))} is installed "
           "there)" if installed else
           "install Java 17 (e.g. 'apt-get install openjdk-17-jdk-headless', or a Temurin 17) and set "
           "JAVA_HOME to it or put its bin/ first on PATH")
    if not candidates or not os.access(candidates[0], os.X_OK):
        where = f"JAVA_HOME={env['JAVA_HOME']} has no bin/java" if env.get("JAVA_HOME") else "no 'java' on PATH"
        raise JavaNotFoundError(f"raykafka's Spark jobs need Java {MIN_JAVA_MAJOR} to {MAX_JAVA_MAJOR} "
                                f"(Java 17 as tested), and there is none "
                                f"({where}). To fix: {fix}.")
    major = _java_major(candidates[0])
    if not java_major_accepted(major):
        found = f"Java {major}" if major else "a java that does not report its version"
        raise JavaNotFoundError(f"raykafka's Spark jobs need Java {MIN_JAVA_MAJOR} to {MAX_JAVA_MAJOR} (RayDP 1.6 "
                                f"with PySpark 3.5), but {candidates[0]} is {found}. To fix: {fix}.")
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
                     logging_level="WARNING", configure_logging=False,
                     _node_ip_address=node_ip_toward(self.address))
        return BrokerDirectory(namespace=self.namespace, bootstrap_broker_ids=list(self.bootstrap_broker_ids))


def node_ip_toward(address: str) -> str:
    """The IP this host has toward ``address`` (Ray's GCS, ``host:port``): the IP ``ray start
    --address`` registers a worker node under by default, so a process joining Ray with it attaches
    to its own host's node. Without it Ray attaches the process to any node it finds running on this
    machine, preferring the head: right on one host, wrong where several Ray nodes share a machine
    (containers, or network namespaces as in raykafka's multi-host tests) and the head's IP is not
    this process's."""
    from ray._private.services import get_node_ip_address  # what `ray start --address` calls
    return get_node_ip_address(address)


PLACEMENT_STRATEGIES = ("PACK", "SPREAD", "STRICT_PACK", "STRICT_SPREAD")  # Ray's placement group strategies


@dataclass
class SparkSizing:
    """What the session asks RayDP for. ``executor_cpus`` is what Ray reserves per executor;
    ``task_slots`` is Spark's ``spark.executor.cores`` (tasks running at once per executor).
    ``placement_strategy``, when set, places the executors through a Ray placement group of one
    bundle per executor with that strategy (``SPREAD``: over the nodes where they fit;
    ``STRICT_SPREAD``: each on a node of its own, or Spark does not start); ``None`` leaves it to
    Ray's default scheduling, which keeps actors on the node that asks for them (the app master's)
    until half of its CPUs are taken, so on large nodes every executor lands on one host."""
    num_executors: int = 1
    executor_cpus: float = 1.0
    task_slots: int = DEFAULT_TASK_SLOTS
    executor_memory: str = DEFAULT_EXECUTOR_MEMORY
    placement_strategy: str | None = None

    def __post_init__(self) -> None:
        if self.placement_strategy is not None and self.placement_strategy not in PLACEMENT_STRATEGIES:
            raise ValueError(f"placement_strategy must be one of {', '.join(PLACEMENT_STRATEGIES)} or None, "
                             f"not {self.placement_strategy!r}")

    @classmethod
    def for_ray(cls, available_cpus: float, *, task_slots: int = DEFAULT_TASK_SLOTS, nodes: int = 1) -> "SparkSizing":
        """One executor per two free CPUs (brokers and the load's own Ray calls need the rest),
        at least one; on a 2-core machine that is one executor, one CPU, 1 GB. On a cluster of
        ``nodes`` > 1 Ray nodes the executors spread over them, so the load comes from several hosts."""
        return cls(num_executors=max(1, int(available_cpus // 2)), executor_cpus=1.0 if available_cpus >= 1 else 0.0,
                   task_slots=task_slots, placement_strategy="SPREAD" if nodes > 1 else None)

    def bundles(self) -> list[dict[str, float]]:
        """The placement group's bundles: what each executor actor asks Ray for (its CPUs and
        ``spark.executor.memory`` as Ray's ``memory`` resource, as RayDP's executor requests them)."""
        from raydp.utils import parse_memory_size  # how RayDP reads it for its own placement groups
        bundle = {"CPU": float(self.executor_cpus), "memory": float(parse_memory_size(self.executor_memory))}
        return [{name: amount for name, amount in bundle.items() if amount > 0} for _ in range(self.num_executors)]


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
    """A running RayDP session; ``stop`` ends Spark (not Ray) and frees the executors' placement group."""
    spark: object
    sizing: SparkSizing
    startup_s: float
    configs: dict = field(default_factory=dict)
    placement_group: object = None

    @classmethod
    def start(cls, app_name: str = DEFAULT_APP_NAME, sizing: SparkSizing | None = None,
              configs: dict | None = None, *, kafka_connector: bool | None = None) -> "SparkOnRay":
        """Start Spark on the Ray this process is connected to (start Ray first).

        ``kafka_connector``: put Spark's own Kafka connector on the session (``format("kafka")``,
        ``orchestration.spark.kafka_connector``); ``True`` requires it (raises saying what is
        missing), ``None`` adds it where it can be had and otherwise logs why not, ``False`` leaves it out."""
        import ray
        check_java()
        configs = _with_kafka_connector(configs, kafka_connector)
        if not ray.is_initialized():
            raise RuntimeError("connect to Ray (or start a Cluster) before starting Spark on it")
        if sizing is None:
            nodes = sum(1 for node in ray.nodes() if node.get("Alive"))
            sizing = SparkSizing.for_ray(ray.available_resources().get("CPU", 0.0), nodes=nodes)
        os.environ["PYSPARK_PYTHON"] = sys.executable
        os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
        import raydp
        settings = spark_configs(sizing, configs)
        started = time.monotonic()
        group = _executor_placement_group(sizing)
        try:
            spark = raydp.init_spark(app_name, sizing.num_executors, sizing.task_slots, sizing.executor_memory,
                                     configs=dict(settings), placement_group=group)
        except BaseException:
            if group is not None:
                ray.util.remove_placement_group(group)
            raise
        spark.sparkContext.setLogLevel("ERROR")
        session = cls(spark, sizing, 0.0, settings, group)
        try:
            session._wait_for_executors()
        except BaseException:
            session.stop()
            raise
        startup_s = session.startup_s = time.monotonic() - started
        logger.info("Spark on Ray up in {:.1f}s: {} executor(s), {} task slots each, {}{}", startup_s,
                    sizing.num_executors, sizing.task_slots, sizing.executor_memory,
                    f", placed {sizing.placement_strategy}" if group is not None else "")
        return session

    def _wait_for_executors(self) -> None:
        """Wait (bounded) until every executor has registered: a job submitted sooner runs all its
        tasks on the executors already there, all on one host perhaps. Spark goes on with fewer
        when the time is up (a busy machine starts JVMs slowly), and says so."""
        deadline = time.monotonic() + EXECUTORS_REGISTER_TIMEOUT_S
        while len(self.executor_hosts()) < self.sizing.num_executors:
            if time.monotonic() > deadline:
                logger.warning("{} of {} Spark executors registered within {}s; going on with them",
                               len(self.executor_hosts()), self.sizing.num_executors, EXECUTORS_REGISTER_TIMEOUT_S)
                return
            time.sleep(EXECUTORS_POLL_S)

    def executor_hosts(self) -> dict[str, str]:
        """Executor id -> the host it serves from (its Ray node's IP), for the executors alive now,
        from Spark's own status store (what its UI's Executors page shows), the driver left out."""
        executors = self.spark.sparkContext._jsc.sc().statusStore().executorList(True)
        summaries = [executors.apply(i) for i in range(executors.size())]
        return {summary.id(): summary.hostPort().rsplit(":", 1)[0] for summary in summaries if summary.id() != "driver"}

    def stop(self) -> None:
        import raydp
        try:
            raydp.stop_spark()
        except Exception as exc:  # Ray already gone: nothing left to stop
            logger.warning("stopping Spark: {!r}", exc)
        if self.placement_group is not None:
            import ray
            try:
                ray.util.remove_placement_group(self.placement_group)
            except Exception as exc:  # Ray already gone: the group went with it
                logger.warning("removing the executors' placement group: {!r}", exc)
            self.placement_group = None

    def __enter__(self) -> "SparkOnRay":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def run_on_a_running_cluster(cluster, described: str, workload, output, show_progress: bool, spark_sizing, out,
                             run_on):
    """``workload`` by ``run_on`` (orchestration.spark.pipeline.run_on, handed in: the pipeline
    imports this module) on a cluster the run did not start (``load run --namespace`` or
    ``--bootstrap-server``): Spark starts on this process's Ray, the topics get a suffix of this run
    (such a cluster keeps earlier runs' topics), and Spark is stopped and ``cluster`` closed after."""
    import uuid
    spark = None
    try:
        out(described)
        spark = SparkOnRay.start("raykafka-load", spark_sizing)
        out(f"Spark on Ray started in {spark.startup_s:.1f}s ({spark.sizing.num_executors} executor(s), "
            f"{spark.sizing.task_slots} task slots each)")
        run_id = uuid.uuid4().hex[:6]
        return run_on(cluster, spark, workload, output, show_progress=show_progress, out=out,
                      topics=[f"{topic}-{run_id}" for topic in workload.topic_names()])
    finally:
        if spark is not None:
            spark.stop()
        cluster.close()


def _with_kafka_connector(configs: dict | None, wanted: bool | None) -> dict | None:
    if wanted is False:
        return configs
    from orchestration.spark.kafka_connector import ConnectorUnavailable, connector_configs, connector_jars
    try:
        return connector_configs(connector_jars(), configs)
    except ConnectorUnavailable as exc:
        if wanted:
            raise
        logger.warning("Spark's Kafka connector is not on this session (format(\"kafka\") will not work): {}", exc)
        return configs


def _executor_placement_group(sizing: SparkSizing):
    """A ready placement group for the executors when ``sizing`` places them, else ``None``."""
    if sizing.placement_strategy is None:
        return None
    import ray
    group = ray.util.placement_group(sizing.bundles(), strategy=sizing.placement_strategy)
    ready, _ = ray.wait([group.ready()], timeout=PLACEMENT_TIMEOUT_S)
    if not ready:
        ray.util.remove_placement_group(group)
        raise RuntimeError(f"Ray could not place {sizing.num_executors} Spark executor(s) ({sizing.bundles()[0]} "
                           f"each, {sizing.placement_strategy}) within {PLACEMENT_TIMEOUT_S}s: the cluster has too "
                           f"few nodes or free resources for that (ray status shows them)")
    return group
