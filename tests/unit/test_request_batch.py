"""The controller's request batch turns one event's adds into exactly the requests Kafka 2.4's
ControllerBrokerRequestBatch sends (LeaderAndIsr, then UpdateMetadata, then StopReplica; one of each
per broker, grouped by topic, stamped with controller and broker epochs), checked by building
batches against a fixed three-broker cluster and comparing whole request messages."""
from __future__ import annotations

import pytest

from actors.core.controller.request_batch import ControllerBrokerRequestBatch
from actors.core.controller.state import NO_LEADER, LeaderAndIsr
from actors.core.messages.leader_and_isr import (LeaderAndIsrLiveLeader, LeaderAndIsrPartitionState,
                                                 LeaderAndIsrRequest, LeaderAndIsrTopicState)
from actors.core.messages.stop_replica import StopReplicaRequest, StopReplicaTopic
from actors.core.messages.update_metadata import (UpdateMetadataBroker, UpdateMetadataPartitionState,
                                                  UpdateMetadataRequest, UpdateMetadataTopicState)

CONTROLLER_ID = 1
CONTROLLER_EPOCH = 6
LIVE_BROKERS = {1: "broker-1", 2: "broker-2", 3: "broker-3"}
BROKER_EPOCHS = {1: 101, 2: 102, 3: 103, 4: 104}
UM_BROKERS = tuple(UpdateMetadataBroker(id=b, host=f"broker-{b}") for b in (1, 2, 3))


def lai(leader, isr, leader_epoch=2, partition_epoch=5):
    return LeaderAndIsr(leader=leader, leader_epoch=leader_epoch, isr=tuple(isr), partition_epoch=partition_epoch,
                        controller_epoch=CONTROLLER_EPOCH)


# The controller's current view: partition -> (LeaderAndIsr, replicas, offline replicas).
CLUSTER = {
    ("a", 0): (lai(1, [1, 2]), (1, 2), ()),
    ("a", 1): (lai(2, [2, 3]), (2, 3), ()),
    ("b", 0): (lai(3, [3, 1]), (3, 1, 4), (4,)),
    ("gone", 0): (lai(2, [2, 3], leader_epoch=9, partition_epoch=12), (2, 3), ()),
}


def send(batch, **overrides):
    arguments = dict(controller_epoch=CONTROLLER_EPOCH, broker_epochs=BROKER_EPOCHS, live_brokers=LIVE_BROKERS,
                     partition_states=CLUSTER.get)
    arguments.update(overrides)
    return batch.send_requests(**arguments)


def new_batch():
    batch = ControllerBrokerRequestBatch(controller_id=CONTROLLER_ID)
    batch.new_batch()
    return batch


def lai_state(tp, leader, isr, replicas, is_new=False):
    return LeaderAndIsrPartitionState(partition_index=tp[1], controller_epoch=CONTROLLER_EPOCH, leader=leader,
                                      leader_epoch=2, isr=tuple(isr), partition_epoch=5, replicas=tuple(replicas),
                                      is_new=is_new)


def um_state(tp, **overrides):
    leader_and_isr, replicas, offline = CLUSTER[tp]
    fields = dict(partition_index=tp[1], controller_epoch=CONTROLLER_EPOCH, leader=leader_and_isr.leader,
                  leader_epoch=leader_and_isr.leader_epoch, isr=leader_and_isr.isr,
                  partition_epoch=leader_and_isr.partition_epoch, replicas=replicas, offline_replicas=offline)
    fields.update(overrides)
    return UpdateMetadataPartitionState(**fields)


def kinds(requests):
    return [(broker, type(request).__name__) for broker, request in requests]


def test_a_mixed_batch_comes_out_in_kafkas_order_one_request_per_kind_and_broker():
    batch = new_batch()
    batch.add_stop_replica_request_for_brokers([3], ("b", 0), delete_partition=False)
    batch.add_update_metadata_request_for_brokers([2])
    batch.add_leader_and_isr_request_for_brokers([2, 1], ("a", 0), *CLUSTER[("a", 0)][:2])
    batch.add_leader_and_isr_request_for_brokers([3, 2], ("a", 1), *CLUSTER[("a", 1)][:2])
    batch.add_stop_replica_request_for_brokers([1], ("b", 0), delete_partition=True)
    assert kinds(send(batch)) == [
        (1, "LeaderAndIsrRequest"), (2, "LeaderAndIsrRequest"), (3, "LeaderAndIsrRequest"),
        (1, "UpdateMetadataRequest"), (2, "UpdateMetadataRequest"), (3, "UpdateMetadataRequest"),
        (1, "StopReplicaRequest"), (3, "StopReplicaRequest"),
    ]


def test_leader_and_isr_groups_partitions_by_topic_and_names_the_live_leaders():
    batch = new_batch()
    for tp in [("b", 0), ("a", 1), ("a", 0)]:
        leader_and_isr, replicas, _ = CLUSTER[tp]
        batch.add_leader_and_isr_request_for_brokers([1], tp, leader_and_isr, replicas)
    requests = dict(r for r in send(batch) if isinstance(r[1], LeaderAndIsrRequest))
    assert requests == {1: LeaderAndIsrRequest(
        controller_id=CONTROLLER_ID, controller_epoch=CONTROLLER_EPOCH, broker_epoch=101,
        topic_states=(
            LeaderAndIsrTopicState(topic_name="a", partition_states=(
                lai_state(("a", 0), 1, [1, 2], [1, 2]), lai_state(("a", 1), 2, [2, 3], [2, 3]))),
            LeaderAndIsrTopicState(topic_name="b", partition_states=(
                lai_state(("b", 0), 3, [3, 1], [3, 1, 4]),)),
        ),
        live_leaders=tuple(LeaderAndIsrLiveLeader(broker_id=b, host_name=f"broker-{b}") for b in (1, 2, 3)))}


def test_leader_and_isr_partitions_also_go_to_every_live_broker_in_update_metadata():
    batch = new_batch()
    batch.add_leader_and_isr_request_for_brokers([2], ("a", 1), *CLUSTER[("a", 1)][:2])
    requests = send(batch)
    assert kinds(requests) == [(2, "LeaderAndIsrRequest"), (1, "UpdateMetadataRequest"),
                               (2, "UpdateMetadataRequest"), (3, "UpdateMetadataRequest")]
    for broker, request in requests[1:]:
        assert request == UpdateMetadataRequest(
            controller_id=CONTROLLER_ID, controller_epoch=CONTROLLER_EPOCH, broker_epoch=BROKER_EPOCHS[broker],
            topic_states=(UpdateMetadataTopicState(topic_name="a", partition_states=(um_state(("a", 1)),)),),
            live_brokers=UM_BROKERS)


def test_update_metadata_sends_the_batchs_partitions_to_every_target_with_offline_replicas():
    batch = new_batch()
    batch.add_update_metadata_request_for_brokers([3], [("b", 0)])
    batch.add_update_metadata_request_for_brokers([1], [("a", 0)])
    requests = send(batch)
    expected_topics = (UpdateMetadataTopicState(topic_name="a", partition_states=(um_state(("a", 0)),)),
                       UpdateMetadataTopicState(topic_name="b", partition_states=(um_state(("b", 0)),)))
    assert [(b, r.topic_states, r.broker_epoch) for b, r in requests] == \
        [(1, expected_topics, 101), (3, expected_topics, 103)]
    assert requests[0][1].topic_states[1].partition_states[0].offline_replicas == (4,)


def test_update_metadata_with_no_partitions_carries_just_the_live_brokers():
    batch = new_batch()
    batch.add_update_metadata_request_for_brokers([1, 2, 3])
    requests = send(batch)
    assert [b for b, _ in requests] == [1, 2, 3]
    assert all(r.topic_states == () and r.live_brokers == UM_BROKERS for _, r in requests)


def test_update_metadata_skips_a_partition_without_a_leader_yet():
    batch = new_batch()
    batch.add_update_metadata_request_for_brokers([1], [("a", 0), ("new", 0)])
    (_, request), = send(batch)
    assert [t.topic_name for t in request.topic_states] == ["a"]


def test_a_partition_being_deleted_is_sent_with_leader_during_delete():
    batch = new_batch()
    batch.add_update_metadata_request_for_brokers([1], [("gone", 0), ("a", 0)])
    (_, request), = send(batch, topics_to_be_deleted={"gone"})
    gone = request.topic_states[1]
    assert gone.topic_name == "gone"
    # Kafka's LeaderAndIsr.duringDelete(isr): leader -2, initial epochs, the ISR kept.
    assert gone.partition_states == (um_state(("gone", 0), leader=-2, leader_epoch=0, partition_epoch=0),)
    assert request.topic_states[0].partition_states == (um_state(("a", 0)),)


def test_stop_replica_is_split_into_a_deleting_request_first_and_a_stopping_one():
    batch = new_batch()
    batch.add_stop_replica_request_for_brokers([2], ("b", 0), delete_partition=False)
    batch.add_stop_replica_request_for_brokers([2], ("gone", 0), delete_partition=True)
    batch.add_stop_replica_request_for_brokers([2], ("a", 1), delete_partition=False)
    batch.add_stop_replica_request_for_brokers([2], ("a", 0), delete_partition=True)
    batch.add_stop_replica_request_for_brokers([2], ("gone", 1), delete_partition=True)

    def stop(delete, topics):
        return StopReplicaRequest(controller_id=CONTROLLER_ID, controller_epoch=CONTROLLER_EPOCH, broker_epoch=102,
                                  topics=tuple(StopReplicaTopic(name=n, partition_indexes=p) for n, p in topics),
                                  delete_partitions=delete)
    assert send(batch) == [(2, stop(True, [("a", (0,)), ("gone", (0, 1))])),
                           (2, stop(False, [("a", (1,)), ("b", (0,))]))]


def test_a_partition_both_stopped_and_deleted_is_only_deleted():
    batch = new_batch()
    batch.add_stop_replica_request_for_brokers([3], ("a", 1), delete_partition=True)
    batch.add_stop_replica_request_for_brokers([3], ("a", 1), delete_partition=False)
    assert [(b, r.delete_partitions, r.topics) for b, r in send(batch)] == \
        [(3, True, (StopReplicaTopic(name="a", partition_indexes=(1,)),))]


def test_requests_to_brokers_that_are_not_live_are_dropped():
    batch = new_batch()
    batch.add_leader_and_isr_request_for_brokers([4, 1], ("b", 0), *CLUSTER[("b", 0)][:2])
    batch.add_update_metadata_request_for_brokers([4])
    batch.add_stop_replica_request_for_brokers([4], ("b", 0), delete_partition=False)
    assert kinds(send(batch)) == [(1, "LeaderAndIsrRequest"), (1, "UpdateMetadataRequest"),
                                  (2, "UpdateMetadataRequest"), (3, "UpdateMetadataRequest")]


def test_negative_broker_ids_are_ignored_and_a_dead_leader_is_not_a_live_leader():
    batch = new_batch()
    offline = LeaderAndIsr(leader=NO_LEADER, leader_epoch=3, isr=(1,), partition_epoch=6,
                           controller_epoch=CONTROLLER_EPOCH)
    batch.add_leader_and_isr_request_for_brokers([NO_LEADER, 2], ("a", 0), offline, (1, 2))
    batch.add_stop_replica_request_for_brokers([NO_LEADER], ("a", 0), delete_partition=False)
    requests = [(b, r) for b, r in send(batch) if isinstance(r, LeaderAndIsrRequest)]
    assert [b for b, _ in requests] == [2]
    assert requests[0][1].live_leaders == ()


def test_is_new_sticks_and_the_latest_state_wins_and_the_topic_config_rides_along():
    batch = new_batch()
    first, replicas, _ = CLUSTER[("a", 0)]
    batch.add_leader_and_isr_request_for_brokers([2], ("a", 0), first, replicas, is_new=True,
                                                 topic_config=(("min.insync.replicas", "2"),))
    later = first.new_leader_and_isr(2, (2,), CONTROLLER_EPOCH)
    batch.add_leader_and_isr_request_for_brokers([2], ("a", 0), later, replicas)
    (_, request), = [(b, r) for b, r in send(batch) if isinstance(r, LeaderAndIsrRequest)]
    (topic_state,) = request.topic_states
    assert topic_state.topic_config == (("min.insync.replicas", "2"),)
    (state,) = topic_state.partition_states
    assert (state.leader, state.isr, state.leader_epoch, state.partition_epoch, state.is_new) == (2, (2,), 3, 6, True)


def test_the_batch_is_empty_after_sending_and_a_new_batch_may_start():
    batch = new_batch()
    batch.add_leader_and_isr_request_for_brokers([1], ("a", 0), *CLUSTER[("a", 0)][:2])
    batch.add_stop_replica_request_for_brokers([2], ("a", 1), delete_partition=True)
    assert not batch.is_empty() and send(batch)
    assert batch.is_empty()
    batch.new_batch()
    assert send(batch) == []


@pytest.mark.parametrize("add", [
    lambda b: b.add_leader_and_isr_request_for_brokers([1], ("a", 0), *CLUSTER[("a", 0)][:2]),
    lambda b: b.add_update_metadata_request_for_brokers([1]),
    lambda b: b.add_stop_replica_request_for_brokers([1], ("a", 0), delete_partition=False),
], ids=["leader_and_isr", "update_metadata", "stop_replica"])
def test_new_batch_asserts_the_previous_batch_was_sent(add):
    batch = new_batch()
    add(batch)
    with pytest.raises(AssertionError):
        batch.new_batch()
    batch.clear()
    batch.new_batch()


def test_a_batch_refuses_more_partitions_than_its_limit():
    batch = ControllerBrokerRequestBatch(controller_id=CONTROLLER_ID, partitions_max=2)
    batch.add_stop_replica_request_for_brokers([1, 2], ("a", 0), delete_partition=False)
    batch.add_update_metadata_request_for_brokers([1], [("a", 0), ("a", 1)])  # the same partitions again are fine
    with pytest.raises(AssertionError):
        batch.add_stop_replica_request_for_brokers([1], ("b", 0), delete_partition=False)


def test_a_leader_and_isr_without_a_controller_epoch_is_refused():
    batch = new_batch()
    unstamped = LeaderAndIsr(leader=1, leader_epoch=0, isr=(1,), partition_epoch=0)
    with pytest.raises(AssertionError):
        batch.add_leader_and_isr_request_for_brokers([1], ("a", 0), unstamped, (1,))


def test_update_metadata_carries_each_live_brokers_kafka_listeners():
    from actors.core.messages.broker_registration import BrokerEndpoint
    endpoint = BrokerEndpoint(name="PLAINTEXT", host="127.0.0.1", port=40001)
    batch = new_batch()
    batch.add_update_metadata_request_for_brokers([1, 2])
    requests = send(batch, broker_endpoints={1: (endpoint,)})
    (_, request), _ = requests
    assert [(b.id, b.endpoints) for b in request.live_brokers] == [(1, (endpoint,)), (2, ()), (3, ())]
