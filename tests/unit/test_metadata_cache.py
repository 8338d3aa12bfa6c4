"""A broker's metadata cache answers Metadata as Kafka 2.4's MetadataCache does: leader liveness
comes from the live brokers of the newest UpdateMetadata, judged when the Metadata request is
answered; from Metadata v1 on every replica and ISR member is listed, live or not, while a v0
request gets only the live ones and REPLICA_NOT_AVAILABLE where some are not; deleted partitions leave, and the broker tells its group coordinator
which partitions exist and which were deleted. Driven with hand-built UpdateMetadata requests on
the pure cache and BrokerCore, no Ray."""
from __future__ import annotations

from actors.core.config import KafkaConfig
from actors.core.effects import CoordinatorMetadataUpdate, Send
from actors.core.errors import ErrorCode
from actors.core.log.storage import InMemoryStorage
from actors.core.messages.broker_registration import BrokerRegistrationResponse
from actors.core.messages._base import NO_EPOCH, NO_LEADER
from actors.core.messages.metadata import MetadataRequest, MetadataResponse, MetadataResponsePartition, \
    MetadataResponseTopic
from actors.core.messages.update_metadata import (
    UpdateMetadataBroker, UpdateMetadataPartitionState, UpdateMetadataRequest, UpdateMetadataTopicState,
)
from actors.core.broker.broker_core import BrokerCore
from actors.core.broker.metadata_cache import LEADER_DURING_DELETE, MetadataCache


def state(partition=0, *, leader=1, leader_epoch=4, replicas=(1, 2, 3), isr=None, offline=()):
    return UpdateMetadataPartitionState(
        partition_index=partition, controller_epoch=1, leader=leader, leader_epoch=leader_epoch,
        isr=tuple(replicas if isr is None else isr), partition_epoch=leader_epoch, replicas=tuple(replicas),
        offline_replicas=tuple(offline))


def update(live=(1, 2, 3), topics=None, broker_epoch=7) -> UpdateMetadataRequest:
    """An UpdateMetadata with ``live`` brokers and ``topics`` (name -> partition states); without
    topics it only says who is alive, as Kafka's controller does when a broker dies or returns."""
    return UpdateMetadataRequest(
        controller_id=1, controller_epoch=1, broker_epoch=broker_epoch,
        topic_states=tuple(UpdateMetadataTopicState(topic_name=name, partition_states=tuple(states))
                           for name, states in (topics or {}).items()),
        live_brokers=tuple(UpdateMetadataBroker(id=b, host=f"raykafka-broker-{b}") for b in live))


def partition(cache: MetadataCache, topic="t", index=0, version: int | None = None) -> MetadataResponsePartition:
    response = cache.handle_metadata(MetadataRequest(topics=(topic,), request_api_version=version))
    (answered,) = response.topics
    assert answered.error_code == ErrorCode.NONE, answered
    return next(p for p in answered.partitions if p.partition_index == index)


def test_a_leader_that_dies_later_answers_leader_not_available_without_a_new_partition_state():
    cache = MetadataCache()
    cache.update(update(live=(1, 2, 3), topics={"t": [state(leader=1)]}))
    assert partition(cache).error_code == ErrorCode.NONE
    cache.update(update(live=(2, 3)))  # broker 1 died; its partitions' new leaders are not decided yet
    for version in (None, 1, 9):
        answered = partition(cache, version=version)
        assert (answered.error_code, answered.leader_id, answered.leader_epoch) == \
            (ErrorCode.LEADER_NOT_AVAILABLE, NO_LEADER, NO_EPOCH)
        assert (answered.replica_nodes, answered.isr_nodes) == ((1, 2, 3), (1, 2, 3)), "v1+ lists every broker"
    answered = partition(cache, version=0)
    assert (answered.error_code, answered.leader_id) == (ErrorCode.LEADER_NOT_AVAILABLE, NO_LEADER)
    assert (answered.replica_nodes, answered.isr_nodes) == ((2, 3), (2, 3)), "v0 lists only live brokers"
    assert cache.partition_leader("t", 0) == (NO_LEADER, NO_EPOCH), "FindCoordinator and routing see it too"


def test_a_leader_that_was_down_when_the_state_arrived_serves_once_it_is_live_again():
    cache = MetadataCache()
    cache.update(update(live=(2, 3), topics={"t": [state(leader=1)]}))
    assert partition(cache).error_code == ErrorCode.LEADER_NOT_AVAILABLE
    cache.update(update(live=(1, 2, 3)))
    answered = partition(cache)
    assert (answered.error_code, answered.leader_id, answered.leader_epoch) == (ErrorCode.NONE, 1, 4)
    assert cache.partition_leader("t", 0) == (1, 4)


def test_a_replica_that_is_not_live_is_listed_from_v1_on_with_no_error():
    # Kafka's getEndpoints lists a broker that is not live as a node without an endpoint unless the
    # request is v0: the partition answers NONE, so a client sees no reason to refresh its metadata.
    cache = MetadataCache()
    cache.update(update(live=(1, 2), topics={"t": [state(leader=1, replicas=(1, 2, 3), isr=(1, 3), offline=(3,))]}))
    for version in (None, 1, 5, 9):
        assert partition(cache, version=version) == MetadataResponsePartition(
            partition_index=0, error_code=ErrorCode.NONE, leader_id=1, leader_epoch=4, replica_nodes=(1, 2, 3),
            isr_nodes=(1, 3), offline_replicas=(3,))


def test_a_replica_that_is_not_live_answers_v0_replica_not_available_with_the_leader_and_the_live_replicas():
    cache = MetadataCache()
    cache.update(update(live=(1, 2), topics={"t": [state(leader=1, replicas=(1, 2, 3), isr=(1, 3), offline=(3,))]}))
    answered = partition(cache, version=0)
    assert answered.error_code == ErrorCode.REPLICA_NOT_AVAILABLE
    assert int(answered.error_code) == 9
    assert answered.leader_id == 1, "the partition still has a usable leader"
    assert answered.leader_epoch == 4
    assert (answered.replica_nodes, answered.isr_nodes) == ((1, 2), (1,))
    assert answered.offline_replicas == (3,)


def test_an_isr_member_that_is_not_live_answers_v0_replica_not_available_even_when_every_replica_is():
    # Kafka checks the replicas first, then the ISR; an ISR member outside the replicas only
    # happens in the middle of a reassignment, but the second check is Kafka's too.
    cache = MetadataCache()
    cache.update(update(live=(1, 2), topics={"t": [state(leader=1, replicas=(1, 2), isr=(1, 2, 5))]}))
    answered = partition(cache, version=0)
    assert (answered.error_code, answered.replica_nodes, answered.isr_nodes) == \
        (ErrorCode.REPLICA_NOT_AVAILABLE, (1, 2), (1, 2))
    answered = partition(cache, version=1)
    assert (answered.error_code, answered.replica_nodes, answered.isr_nodes) == (ErrorCode.NONE, (1, 2), (1, 2, 5))


def test_every_replica_live_answers_none_with_the_full_lists():
    cache = MetadataCache()
    cache.update(update(live=(1, 2, 3), topics={"t": [state(leader=2, replicas=(2, 3, 1), isr=(2, 1))]}))
    assert partition(cache) == MetadataResponsePartition(
        partition_index=0, error_code=ErrorCode.NONE, leader_id=2, leader_epoch=4, replica_nodes=(2, 3, 1),
        isr_nodes=(2, 1), offline_replicas=())


def test_a_partition_without_a_leader_answers_leader_not_available():
    cache = MetadataCache()
    cache.update(update(live=(2, 3), topics={"t": [state(leader=NO_LEADER, replicas=(1,), isr=(1,))]}))
    answered = partition(cache)
    assert (answered.error_code, answered.leader_id, answered.replica_nodes, answered.isr_nodes) == \
        (ErrorCode.LEADER_NOT_AVAILABLE, NO_LEADER, (1,), (1,))
    answered = partition(cache, version=0)
    assert (answered.error_code, answered.leader_id, answered.replica_nodes, answered.isr_nodes) == \
        (ErrorCode.LEADER_NOT_AVAILABLE, NO_LEADER, (), ())


def test_the_live_brokers_of_each_update_replace_the_last_ones():
    cache = MetadataCache()
    cache.update(update(live=(1, 2, 3), topics={"t": [state()]}))
    cache.update(update(live=(3, 1)))
    response = cache.handle_metadata(MetadataRequest(topics=None))
    assert [b.node_id for b in response.brokers] == [1, 3]
    assert response.controller_id == 1


def test_deleted_partitions_leave_the_cache_and_are_reported_and_the_topic_goes_with_its_last():
    cache = MetadataCache()
    cache.update(update(topics={"t": [state(0), state(1)], "u": [state(0)]}))
    assert ("t", 1) in cache.topic_partitions() and ("t", 2) not in cache.topic_partitions()
    deleted = cache.update(update(topics={"t": [state(0, leader=LEADER_DURING_DELETE)]}))
    assert deleted == [("t", 0)]
    assert ("t", 0) not in cache.topic_partitions() and cache.contains("t")
    assert cache.update(update(topics={"t": [state(1, leader=LEADER_DURING_DELETE)]})) == [("t", 1)]
    response = cache.handle_metadata(MetadataRequest(topics=("t", "u")))
    assert response.topics[0] == MetadataResponseTopic(name="t", error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    assert cache.topic_partitions() == (("u", 0),)


def test_the_partitions_version_moves_only_when_the_set_of_partitions_changes():
    cache = MetadataCache()
    first = cache.partitions_version
    cache.update(update(topics={"t": [state(0)]}))
    created = cache.partitions_version
    assert created > first
    cache.update(update(live=(1, 2), topics={"t": [state(0, leader=2, leader_epoch=5)]}))
    assert cache.partitions_version == created, "a leader change is no change of the partition set"
    cache.update(update(topics={"t": [state(0, leader=LEADER_DURING_DELETE)]}))
    assert cache.partitions_version > created


def test_our_clients_route_to_the_leader_of_a_partition_that_answers_replica_not_available():
    # REPLICA_NOT_AVAILABLE is not fatal: the partition has a leader, and Kafka's clients use it.
    from orchestration.clients.broker_directory import BrokerDirectory
    directory = BrokerDirectory(namespace="unused", bootstrap_broker_ids=[1])
    directory._set_metadata(MetadataResponse(brokers=(), topics=(MetadataResponseTopic(name="t", partitions=(
        MetadataResponsePartition(partition_index=0, error_code=ErrorCode.REPLICA_NOT_AVAILABLE, leader_id=1,
                                  leader_epoch=4, replica_nodes=(1, 2), isr_nodes=(1,)),
        MetadataResponsePartition(partition_index=1, error_code=ErrorCode.LEADER_NOT_AVAILABLE),)),)))
    assert directory.leader_for("t", 0) == (1, 4)
    assert directory.leader_for("t", 1) == (NO_LEADER, NO_EPOCH)


# --------------------------------------------------------------- what the broker tells its coordinator
def registered_broker(broker_epoch: int) -> BrokerCore:
    core = BrokerCore(broker_id=1, storage=InMemoryStorage(), config=KafkaConfig({}), host="raykafka-broker-1",
                      incarnation_id="incarnation", cluster_id="cluster", now_ms=0)
    registration = next(e.message for e in core.start(0) if isinstance(e, Send))
    core.on_controller_response(registration, BrokerRegistrationResponse(broker_epoch=broker_epoch), 0)
    return core


def coordinator_updates(effects) -> list[CoordinatorMetadataUpdate]:
    return [e for e in effects if isinstance(e, CoordinatorMetadataUpdate)]


def test_the_broker_tells_its_coordinator_when_partitions_appear_or_are_deleted_and_only_then():
    core = registered_broker(broker_epoch=7)
    created = coordinator_updates(core.handle_update_metadata(1, update(topics={"t": [state(0), state(1)]}), 0))
    assert created == [CoordinatorMetadataUpdate(version=(7, 1), partitions=(("t", 0), ("t", 1)))]
    assert coordinator_updates(core.handle_update_metadata(2, update(live=(1, 2)), 0)) == [], \
        "liveness alone changes no partition"
    deleted = coordinator_updates(core.handle_update_metadata(3, update(topics={"t": [
        state(0, leader=LEADER_DURING_DELETE), state(1, leader=LEADER_DURING_DELETE)]}), 0))
    assert deleted == [CoordinatorMetadataUpdate(version=(7, 2), partitions=(),
                                                 deleted_partitions=(("t", 0), ("t", 1)))]
    again = coordinator_updates(core.handle_update_metadata(4, update(topics={"t": [
        state(0, leader=LEADER_DURING_DELETE)]}), 0))
    assert again == [CoordinatorMetadataUpdate(version=(7, 2), partitions=(), deleted_partitions=(("t", 0),))], \
        "a repeated deletion is passed on (removing offsets twice is harmless), under the same view"
    assert core.coordinator_metadata() == CoordinatorMetadataUpdate(version=(7, 2), partitions=())


def test_a_stale_update_metadata_tells_the_coordinator_nothing():
    core = registered_broker(broker_epoch=7)
    stale = core.handle_update_metadata(1, update(topics={"t": [state(0, leader=LEADER_DURING_DELETE)]},
                                                  broker_epoch=6), 0)
    assert coordinator_updates(stale) == []


def test_the_coordinators_view_is_ordered_across_broker_restarts_by_broker_epoch():
    before = registered_broker(broker_epoch=7)
    for request_id in range(5):
        before.handle_update_metadata(request_id, update(topics={f"t{request_id}": [state(0)]}), 0)
    after = registered_broker(broker_epoch=9)  # a new incarnation registers with a higher epoch
    (first,) = coordinator_updates(after.handle_update_metadata(1, update(topics={"t": [state(0)]},
                                                                          broker_epoch=9), 0))
    assert first.version > before.coordinator_metadata().version


def test_metadata_and_describe_cluster_name_the_brokers_cluster_id():
    """kafka-cluster cluster-id prints DescribeCluster's id; clients read Metadata's: both are the
    cluster id the broker registered with (it was null and empty)."""
    from actors.core.messages.describe_cluster import DescribeClusterRequest
    from actors.core.messages.metadata import MetadataRequest
    core = registered_broker(broker_epoch=3)
    core.handle_update_metadata(1, update(live=(1,)), 0)
    (metadata,) = core.handle_metadata(2, MetadataRequest(topics=()), 0)
    (described,) = core.handle_describe_cluster(3, DescribeClusterRequest(), 0)
    assert metadata.response.cluster_id == described.response.cluster_id == "cluster"
