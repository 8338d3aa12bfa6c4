"""Apache Kafka itself, as a peer to compare raykafka with: its jars fetched once into a cache
(ci/kafka/fetch.sh, version pinned in ci/kafka/pom.xml), a real KRaft cluster of 1 or 3 combined
broker+controller nodes on 127.0.0.1 started from them, and Kafka's own command-line tools run from
the same jars with their real main classes. The conformance tests and the benchmarks both use it.

    libs = fetch_kafka()                       # raises KafkaUnavailable saying what to install
    with ApacheKafkaCluster(libs, workdir, nodes=1) as kafka:
        run_tool(libs, "kafka-topics", "--bootstrap-server", kafka.bootstrap_servers, "--list")
"""
from __future__ import annotations

import base64
import hashlib
import os
import shutil
import signal
import socket
import subprocess
import threading
import time
import uuid
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
FETCH_SCRIPT = REPO_ROOT / "ci" / "kafka" / "fetch.sh"

# Kafka 4.x's main classes behind bin/*.sh (kafka-topics was kafka.admin.TopicCommand before 4.0).
TOOLS = {
    "kafka-topics": "org.apache.kafka.tools.TopicCommand",
    "kafka-configs": "org.apache.kafka.tools.ConfigCommand",
    "kafka-consumer-groups": "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
    "kafka-console-producer": "org.apache.kafka.tools.ConsoleProducer",
    "kafka-console-consumer": "org.apache.kafka.tools.consumer.ConsoleConsumer",
    "kafka-log-dirs": "org.apache.kafka.tools.LogDirsCommand",
    "kafka-delete-records": "org.apache.kafka.tools.DeleteRecordsCommand",
    "kafka-storage": "kafka.tools.StorageTool",
    "kafka-verifiable-producer": "org.apache.kafka.tools.VerifiableProducer",
    "kafka-verifiable-consumer": "org.apache.kafka.tools.VerifiableConsumer",
    "kafka-broker-api-versions": "org.apache.kafka.tools.BrokerApiVersionsCommand",
    "kafka-reassign-partitions": "org.apache.kafka.tools.reassign.ReassignPartitionsCommand",
    "kafka-leader-election": "org.apache.kafka.tools.LeaderElectionCommand",
    "kafka-cluster": "org.apache.kafka.tools.ClusterTool",
    "kafka-producer-perf-test": "org.apache.kafka.tools.ProducerPerformance",
    "kafka-consumer-perf-test": "org.apache.kafka.tools.ConsumerPerformance",
}
# A broker's heap on this 2-core, 24 GiB machine kind; the tools are short-lived clients and start
# faster without the optimising compiler.
BROKER_JVM_OPTS = ("-Xms256m", "-Xmx512m", "-XX:+UseG1GC", "-Djava.awt.headless=true")
# What bin/kafka-server-start.sh and kafka-run-class.sh give a broker (KAFKA_HEAP_OPTS and
# KAFKA_JVM_PERFORMANCE_OPTS): a 1 GiB heap, G1 with 20 ms pauses. Three of them fit this machine
# kind beside Ray; the throughput benchmark runs Kafka so, as its users run it.
BENCHMARK_JVM_OPTS = ("-Xms1g", "-Xmx1g", "-server", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
                      "-XX:InitiatingHeapOccupancyPercent=35", "-XX:+ExplicitGCInvokesConcurrent",
                      "-Djava.awt.headless=true")
TOOL_JVM_OPTS = ("-Xmx256m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Djava.awt.headless=true")
# slf4j-simple (ci/kafka/pom.xml) writes to stderr: warnings and worse, stamped to the millisecond,
# unless a caller asks for more (log_levels, e.g. {"org.apache.kafka.clients.producer.internals": "debug"}).
LOG_JVM_OPTS = ("-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", "-Dorg.slf4j.simpleLogger.showDateTime=true",
                "-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS")
START_TIMEOUT_S = 90.0
STOP_TIMEOUT_S = 30.0


class KafkaUnavailable(RuntimeError):
    """Apache Kafka cannot be had on this machine; the message says what to install."""


def unavailable_reason() -> str | None:
    """Why Kafka cannot run here (Java or Maven missing), or None."""
    if shutil.which("java") is None:
        return "Apache Kafka needs Java 17+ (Debian: apt-get install openjdk-17-jre-headless)"
    if shutil.which("mvn") is None and not _cached_libs():
        return "fetching Apache Kafka's jars needs Maven (Debian: apt-get install maven)"
    return None


def kafka_version() -> str:
    text = (REPO_ROOT / "ci" / "kafka" / "pom.xml").read_text(encoding="utf-8")
    return text.split("<kafka.version>", 1)[1].split("</kafka.version>", 1)[0].strip()


def _cached_libs() -> Path | None:
    cache = os.environ.get("RAYKAFKA_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "raykafka")
    digest = hashlib.sha256((REPO_ROOT / "ci" / "kafka" / "pom.xml").read_bytes()).hexdigest()[:12]
    root = Path(cache) / f"kafka-{kafka_version()}-{digest}"  # as ci/kafka/fetch.sh names it
    return root / "libs" if (root / "complete").exists() else None


def fetch_kafka(timeout_s: float = 600.0) -> Path:
    """The directory of Kafka's jars, fetched through Maven the first time and reused after."""
    reason = unavailable_reason()
    if reason:
        raise KafkaUnavailable(reason)
    done = subprocess.run(["bash", str(FETCH_SCRIPT)], capture_output=True, text=True, timeout=timeout_s)
    if done.returncode != 0:
        raise KafkaUnavailable(f"ci/kafka/fetch.sh failed ({done.returncode}): {done.stderr.strip()[-2000:]}")
    return Path(done.stdout.strip().splitlines()[-1])


def _java(libs: Path, jvm_opts: tuple[str, ...], main_class: str, *args: str,
          log_levels: dict[str, str] | None = None) -> list[str]:
    levels = tuple(f"-Dorg.slf4j.simpleLogger.log.{name}={level}" for name, level in (log_levels or {}).items())
    return ["java", *jvm_opts, *LOG_JVM_OPTS, *levels, "-cp", f"{libs}/*", main_class, *args]


# Kafka's tools are short-lived JVMs that spend much of their start loading Kafka's classes. A
# tool's first successful run (run_tool, start_tool, a cluster's kafka-storage format) writes the
# classes it loaded to a class-data-sharing archive (the JDK's dynamic AppCDS, Java 13+) in the
# jars' cache, one per tool and JVM; its later runs map that archive instead of loading and
# verifying those classes again. The JVM's own warnings (an archive it cannot use is one: it then
# runs without it) go to stderr, never into a tool's output.
JVM_LOG_TO_STDERR = ("-Xlog:disable", "-Xlog:all=warning:stderr")


def _java_identity() -> str:
    """Names the JVM an archive was written by: an archive only serves the JVM that wrote it."""
    java = os.path.realpath(shutil.which("java") or "java")
    try:
        stat = os.stat(java)
    except OSError:
        return "unknown"
    return hashlib.sha256(f"{java}:{stat.st_size}:{stat.st_mtime_ns}".encode()).hexdigest()[:12]


def _class_sharing(libs: Path, main_class: str, *, write: bool) -> tuple[tuple[str, ...], Path | None]:
    """The JVM options that use ``main_class``'s archive when there is one; else, with ``write``,
    the options that write one to a temporary file, and that file (``_keep_archive`` keeps it)."""
    directory = Path(libs).parent / "class-sharing"
    archive = directory / f"{main_class}-{_java_identity()}.jsa"
    if archive.is_file():
        return (f"-XX:SharedArchiveFile={archive}", *JVM_LOG_TO_STDERR), None
    if not write:
        return JVM_LOG_TO_STDERR, None
    try:
        directory.mkdir(exist_ok=True)
    except OSError:
        return JVM_LOG_TO_STDERR, None
    pending = directory / f"{archive.name}.{uuid.uuid4().hex}.tmp"
    return (f"-XX:ArchiveClassesAtExit={pending}", *JVM_LOG_TO_STDERR), pending


def _keep_archive(pending: Path | None, returncode: int) -> None:
    """The archive a successful run wrote becomes its tool's (atomically: a concurrent run may write one too)."""
    if pending is None:
        return
    try:
        if returncode == 0 and pending.is_file() and pending.stat().st_size > 0:
            os.replace(pending, str(pending).rsplit(".", 2)[0])
        else:
            pending.unlink(missing_ok=True)
    except OSError:
        pass


def _popen_sharing(libs: Path, main_class: str, *args: str, log_levels: dict[str, str] | None = None,
                   **popen) -> subprocess.Popen:
    """A short-lived client's JVM started with class sharing; a thread keeps the archive its
    successful exit wrote (``_class_sharing``)."""
    sharing, pending = _class_sharing(libs, main_class, write=True)
    process = subprocess.Popen(_java(libs, TOOL_JVM_OPTS + sharing, main_class, *args, log_levels=log_levels),
                               **popen)
    if pending is not None:
        threading.Thread(target=lambda: _keep_archive(pending, process.wait()), daemon=True,
                         name="raykafka-kafka-class-sharing").start()
    return process


def start_tool(libs: Path, tool: str, *args: str, stderr_path: Path | None = None,
               log_levels: dict[str, str] | None = None) -> subprocess.Popen:
    """Starts one of Kafka's command-line tools without waiting for it: its stdout is a pipe of
    text lines (the verifiable clients print one JSON event per line), its stderr (its log, at the
    ``log_levels`` asked for by logger name, WARN otherwise) goes to ``stderr_path`` (discarded
    without one)."""
    stderr = open(stderr_path, "ab") if stderr_path is not None else subprocess.DEVNULL  # noqa: SIM115
    try:
        return _popen_sharing(libs, TOOLS[tool], *args, log_levels=log_levels, stdout=subprocess.PIPE,
                              stderr=stderr, stdin=subprocess.DEVNULL, text=True)
    finally:
        if stderr_path is not None:
            stderr.close()  # the child holds its own descriptor


def run_tool(libs: Path, tool: str, *args: str, stdin: str | None = None, timeout_s: float = 90.0,
             jvm_opts: tuple[str, ...] = TOOL_JVM_OPTS) -> subprocess.CompletedProcess:
    """Runs one of Kafka's command-line tools (a key of TOOLS) from the fetched jars, as bin/<tool>.sh
    would; ``jvm_opts`` replaces the short-lived client's (a perf test wants the optimising compiler).
    With the short-lived client's options the run shares the tool's classes (``_class_sharing``)."""
    sharing, pending = _class_sharing(libs, TOOLS[tool], write=True) if jvm_opts == TOOL_JVM_OPTS else ((), None)
    try:
        done = subprocess.run(_java(libs, jvm_opts + sharing, TOOLS[tool], *args), input=stdin,
                              capture_output=True, text=True, timeout=timeout_s)
    except BaseException:
        _keep_archive(pending, -1)
        raise
    _keep_archive(pending, done.returncode)
    return done


def _free_ports(count: int) -> list[int]:
    sockets = []
    try:
        for _ in range(count):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            sockets.append(s)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def _cluster_id() -> str:
    """A cluster id as Kafka's Uuid.toString writes one: 16 random bytes, URL-safe base64, no padding;
    drawn again, as Kafka's Uuid.randomUuid does, while it starts with '-' (kafka-storage would take
    it for an option, "--cluster-id/-t: expected one argument")."""
    while (drawn := base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()).startswith("-"):
        pass
    return drawn


class ApacheKafkaCluster:
    """A real Apache Kafka cluster in KRaft mode: ``nodes`` combined broker+controller JVMs on
    127.0.0.1 with free ports and their data under ``workdir``. A context manager: leaving it stops
    every JVM (SIGTERM, then SIGKILL after a bounded wait), whatever happened inside. ``config``
    adds to or overrides each node's server.properties; ``jvm_opts`` replaces BROKER_JVM_OPTS (the
    heap and collector, e.g. BENCHMARK_JVM_OPTS)."""

    def __init__(self, libs: Path, workdir: Path, nodes: int = 1, config: dict | None = None,
                 jvm_opts: tuple[str, ...] = BROKER_JVM_OPTS):
        if nodes not in (1, 3):
            raise ValueError("an Apache Kafka cluster here has 1 or 3 nodes")
        self.libs, self.workdir, self.nodes, self.jvm_opts = Path(libs), Path(workdir), nodes, tuple(jvm_opts)
        self.config = dict(config or {})
        ports = _free_ports(2 * nodes)
        self.broker_ports, self.controller_ports = ports[:nodes], ports[nodes:]
        self.processes: list[subprocess.Popen] = []

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(f"127.0.0.1:{port}" for port in self.broker_ports)

    def _properties(self, node: int) -> str:
        replication = min(3, self.nodes)
        voters = ",".join(f"{n}@127.0.0.1:{port}" for n, port in enumerate(self.controller_ports, start=1))
        props = {
            "process.roles": "broker,controller",
            "node.id": str(node),
            "controller.quorum.voters": voters,
            "listeners": f"PLAINTEXT://127.0.0.1:{self.broker_ports[node - 1]},"
                         f"CONTROLLER://127.0.0.1:{self.controller_ports[node - 1]}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.broker_ports[node - 1]}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
            "log.dirs": str(self.workdir / f"node-{node}" / "data"),
            "offsets.topic.replication.factor": str(replication),
            "offsets.topic.num.partitions": "3",
            "transaction.state.log.replication.factor": str(replication),
            "transaction.state.log.min.isr": "1",
            "share.coordinator.state.topic.replication.factor": str(replication),
            "share.coordinator.state.topic.min.isr": "1",
            "group.initial.rebalance.delay.ms": "0",
            **self.config,
        }
        return "".join(f"{key}={value}\n" for key, value in props.items())

    def __enter__(self) -> "ApacheKafkaCluster":
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self, timeout_s: float = START_TIMEOUT_S) -> None:
        cluster_id = _cluster_id()
        formats = {}  # the nodes' storage is formatted side by side: each is a JVM start of its own
        for node in range(1, self.nodes + 1):
            home = self.workdir / f"node-{node}"
            home.mkdir(parents=True, exist_ok=True)
            (home / "server.properties").write_text(self._properties(node), encoding="utf-8")
            formats[node] = _popen_sharing(
                self.libs, TOOLS["kafka-storage"], "format", "--ignore-formatted", "-t", cluster_id,
                "-c", str(home / "server.properties"),
                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
        failed = []
        for node, formatting in formats.items():
            try:
                _, stderr = formatting.communicate(timeout=120)
            except subprocess.TimeoutExpired:
                formatting.kill()
                _, stderr = formatting.communicate()
            if formatting.returncode != 0:
                failed.append(f"kafka-storage format failed for node {node}: {stderr[-2000:]}")
        if failed:
            raise RuntimeError("; ".join(failed))
        for node in range(1, self.nodes + 1):
            self.processes.append(self._launch(node))
        self._wait_serving(timeout_s)

    def _launch(self, node: int) -> subprocess.Popen:
        home = self.workdir / f"node-{node}"
        with open(home / "stdout.log", "ab") as out:
            return subprocess.Popen(_java(self.libs, self.jvm_opts, "kafka.Kafka", str(home / "server.properties")),
                                    stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=home)

    def kill_node(self, node: int) -> None:
        """SIGKILL to node ``node`` (1-based, Kafka's node.id), as a crash: no controlled shutdown."""
        process = self.processes[node - 1]
        if process.poll() is None:
            process.kill()
        process.wait(timeout=30)

    def stop_node(self, node: int, timeout_s: float = STOP_TIMEOUT_S) -> None:
        """SIGTERM to node ``node``: a controlled shutdown (its leaderships move first); SIGKILL if
        it has not exited within timeout_s."""
        process = self.processes[node - 1]
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=30)

    def restart_node(self, node: int, timeout_s: float = START_TIMEOUT_S, *, brokers: int | None = None) -> None:
        """Starts a killed node again on its data; returns once every node serves metadata (or, with
        ``brokers``, once that many do: another node may still be down)."""
        if self.processes[node - 1].poll() is None:
            raise RuntimeError(f"Apache Kafka node {node} is still running")
        self.processes[node - 1] = self._launch(node)
        self._wait_serving(timeout_s, brokers=brokers)

    def _wait_serving(self, timeout_s: float, *, brokers: int | None = None) -> None:
        """Polls until every broker (or ``brokers`` of them, counting the nodes that run) is in the
        metadata the cluster serves, bounded by timeout_s."""
        wanted = self.nodes if brokers is None else brokers
        from confluent_kafka.admin import AdminClient
        admin = AdminClient({"bootstrap.servers": self.bootstrap_servers, "log_level": 0})
        deadline = time.monotonic() + timeout_s
        last = "no answer yet"
        while time.monotonic() < deadline:
            for node, process in enumerate(self.processes, start=1):
                if process.poll() is not None and brokers is None:
                    raise RuntimeError(f"Apache Kafka node {node} exited with {process.returncode}: "
                                       + self.log_tail(node))
            try:
                metadata = admin.list_topics(timeout=2)
                last = f"brokers {sorted(metadata.brokers)}"
                if len(metadata.brokers) == wanted:
                    return
            except Exception as error:  # not serving yet: keep polling until the deadline
                last = repr(error)
            time.sleep(0.5)
        raise TimeoutError(f"waited {timeout_s:.0f}s for {wanted} of Apache Kafka's brokers to serve "
                           f"metadata; last: {last}; node 1 log: {self.log_tail(1)}")

    def log_tail(self, node: int, chars: int = 3000) -> str:
        path = self.workdir / f"node-{node}" / "stdout.log"
        return path.read_text(errors="replace")[-chars:] if path.exists() else "(no log)"

    def stop(self, timeout_s: float = STOP_TIMEOUT_S) -> None:
        """SIGTERM to every node, then SIGKILL to any still running after timeout_s; waits for each."""
        for process in self.processes:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + timeout_s
        for process in self.processes:
            try:
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=30)
        self.processes = []
