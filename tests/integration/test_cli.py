"""Proves the ``raykafka`` command runs a cluster that outlives it: one ``cluster start --local`` in a
subprocess, then every subcommand with ``--json`` against that cluster (topics, topic configs changed
live, produce, consume, groups with lag, a partition reassignment, kill and leadership moving,
elections, metrics), the console tools with Kafka's flags (a consumer that runs until Ctrl-C), the
topics, console, groups, leader-election, delete-records, log-dirs and reassign-partitions commands with
``--bootstrap-server`` against raykafka's listener and Apache Kafka's, nothing on stderr but what a
command means to say, one line naming ``raykafka cluster start`` where there is no cluster,
``cluster status`` naming every broker's listener and the bootstrap servers a stock client connects with, and
``cluster stop --delete-data`` ending the actors and every process of the Ray head it started before it
returns, and removing the data directories and the Ray head's temporary directory ``cluster start`` made
(the last test, on the module's cluster). Most commands run through the CLI's own ``main(argv)`` in the
test's process (joined once to the cluster's Ray; stdin, stdout and stderr captured); those whose exit
code and quiet stderr prove the console command end to end run as processes of their own (start, a
refused create, the console producer and consumer, an unclean election, no cluster, stop).
Each test makes what it reads (its own topics, or the module's ``orders`` fixture), so any one of
them runs alone (``-k``)."""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
import warnings
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
COMMAND_TIMEOUT_S = 240
WAIT_S = 120
WAIT_POLL_S = 0.2  # between two runs of a condition, each itself a ``raykafka`` command
ORDERS_RECORDS = 30

pytestmark = pytest.mark.integration


class Raykafka:
    """Runs ``raykafka`` subcommands against one namespace: in this process through the CLI's own
    ``main(argv)`` with stdin, stdout and stderr captured (``connect`` joins the cluster's Ray once,
    so a command costs what it does, not a Python start and a Ray connect), or, with
    ``own_process=True`` (and before ``connect``), as their own process, as a user runs them."""

    def __init__(self, home: Path, namespace: str) -> None:
        self.namespace = namespace
        self.state_file = home / "clusters" / f"{namespace}.json"
        self.env = dict(os.environ, RAYKAFKA_HOME=str(home), PYTHONPATH=str(REPO_ROOT))
        self.env.pop("RAY_ADDRESS", None)
        self.stop_tested = False  # set by the test of ``cluster stop``, which stops the module's cluster
        self._restore: list = []

    def run(self, *args: str, stdin: str | None = None, check: bool = True,
            json_output: bool = True, own_process: bool = False) -> subprocess.CompletedProcess:
        argv = [*args, "--namespace", self.namespace, *(["--json"] if json_output else [])]
        if own_process or not self._restore:
            done = subprocess.run([sys.executable, "-m", "orchestration.cli", *argv], input=stdin,
                                   capture_output=True, text=True, env=self.env, cwd=REPO_ROOT,
                                   timeout=COMMAND_TIMEOUT_S)
        else:
            done = self._in_process(argv, stdin)
        if check and done.returncode != 0:
            raise AssertionError(f"raykafka {' '.join(args)} exited {done.returncode}:\n{done.stdout}\n{done.stderr[-3000:]}")
        return done

    def _in_process(self, argv: list[str], stdin: str | None) -> subprocess.CompletedProcess:
        from orchestration.cli import main
        out, err = io.StringIO(), io.StringIO()
        real_stdin = sys.stdin
        sys.stdin = io.StringIO(stdin or "")
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                try:
                    code = main(argv)
                except SystemExit as exc:  # argparse's refusals, as the process would exit
                    code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        finally:
            sys.stdin = real_stdin
            from loguru import logger
            logger.remove()  # main's handler writes to ``err``, which is done with
        return subprocess.CompletedProcess(argv, code, out.getvalue(), err.getvalue())

    def connect(self) -> None:
        """Join the cluster's Ray in this process, as a command does (``common.ray_address``), and
        keep what ``main`` changes for the process (environment, Ray's log routing, loguru) to put
        back in ``disconnect``."""
        import logging

        import ray
        from loguru import logger
        from ray._private import worker

        from orchestration.commands.common import ray_address
        rays = logging.getLogger("ray")
        environ = dict(os.environ)
        self._restore = [environ, list(rays.handlers), rays.propagate, getattr(worker, "print_to_stdstream", None)]
        os.environ.update(RAYKAFKA_HOME=self.env["RAYKAFKA_HOME"])
        os.environ.pop("RAY_ADDRESS", None)
        if ray.is_initialized():
            warnings.warn("an earlier test left Ray running; it was shut down before this module")
            ray.shutdown()
        address = ray_address(argparse.Namespace(namespace=self.namespace, address=None))
        ray.init(address=address, namespace=self.namespace, log_to_driver=False)
        logger.remove()

    def disconnect(self) -> None:
        if not self._restore:
            return
        import logging

        import ray
        from loguru import logger
        from ray._private import worker
        environ, handlers, propagate, print_to_stdstream = self._restore
        self._restore = []
        ray.shutdown()
        os.environ.clear()
        os.environ.update(environ)
        # ``ray_address`` made this process use the head's token authentication (use_auth_mode: the
        # environment and Ray's configuration, which Ray reads only when told to). Ray's configuration
        # outlives ray.shutdown(): left in token mode, this process's next driver refused the calls of
        # a head without authentication (the session's), and that head cancelled the next module's
        # first actor before it ran ("all references to the actor were removed"). Read it again from
        # the environment put back above, then drop the token Ray cached (in that order, as Ray's own
        # tests reset it: ray._private.authentication_test_utils).
        from ray._raylet import AuthenticationTokenLoader, Config
        Config.initialize("")
        AuthenticationTokenLoader.instance().reset_cache()
        rays = logging.getLogger("ray")
        rays.handlers[:] = handlers
        rays.propagate = propagate
        if print_to_stdstream is not None:
            worker.print_to_stdstream = print_to_stdstream
        logger.remove()
        logger.add(sys.stderr)
        logger.disable("orchestration")
        logger.disable("actors")

    def json(self, *args: str, stdin: str | None = None):
        return json.loads(self.run(*args, stdin=stdin).stdout.strip().splitlines()[-1])

    def json_lines(self, *args: str) -> list:
        return [json.loads(line) for line in self.run(*args).stdout.splitlines() if line.startswith("{")]


def read_lines(stream, count: int, what: str, timeout_s: float = WAIT_S) -> list[str]:
    """``count`` lines from a subprocess's pipe, waiting at most ``timeout_s`` in all (a thread reads,
    as a pipe's reader buffers lines that ``select`` no longer sees)."""
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [lines.put(stream.readline()) for _ in range(count)], daemon=True).start()
    deadline = time.monotonic() + timeout_s
    got = []
    try:
        while len(got) < count:
            got.append(lines.get(timeout=max(0.0, deadline - time.monotonic())))
    except queue.Empty:
        raise AssertionError(f"timed out after {timeout_s}s waiting for {what}; got {got!r}") from None
    return got


def wait_for(what: str, condition, timeout_s: float = WAIT_S):
    deadline = time.monotonic() + timeout_s
    last = None
    while time.monotonic() < deadline:
        last = condition()
        if last:
            return last
        time.sleep(WAIT_POLL_S)
    raise AssertionError(f"timed out after {timeout_s}s waiting for {what}; last: {last!r}")


@pytest.fixture(scope="module")
def rk(tmp_path_factory):
    home = tmp_path_factory.mktemp("raykafka-home")
    tool = Raykafka(home, f"rk-cli-{uuid.uuid4().hex[:8]}")
    state_file = tool.state_file
    try:
        done = tool.run("cluster", "start", "--local", "--num-cpus", "2", "--brokers", "3",
                        "--log-dir", str(home / "logs"), "--config", "offsets.topic.num.partitions=3",
                        "--config", "group.initial.rebalance.delay.ms=100")
        started = json.loads(done.stdout.strip().splitlines()[-1])
        assert started["brokers"] == 3 and started["local_head"]
        # Nothing but the answer: Ray's own messages (joining the head, its warnings) are DEBUG lines.
        assert (done.stdout.count("\n"), done.stderr) == (1, ""), (done.stdout, done.stderr)
        tool.started = started
        tool.connect()
        yield tool
    finally:
        tool.disconnect()
        # The module's last test stops the cluster, and its own finally ends what a failed stop left.
        if not (tool.stop_tested and not state_file.exists()):
            head_pid = json.loads(state_file.read_text()).get("head_pid") if state_file.exists() else None
            stopped = tool.run("cluster", "stop", check=False)
            if head_pid is not None:  # stop failed half-way: end the head this test started, and only it
                try:
                    os.killpg(head_pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            assert stopped.returncode == 0, stopped.stderr[-3000:]


@pytest.fixture(scope="module")
def orders(rk) -> str:
    """A topic of 3 partitions (RF 3, min.insync.replicas=2) holding ORDERS_RECORDS records; the
    tests that kill brokers, produce more and scrape metrics share it."""
    assert rk.json("topics", "create", "orders", "--partitions", "3", "--replication-factor", "3",
                   "--config", "min.insync.replicas=2")["created"]
    lines = "".join(f"k{i}:v{i}\n" for i in range(ORDERS_RECORDS))
    assert rk.json("produce", "orders", "--key-separator", ":", "--acks", "all", stdin=lines)["acknowledged"] \
        == ORDERS_RECORDS
    return "orders"


def test_cluster_status_shows_brokers_controller_and_health(rk):
    status = rk.json("cluster", "status")
    assert [b["broker_id"] for b in status["brokers"]] == [0, 1, 2]
    assert all(b["up"] and b["broker_epoch"] is not None and b["node_id"] for b in status["brokers"])
    assert status["controller"]["controller_epoch"] >= 1 and status["controller"]["active"]
    assert status["partitions"]["offline"] == []


def test_cluster_status_names_each_brokers_listener_and_the_bootstrap_servers(rk):
    from confluent_kafka.admin import AdminClient
    status = rk.json("cluster", "status")
    listeners = [b["listeners"].get("PLAINTEXT") for b in status["brokers"]]
    assert all(address and address.startswith("127.0.0.1:") for address in listeners), status["brokers"]
    assert status["bootstrap_servers"] == ",".join(listeners)
    # What a CLI user does with it: point a stock client there.
    metadata = AdminClient({"bootstrap.servers": status["bootstrap_servers"]}).list_topics(timeout=60)
    assert sorted(metadata.brokers) == [0, 1, 2]
    text = rk.run("cluster", "status", json_output=False).stdout
    assert f"bootstrap.servers={status['bootstrap_servers']}" in text
    assert all(f"PLAINTEXT://{address}" in text for address in listeners), text


def test_cluster_status_says_where_each_node_keeps_data_logs_and_metrics(rk):
    status = rk.json("cluster", "status")
    text = rk.run("cluster", "status", json_output=False).stdout
    for broker in status["brokers"]:
        # The broker's own data directory, as resolved on its node.
        assert Path(broker["log_dir"]).is_dir() and broker["log_dir"] in text, (broker, text)
        # Ray's log directory on its node holds the log files of the process the broker runs in.
        logs = Path(broker["ray_logs_dir"])
        assert any(f"-{broker['pid']}." in p.name for p in logs.glob("worker-*")), (broker, sorted(logs.iterdir()))
        assert f"ray logs {broker['ray_logs_dir']}" in text, text
    # The node's Prometheus endpoint, which has the brokers' metrics.
    endpoints = {b["metrics"] for b in status["brokers"]}
    assert all(e and e.endswith("/metrics") for e in endpoints), status["brokers"]
    for endpoint in endpoints:
        wait_for(f"raykafka's metrics on {endpoint}", lambda: "ray_raykafka_" in urllib.request.urlopen(
            endpoint, timeout=10).read().decode())


def test_topics_create_list_describe_delete(rk):
    assert rk.json("topics", "create", "listed", "--partitions", "3", "--replication-factor", "3",
                   "--config", "min.insync.replicas=2")["created"]
    assert rk.json("topics", "create", "scratch")["created"]
    assert {"listed", "scratch"} <= set(rk.json("topics", "list"))
    described = rk.json("topics", "describe", "listed")
    assert [p["partition"] for p in described] == [0, 1, 2]
    assert all(p["leader"] in p["isr"] and len(p["replicas"]) == 3 for p in described)
    assert rk.json("topics", "describe", "listed", "--unavailable-partitions") == []
    refused = rk.run("topics", "create", "listed", check=False, own_process=True)  # the exit code, end to end
    assert refused.returncode == 1 and json.loads(refused.stdout)["error"] == "TOPIC_ALREADY_EXISTS"
    assert rk.json("topics", "delete", "scratch")["deleted"]
    assert "scratch" not in rk.json("topics", "list")


def test_produce_consume_and_group_lag(rk):
    assert rk.json("topics", "create", "lagged", "--partitions", "3", "--replication-factor", "3")["created"]
    lines = "".join(f"k{i}:v{i}\n" for i in range(30))
    produced = rk.json("produce", "lagged", "--key-separator", ":", "--acks", "all", stdin=lines)
    assert produced["acknowledged"] == 30
    records = rk.json_lines("consume", "lagged", "--group", "readers", "--from-beginning", "--max-messages", "10",
                            "--timeout-ms", "20000")
    assert len(records) == 10 and all(r["value"] == "v" + r["key"][1:] for r in records)
    group = rk.json("groups", "describe", "readers")
    assert group["state"] == "Empty"
    assert sum(r["lag"] for r in group["partitions"]) == 20
    assert sum(r["current_offset"] or 0 for r in group["partitions"]) == 10
    assert {"group": "readers", "state": "Empty"} in rk.json("groups", "list")
    # One partition from an offset, without a group.
    first = produced["offsets"][0]
    one = rk.json_lines("consume", "lagged", "--partition", str(first["partition"]), "--offset", str(first["offset"]),
                        "--max-messages", "1", "--timeout-ms", "20000")
    assert [(r["partition"], r["offset"]) for r in one] == [(first["partition"], first["offset"])]
    # Offsets back to the start (a dry run first), then the group is deleted.
    dry = rk.json("groups", "reset-offsets", "readers", "--topic", "lagged", "--to-earliest")
    assert not dry["executed"] and all(p["new_offset"] == 0 for p in dry["partitions"])
    assert rk.json("groups", "reset-offsets", "readers", "--topic", "lagged", "--to-earliest", "--execute")["executed"]
    assert sum(r["lag"] for r in rk.json("groups", "describe", "readers")["partitions"]) == 30
    # One partition's committed offset deleted (OffsetDelete), as kafka-consumer-groups --delete-offsets.
    deleted = rk.json("groups", "delete-offsets", "readers", "--topic", "lagged:0")
    assert (deleted["error"], deleted["partitions"]) == (None, [{"topic": "lagged", "partition": 0,
                                                                 "status": "Successful"}])
    assert sorted(r["partition"] for r in rk.json("groups", "describe", "readers")["partitions"]) == [1, 2]
    # kafka-log-dirs' lines and JSON: every broker holds the three replicas.
    querying, received, document = rk.run("log-dirs", "describe", "--topic-list", "lagged",
                                          json_output=False).stdout.splitlines()
    assert (querying, received) == ("Querying brokers for log directories information",
                                    "Received log directory information from brokers 0,1,2")
    brokers = json.loads(document)["brokers"]
    assert [b["broker"] for b in brokers] == [0, 1, 2]
    for broker in brokers:
        (log_dir,) = broker["logDirs"]
        assert log_dir["error"] is None
        assert sorted(p["partition"] for p in log_dir["partitions"]) == ["lagged-0", "lagged-1", "lagged-2"]
        assert sum(p["size"] for p in log_dir["partitions"]) > 0 and not any(p["isFuture"] for p in log_dir["partitions"])
    assert rk.json("groups", "delete", "readers")["deleted"]
    assert "readers" not in [g["group"] for g in rk.json("groups", "list")]


def test_console_tools_with_kafkas_flags_and_a_consumer_that_runs_until_interrupted(rk):
    assert rk.json("topics", "create", "console", "--partitions", "1")["created"]
    produced = rk.run("console-producer", "--topic", "console", "--property", "parse.key=true",
                      "--property", "key.separator=:", "--request-required-acks", "-1", stdin="k1:a\nk2:b\n",
                      json_output=False, own_process=True)
    assert (produced.stdout, produced.stderr) == ("", "2 records acknowledged (acks=-1)\n")
    # No --max-messages, no --timeout-ms: it runs until Ctrl-C, then reports and exits 0 as Kafka's.
    consumer = subprocess.Popen(
        [sys.executable, "-m", "orchestration.cli", "console-consumer", "--topic", "console", "--from-beginning",
         "--group", "console-readers", "--property", "print.key=true", "--property", "print.offset=true",
         "--namespace", rk.namespace], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=rk.env,
        cwd=REPO_ROOT)
    try:
        lines = read_lines(consumer.stdout, 2, "the consumer's first two records")
        consumer.send_signal(signal.SIGINT)
        out, err = consumer.communicate(timeout=COMMAND_TIMEOUT_S)
    finally:
        if consumer.poll() is None:
            consumer.kill()
    assert lines == ["Offset:0\tk1\ta\n", "Offset:1\tk2\tb\n"] and out == ""
    assert (consumer.returncode, err) == (0, "Processed a total of 2 messages\n")
    # It committed what it printed.
    assert sum(r["current_offset"] for r in rk.json("groups", "describe", "console-readers")["partitions"]) == 2


def test_with_no_cluster_in_the_namespace_a_command_says_how_to_start_one(rk):
    address = rk.started["address"]
    done = subprocess.run([sys.executable, "-m", "orchestration.cli", "topics", "list", "--namespace", "nothing-here",
                           "--address", address], capture_output=True, text=True, env=rk.env, cwd=REPO_ROOT,
                          timeout=COMMAND_TIMEOUT_S)
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr.splitlines() == [
        f"error: NO_CLUSTER: no raykafka cluster in namespace 'nothing-here' on the Ray at {address}; start one "
        "with 'raykafka cluster start --local --namespace nothing-here'"]


def round_trip_through_a_listener(rk, bootstrap: str, replication_factor: int) -> None:
    """kafka-topics and the console tools with --bootstrap-server: a topic made, listed, described,
    written, read back with keys and deleted, all through a Kafka client (no Ray in those processes)."""
    server = ("--bootstrap-server", bootstrap)
    topic = f"listener-{uuid.uuid4().hex[:6]}"
    assert rk.json("topics", "create", topic, "--partitions", "2", "--replication-factor", str(replication_factor),
                   "--config", "retention.ms=86400000", *server)["created"]
    assert topic in rk.json("topics", "list", *server)
    described = wait_for(f"both partitions of {topic} led", lambda: [
        p for p in rk.json("topics", "describe", topic, *server) if p["leader"] in p["isr"]])
    assert [p["partition"] for p in described] == [0, 1] and all(len(p["replicas"]) == replication_factor
                                                                  for p in described)
    assert described[0]["configs"] == {"retention.ms": "86400000"}
    produced = rk.json("console-producer", "--topic", topic, "--property", "parse.key=true", "--property",
                       "key.separator=:", *server, stdin="k1:a\nk2:b\nk3:c\n")
    assert produced["acknowledged"] == 3
    records = rk.json_lines("console-consumer", "--topic", topic, "--from-beginning", "--max-messages", "3",
                            "--timeout-ms", "20000", *server)
    assert sorted((r["key"], r["value"]) for r in records) == [("k1", "a"), ("k2", "b"), ("k3", "c")]
    text = rk.run("console-consumer", "--topic", topic, "--from-beginning", "--max-messages", "3", "--timeout-ms",
                  "20000", "--property", "print.key=true", *server, json_output=False)
    assert sorted(text.stdout.splitlines()) == ["k1\ta", "k2\tb", "k3\tc"]
    assert text.stderr == "Processed a total of 3 messages\n"
    assert rk.json("topics", "delete", topic, *server)["deleted"]
    wait_for(f"{topic} gone from the listing", lambda: topic not in rk.json("topics", "list", *server))


def test_topics_and_console_tools_with_bootstrap_server_on_raykafkas_listener(rk):
    round_trip_through_a_listener(rk, rk.json("cluster", "status")["bootstrap_servers"], 3)


def test_topics_and_console_tools_with_bootstrap_server_on_apache_kafka(rk, apache_kafka):
    round_trip_through_a_listener(rk, apache_kafka.bootstrap_servers, 1)


def admin_tools_through_a_listener(rk, bootstrap: str, tmp_path: Path) -> None:
    """kafka-consumer-groups, kafka-delete-records, kafka-leader-election, kafka-log-dirs and
    kafka-reassign-partitions with --bootstrap-server (a Kafka client, no Ray in those processes):
    the same answers and lines as the commands give on the Ray path."""
    server = ("--bootstrap-server", bootstrap)
    topic, group = f"admin-{uuid.uuid4().hex[:6]}", f"readers-{uuid.uuid4().hex[:6]}"
    assert rk.json("topics", "create", topic, "--partitions", "2", *server)["created"]
    led = wait_for(f"both partitions of {topic} led", lambda: [
        p for p in rk.json("topics", "describe", topic, *server) if p["leader"] in p["isr"]])
    assert len(led) == 2
    for partition in (0, 1):  # three records in each partition, so that the group commits both
        assert rk.json("console-producer", "--topic", topic, "--request-required-acks", "all", "--partition",
                       str(partition), *server, stdin="".join(f"v{i}\n" for i in range(3)))["acknowledged"] == 3
    assert len(rk.json_lines("console-consumer", "--topic", topic, "--group", group, "--from-beginning",
                             "--max-messages", "6", "--timeout-ms", "20000", *server)) == 6
    # kafka-consumer-groups --list / --describe / --reset-offsets / --delete-offsets / --delete
    assert group in [g["group"] for g in rk.json("groups", "list", *server)]
    described = rk.json("groups", "describe", group, *server)
    assert described["state"] == "Empty" and [r["partition"] for r in described["partitions"]] == [0, 1]
    assert sum(r["current_offset"] for r in described["partitions"]) == 6 and all(
        r["lag"] == 0 for r in described["partitions"])
    text = rk.run("groups", "describe", group, *server, json_output=False).stdout.splitlines()
    assert text[1].split() == ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG",
                               "CONSUMER-ID", "HOST", "CLIENT-ID"] and text[2].split()[:2] == [group, topic]
    dry = rk.json("groups", "reset-offsets", group, "--topic", topic, "--to-earliest", *server)
    assert not dry["executed"] and [p["new_offset"] for p in dry["partitions"]] == [0, 0]
    assert rk.json("groups", "reset-offsets", group, "--topic", topic, "--to-earliest", "--execute", *server)["executed"]
    assert sum(r["lag"] for r in rk.json("groups", "describe", group, *server)["partitions"]) == 6
    deleted = rk.json("groups", "delete-offsets", group, "--topic", f"{topic}:0", *server)
    assert (deleted["error"], deleted["partitions"]) == (None, [{"topic": topic, "partition": 0, "status": "Successful"}])
    assert [r["partition"] for r in rk.json("groups", "describe", group, *server)["partitions"]] == [1]
    assert rk.run("groups", "delete", group, *server, json_output=False).stdout == \
        f"Deletion of group {group} succeeded.\n"
    assert group not in [g["group"] for g in rk.json("groups", "list", *server)]
    # kafka-delete-records: partition 0 up to its high watermark
    offsets = tmp_path / "offsets.json"
    offsets.write_text(json.dumps({"partitions": [{"topic": topic, "partition": 0, "offset": -1}], "version": 1}))
    high_watermark = next(p["high_watermark"] for p in rk.json("topics", "describe", topic, *server)
                          if p["partition"] == 0)
    assert rk.json("delete-records", "--offset-json-file", str(offsets), *server) == [
        {"topic": topic, "partition": 0, "low_watermark": high_watermark}]
    # kafka-leader-election: partition 0's preferred replica already leads
    elected = rk.run("leader-election", "--election-type", "preferred", "--topic", topic, "--partition", "0",
                     *server, json_output=False)
    assert (elected.stdout, elected.stderr) == (f"Valid replica already elected for partitions {topic}-0\n", "")
    # kafka-log-dirs --describe: each replica of the topic on the broker that holds it
    document = rk.json("log-dirs", "describe", "--topic-list", topic, *server)
    held = sorted(p["partition"] for b in document["brokers"] for d in b["logDirs"] for p in d["partitions"])
    assert held == sorted(f"{topic}-{p['partition']}" for p in led for _ in p["replicas"])
    # kafka-reassign-partitions --generate / --execute / --verify: partition 1 onto partition 0's replicas
    replicas = {p["partition"]: p["replicas"] for p in rk.json("topics", "describe", topic, *server)}
    moves = tmp_path / "moves.json"
    moves.write_text(json.dumps({"topics": [{"topic": topic}], "version": 1}))
    proposed = rk.json("reassign-partitions", "--generate", "--topics-to-move-json-file", str(moves),
                       "--broker-list", ",".join(map(str, sorted(replicas[0]))), *server)["proposed"]
    assert sorted(p["partition"] for p in proposed["partitions"]) == [0, 1]
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [{"topic": topic, "partition": 1, "replicas": replicas[0]}]}))
    started = rk.json("reassign-partitions", "--reassignment-json-file", str(plan), "--execute", "--wait",
                      "--timeout-s", "120", *server)
    assert started["started"] == [f"{topic}-1"] and [r["status"] for r in started["status"]] == ["complete"]
    verified = rk.run("reassign-partitions", "--reassignment-json-file", str(plan), "--verify", *server,
                      json_output=False)
    assert verified.stdout == f"Reassignment of partition {topic}-1 is complete.\n"
    assert rk.json("topics", "delete", topic, *server)["deleted"]


def test_admin_tools_with_bootstrap_server_on_raykafkas_listener(rk, tmp_path):
    admin_tools_through_a_listener(rk, rk.json("cluster", "status")["bootstrap_servers"], tmp_path)


def test_admin_tools_with_bootstrap_server_on_apache_kafka(rk, apache_kafka, tmp_path):
    admin_tools_through_a_listener(rk, apache_kafka.bootstrap_servers, tmp_path)


def test_topics_alter_config_reaches_the_brokers_live_partitions(rk):
    assert rk.json("topics", "create", "narrow", "--replication-factor", "2")["created"]
    altered = rk.json("topics", "alter-config", "narrow", "--set", "min.insync.replicas=3",
                      "--set", "retention.ms=86400000")
    assert altered["configs"] == {"min.insync.replicas": "3", "retention.ms": "86400000"}
    described = rk.json("topics", "describe", "narrow")
    assert described[0]["configs"] == {"min.insync.replicas": "3", "retention.ms": "86400000"}
    assert rk.json("topics", "describe-config", "narrow")["min.insync.replicas"]["source"] == "DYNAMIC_TOPIC_CONFIG"
    # Two replicas cannot satisfy min.insync.replicas=3: the leader refuses acks=all (retriable,
    # so the producer gives up at its delivery timeout), which shows the broker applied the change.
    refused = rk.run("produce", "narrow", "--acks", "all", "--producer-property", "delivery.timeout.ms=3000",
                     "--producer-property", "request.timeout.ms=2000", stdin="x\n", check=False)
    assert refused.returncode == 1 and json.loads(refused.stdout.splitlines()[-1])["error"] in (
        "NOT_ENOUGH_REPLICAS", "REQUEST_TIMED_OUT"), refused.stdout
    assert rk.json("topics", "alter-config", "narrow", "--delete", "min.insync.replicas")["configs"] == {
        "retention.ms": "86400000"}
    assert rk.json("produce", "narrow", "--acks", "all", stdin="y\n")["acknowledged"] == 1
    for args, code in ((("narrow", "--set", "no.such.key=1"), "INVALID_CONFIG"),
                       (("narrow", "--set", "min.insync.replicas=zero"), "INVALID_CONFIG"),
                       (("missing", "--set", "retention.ms=1"), "UNKNOWN_TOPIC_OR_PARTITION")):
        bad = rk.run("topics", "alter-config", *args, check=False)
        assert bad.returncode == 1 and json.loads(bad.stdout)["error"] == code, bad.stdout


def test_reassign_partitions_moves_replicas_and_keeps_the_records(rk, tmp_path):
    assert rk.json("topics", "create", "moving", "--replica-assignment", "0:1")["created"]
    assert rk.json("produce", "moving", "--acks", "all", stdin="".join(f"m{i}\n" for i in range(20)))["acknowledged"] == 20
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [{"topic": "moving", "partition": 0, "replicas": [1, 2]}]}))
    started = rk.json("reassign-partitions", "--reassignment-json-file", str(plan), "--execute", "--wait",
                      "--timeout-s", "120")
    assert started["started"] == ["moving-0"] and started["current"]["partitions"][0]["replicas"] == [0, 1]
    assert [r["status"] for r in started["status"]] == ["complete"]
    assert [r["status"] for r in rk.json("reassign-partitions", "--reassignment-json-file", str(plan), "--verify")] \
        == ["complete"]
    (partition,) = rk.json("topics", "describe", "moving")
    assert partition["replicas"] == [1, 2] and sorted(partition["isr"]) == [1, 2] and partition["leader"] in (1, 2)
    records = rk.json_lines("consume", "moving", "--from-beginning", "--max-messages", "20", "--timeout-ms", "20000")
    assert sorted(r["value"] for r in records) == sorted(f"m{i}" for i in range(20))
    plan.write_text(json.dumps({"version": 1, "partitions": [{"topic": "moving", "partition": 0, "replicas": [1, 7]}]}))
    refused = rk.run("reassign-partitions", "--reassignment-json-file", str(plan), "--execute", check=False)
    assert refused.returncode == 1 and json.loads(refused.stdout)["refused"] == {"moving-0": "INVALID_REPLICA_ASSIGNMENT"}


def test_kill_leader_moves_leadership_and_preferred_election_moves_it_back(rk, orders, tmp_path):
    before = {p["partition"]: p for p in rk.json("topics", "describe", "orders")}
    victim = before[0]["leader"]
    assert rk.json("kill", "broker", str(victim), "--no-restart")["restart"] is False

    def moved():
        now = {p["partition"]: p for p in rk.json("topics", "describe", "orders")}
        return now if now[0]["leader"] not in (victim, -1) and now[0]["leader_epoch"] > before[0]["leader_epoch"] \
            else None
    after = wait_for(f"partition 0 to get a leader other than broker {victim}", moved)
    assert victim not in after[0]["isr"]
    under = wait_for("partitions to show as under-replicated",
                     lambda: rk.json("topics", "describe", "orders", "--under-replicated-partitions"))
    assert all(victim not in p["isr"] for p in under)
    status = rk.json("cluster", "status")
    assert not next(b for b in status["brokers"] if b["broker_id"] == victim)["up"]

    assert rk.json("restart-broker", str(victim))["restarted"]
    wait_for("every replica back in the ISR", lambda: rk.json(
        "topics", "describe", "orders", "--under-replicated-partitions") == [])
    plan = tmp_path / "election.json"
    plan.write_text(json.dumps({"partitions": [{"topic": "orders", "partition": p} for p in range(3)]}))
    rows = rk.json("leader-election", "--election-type", "preferred", "--path-to-json-file", str(plan))
    assert {r["result"] for r in rows} <= {"NONE", "ELECTION_NOT_NEEDED"} and len(rows) == 3
    wait_for("every partition led by its preferred replica", lambda: all(
        p["leader"] == p["replicas"][0] for p in rk.json("topics", "describe", "orders")))
    # Every leader is alive: an unclean election has nothing to do, in kafka-leader-election's words.
    # In a process of its own: nothing on stderr once it joined Ray, as a user sees it.
    unclean = rk.run("leader-election", "--election-type", "unclean", "--topic", "orders", "--partition", "0",
                     json_output=False, own_process=True)
    assert (unclean.stdout, unclean.stderr) == ("Valid replica already elected for partitions orders-0\n", "")
    # As Kafka's tool, no scope is no election.
    refused = rk.run("elect-leaders", "--type", "unclean", check=False, json_output=False)
    assert refused.returncode == 1 and "One and only one of the following options is required" in refused.stderr


def test_kill_controller_and_a_coordinator(rk, orders):
    epoch = rk.json("cluster", "status")["controller"]["controller_epoch"]
    rk.json("kill", "controller")
    wait_for("a controller with a higher epoch", lambda: rk.json(
        "cluster", "status")["controller"]["controller_epoch"] > epoch)
    rk.json("kill", "group-coordinator", "0")
    rk.json("kill", "replica-fetcher", "1")
    produced = rk.json("produce", "orders", stdin="after-kills\n")
    assert produced["acknowledged"] == 1


def scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as answer:
        return answer.read().decode()


def total(text: str, name: str, **tags: str) -> float:
    """The sum of metric ``name``'s samples (Ray prefixes ``ray_``) whose tags include ``tags``."""
    found = 0.0
    for line in text.splitlines():
        if line.startswith(f"ray_{name}{{") and all(f'{k}="{v}"' in line for k, v in tags.items()):
            found += float(line.rsplit(" ", 1)[1])
    return found


def test_metrics_on_rays_endpoint_move_during_a_load(rk, orders):
    port = rk.started["metrics_export_port"]
    # A group with committed offsets behind the log end, for the lag gauge (and bytes out to it).
    assert len(rk.json_lines("consume", "orders", "--group", "lagging", "--from-beginning", "--max-messages", "5",
                             "--timeout-ms", "20000")) == 5
    names = ["raykafka_broker_topic_messages_in_total", "raykafka_broker_topic_bytes_in_total",
             "raykafka_replica_manager_under_replicated_partitions", "raykafka_delayed_operation_purgatory_size",
             "raykafka_request_total_time_ms_bucket", "raykafka_controller_active_controller_count",
             "raykafka_controller_epoch", "raykafka_controller_offline_partitions_count",
             "raykafka_controller_leader_elections_total", "raykafka_controller_channel_queue_size",
             "raykafka_broker_topic_bytes_out_total", "raykafka_consumer_group_lag"]
    missing = list(names)

    def every_metric() -> str | None:
        text = scrape(port)
        missing[:] = [n for n in names if f"ray_{n}{{" not in text]
        return None if missing else text
    try:
        text = wait_for("every raykafka metric on Ray's metrics endpoint", every_metric)
    except AssertionError as exc:
        raise AssertionError(f"{exc}; still missing: {missing}") from None
    before = total(text, "raykafka_broker_topic_messages_in_total", topic="orders")
    bytes_out_before = total(text, "raykafka_broker_topic_bytes_out_total", topic="orders")
    lag_before = total(text, "raykafka_consumer_group_lag", group="lagging", topic="orders")
    assert total(text, "raykafka_controller_active_controller_count") >= 1
    assert rk.json("produce", "orders", stdin="".join(f"load-{i}\n" for i in range(50)))["acknowledged"] == 50
    wait_for("messages in for 'orders' to grow by the 50 records", lambda: total(
        scrape(port), "raykafka_broker_topic_messages_in_total", topic="orders") >= before + 50)
    assert total(scrape(port), "raykafka_request_total_time_ms_count", request="produce") > 0
    wait_for("the lagging group's lag to grow by the 50 records", lambda: total(
        scrape(port), "raykafka_consumer_group_lag", group="lagging", topic="orders") >= lag_before + 50)
    assert len(rk.json_lines("consume", "orders", "--group", "lagging", "--max-messages", "10",
                             "--timeout-ms", "20000")) == 10
    wait_for("bytes out for 'orders' to grow as the group reads", lambda: total(
        scrape(port), "raykafka_broker_topic_bytes_out_total", topic="orders") > bytes_out_before)


def test_cluster_stop_waits_for_every_process_of_the_ray_head_and_says_what_it_stopped(rk):
    """With --delete-data it also removes the directories cluster start made. Last in this module,
    because it stops the module's cluster (the fixture then has nothing left to stop)."""
    import psutil
    rk.stop_tested = True
    rk.disconnect()  # this process leaves the Ray head before it stops; ``cluster stop`` runs as its own process
    head = psutil.Process(rk.started["head_pid"])
    processes = [head, *head.children(recursive=True)]
    try:
        log_dir = Path(rk.started["log_dir"])
        assert sorted(p.name for p in log_dir.iterdir()) == ["broker-0", "broker-1", "broker-2"]
        stopped = rk.json("cluster", "stop", "--delete-data")
        running = [p for p in processes if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
        assert running == [], f"still running when cluster stop returned: {running}"
        assert stopped["stopped"] and stopped["ray_head_stopped"] and stopped["brokers"] == [0, 1, 2]
        assert stopped["ray_head"]["head_pid"] == rk.started["head_pid"]
        head_processes = stopped["ray_head"]["processes"]
        assert {"gcs_server", "raylet"} <= {p["name"] for p in head_processes}, head_processes
        assert sorted(stopped["ray_head"]["terminated"] + stopped["ray_head"]["killed"]) \
            == sorted(p["pid"] for p in head_processes)
        assert not rk.state_file.exists(), "the cluster is forgotten"
        assert stopped["data"]["refused"] == [] and not log_dir.exists(), stopped["data"]
        assert not Path(rk.started["temp_dir"]).exists() and rk.started["temp_dir"] in stopped["data"]["deleted"]
    finally:
        for process in processes:  # only if stop failed: end what this module started, and only that
            try:
                process.kill()
            except psutil.NoSuchProcess:
                pass
