"""Proves that the Python consumer detects log truncation after a leader change as Kafka's does
(KIP-320): real consumers, without Ray, read from one in-process broker core, then the metadata
names another whose log diverged (an unclean election), and the consumer validates its position
with OffsetForLeaderEpoch before fetching: it moves to where the logs diverge, raises
LogTruncationError with auto.offset.reset=none, resets when the leader knows no epoch to compare,
and drops records it fetched but had not handed out; the verdicts themselves are checked table-driven."""
from __future__ import annotations

import pytest

from actors.core.apis import api_of
from actors.core.errors import ErrorCode
from actors.core.messages.offset_for_leader_epoch import (
    OffsetForLeaderEpochResponse, OffsetForLeaderPartitionResult, OffsetForLeaderTopicResult,
)
from orchestration.clients.consumer import Consumer
from orchestration.clients.position_validation import LogTruncationError, PositionEpochs, Verdict
from orchestration.errors import KafkaError
from tests.support.core_driver import CoreDriver, make_batch
from tests.unit.test_client_history import TOPIC, CoreBroker, _produce_request

TP = (TOPIC, 0)
ROUNDS = 50  # every poll loop here is bounded by this many polls of 10 ms


class TwoBrokerDirectory:
    """Metadata for one partition whose leader (and leader epoch) the test moves, as a refresh
    after an election would; every broker is an in-process ``CoreBroker``."""

    namespace = "unit-test"

    def __init__(self, brokers: dict[int, CoreBroker], leader: int, epoch: int) -> None:
        self.brokers = brokers
        self.leader, self.epoch = leader, epoch

    def broker(self, broker_id: int) -> CoreBroker:
        return self.brokers[broker_id]

    def call(self, broker_id: int, request, timeout_ms: int | None = None):
        method = f"handle_{api_of(request).name}"
        return self.brokers[broker_id].ask(method, request)

    def refresh_metadata(self) -> None:
        pass

    def forget(self, broker_id: int) -> None:
        pass

    def known_broker_ids(self) -> list[int]:
        return sorted(self.brokers)

    def partitions_for(self, topic: str, *, refresh_if_missing: bool = True) -> dict[int, tuple[int, int]]:
        if topic != TOPIC:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, topic)
        return {0: (self.leader, self.epoch)}

    def leader_for(self, topic: str, partition: int) -> tuple[int, int]:
        return self.partitions_for(topic)[partition]


def broker_with_log(broker_id: int, epochs: list[tuple[int, list[bytes]]]) -> CoreBroker:
    """A leader whose log holds ``values`` written in each ``(leader epoch, values)`` in turn."""
    driver = CoreDriver(broker_id=broker_id)
    for epoch, values in epochs:
        driver.become(TOPIC, 0, leader=broker_id, replicas=(broker_id,), leader_epoch=epoch)
        if values:
            answer = driver.ask("handle_produce", _produce_request(make_batch(values)))
            assert answer.responses[0].partition_responses[0].error_code == ErrorCode.NONE
    return CoreBroker(driver)


OLD = [b"a%d" % i for i in range(10)]  # what the old leader (broker 0, epoch 0) holds, offsets 0-9
NEW = [b"n%d" % i for i in range(5, 12)]  # what the new leader wrote in epoch 1 from offset 5


def unclean_failover() -> TwoBrokerDirectory:
    """Broker 0 led in epoch 0 and has offsets 0-9; broker 1 had only 0-4 of them when it was
    elected in epoch 1 and has written 5-11 since: epoch 0 ends at 5 in its log."""
    old = broker_with_log(0, [(0, OLD)])
    new = broker_with_log(1, [(0, OLD[:5]), (1, NEW)])
    return TwoBrokerDirectory({0: old, 1: new}, leader=0, epoch=0)


def consumer(directory: TwoBrokerDirectory, **config) -> Consumer:
    settings = {"fetch.max.wait.ms": "0", "retry.backoff.ms": "1", "auto.offset.reset": "earliest", **config}
    made = Consumer(directory, settings, heartbeat_thread=False)
    made.assign([TP])
    return made


def poll_values(c: Consumer, count: int) -> list[tuple[int, bytes]]:
    """(offset, value) of the next ``count`` records, polling at most ROUNDS times."""
    got: list[tuple[int, bytes]] = []
    for _ in range(ROUNDS):
        got += [(r.offset, r.value) for r in c.poll(timeout_ms=10)]
        if len(got) >= count:
            return got
    raise AssertionError(f"waited {ROUNDS} polls for {count} records, got {got}")


def test_after_an_unclean_election_the_consumer_goes_back_to_where_the_logs_diverge():
    directory = unclean_failover()
    c = consumer(directory)
    assert poll_values(c, 10) == list(enumerate(OLD))
    directory.leader, directory.epoch = 1, 1  # the metadata now names the new leader

    # Without validation the consumer fetched on at 10 and read n10, n11, missing n5-n9.
    assert poll_values(c, 7) == list(zip(range(5, 12), NEW))
    assert c.position(TP) == 12


def test_with_auto_offset_reset_none_a_truncation_raises_until_the_application_seeks():
    directory = unclean_failover()
    c = consumer(directory, **{"auto.offset.reset": "none"})
    c.seek(TP, 0)
    assert poll_values(c, 10) == list(enumerate(OLD))
    directory.leader, directory.epoch = 1, 1

    for _ in range(2):  # raised again by the next poll: the position is still unvalidated
        with pytest.raises(LogTruncationError) as raised:
            for _ in range(ROUNDS):
                c.poll(timeout_ms=10)
        assert raised.value.divergent_offsets == {TP: 5}
        assert raised.value.error_code == ErrorCode.OFFSET_OUT_OF_RANGE
    c.seek(TP, raised.value.divergent_offsets[TP])
    assert poll_values(c, 7) == list(zip(range(5, 12), NEW))


def test_records_fetched_but_not_handed_out_are_dropped_and_fetched_again_from_the_new_leader():
    directory = unclean_failover()
    c = consumer(directory, **{"max.poll.records": "2"})
    assert poll_values(c, 2) == [(0, b"a0"), (1, b"a1")]  # a2-a9 were fetched and wait in the buffer
    directory.leader, directory.epoch = 1, 1

    # a5-a9 exist only on the old leader: the consumer must not hand them out now.
    assert poll_values(c, 10) == [(2, b"a2"), (3, b"a3"), (4, b"a4")] + list(zip(range(5, 12), NEW))


def test_a_leader_that_knows_no_epoch_to_compare_resets_the_position_per_auto_offset_reset():
    old = broker_with_log(0, [(0, OLD)])
    new = broker_with_log(1, [(3, [b"x0", b"x1"])])  # elected with an empty log: its first epoch is 3
    directory = TwoBrokerDirectory({0: old, 1: new}, leader=0, epoch=0)
    c = consumer(directory)
    assert poll_values(c, 10) == list(enumerate(OLD))
    directory.leader, directory.epoch = 1, 3

    assert poll_values(c, 2) == [(0, b"x0"), (1, b"x1")]  # earliest, as auto.offset.reset says


def test_a_leader_change_without_truncation_keeps_the_position():
    old = broker_with_log(0, [(0, OLD)])
    new = broker_with_log(1, [(0, OLD), (1, NEW[-2:])])  # a clean election: it has all of epoch 0
    directory = TwoBrokerDirectory({0: old, 1: new}, leader=0, epoch=0)
    c = consumer(directory)
    assert poll_values(c, 10) == list(enumerate(OLD))
    directory.leader, directory.epoch = 1, 1

    assert poll_values(c, 2) == [(10, b"n10"), (11, b"n11")]
    assert new.driver.manager.partitions[TP].log.log_end_offset == 12


# ----------------------------------------------------------------------- verdicts, table-driven
def answer(error_code=ErrorCode.NONE, leader_epoch=0, end_offset=5):
    return OffsetForLeaderEpochResponse(topics=(OffsetForLeaderTopicResult(topic=TOPIC, partitions=(
        OffsetForLeaderPartitionResult(partition=0, error_code=error_code, leader_epoch=leader_epoch,
                                       end_offset=end_offset),)),))


@pytest.mark.parametrize("response, position_now, verdict", [
    (answer(end_offset=10), 10, Verdict.VALID),
    (answer(end_offset=12), 10, Verdict.VALID),
    (answer(end_offset=5), 10, Verdict.TRUNCATED),
    (answer(leader_epoch=-1, end_offset=-1), 10, Verdict.UNDEFINED),
    (answer(error_code=ErrorCode.FENCED_LEADER_EPOCH), 10, Verdict.RETRY),
    (answer(error_code=ErrorCode.NOT_LEADER_OR_FOLLOWER), 10, Verdict.RETRY),
    (answer(end_offset=5), 7, Verdict.STALE),  # sought while the request was out
])
def test_verdicts_on_an_offset_for_leader_epoch_answer(response, position_now, verdict):
    epochs = PositionEpochs()
    epochs.needs_validation(TP, 0)
    epochs.fetched(TP, 0)
    assert epochs.needs_validation(TP, 1)
    (outcome,) = epochs.judge(response, {TP: (10, 0, 1)}, {TP: position_now})
    assert outcome.verdict is verdict
    assert epochs.needs_validation(TP, 1) is (verdict is not Verdict.VALID)


@pytest.mark.parametrize("steps, current_leader_epoch, needed", [
    ([], 1, False),  # a new position: nothing to compare
    ([("needs", 0), ("fetched", 0)], 0, False),  # same leader epoch
    ([("needs", 0), ("fetched", 0)], 1, True),  # the leader epoch moved
    ([("needs", 0), ("fetched", 0)], -1, False),  # the metadata knows no epoch: Kafka skips it
    ([("restored", 4)], 4, True),  # a committed offset with its epoch: validated once
    ([("restored", -1)], 4, False),  # a committed offset without an epoch
    ([("needs", 0), ("fetched", 0), ("forget", None)], 1, False),  # a seek
])
def test_when_a_position_needs_validation(steps, current_leader_epoch, needed):
    epochs = PositionEpochs()
    for step, value in steps:
        {"needs": lambda v: epochs.needs_validation(TP, v), "fetched": lambda v: epochs.fetched(TP, v),
         "restored": lambda v: epochs.restored(TP, v), "forget": lambda v: epochs.forget(TP)}[step](value)
    assert epochs.needs_validation(TP, current_leader_epoch) is needed
