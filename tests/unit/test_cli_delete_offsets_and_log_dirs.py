"""``raykafka groups delete-offsets`` and ``raykafka log-dirs describe`` read their arguments and
print their answers as kafka-consumer-groups --delete-offsets and kafka-log-dirs --describe do;
driven through the command line's main with the cluster connection replaced by a stand-in that
records what the admin client was asked and answers as the admin client does, no Ray."""
from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from actors.core.errors import ErrorCode
from orchestration.cli import main
from orchestration.commands import groups as group_commands
from orchestration.commands import log_dirs as log_dir_commands
from orchestration.commands.groups import parse_topic_partitions
from orchestration.errors import KafkaError
from tests.support.cli_stand_in import connect_commands_to


class StandInCluster:
    """The admin calls the two commands make, with the answers a three-broker cluster gives."""

    def __init__(self, *, group_error: ErrorCode | None = None) -> None:
        self.group_error = group_error
        self.asked: list = []

    def describe_topic(self, topic: str):
        if topic == "missing":
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, topic)
        return [SimpleNamespace(partition=p) for p in range(2)]

    def delete_offsets(self, group_id: str, partitions):
        self.asked.append(("delete_offsets", group_id, sorted(partitions)))
        if self.group_error is not None:
            raise KafkaError(self.group_error, group_id)
        return {tp: ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC if tp[0] == "consumed" else ErrorCode.NONE
                for tp in partitions}

    def describe_cluster(self):
        return {"brokers": [0, 1, 2]}

    def describe_log_dirs(self, broker_ids):
        self.asked.append(("describe_log_dirs", list(broker_ids)))
        return {b: {f"/data/broker-{b}": {"error": ErrorCode.NONE, "partitions": {
            ("orders", 0): {"size": 120, "offset_lag": 0, "is_future": False},
            ("other", 1): {"size": 7, "offset_lag": 2, "is_future": False}}}} for b in broker_ids}


@pytest.fixture
def cluster(monkeypatch) -> StandInCluster:
    stand_in = StandInCluster()
    connect_commands_to(monkeypatch, stand_in, group_commands, log_dir_commands)
    return stand_in


def test_topics_are_read_as_kafkas_tool_reads_them():
    assert parse_topic_partitions(["a", "b:0,2", "c:1"]) == (["a"], [("b", 0), ("b", 2), ("c", 1)])
    with pytest.raises(ValueError):
        parse_topic_partitions(["b:x"])


def test_delete_offsets_asks_for_each_partition_and_prints_kafkas_table(cluster, capsys):
    assert main(["groups", "delete-offsets", "readers", "--topic", "orders", "--topic", "extra:3"]) == 0
    assert cluster.asked == [("delete_offsets", "readers", [("extra", 3), ("orders", 0), ("orders", 1)])]
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "Request succeed for deleting offsets with topic orders, extra:3 group readers"
    assert lines[2].split() == ["TOPIC", "PARTITION", "STATUS"]
    assert lines[3] == "%-30s %-15s %s" % ("extra", 3, "Successful")
    assert [line.split() for line in lines[4:]] == [["orders", "0", "Successful"], ["orders", "1", "Successful"]]


def test_delete_offsets_reports_partition_and_topic_errors_and_fails(cluster, capsys):
    assert main(["groups", "delete-offsets", "readers", "--topic", "consumed:0", "--topic", "missing",
                 "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["error"] == "GROUP_SUBSCRIBED_TO_TOPIC"
    assert report["partitions"] == [
        {"topic": "consumed", "partition": 0, "status": "GROUP_SUBSCRIBED_TO_TOPIC"},
        {"topic": "missing", "partition": -1, "status": "UNKNOWN_TOPIC_OR_PARTITION"}]
    text = group_commands.delete_offsets_text(report).splitlines()
    assert text[0] == "Error: Encounter some partition level error, see the follow-up details:"
    assert text[3].split() == ["consumed", "0", "Error:", ":GROUP_SUBSCRIBED_TO_TOPIC"]
    assert text[4].split()[:3] == ["missing", "Not", "Provided"]


@pytest.mark.parametrize("code, words", [
    (ErrorCode.GROUP_ID_NOT_FOUND, "Error: 'readers' does not exist."),
    (ErrorCode.NON_EMPTY_GROUP, "Error: Deleting offsets of a consumer group 'readers' is forbidden if the group "
                                "is not empty."),
])
def test_a_group_level_refusal_is_printed_in_kafkas_words(cluster, capsys, code, words):
    cluster.group_error = code
    assert main(["groups", "delete-offsets", "readers", "--topic", "orders:0"]) == 1
    assert capsys.readouterr().out.splitlines()[0] == words


def test_log_dirs_describe_prints_kafkas_lines_and_json_document(cluster, capsys):
    assert main(["log-dirs", "describe", "--broker-list", "0,2", "--topic-list", "orders"]) == 0
    assert cluster.asked == [("describe_log_dirs", [0, 2])]
    querying, received, document = capsys.readouterr().out.splitlines()
    assert querying == "Querying brokers for log directories information"
    assert received == "Received log directory information from brokers 0,2"
    assert json.loads(document) == {"version": 1, "brokers": [
        {"broker": b, "logDirs": [{"logDir": f"/data/broker-{b}", "error": None, "partitions": [
            {"partition": "orders-0", "size": 120, "offsetLag": 0, "isFuture": False}]}]} for b in (0, 2)]}


def test_log_dirs_describe_refuses_a_broker_the_cluster_does_not_have(cluster, capsys):
    assert main(["log-dirs", "describe", "--broker-list", "1,5"]) == 1
    assert "The given brokers do not exist from --broker-list: 5. Current existent brokers: 0,1,2" \
        in capsys.readouterr().err
    assert cluster.asked == []
