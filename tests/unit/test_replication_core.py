"""The leader's and follower's sides of replication in the pure replica manager: OffsetForLeaderEpoch
answers, diverging epochs in follower fetches, follower truncate/append fenced by leader epoch, ISR
expansion and expiry proposed to the controller, and the fetcher assignment; driven step by step."""
from __future__ import annotations

from actors.core.effects import AddPartitionsToFetcher, RemovePartitionsFromFetcher, Send
from actors.core.errors import ErrorCode
from actors.core.messages.alter_partition import (
    AlterPartitionRequest, AlterPartitionResponse, AlterPartitionResponsePartitionData,
    AlterPartitionResponseTopicData,
)
from actors.core.messages.fetch import FetchPartition, FetchRequest, FetchTopic
from actors.core.messages.offset_for_leader_epoch import (
    OffsetForLeaderEpochRequest, OffsetForLeaderPartition, OffsetForLeaderTopic,
)
from actors.core.fetcher.follower_messages import (
    FollowerAppendPartition, FollowerAppendRequest, FollowerTruncatePartition, FollowerTruncateRequest,
    TruncationMode,
)
from tests.support.core_driver import CoreDriver, fetch_result, make_batch


class RecordingDriver(CoreDriver):
    """A CoreDriver that also keeps every effect, to see what went to the controller and fetchers."""

    def __init__(self, **kwargs):
        self.effects = []
        super().__init__(**kwargs)

    def _apply(self, effects):
        self.effects.extend(effects)
        super()._apply(effects)

    def sent_to_controller(self):
        return [e.message for e in self.effects if isinstance(e, Send) and e.destination == "controller"]


def leader_with_history():
    """Broker 0 leads t-0: epoch 0 wrote offsets 0-2, epoch 3 wrote 3-4."""
    driver = RecordingDriver(broker_id=0)
    driver.become("t", 0, leader=0, replicas=(0, 1, 2), isr=(0, 1, 2), leader_epoch=0)
    driver.produce("t", 0, make_batch([b"a", b"b", b"c"]))
    driver.become("t", 0, leader=0, replicas=(0, 1, 2), isr=(0, 1, 2), leader_epoch=3)
    driver.produce("t", 0, make_batch([b"d", b"e"]))
    return driver


def offset_for_epoch(driver, epoch, current_leader_epoch=-1):
    response = driver.ask("handle_offset_for_leader_epoch", OffsetForLeaderEpochRequest(replica_id=1, topics=(
        OffsetForLeaderTopic(topic="t", partitions=(OffsetForLeaderPartition(
            partition=0, leader_epoch=epoch, current_leader_epoch=current_leader_epoch),)),)))
    answer = response.topics[0].partitions[0]
    return answer.error_code, answer.leader_epoch, answer.end_offset


def test_offset_for_leader_epoch_answers_as_kip_279_says():
    driver = leader_with_history()
    assert offset_for_epoch(driver, 0) == (ErrorCode.NONE, 0, 3)
    assert offset_for_epoch(driver, 2) == (ErrorCode.NONE, 0, 3)   # the largest epoch <= 2 is 0
    assert offset_for_epoch(driver, 3) == (ErrorCode.NONE, 3, 5)   # the latest ends at the LEO
    assert offset_for_epoch(driver, 3, current_leader_epoch=2)[0] == ErrorCode.FENCED_LEADER_EPOCH


def follower_fetch(driver, offset, last_fetched_epoch, replica_id=1):
    return fetch_result(driver.answers[driver.call("handle_fetch", FetchRequest(
        replica_id=replica_id, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20, topics=(FetchTopic(
            topic="t", partitions=(FetchPartition(partition=0, fetch_offset=offset, partition_max_bytes=1 << 20,
                                                  last_fetched_epoch=last_fetched_epoch),)),)))])


def test_follower_fetch_past_its_epochs_end_gets_a_diverging_epoch_instead_of_data():
    driver = leader_with_history()
    diverged = follower_fetch(driver, 4, last_fetched_epoch=1)  # it wrote epoch 1 the leader never had
    assert (diverged.diverging_epoch.epoch, diverged.diverging_epoch.end_offset) == (0, 3)
    assert len(diverged.records) == 0
    in_step = follower_fetch(driver, 3, last_fetched_epoch=0)
    assert in_step.diverging_epoch is None and len(in_step.records) > 0


def test_a_consumer_fetch_with_a_last_fetched_epoch_gets_the_diverging_epoch_as_kafka_answers_it():
    # Fetch v12's LastFetchedEpoch, from a consumer: Kafka's Partition.readRecords checks it for any fetcher.
    driver = leader_with_history()
    diverged = follower_fetch(driver, 4, last_fetched_epoch=1, replica_id=-1)
    assert (diverged.diverging_epoch.epoch, diverged.diverging_epoch.end_offset) == (0, 3)
    assert len(diverged.records) == 0
    assert follower_fetch(driver, 3, last_fetched_epoch=-1, replica_id=-1).diverging_epoch is None


def test_follower_fetches_expand_the_isr_through_the_controller():
    driver = RecordingDriver(broker_id=0)
    driver.become("t", 0, leader=0, replicas=(0, 1), isr=(0,), leader_epoch=1)
    driver.produce("t", 0, make_batch([b"a", b"b"]))
    follower_fetch(driver, 0, last_fetched_epoch=-1)
    assert driver.sent_to_controller() == [], "not caught up yet"
    follower_fetch(driver, 2, last_fetched_epoch=1)
    (proposal,) = driver.sent_to_controller()
    assert isinstance(proposal, AlterPartitionRequest)
    assert proposal.topics[0].partitions[0].new_isr == (0, 1)
    partition = driver.manager.partitions[("t", 0)]
    partition_epoch = partition.partition_epoch
    driver.manager.on_alter_partition_response(proposal, AlterPartitionResponse(topics=(
        AlterPartitionResponseTopicData(topic_name="t", partitions=(AlterPartitionResponsePartitionData(
            partition_index=0, leader_id=0, leader_epoch=1, isr=(0, 1),
            partition_epoch=partition_epoch + 1),)),)), driver.now_ms)
    assert partition.isr == (0, 1) and partition.pending_isr is None


def test_a_lagging_follower_is_proposed_out_of_the_isr_after_replica_lag_time_max_ms():
    driver = RecordingDriver(broker_id=0, config={"replica.lag.time.max.ms": "1000"})
    driver.become("t", 0, leader=0, replicas=(0, 1, 2), isr=(0, 1, 2), leader_epoch=1)
    driver.produce("t", 0, make_batch([b"a"]))
    for _ in range(6):
        driver.advance(300)
        follower_fetch(driver, 1, last_fetched_epoch=1, replica_id=2)  # broker 2 keeps up; 1 never fetches
    proposals = driver.sent_to_controller()
    assert proposals and proposals[-1].topics[0].partitions[0].new_isr == (0, 2)
    # Until the controller commits the shrink, broker 1 still holds the high watermark back.
    assert driver.manager.partitions[("t", 0)].high_watermark == 0


def test_becoming_follower_hands_the_partition_to_the_fetcher_for_its_leader():
    driver = RecordingDriver(broker_id=1, config={"num.replica.fetchers": "2"})
    driver.become("t", 0, leader=0, replicas=(0, 1), isr=(0, 1), leader_epoch=4)
    (added,) = [e for e in driver.effects if isinstance(e, AddPartitionsToFetcher)]
    assert added.leader_id == 0 and added.partitions[0].current_leader_epoch == 4
    assert added.partitions[0].needs_truncation
    driver.become("t", 0, leader=1, replicas=(0, 1), isr=(0, 1), leader_epoch=5)
    (removed,) = [e for e in driver.effects if isinstance(e, RemovePartitionsFromFetcher)]
    assert removed.partitions == (("t", 0),) and removed.stop_fetcher


def test_high_watermark_policy_truncates_to_the_high_watermark_on_becoming_follower():
    driver = RecordingDriver(broker_id=0, config={"raykafka.truncation.policy": "high-watermark"})
    driver.become("t", 0, leader=0, replicas=(0, 1), isr=(0,), leader_epoch=0)
    driver.produce("t", 0, make_batch([b"a"]))
    driver.produce("t", 0, make_batch([b"b"]))
    partition = driver.manager.partitions[("t", 0)]
    partition.high_watermark = 1  # as if the follower had only learnt of offset 0 being committed
    driver.become("t", 0, leader=1, replicas=(0, 1), isr=(0, 1), leader_epoch=1)
    assert partition.log_end_offset == 1
    (added,) = [e for e in driver.effects if isinstance(e, AddPartitionsToFetcher)]
    assert not added.partitions[0].needs_truncation


def test_high_watermark_policy_truncation_inside_a_batch_lowers_the_high_watermark_to_the_log_end():
    # A follower's high watermark (the leader's, capped by its own log end) can fall inside one of
    # its batches when its log and the leader's are cut into batches differently (they diverged).
    # Truncating to it drops that whole batch, as Kafka's truncateTo does; Kafka's Log then lowers
    # the high watermark to the new log end offset (updateLogEndOffset), so HW <= LEO holds.
    driver = RecordingDriver(broker_id=1, config={"raykafka.truncation.policy": "high-watermark"})
    driver.become("t", 0, leader=0, replicas=(0, 1), isr=(0, 1), leader_epoch=2)
    batch = bytearray(make_batch([b"x", b"y", b"z"]))
    batch[0:8] = (0).to_bytes(8, "big")  # offsets 0-2, as the leader stamped them
    driver.ask("handle_follower_append", FollowerAppendRequest(partitions=(FollowerAppendPartition(
        topic="t", partition=0, current_leader_epoch=2, fetch_offset=0, records=bytes(batch),
        leader_high_watermark=1),)))
    partition = driver.manager.partitions[("t", 0)]
    assert (partition.high_watermark, partition.log_end_offset) == (1, 3)
    driver.become("t", 0, leader=2, replicas=(0, 1, 2), isr=(1, 2), leader_epoch=3)
    assert partition.log_end_offset == 0, "the batch holding the high watermark goes whole"
    assert partition.high_watermark <= partition.log_end_offset, \
        f"high watermark {partition.high_watermark} above log end offset {partition.log_end_offset}"


def test_follower_requests_are_fenced_by_leader_epoch_and_role():
    driver = RecordingDriver(broker_id=1)
    driver.become("t", 0, leader=0, replicas=(0, 1), isr=(0, 1), leader_epoch=2)
    batch = bytearray(make_batch([b"x", b"y"]))
    batch[0:8] = (0).to_bytes(8, "big")  # as the leader stamped it
    append = driver.ask("handle_follower_append", FollowerAppendRequest(partitions=(FollowerAppendPartition(
        topic="t", partition=0, current_leader_epoch=2, fetch_offset=0, records=bytes(batch),
        leader_high_watermark=1),)))
    state = append.partitions[0]
    assert (state.error_code, state.log_end_offset, state.high_watermark) == (ErrorCode.NONE, 2, 1)
    stale = driver.ask("handle_follower_truncate", FollowerTruncateRequest(partitions=(FollowerTruncatePartition(
        topic="t", partition=0, current_leader_epoch=1, mode=TruncationMode.TO_OFFSET, offset=0),)))
    assert stale.partitions[0].error_code == ErrorCode.FENCED_LEADER_EPOCH
    assert driver.manager.partitions[("t", 0)].log_end_offset == 2, "a fenced truncation changes nothing"
    unknown = driver.ask("handle_follower_truncate", FollowerTruncateRequest(partitions=(FollowerTruncatePartition(
        topic="nope", partition=0, current_leader_epoch=2, mode=TruncationMode.TO_OFFSET, offset=0),)))
    assert unknown.partitions[0].error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER


def test_a_follower_append_of_records_that_are_not_bytes_is_corrupt_message_and_appends_nothing():
    driver = RecordingDriver(broker_id=1)
    driver.become("t", 0, leader=0, replicas=(0, 1), isr=(0, 1), leader_epoch=2)
    for records in (None, "records", 42):
        append = driver.ask("handle_follower_append", FollowerAppendRequest(partitions=(FollowerAppendPartition(
            topic="t", partition=0, current_leader_epoch=2, fetch_offset=0, records=records,
            leader_high_watermark=0),)))
        assert append.partitions[0].error_code == ErrorCode.CORRUPT_MESSAGE, records
    assert driver.manager.partitions[("t", 0)].log_end_offset == 0
