"""The ``raykafka`` command line reads and prints as Kafka's tools do: ``--version``, help with every
option's default, a plain description, the shared options before or after the subcommand, and one
line naming ``raykafka cluster start`` when there is no cluster; driven through ``main`` and its
parser in this process, with no Ray (a command that would need one fails before reaching it)."""
from __future__ import annotations

import argparse

import pytest

from orchestration.cli import build_parser, main
from orchestration.commands import options


def every_command(parser):
    return [(name, sub) for name, sub in options._commands(parser) if options.is_leaf(sub)]


def test_version_prints_the_package_version(capsys):
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out.strip() == f"raykafka {options.version()}"
    assert options.version() != "unknown"


def test_every_option_of_every_command_has_help_and_help_shows_defaults():
    parser = build_parser()
    missing = [f"{name} {action.option_strings or action.dest}" for name, sub in [("raykafka", parser)]
               + every_command(parser) for action in sub._actions
               if not action.help and not isinstance(action, argparse._SubParsersAction)]
    assert missing == []
    create = dict(every_command(parser))["topics create"]
    text = create.format_help()
    assert "--partitions PARTITIONS" in text and "(default: 1)" in text
    assert "(default: raykafka)" in text and "(default: WARNING)" in text


def test_the_description_has_no_markup(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    assert "``" not in out and "raykafka cluster start --local" in out


@pytest.mark.parametrize("argv", [
    ["--log-level", "debug", "--namespace", "ns", "--json", "topics", "list"],
    ["topics", "list", "--log-level", "debug", "--namespace", "ns", "--json"],
    ["--log-level", "debug", "topics", "list", "--namespace", "ns", "--json"],
])
def test_shared_options_before_or_after_the_subcommand(argv):
    parser = build_parser()
    args = options.finish(parser, parser.parse_args(argv))
    assert (args.log_level, args.namespace, args.json, args.address) == ("DEBUG", "ns", True, None)


def test_shared_options_take_their_defaults_and_a_command_that_does_not_take_one_refuses_it(capsys):
    parser = build_parser()
    args = options.finish(parser, parser.parse_args(["topics", "list"]))
    assert (args.log_level, args.namespace, args.json, args.address) == ("WARNING", "raykafka", False, None)
    sim = options.finish(parser, parser.parse_args(["--json", "sim"]))
    assert sim.json is True
    assert options.finish(parser, parser.parse_args(["sim"])).json is False
    with pytest.raises(SystemExit):
        options.finish(parser, parser.parse_args(["--namespace", "x", "demo"]))
    assert "'demo' does not take --namespace" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [["topics", "list"], ["groups", "describe", "g"], ["cluster", "status"],
                                  ["consume", "t", "--max-messages", "1"], ["kill", "controller"]])
def test_with_no_cluster_every_command_says_how_to_start_one(argv, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("RAYKAFKA_HOME", str(tmp_path))
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    assert main(argv) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    (line,) = captured.err.splitlines()
    assert "no raykafka cluster in namespace 'raykafka'" in line and "raykafka cluster start" in line


def test_with_no_cluster_json_says_so_on_stdout(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("RAYKAFKA_HOME", str(tmp_path))
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    assert main(["topics", "list", "--json", "--namespace", "other"]) == 1
    out = capsys.readouterr().out
    assert '"error": "NO_CLUSTER"' in out and "--namespace other" in out


def test_kill_without_the_broker_id_says_so_on_stderr_before_looking_for_a_cluster(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("RAYKAFKA_HOME", str(tmp_path))
    assert main(["kill", "broker"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.strip() == "error: kill broker needs the broker id"


@pytest.mark.parametrize("argv", [["topics", "list"], ["topics", "describe", "t"], ["produce", "t"],
                                  ["consume", "t"], ["groups", "list"], ["groups", "describe", "g"],
                                  ["groups", "delete", "g"], ["groups", "reset-offsets", "g", "--topic", "t"],
                                  ["groups", "delete-offsets", "g", "--topic", "t"],
                                  ["leader-election", "--election-type", "preferred", "--all-topic-partitions"],
                                  ["delete-records", "--offset-json-file", "f.json"], ["log-dirs", "describe"],
                                  ["reassign-partitions", "--verify", "--reassignment-json-file", "f.json"]])
def test_bootstrap_server_talks_to_a_kafka_listener_not_to_ray(argv, tmp_path, monkeypatch):
    from orchestration.commands.common import connected
    from orchestration.commands.listener import ListenerTarget
    monkeypatch.setenv("RAYKAFKA_HOME", str(tmp_path))  # no raykafka cluster known here
    parser = build_parser()
    args = options.finish(parser, parser.parse_args([*argv, "--bootstrap-server", "127.0.0.1:9"]))
    with connected(args) as target:
        assert isinstance(target, ListenerTarget) and target.bootstrap_servers == "127.0.0.1:9"


@pytest.mark.parametrize("argv", [["kill", "controller"], ["restart-broker", "0"]])
def test_commands_that_act_on_rays_actors_take_no_bootstrap_server(argv, capsys):
    parser = build_parser()
    with pytest.raises(SystemExit):
        parser.parse_args([*argv, "--bootstrap-server", "127.0.0.1:9"])
    assert "unrecognized arguments: --bootstrap-server" in capsys.readouterr().err
