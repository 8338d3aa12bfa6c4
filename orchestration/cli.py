"""The ``raykafka`` command line.

``raykafka load run WORKLOAD.yaml`` runs a workload file through Spark on the raykafka cluster: a
Spark load job, the workload's faults, a Spark consume job, the history checker, and the summary
(``orchestration.spark.pipeline``); ``make demo`` runs it on ``benchmarks/workloads/demo-leader-kill.yaml``.

``raykafka demo`` (no Spark) starts a local cluster, creates a replicated topic, produces keyed records with
acks=all, kills a partition leader and watches the failover, produces more, reads every record back
through a consumer group at the offset it was acknowledged with, and prints what happened.

``raykafka cluster start|status|stop``, ``topics``, ``produce``, ``consume``, ``groups``, ``kill``,
``restart-broker``, ``elect-leaders``, ``delete-records`` and ``log-dirs`` run and steer a cluster of detached
actors that outlives the command (``orchestration.commands``), each with ``--json``.

``raykafka chaos list`` prints the failover matrix; ``raykafka chaos run SCENARIO [--seed N]``
runs one row on a local Ray, prints its verdict table and writes the history and the checker's
report (``orchestration.chaos``).

``raykafka sim [--seeds 1..N | --seed N] [--faults ...] [--minutes M]`` runs seeded random fault
schedules over a deterministic simulation of the whole cluster (the shipped drivers, no Ray) and
prints a verdict per seed, with the command that replays a failing one (``orchestration.simulation``).
"""
from __future__ import annotations

import argparse
import sys
import time

from orchestration.commands import cluster as cluster_commands
from orchestration.commands import data as data_commands
from orchestration.commands import groups as group_commands
from orchestration.commands import log_dirs as log_dir_commands
from orchestration.commands import operations as operation_commands
from orchestration.commands import reassign as reassign_commands
from orchestration.commands import records as record_commands
from orchestration.commands import options
from orchestration.commands import topics as topic_commands
from orchestration.commands.common import NoClusterError, add_bootstrap_server, fail
from orchestration.commands.quiet import route_rays_messages


def _produce(cluster, topic: str, start: int, count: int, acks: str) -> dict:
    producer = cluster.producer({"acks": acks, "linger.ms": "5", "retries": "100"})
    futures = [(f"key-{i % 100}".encode(), f"value-{i}".encode()) for i in range(start, start + count)]
    futures = [(k, v, producer.send(topic, key=k, value=v)) for k, v in futures]
    producer.flush(timeout=120)
    acknowledged = {}
    for key, value, future in futures:
        metadata = future.result(timeout=60)
        acknowledged[(metadata.partition, metadata.offset)] = (key, value)
    producer.close()
    return acknowledged


def _print_partitions(cluster, topic: str) -> None:
    print(f"  {'partition':>9} {'leader':>6} {'epoch':>5} {'replicas':>10} {'isr':>10} {'HW':>6} {'LEO':>6}")
    for p in cluster.describe_topic(topic):
        print(f"  {p.partition:>9} {p.leader:>6} {p.leader_epoch:>5} {str(p.replicas):>10} "
              f"{str(p.isr):>10} {p.high_watermark:>6} {p.log_end_offset:>6}")


def _demo(args: argparse.Namespace) -> int:
    from orchestration import Cluster
    from orchestration.admin.wait import wait_until

    print(f"starting a local raykafka cluster with {args.brokers} brokers ...", flush=True)
    started = time.monotonic()
    config = {"offsets.topic.num.partitions": "3", "group.initial.rebalance.delay.ms": "200"}
    with Cluster.start(brokers=args.brokers, log_dir=args.log_dir, num_cpus=args.num_cpus, config=config) as cluster:
        print(f"  up in {time.monotonic() - started:.1f}s: controller epoch {cluster.controller_epoch()}, "
              f"Ray namespace {cluster.namespace}, logs in {cluster.log_dir}")
        factor = min(args.replication_factor, args.brokers)
        cluster.create_topic(args.topic, partitions=args.partitions, replication_factor=factor,
                             config={"min.insync.replicas": str(min(2, factor))})
        print(f"created topic {args.topic!r}: {args.partitions} partitions, replication factor {factor}")

        sent_at = time.monotonic()
        acknowledged = _produce(cluster, args.topic, 0, args.records, args.acks)
        produce_s = time.monotonic() - sent_at
        print(f"produced {len(acknowledged)} keyed records with acks={args.acks} in {produce_s:.2f}s "
              f"({len(acknowledged) / produce_s:,.0f} records/s)")
        _print_partitions(cluster, args.topic)

        victim = cluster.describe_topic(args.topic)[0].leader
        epoch = cluster.describe_topic(args.topic)[0].leader_epoch
        print(f"\nkilling broker {victim}, the leader of partition 0 (Ray restarts it) ...")
        killed_at = time.monotonic()
        cluster.kill("broker", victim)
        wait_until(lambda: cluster.describe_topic(args.topic)[0].leader_epoch > epoch
                   and all(p.leader >= 0 and p.log_end_offset >= 0 for p in cluster.describe_topic(args.topic)),
                   120, "new leaders")
        print(f"  every partition led again after {time.monotonic() - killed_at:.2f}s")
        acknowledged.update(_produce(cluster, args.topic, args.records, args.records, args.acks))
        print(f"produced {args.records} more records")

        consumer = cluster.consumer({"group.id": "demo-readers", "auto.offset.reset": "earliest",
                                     "enable.auto.commit": "false"})
        consumer.subscribe([args.topic])
        seen = {}
        # Read up to every partition's high watermark, not until as many records as were
        # acknowledged: a retried send may have written a duplicate, which would end the read early.
        wanted = {(args.topic, p) for p in range(args.partitions)}
        ends = None
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            for record in consumer.poll(timeout_ms=500):
                seen[(record.partition, record.offset)] = (record.key, record.value)
            if consumer.assignment() == wanted:
                ends = ends or consumer.end_offsets(sorted(wanted))
                if all(consumer.position(tp) >= end for tp, end in ends.items()):
                    break
        consumer.commit()
        missing = [k for k, v in acknowledged.items() if seen.get(k) != v]
        print(f"consumer group 'demo-readers' read {len(seen)} records; "
              f"{len(missing)} acknowledged records missing or different")
        wait_until(lambda: all(len(p.isr) == factor for p in cluster.describe_topic(args.topic)), 60,
                   "the restarted broker back in every ISR")
        _print_partitions(cluster, args.topic)
        group = cluster.describe_group("demo-readers")
        print(f"\ngroup 'demo-readers': {group.state}, generation {group.generation_id}, "
              f"coordinator broker {group.coordinator}, committed lag "
              f"{sum(lag.lag for lag in group.offsets.values())}")
        consumer.close()
        verdict = "OK: every acknowledged record was read back at its offset" if not missing else "FAILED"
        print(f"\n{verdict}")
        return 0 if not missing else 1


def _chaos_list(args: argparse.Namespace) -> int:
    from orchestration.chaos.scenarios import all_scenarios
    rows = all_scenarios()
    width = max(len(name) for name in rows)
    print(f"{'scenario'.ljust(width)}  {'speed'.ljust(5)}  title / pass criterion")
    for name, row in rows.items():
        print(f"{name.ljust(width)}  {'slow' if row.slow else 'fast'}   {row.title} "
              f"(producers: {', '.join(row.producer_modes)})")
        print(f"{''.ljust(width)}         pass: {row.criterion}")
    print(f"\n{len(rows)} scenarios; run one with: raykafka chaos run SCENARIO [--seed N] [--producer MODE]"
          " (SCENARIO may also be a schedule file)")
    return 0


def _draw_history(output, title: str) -> str:
    """The run's rate and latency over time with its faults as bands, drawn from its history, as
    ``raykafka load run`` draws its own."""
    from orchestration.history import read_history
    from orchestration.spark.plot import draw, fault_bands, windows_from_history
    try:
        produce, consume, faults = windows_from_history(read_history(output / "history.jsonl"))
        end_s = max([w["second"] + 1 for w in produce + consume] or [1])
        return draw(output / "throughput.png", produce, consume, fault_bands(faults, end_s), title)
    except Exception as exc:  # the verdict stands without its picture
        return f"not drawn ({exc!r})"


def _chaos_run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from orchestration.chaos.runner import run_scenario
    from orchestration.chaos.scenarios import all_scenarios
    from orchestration.chaos.schedule import load_schedule

    if args.scenario.endswith(".toml") or Path(args.scenario).is_file():
        scenario = load_schedule(args.scenario)
    else:
        rows = all_scenarios()
        if args.scenario not in rows:
            print(f"unknown scenario {args.scenario!r}; 'raykafka chaos list' names them", file=sys.stderr)
            return 2
        scenario = rows[args.scenario]
    output = args.output or f"chaos-results/{scenario.name}-seed{args.seed}"
    mode = args.producer or scenario.producer_modes[0]
    print(f"running {scenario.name} (seed {args.seed}, {mode} producers): {scenario.title}", flush=True)
    print(f"  pass: {scenario.criterion}", flush=True)
    from orchestration.progress import ProgressDisplay
    phases = ["ray", "cluster", "scenario", "heal", "check"]
    with ProgressDisplay(enabled=False if args.no_progress else None) as display:
        def progress(phase: str, detail: str) -> None:
            # A phase's row completes when a later one starts; a line per step otherwise.
            for earlier in phases[:phases.index(phase)]:
                display.update(earlier, earlier, completed=1, total=1)
            display.update(phase, phase, completed=0, total=1, detail=detail[:100])
        verdict = run_scenario(scenario, seed=args.seed, output_dir=output, producer_mode=mode, progress=progress)
        for phase in phases:
            display.update(phase, phase, completed=1, total=1)
    print()
    print(verdict.table())
    print(f"  picture: {_draw_history(Path(output), scenario.name)}")
    return 0 if verdict.passed else 1


def _load_run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from orchestration.spark.kafka_connector import ConnectorUnavailable
    from orchestration.spark.pipeline import run_workload
    from orchestration.spark.session import JavaNotFoundError
    from orchestration.spark.workload import WorkloadError, load_workload

    try:
        workload = load_workload(args.workload)
        if workload.job == "streaming-aggregate" and (args.bootstrap_server or args.namespace):
            raise WorkloadError(f"{workload.name}: the streaming-aggregate job starts its own cluster; "
                                "--namespace and --bootstrap-server take the load job only")
        if args.bootstrap_server is not None:  # refused here, before Ray and Spark start
            from orchestration.spark.listener_load import listener_workload
            listener_workload(workload)
    except WorkloadError as exc:
        print(f"bad workload: {exc}", file=sys.stderr)
        return 2
    output = args.output or str(Path("load-results") / workload.name)
    print(f"running workload {workload.name!r} from {args.workload}", flush=True)
    try:
        address = args.address
        if args.namespace is not None and args.bootstrap_server is not None:
            print("error: give --namespace (a raykafka cluster) or --bootstrap-server (any Kafka listener), "
                  "not both", file=sys.stderr)
            return 2
        if args.namespace is not None:  # a raykafka cluster already running: its Ray, as every command finds it
            from orchestration.commands.common import ray_address
            address = ray_address(args)
        result = run_workload(workload, address=address, output_dir=output, num_cpus=args.num_cpus,
                              show_progress=not args.no_progress, log_dir=args.log_dir,
                              out=lambda line: print(line, flush=True), namespace=args.namespace,
                              bootstrap_servers=args.bootstrap_server)
    except (JavaNotFoundError, ConnectorUnavailable) as exc:
        print(str(exc), file=sys.stderr)
        return 2
    print(f"\nverdict: {'PASS' if result.passed else 'FAIL'}: {result.lost} acknowledged records lost")
    return 0 if result.passed else 1


def _sim(args: argparse.Namespace) -> int:
    from orchestration.simulation.command import main as sim_main
    return sim_main(args, out=lambda line: print(line, flush=True))


DESCRIPTION = """raykafka: Kafka's replication and coordination protocol as a Ray actor system.

Start a cluster that outlives the command with 'raykafka cluster start --local', point Kafka clients
at the bootstrap servers 'raykafka cluster status' prints, and steer it with the Kafka-shaped tools
below (topics, console producer and consumer, consumer groups, leader election, ...). 'raykafka demo'
shows a leader failover in one command. 'raykafka COMMAND --help' describes each command."""


def build_parser(sim_options: bool = True) -> argparse.ArgumentParser:
    """Every command's parser. ``sim_options=False`` leaves ``sim``'s own options out, and with them
    the import of the simulator (about a second), for a command line that does not run ``sim``."""
    parser = argparse.ArgumentParser(prog="raykafka", description=DESCRIPTION,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    demo = commands.add_parser("demo", help="start a local cluster, produce and consume, print what happened")
    demo.add_argument("--brokers", type=int, default=3, help="brokers to start")
    demo.add_argument("--topic", default="demo", help="the topic it creates")
    demo.add_argument("--partitions", type=int, default=3, help="the topic's partitions")
    demo.add_argument("--replication-factor", type=int, default=3, help="the topic's replicas (at most --brokers)")
    demo.add_argument("--records", type=int, default=3000, help="records produced before and again after the kill")
    demo.add_argument("--acks", default="all", help="the producer's acks")
    demo.add_argument("--log-dir", default=None, help="keep logs here (default: a temporary directory)")
    demo.add_argument("--num-cpus", type=int, default=None, help="CPUs for the local Ray it starts (default: Ray's)")
    demo.set_defaults(run=_demo)
    chaos = commands.add_parser("chaos", help="run failover scenarios and judge them with the history checker")
    chaos_commands = chaos.add_subparsers(dest="chaos_command", required=True)
    chaos_commands.add_parser("list", help="the failover matrix: every scenario with its pass criterion"
                              ).set_defaults(run=_chaos_list)
    chaos_run = chaos_commands.add_parser("run", help="run one scenario; print the verdict, write history and report")
    chaos_run.add_argument("scenario", help="a name from 'raykafka chaos list', or a schedule file (.toml)")
    chaos_run.add_argument("--seed", type=int, default=0, help="seeds fault targets and timing jitter")
    chaos_run.add_argument("--producer", choices=("retries-0", "idempotent"), default=None,
                           help="the producers' mode: idempotent (retries on) or retries-0 (default: the row's first)")
    chaos_run.add_argument("--output", default=None,
                           help="where history.jsonl, report.json and verdict.txt go "
                                "(default: chaos-results/SCENARIO-seedN)")
    chaos_run.add_argument("--no-progress", action="store_true", help="no live progress display")
    chaos_run.set_defaults(run=_chaos_run)
    load = commands.add_parser("load", help="run a workload file through Spark (RayDP) on a raykafka cluster")
    load_commands = load.add_subparsers(dest="load_command", required=True)
    load_run = load_commands.add_parser("run", help="load job, faults, consume job, checker and summary")
    load_run.add_argument("workload", help="a workload file (OpenMessaging Benchmark YAML plus raykafka's keys)")
    load_run.add_argument("--address", default=None, help="an existing Ray cluster's address (default: a local Ray; "
                                                          "with --namespace, the one 'cluster start' used)")
    load_run.add_argument("--namespace", default=None,
                          help="load the raykafka cluster already running in this Ray namespace ('cluster start'), "
                               "and leave it running (default: start a cluster of its own, and stop it at the end)")
    add_bootstrap_server(load_run)
    load_run.add_argument("--output", default=None, help="where the history, summary.json, the Parquet results "
                                                         "and the PNG go (default: load-results/WORKLOAD)")
    load_run.add_argument("--num-cpus", type=int, default=None,
                          help="CPUs for the local Ray it starts (default: Ray's)")
    load_run.add_argument("--log-dir", default=None, help="keep broker logs here (default: a temporary directory)")
    load_run.add_argument("--no-progress", action="store_true", help="no live progress display")
    load_run.set_defaults(run=_load_run)
    sim = commands.add_parser("sim", help="random fault schedules on a simulated cluster, a verdict per seed")
    if sim_options:
        from orchestration.simulation.command import add_arguments as add_sim_arguments
        add_sim_arguments(sim)
    sim.set_defaults(run=_sim)
    for family in (cluster_commands, topic_commands, data_commands, group_commands, operation_commands,
                   reassign_commands, record_commands, log_dir_commands):
        family.add_parsers(commands)
    options.prepare(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    # Only a command line that names ``sim`` (anywhere: a topic called sim just costs the import) needs its options.
    parser = build_parser(sim_options="sim" in argv)
    args = options.finish(parser, parser.parse_args(argv))
    from loguru import logger
    logger.remove()
    logger.add(sys.stderr, level=args.log_level)
    # As a library raykafka is silent (orchestration/__init__.py); the command speaks at --log-level,
    # and Ray's own messages are raykafka's DEBUG lines.
    logger.enable("orchestration")
    logger.enable("actors")
    route_rays_messages()
    try:
        return args.run(args)
    except NoClusterError as exc:
        return fail(args, exc)


if __name__ == "__main__":
    sys.exit(main())
