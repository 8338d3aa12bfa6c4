"""``raykafka leader-election``, ``produce`` and ``consume`` take Kafka's flags and print Kafka's lines
(kafka-leader-election's scope rules and outcome lines, the console producer's LineMessageReader and
the console consumer's DefaultMessageFormatter, its run-until-interrupted loop and its closing count);
driven through the command line's main with the cluster replaced by a stand-in that records what it
was asked and answers as the admin and client classes do, no Ray."""
from __future__ import annotations

import io
import json
import os
import signal
import time
from types import SimpleNamespace

import pytest

from actors.codecs.record_batches import ConsumerRecord
from orchestration.cli import main
from orchestration.commands import data as data_commands
from orchestration.commands import operations as operation_commands
from orchestration.commands.data import FORMATTER_PROPERTIES, READER_PROPERTIES, LineReader, format_record
from tests.support.cli_stand_in import connect_commands_to


class StandInProducer:
    def __init__(self, config, sent):
        self.config, self.sent = config, sent

    def send(self, topic, value=None, key=None, partition=None, headers=None):
        self.sent.append((topic, key, value, headers))
        return SimpleNamespace(result=lambda timeout: SimpleNamespace(partition=0, offset=len(self.sent) - 1))

    def flush(self, timeout):
        pass


class StandInConsumer:
    """Hands out ``batches`` one poll at a time; then, with ``interrupt``, signals SIGINT to this
    process (as Ctrl-C does) and returns nothing from then on."""

    def __init__(self, config, batches, interrupt, log):
        self.config, self.batches, self.interrupt, self.log = config, list(batches), interrupt, log
        self.polls = 0

    def subscribe(self, topics):
        self.log.append(("subscribe", topics))

    def assign(self, partitions):
        self.log.append(("assign", partitions))

    def seek(self, tp, offset):
        self.log.append(("seek", tp, offset))

    def seek_to_beginning(self):
        self.log.append(("seek_to_beginning",))

    def seek_to_end(self):
        self.log.append(("seek_to_end",))

    def poll(self, timeout_ms):
        self.polls += 1
        assert self.polls < 1000, "the consumer never stopped"
        if self.batches:
            return self.batches.pop(0)
        if self.interrupt:
            os.kill(os.getpid(), signal.SIGINT)
        time.sleep(min(timeout_ms, 20) / 1000)  # as a poll with nothing to return waits for its timeout
        return []

    def commit(self):
        self.log.append(("commit",))

    def close(self):
        self.log.append(("close",))


class StandInCluster:
    def __init__(self):
        self.asked, self.sent, self.log = [], [], []
        self.batches, self.interrupt = [], False
        self.elections = {}

    def elect_leaders(self, election_type, topic=None, partitions=None):
        self.asked.append((election_type, topic, partitions))
        return {tp: r for tp, r in self.elections.items()
                if topic is None or (tp[0] == topic and tp[1] in partitions)}

    def describe_topic(self, topic):
        return [SimpleNamespace(partition=p) for p in range(2)]

    def producer(self, config):
        return StandInProducer(config, self.sent)

    def consumer(self, config):
        self.consumer_config = config
        return StandInConsumer(config, self.batches, self.interrupt, self.log)


@pytest.fixture
def cluster(monkeypatch) -> StandInCluster:
    stand_in = StandInCluster()
    connect_commands_to(monkeypatch, stand_in, operation_commands, data_commands)
    return stand_in


def record(offset, key=b"k", value=b"v", headers=(), partition=0):
    return ConsumerRecord("t", partition, offset, 1700000000000 + offset, key, value, tuple(headers))


# ------------------------------------------------------------------------ leader-election
@pytest.mark.parametrize("argv, words", [
    (["--topic", "t", "--partition", "0"], "Missing required option(s): election-type"),
    (["--election-type", "preferred"], "One and only one of the following options is required: topic, "
                                       "all-topic-partitions, path-to-json-file"),
    (["--election-type", "unclean", "--topic", "t", "--all-topic-partitions"], "One and only one"),
    (["--election-type", "preferred", "--topic", "t"], "Missing required option(s): partition"),
    (["--election-type", "preferred", "--all-topic-partitions", "--partition", "1"],
     "Option partition is only allowed if topic is used"),
])
def test_leader_election_needs_a_type_and_exactly_one_scope_as_kafkas_tool(cluster, capsys, argv, words):
    assert main(["leader-election", *argv]) == 1
    assert words in capsys.readouterr().err
    assert cluster.asked == []


def test_leader_election_prints_kafkas_lines_and_fails_when_a_partition_was_not_elected(cluster, capsys, tmp_path):
    cluster.elections = {("a", 0): "NONE", ("a", 1): "ELECTION_NOT_NEEDED", ("b", 2): "NONE",
                         ("b", 3): "PREFERRED_LEADER_NOT_AVAILABLE"}
    plan = tmp_path / "election.json"
    plan.write_text(json.dumps({"partitions": [{"topic": "a", "partition": 0}, {"topic": "a", "partition": 1},
                                               {"topic": "b", "partition": 2}, {"topic": "b", "partition": 3}]}))
    assert main(["leader-election", "--election-type", "preferred", "--path-to-json-file", str(plan)]) == 1
    assert cluster.asked == [("preferred", "a", [0, 1]), ("preferred", "b", [2, 3])]
    captured = capsys.readouterr()
    assert captured.out.splitlines() == [
        "Successfully completed leader election (PREFERRED) for partitions a-0, b-2",
        "Valid replica already elected for partitions a-1",
        "Error completing leader election (PREFERRED) for partition: b-3: PREFERRED_LEADER_NOT_AVAILABLE"]
    assert "1 replica(s) could not be elected" in captured.err


def test_leader_election_of_one_partition_and_of_all_and_the_old_spelling(cluster, capsys):
    cluster.elections = {("t", 1): "ELECTION_NOT_NEEDED"}
    assert main(["elect-leaders", "--type", "unclean", "--topic", "t", "--partition", "1", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == [{"topic": "t", "partition": 1, "result": "ELECTION_NOT_NEEDED"}]
    assert main(["leader-election", "--election-type", "preferred", "--all-topic-partitions"]) == 0
    assert cluster.asked == [("unclean", "t", [1]), ("preferred", None, None)]
    assert capsys.readouterr().out.strip() == "Valid replica already elected for partitions t-1"


def test_leader_election_json_file_with_a_partition_twice_is_refused(cluster, capsys, tmp_path):
    plan = tmp_path / "election.json"
    plan.write_text(json.dumps({"partitions": [{"topic": "a", "partition": 0}, {"topic": "a", "partition": 0}]}))
    assert main(["leader-election", "--election-type", "preferred", "--path-to-json-file", str(plan)]) == 1
    assert "Replica election data contains duplicate partitions: a-0" in capsys.readouterr().err
    plan.write_text("{}")
    assert main(["leader-election", "--election-type", "preferred", "--path-to-json-file", str(plan)]) == 1
    assert 'Replica election data is missing "partitions" field' in capsys.readouterr().err
    assert cluster.asked == []


# ------------------------------------------------------------------------ console producer
def test_line_reader_splits_headers_key_and_value_as_kafkas():
    plain = LineReader(dict(READER_PROPERTIES))
    assert plain.read("a\tb") == ([], None, b"a\tb")
    keyed = LineReader({**READER_PROPERTIES, "parse.key": "true", "parse.headers": "true", "null.marker": "<n>"})
    assert keyed.read("h1:v1,h2:<n>\tk\tv") == ([("h1", b"v1"), ("h2", None)], b"k", b"v")
    assert keyed.read("h:1\t<n>\t<n>") == ([("h", b"1")], None, None)
    with pytest.raises(ValueError, match="No key separator found on line number 3: 'h:1\tk'"):
        keyed.read("h:1\tk")
    lenient = LineReader({**READER_PROPERTIES, "parse.key": "true", "ignore.error": "true"})
    assert lenient.read("no-key") == ([], None, b"no-key")
    with pytest.raises(ValueError, match="headers.separator and headers.key.separator may not be equal"):
        LineReader({**READER_PROPERTIES, "headers.separator": ":"})


def test_produce_takes_kafkas_flags_and_the_old_ones(cluster, capsys, monkeypatch):
    monkeypatch.setattr("sys.stdin", io.StringIO("k1:v1\nk2:v2\n"))
    assert main(["console-producer", "--topic", "t", "--property", "parse.key=true", "--property", "key.separator=:",
                 "--request-required-acks", "1"]) == 0
    monkeypatch.setattr("sys.stdin", io.StringIO("k3:v3\n"))
    assert main(["produce", "t", "--key-separator", ":", "--acks", "all"]) == 0
    assert cluster.sent == [("t", b"k1", b"v1", None), ("t", b"k2", b"v2", None), ("t", b"k3", b"v3", None)]
    err = capsys.readouterr().err
    assert "2 records acknowledged (acks=1)" in err and "1 records acknowledged (acks=all)" in err
    monkeypatch.setattr("sys.stdin", io.StringIO("x\n"))
    assert main(["produce", "t", "--property", "no.such=1"]) == 1
    assert "unknown --property no.such" in capsys.readouterr().err


# ------------------------------------------------------------------------ console consumer
def test_format_record_prints_kafkas_columns():
    everything = {**FORMATTER_PROPERTIES, **{f"print.{k}": "true" for k in (
        "timestamp", "partition", "offset", "headers", "key")}}
    one = record(5, key=None, headers=[("h1", b"a"), ("h2", None)], partition=2)
    assert format_record(one, everything) == "CreateTime:1700000000005\tPartition:2\tOffset:5\th1:a,h2:null\tnull\tv"
    assert format_record(record(1), FORMATTER_PROPERTIES) == "v"
    assert format_record(record(1), {**FORMATTER_PROPERTIES, "print.key": "true", "key.separator": "="}) == "k=v"
    assert format_record(record(1), {**FORMATTER_PROPERTIES, "print.headers": "true"}) == "NO_HEADERS\tv"


def test_consume_runs_until_interrupted_then_commits_and_reports_the_count(cluster, capsys):
    cluster.batches = [[record(0, value=b"a"), record(1, value=b"b")], [], [record(2, value=b"c")]]
    cluster.interrupt = True
    handler_before = signal.getsignal(signal.SIGINT)  # SIG_IGN when pytest runs as a background job
    assert main(["console-consumer", "--topic", "t", "--group", "g", "--from-beginning",
                 "--property", "print.key=true", "--property", "key.separator=|"]) == 0
    captured = capsys.readouterr()
    assert captured.out.splitlines() == ["k|a", "k|b", "k|c"]
    assert captured.err.strip() == "Processed a total of 3 messages"
    assert cluster.consumer_config["group.id"] == "g" and cluster.consumer_config["auto.offset.reset"] == "earliest"
    assert cluster.log == [("subscribe", ["t"]), ("commit",), ("close",)]
    assert signal.getsignal(signal.SIGINT) is handler_before  # the consumer put back the handler it found


def test_consume_stops_at_max_messages_and_seeks_back_to_what_it_did_not_print(cluster, capsys):
    cluster.batches = [[record(0), record(1), record(2)]]
    assert main(["consume", "t", "--max-messages", "2", "--print-key"]) == 0
    assert capsys.readouterr().out.splitlines() == ["k\tv", "k\tv"]
    assert ("seek", ("t", 0), 2) in cluster.log and ("seek_to_end",) in cluster.log


def test_consume_stops_when_nothing_came_for_timeout_ms(cluster, capsys):
    cluster.batches = [[record(0)]]
    assert main(["consume", "t", "--timeout-ms", "1", "--partition", "1", "--offset", "earliest"]) == 0
    assert capsys.readouterr().err.strip() == "Processed a total of 1 messages"
    assert cluster.log[:2] == [("assign", [("t", 1)]), ("seek_to_beginning",)]
