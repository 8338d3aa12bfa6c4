"""ISR changes travel in batches, as Kafka's AlterPartition manager (KIP-497) sends them: a leader
keeps at most one AlterPartition in flight and sends every change proposed meanwhile in the next
one, and the controller refreshes each broker's metadata once per request, with only the
partitions that changed. Counted request by request on the cores, with Kafka's fencing intact."""
from __future__ import annotations

from actors.core.errors import ErrorCode
from actors.core.messages.alter_partition import (
    AlterPartitionPartitionData, AlterPartitionRequest, AlterPartitionResponse, AlterPartitionResponsePartitionData,
    AlterPartitionResponseTopicData, AlterPartitionTopicData,
)
from actors.core.messages.fetch import FetchPartition, FetchRequest, FetchTopic
from actors.core.messages.update_metadata import UpdateMetadataRequest
from actors.core.replica.replication import ALTER_PARTITION_RETRY_BACKOFF_MS
from tests.support.controller_driver import ControllerDriver, update_metadata_states
from tests.unit.test_replication_core import RecordingDriver, make_batch

PARTITIONS = 4
LEADER_EPOCH = 1


# ------------------------------------------------------------------------------ the leader's side
def leader_of_partitions(**config) -> RecordingDriver:
    """Broker 0 leads t-0..t-3 (replicas 0 and 1, ISR [0]) with two records each, written in epoch 1."""
    driver = RecordingDriver(broker_id=0, config={"replica.lag.time.max.ms": "1000", **config})
    for index in range(PARTITIONS):
        driver.become("t", index, leader=0, replicas=(0, 1), isr=(0,), leader_epoch=LEADER_EPOCH)
        driver.produce("t", index, make_batch([b"a", b"b"]))
    return driver


def follower_fetch(driver: RecordingDriver, partitions, offset: int = 2, replica_id: int = 1) -> None:
    """One fetch by ``replica_id`` of ``partitions`` at ``offset``: caught up at 2."""
    driver.call("handle_fetch", FetchRequest(
        replica_id=replica_id, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20, topics=(FetchTopic(topic="t", partitions=tuple(
            FetchPartition(partition=index, fetch_offset=offset, partition_max_bytes=1 << 20,
                           last_fetched_epoch=LEADER_EPOCH) for index in partitions)),)))


def alter_partitions(driver: RecordingDriver) -> list[AlterPartitionRequest]:
    return [m for m in driver.sent_to_controller() if isinstance(m, AlterPartitionRequest)]


def proposed(request: AlterPartitionRequest) -> dict[tuple[str, int], tuple[int, ...]]:
    return {(t.topic_name, p.partition_index): tuple(p.new_isr) for t in request.topics for p in t.partitions}


def commit_all(driver: RecordingDriver, request: AlterPartitionRequest, error_code=ErrorCode.NONE) -> None:
    """The controller's answer to ``request``: every change committed (or refused with ``error_code``)."""
    topics = tuple(AlterPartitionResponseTopicData(topic_name=t.topic_name, partitions=tuple(
        AlterPartitionResponsePartitionData(
            partition_index=p.partition_index, error_code=error_code, leader_id=0, leader_epoch=p.leader_epoch,
            isr=p.new_isr if error_code == ErrorCode.NONE else (0,),
            partition_epoch=p.partition_epoch + (1 if error_code == ErrorCode.NONE else 0))
        for p in t.partitions)) for t in request.topics)
    driver._apply(driver.manager.on_alter_partition_response(request, AlterPartitionResponse(topics=topics),
                                                             driver.now_ms))


def test_isr_expansions_of_many_partitions_in_one_follower_fetch_go_in_one_alter_partition():
    driver = leader_of_partitions()
    follower_fetch(driver, range(PARTITIONS))
    (request,) = alter_partitions(driver)
    assert proposed(request) == {("t", index): (0, 1) for index in range(PARTITIONS)}


def test_changes_proposed_while_an_alter_partition_is_in_flight_wait_for_its_answer_and_go_together():
    driver = leader_of_partitions()
    follower_fetch(driver, [0])
    (first,) = alter_partitions(driver)
    for index in range(1, PARTITIONS):
        follower_fetch(driver, [index])
    assert alter_partitions(driver) == [first], "one AlterPartition in flight per broker"
    # A queued expansion already counts for the high watermark (the maximal ISR): broker 1 is in it.
    assert driver.manager.partitions[("t", 1)].pending_isr == (0, 1)

    commit_all(driver, first)
    assert driver.manager.partitions[("t", 0)].isr == (0, 1)
    (_, second) = alter_partitions(driver)
    assert proposed(second) == {("t", index): (0, 1) for index in range(1, PARTITIONS)}
    commit_all(driver, second)
    assert all(driver.manager.partitions[("t", i)].isr == (0, 1) for i in range(PARTITIONS))
    assert len(alter_partitions(driver)) == 2, f"{PARTITIONS} changes in two requests"


def test_a_queued_change_of_a_partition_this_broker_stopped_leading_is_not_sent():
    driver = leader_of_partitions()
    follower_fetch(driver, [0])
    follower_fetch(driver, [1])
    (first,) = alter_partitions(driver)
    driver.become("t", 1, leader=1, replicas=(0, 1), isr=(1,), leader_epoch=LEADER_EPOCH + 1)
    commit_all(driver, first)
    assert alter_partitions(driver) == [first], "t-1's change died with this broker's leadership"


def test_an_unanswered_alter_partition_frees_the_slot_and_its_changes_are_sent_again_unchanged():
    driver = leader_of_partitions()
    follower_fetch(driver, [0])
    follower_fetch(driver, [1])
    (first,) = alter_partitions(driver)
    driver._apply(driver.manager.on_alter_partition_response(first, ErrorCode.NETWORK_EXCEPTION, driver.now_ms))
    (_, second) = alter_partitions(driver)
    assert proposed(second) == {("t", 1): (0, 1)}, "the queued change goes out at once"
    # The controller may have committed the unanswered change: it stays pending, not forgotten.
    assert driver.manager.partitions[("t", 0)].pending_isr == (0, 1)
    commit_all(driver, second)
    driver.advance(ALTER_PARTITION_RETRY_BACKOFF_MS)
    (_, _, third) = alter_partitions(driver)
    assert proposed(third) == {("t", 0): (0, 1)}, "the unanswered change is sent again as it was"


def test_a_change_refused_because_the_leader_is_stale_is_dropped_until_a_new_leader_and_isr():
    driver = RecordingDriver(broker_id=0, config={"replica.lag.time.max.ms": "1000"})
    driver.become("t", 0, leader=0, replicas=(0, 1), isr=(0, 1), leader_epoch=LEADER_EPOCH)
    driver.produce("t", 0, make_batch([b"a"]))
    driver.advance(1_500)  # broker 1 never fetches: the expiration task proposes it out
    (shrink,) = alter_partitions(driver)
    assert proposed(shrink) == {("t", 0): (0,)}

    commit_all(driver, shrink, error_code=ErrorCode.FENCED_LEADER_EPOCH)
    for _ in range(6):
        driver.advance(500)
    assert alter_partitions(driver) == [shrink], "Kafka gives up on a stale leader's change"
    assert driver.manager.partitions[("t", 0)].high_watermark == 0, "broker 1 still holds the HW back"

    driver.become("t", 0, leader=0, replicas=(0, 1), isr=(0, 1), leader_epoch=LEADER_EPOCH + 1)
    driver.advance(1_500)
    (_, again) = alter_partitions(driver)
    assert proposed(again) == {("t", 0): (0,)} and again.topics[0].partitions[0].leader_epoch == LEADER_EPOCH + 1


# -------------------------------------------------------------------------- the controller's side
def controller_with_partitions() -> ControllerDriver:
    """Brokers 1-3 registered; t-0..t-3 on [1, 2, 3], led by 1; nothing sent yet."""
    driver = ControllerDriver()
    driver.register_brokers(1, 2, 3)
    result = driver.create_topic("t", assignment={index: [1, 2, 3] for index in range(PARTITIONS)})
    assert result.error_code == ErrorCode.NONE, result
    driver.clear_sends()
    return driver


def alter(driver: ControllerDriver, changes: dict[int, tuple[int, ...]], **overrides):
    states = {index: driver.partition("t", index) for index in changes}
    return driver.ask("handle_alter_partition", AlterPartitionRequest(
        broker_id=1, broker_epoch=driver.broker_epochs[1], topics=(AlterPartitionTopicData(
            topic_name="t", partitions=tuple(AlterPartitionPartitionData(
                partition_index=index, new_isr=new_isr,
                leader_epoch=overrides.get("leader_epoch", states[index]["leader_epoch"]),
                partition_epoch=states[index]["partition_epoch"]) for index, new_isr in changes.items())),)))


def test_one_alter_partition_refreshes_each_broker_once_with_only_the_partitions_it_changed():
    driver = controller_with_partitions()
    response = alter(driver, {0: (1, 2), 1: (1, 2), 2: (1, 2, 3), 3: (1, 3)})
    codes = [p.error_code for p in response.topics[0].partitions]
    assert codes == [ErrorCode.NONE] * PARTITIONS  # t-2's is a retry of the ISR it has: nothing to do
    for broker_id in (1, 2, 3):
        (update,) = driver.requests_to(broker_id, UpdateMetadataRequest)
        assert set(update_metadata_states(update)) == {("t", 0), ("t", 1), ("t", 3)}
    assert sum(1 for _ in driver.sent) == 3


def test_an_alter_partition_that_changes_nothing_sends_no_update_metadata():
    driver = controller_with_partitions()
    response = alter(driver, {0: (1, 2), 1: (1, 3)}, leader_epoch=LEADER_EPOCH + 5)
    assert [p.error_code for p in response.topics[0].partitions] == [ErrorCode.FENCED_LEADER_EPOCH] * 2
    assert list(driver.sent) == [], "a refused change is no news for any metadata cache"
    response = alter(driver, {0: (1, 2, 3)})  # the ISR t-0 already has: answered with its state
    assert response.topics[0].partitions[0].error_code == ErrorCode.NONE
    assert list(driver.sent) == []
