"""Malformed and stale requests of every request type, sent straight to the real broker, controller and group coordinator actors of a 3-broker cluster, get the error code Kafka 2.4 would answer (or INVALID_REQUEST for one that cannot be parsed), and afterwards every actor is the same process and every partition, log, metadata cache, controller record, group and committed offset is exactly as before."""
from __future__ import annotations

from dataclasses import dataclass, fields, is_dataclass
from typing import Any, Callable

import pytest
import ray

from actors.broker import group_coordinator_actor_name
from actors.core.errors import ErrorCode
from actors.core.java_hash import java_string_hash, kafka_abs
from actors.core.group.consumer_protocol import Assignment, Subscription, encode_assignment, encode_subscription
from actors.core.messages.alter_partition import (
    AlterPartitionPartitionData, AlterPartitionRequest, AlterPartitionTopicData,
)
from actors.core.messages.broker_heartbeat import BrokerHeartbeatRequest
from actors.core.messages.broker_registration import BrokerRegistrationRequest
from actors.core.messages.controlled_shutdown import ControlledShutdownRequest
from actors.core.messages.create_topics import (
    CreatableReplicaAssignment, CreatableTopic, CreateableTopicConfig, CreateTopicsRequest,
)
from actors.core.messages.delete_topics import DeleteTopicsRequest
from actors.core.messages.describe_groups import DescribeGroupsRequest
from actors.core.messages.elect_leaders import UNCLEAN_ELECTION, ElectLeadersRequest, TopicPartitions
from actors.core.messages.fetch import FetchPartition, FetchRequest, FetchTopic
from actors.core.messages.find_coordinator import FindCoordinatorRequest
from actors.core.messages.heartbeat import HeartbeatRequest
from actors.core.messages.join_group import JoinGroupRequest, JoinGroupRequestProtocol
from actors.core.messages.leader_and_isr import (
    LeaderAndIsrPartitionState, LeaderAndIsrRequest, LeaderAndIsrTopicState,
)
from actors.core.messages.leave_group import LeaveGroupRequest, MemberIdentity
from actors.core.messages.list_groups import ListGroupsRequest
from actors.core.messages.list_offsets import (
    LATEST_TIMESTAMP, ListOffsetsPartition, ListOffsetsRequest, ListOffsetsTopic,
)
from actors.core.messages.metadata import MetadataRequest
from actors.core.messages.offset_commit import (
    OffsetCommitRequest, OffsetCommitRequestPartition, OffsetCommitRequestTopic,
)
from actors.core.messages.offset_fetch import OffsetFetchRequest
from actors.core.messages.offset_for_leader_epoch import (
    OffsetForLeaderEpochRequest, OffsetForLeaderPartition, OffsetForLeaderTopic,
)
from actors.core.messages.produce import PartitionProduceData, ProduceRequest, TopicProduceData
from actors.core.messages.stop_replica import StopReplicaRequest, StopReplicaTopic
from actors.core.messages.sync_group import SyncGroupRequest, SyncGroupRequestAssignment
from actors.core.messages.update_metadata import UpdateMetadataRequest
from actors.core.fetcher.follower_messages import (
    FollowerAppendPartition, FollowerAppendRequest, FollowerTruncatePartition, FollowerTruncateRequest,
    TruncationMode,
)
from actors.ray_metadata_store import active_controller
from orchestration.admin.wait import wait_until
from tests.support.batches import client_batch
from tests.support.clusters import running_cluster
from tests.support.core_driver import make_batch

pytestmark = pytest.mark.integration

TOPIC = "bad-inputs"
PARTITIONS = 3
OFFSETS_TOPIC = "__consumer_offsets"
GROUP = "bad-inputs-group"
SESSION_TIMEOUT_MS = 1_800_000  # group.max.session.timeout.ms: the member outlives the test without heartbeats
# Generous bounds: a busy 2-core machine can take tens of seconds for what takes milliseconds alone.
CALL_TIMEOUT_S = 90
# acks=all waits for every follower of a new topic to start fetching.
ACKS_ALL_TIMEOUT_MS = 60_000
SETTLE_TIMEOUT_S = 60
# message.max.bytes (the default of every topic's max.message.bytes) is small so that an oversized
# offset commit (INVALID_COMMIT_OFFSET_SIZE) is cheap to build.
MAX_MESSAGE_BYTES = 8192
CONFIG = {"offsets.topic.num.partitions": "3", "offsets.topic.replication.factor": "3",
          "group.initial.rebalance.delay.ms": "0", "message.max.bytes": str(MAX_MESSAGE_BYTES),
          "auto.leader.rebalance.enable": "false", "broker.heartbeat.interval.ms": "500",
          "replica.fetch.wait.max.ms": "100", "raykafka.registration.retry.backoff.ms": "100"}
RAISES = "raises"  # the request cannot be parsed: the call fails with INVALID_REQUEST


@pytest.fixture(scope="module")
def cluster(ray_session, tmp_path_factory):
    with running_cluster(tmp_path_factory, CONFIG) as started:
        yield started


def call(handle, request) -> Any:
    """``request`` to the actor's one ``handle``, which dispatches by the request's type."""
    return ray.get(handle.handle.remote(request), timeout=CALL_TIMEOUT_S)


def observe(handle, method: str, *args) -> Any:
    """One of the actor's observation methods (``ping``, ``describe_partitions``...)."""
    return ray.get(getattr(handle, method).remote(*args), timeout=CALL_TIMEOUT_S)


# ------------------------------------------------------------------------------ the world
@dataclass
class World:
    """The cluster, its actors, and the current and superseded epochs the stale cases use."""
    cluster: Any
    brokers: dict[int, Any]
    coordinators: dict[int, Any]
    leader: int  # leads TOPIC-0 (and was restarted once, so it has a superseded broker epoch)
    followers: tuple[int, int]
    leader_epoch: int  # TOPIC-0's, at least 1
    partition_epoch: int
    replicas: tuple[int, ...]
    controller_epoch: int  # at least 2: the first controller's is 1 and it was restarted once
    broker_epochs: dict[int, int]
    old_broker_epoch: int  # the leader's epoch before its restart
    old_incarnation_id: str  # the leader's process before its restart
    cluster_id: str
    log_end_offset: int  # TOPIC-0's
    coordinator: int  # the broker whose group coordinator owns GROUP
    member_id: str
    generation_id: int

    @property
    def controller(self):
        return self.cluster.controller()

    @property
    def other_coordinator(self) -> int:
        return next(b for b in sorted(self.coordinators) if b != self.coordinator)


def produce_request(topic: str, partition: int, records: Any, acks: int = -1) -> ProduceRequest:
    return ProduceRequest(acks=acks, timeout_ms=ACKS_ALL_TIMEOUT_MS, topic_data=(TopicProduceData(name=topic, partition_data=(
        PartitionProduceData(index=partition, records=records),)),))


def produce_acknowledged(world_cluster, leader_of: Callable[[int], int], partition: int, value: bytes) -> None:
    response = call(world_cluster.broker(leader_of(partition)),
                    produce_request(TOPIC, partition, make_batch([value])))
    assert response.responses[0].partition_responses[0].error_code == ErrorCode.NONE, response


def partition_description(cluster, topic: str, partition: int):
    return next(p for p in cluster.describe_topic(topic) if p.partition == partition)


def settled(cluster, topic: str) -> bool:
    """Every partition of ``topic`` has its whole replica set in sync and every replica agrees on
    the log end offset and the high watermark."""
    described: dict[int, list[dict]] = {}
    for broker_id in cluster.broker_ids:
        for entry in observe(cluster.broker(broker_id), "describe_partitions"):
            if entry["topic"] == topic:
                described.setdefault(entry["partition"], []).append(entry)
    for p in cluster.describe_topic(topic):
        if sorted(p.isr) != sorted(p.replicas) or p.leader < 0:
            return False
        views = described.get(p.partition, [])
        if len(views) != len(p.replicas):
            return False
        if {(v["leader_epoch"], v["log_end_offset"], v["high_watermark"]) for v in views} != \
                {(p.leader_epoch, p.log_end_offset, p.log_end_offset)}:
            return False
    return True


def wait_for_restart(handle, before: dict) -> None:
    def restarted():
        return observe(handle, "ping")["incarnation_id"] != before["incarnation_id"]
    wait_until(restarted, SETTLE_TIMEOUT_S, "the killed broker to come back")


def join_group(coordinator) -> tuple[str, int]:
    """A consumer group with one Stable member, joined by hand so that no heartbeat thread runs."""
    protocols = (JoinGroupRequestProtocol(name="range", metadata=encode_subscription(Subscription.of([TOPIC]))),)
    first = call(coordinator, JoinGroupRequest(
        group_id=GROUP, protocol_type="consumer", protocols=protocols, session_timeout_ms=SESSION_TIMEOUT_MS))
    assert first.error_code == ErrorCode.MEMBER_ID_REQUIRED, first
    joined = call(coordinator, JoinGroupRequest(
        group_id=GROUP, protocol_type="consumer", protocols=protocols, member_id=first.member_id,
        session_timeout_ms=SESSION_TIMEOUT_MS))
    assert joined.error_code == ErrorCode.NONE and joined.leader == first.member_id, joined
    assignment = encode_assignment(Assignment(partitions=tuple((TOPIC, p) for p in range(PARTITIONS))))
    synced = call(coordinator, SyncGroupRequest(
        group_id=GROUP, generation_id=joined.generation_id, member_id=first.member_id,
        assignments=(SyncGroupRequestAssignment(member_id=first.member_id, assignment=assignment),)))
    assert synced.error_code == ErrorCode.NONE, synced
    committed = call(coordinator, OffsetCommitRequest(
        group_id=GROUP, generation_id=joined.generation_id, member_id=first.member_id,
        topics=(OffsetCommitRequestTopic(name=TOPIC, partitions=tuple(
            OffsetCommitRequestPartition(partition_index=p, committed_offset=1, committed_metadata="checked")
            for p in range(PARTITIONS))),)))
    assert codes_in(committed) == set(), committed
    return first.member_id, joined.generation_id


def find_coordinator(cluster) -> int:
    """The group's coordinator; the first ask creates __consumer_offsets (COORDINATOR_NOT_AVAILABLE meanwhile)."""
    def found():
        answer = call(cluster.broker(0), FindCoordinatorRequest(key=GROUP))
        return (answer.node_id,) if answer.error_code == ErrorCode.NONE else None
    return wait_until(found, SETTLE_TIMEOUT_S, f"a coordinator for {GROUP}")[0]


@pytest.fixture(scope="module")
def world(cluster) -> World:
    cluster.create_topic(TOPIC, partitions=PARTITIONS, replication_factor=3)

    def leader_of(partition: int) -> int:
        return partition_description(cluster, TOPIC, partition).leader
    for partition in range(PARTITIONS):
        produce_acknowledged(cluster, leader_of, partition, b"before the restarts")

    # A genuine stale controller epoch: the controller restarts and claims a new one.
    first_controller_epoch = cluster.controller_epoch()
    cluster.kill("controller", restart=True)
    wait_until(lambda: cluster.describe_cluster()["controller_epoch"] > first_controller_epoch, SETTLE_TIMEOUT_S,
               "a new controller")

    # A genuine stale broker epoch, incarnation and leader epoch: TOPIC-0's leader restarts (the
    # controller sees the new incarnation, moves its leaderships away and back).
    leader = leader_of(0)
    old_broker_epoch = cluster.describe_cluster()["brokers"][leader]["broker_epoch"]
    before = observe(cluster.broker(leader), "ping")
    cluster.kill("broker", leader, restart=True)
    wait_for_restart(cluster.broker(leader), before)
    wait_until(lambda: settled(cluster, TOPIC), SETTLE_TIMEOUT_S, f"{TOPIC} in sync after the restart")
    cluster.elect_preferred_leaders(TOPIC)
    wait_until(lambda: leader_of(0) == leader and settled(cluster, TOPIC), SETTLE_TIMEOUT_S,
               f"the preferred leaders of {TOPIC} back")
    for partition in range(PARTITIONS):
        produce_acknowledged(cluster, leader_of, partition, b"after the restarts")

    coordinator = find_coordinator(cluster)
    coordinators = {b: ray.get_actor(group_coordinator_actor_name(b), namespace=cluster.namespace)
                    for b in cluster.broker_ids}
    # A coordinator learns of its broker's restart at its next watch of the broker, then drops and
    # reloads its partitions: until it knows the broker's new incarnation, a load may still begin
    # (a JoinGroup then answers COORDINATOR_LOAD_IN_PROGRESS).
    wait_until(lambda: observe(coordinators[coordinator], "ping")["broker_incarnation"]
               == observe(cluster.broker(coordinator), "ping")["incarnation_id"], SETTLE_TIMEOUT_S,
               "the coordinator to know its broker's current incarnation")
    wait_until(lambda: call(coordinators[coordinator], ListGroupsRequest()).error_code
               == ErrorCode.NONE, SETTLE_TIMEOUT_S, "the coordinator to load its groups")
    member_id, generation_id = join_group(coordinators[coordinator])
    wait_until(lambda: settled(cluster, TOPIC) and settled(cluster, OFFSETS_TOPIC), SETTLE_TIMEOUT_S,
               "every replica in sync")

    p0 = partition_description(cluster, TOPIC, 0)
    described = cluster.describe_cluster()
    assert p0.leader_epoch >= 1 and p0.partition_epoch >= 1 and described["controller_epoch"] >= 2
    return World(
        cluster=cluster, brokers={b: cluster.broker(b) for b in cluster.broker_ids}, coordinators=coordinators,
        leader=leader, followers=tuple(r for r in p0.replicas if r != leader), leader_epoch=p0.leader_epoch,
        partition_epoch=p0.partition_epoch, replicas=tuple(p0.replicas),
        controller_epoch=described["controller_epoch"],
        broker_epochs={b: info["broker_epoch"] for b, info in described["brokers"].items()},
        old_broker_epoch=old_broker_epoch, old_incarnation_id=before["incarnation_id"],
        cluster_id=cluster.namespace, log_end_offset=p0.log_end_offset, coordinator=coordinator,
        member_id=member_id, generation_id=generation_id)


# ------------------------------------------------------------------------ state and liveness
def snapshot(world: World) -> dict:
    """Everything a bad input must not change; nothing in it moves while nothing valid is sent."""
    state: dict[str, Any] = {}
    for broker_id, broker in world.brokers.items():
        partitions = sorted(observe(broker, "describe_partitions"), key=lambda e: (e["topic"], e["partition"]))
        state[f"broker {broker_id} partitions"] = partitions
        state[f"broker {broker_id} lifecycle"] = observe(broker, "describe_broker")
        state[f"broker {broker_id} metadata"] = call(broker, MetadataRequest())
        for entry in partitions:
            state[f"broker {broker_id} digest {entry['topic']}-{entry['partition']}"] = observe(
                broker, "replica_digest", entry["topic"], entry["partition"], 1 << 62)
    controller = world.controller
    state["controller cluster"] = observe(controller, "describe_cluster")
    for topic in (TOPIC, OFFSETS_TOPIC):
        state[f"controller topic {topic}"] = observe(controller, "describe_topic", topic)
    coordinator = world.coordinators[world.coordinator]
    state["group"] = call(coordinator, DescribeGroupsRequest(groups=(GROUP,)))
    state["group offsets"] = call(coordinator, OffsetFetchRequest(group_id=GROUP))
    for broker_id, handle in world.coordinators.items():
        state[f"coordinator {broker_id} groups"] = call(handle, ListGroupsRequest())
    return state


def processes(world: World) -> dict:
    alive = {f"broker {b}": (p["pid"], p["incarnation_id"]) for b, p in
             ((b, observe(h, "ping")) for b, h in world.brokers.items())}
    alive |= {f"coordinator {b}": (p["pid"], p["incarnation_id"]) for b, p in
              ((b, observe(h, "ping")) for b, h in world.coordinators.items())}
    # A controller that Ray restarts claims a new epoch, so an unchanged epoch is the same process.
    alive["controller"] = (active_controller(world.cluster.namespace), observe(world.controller, "ping"))
    return alive


def codes_in(response: Any) -> set[ErrorCode]:
    """Every error code other than NONE anywhere in a response."""
    found: set[ErrorCode] = set()
    stack = [response]
    for _ in range(100_000):  # bounded: responses are small trees
        if not stack:
            return found
        item = stack.pop()
        if isinstance(item, (tuple, list)):
            stack.extend(item)
        elif is_dataclass(item):
            for field in fields(item):
                value = getattr(item, field.name)
                if field.name == "error_code" and value != ErrorCode.NONE:
                    found.add(ErrorCode(value))
                elif isinstance(value, (tuple, list)) or is_dataclass(value):
                    stack.append(value)
    raise AssertionError("response too large to walk")


# ------------------------------------------------------------------------------ the table
@dataclass(frozen=True)
class Case:
    api: str
    case: str
    target: Callable[[World], Any]  # the actor that handles the request
    request: Callable[[World], Any]
    expect: ErrorCode | str  # the only error code in the answer (NONE: none at all), or RAISES
    check: Callable[[World, Any], str | None] | None = None  # more to check in the answer

    @property
    def name(self) -> str:
        return f"{self.api}: {self.case}"


def leader(w: World):
    return w.brokers[w.leader]


def follower(w: World):
    return w.brokers[w.followers[0]]


def controller(w: World):
    return w.controller


def coordinator(w: World):
    return w.coordinators[w.coordinator]


def wrong_coordinator(w: World):
    return w.coordinators[w.other_coordinator]


def group_beside(name: str) -> str:
    """A group id of the same __consumer_offsets partition as GROUP, so the same coordinator owns it."""
    def partition(group_id: str) -> int:
        return kafka_abs(java_string_hash(group_id)) % int(CONFIG["offsets.topic.num.partitions"])
    return next(f"{name}-{i}" for i in range(1000) if partition(f"{name}-{i}") == partition(GROUP))


def corrupt_batch() -> bytes:
    batch = bytearray(make_batch([b"corrupt me"]))
    batch[-1] ^= 0xFF
    return bytes(batch)


def fetch(topic: str = TOPIC, offset: int = 0, *, epoch: int = -1, replica_id: int = -1, max_bytes: int = 1 << 20,
          partition: int = 0) -> FetchRequest:
    return FetchRequest(max_wait_ms=0, min_bytes=0, max_bytes=max_bytes, replica_id=replica_id, topics=(FetchTopic(
        topic=topic, partitions=(FetchPartition(partition=partition, fetch_offset=offset, partition_max_bytes=1 << 20,
                                                current_leader_epoch=epoch),)),))


def list_offsets(topic: str = TOPIC, *, epoch: int = -1, times: int = 1) -> ListOffsetsRequest:
    return ListOffsetsRequest(topics=(ListOffsetsTopic(name=topic, partitions=tuple(
        ListOffsetsPartition(partition_index=0, timestamp=LATEST_TIMESTAMP, current_leader_epoch=epoch)
        for _ in range(times))),))


def epoch_end(leader_epoch: int, current: int, topic: str = TOPIC) -> OffsetForLeaderEpochRequest:
    return OffsetForLeaderEpochRequest(topics=(OffsetForLeaderTopic(topic=topic, partitions=(
        OffsetForLeaderPartition(partition=0, leader_epoch=leader_epoch, current_leader_epoch=current),)),))


def leader_and_isr(w: World, *, controller_epoch: int, broker_epoch: int, leader_epoch: int, new_leader: int,
                   topic_config: tuple = ()) -> LeaderAndIsrRequest:
    return LeaderAndIsrRequest(
        controller_id=3000, controller_epoch=controller_epoch, broker_epoch=broker_epoch,
        topic_states=(LeaderAndIsrTopicState(topic_name=TOPIC, topic_config=topic_config, partition_states=(
            LeaderAndIsrPartitionState(partition_index=0, controller_epoch=controller_epoch, leader=new_leader,
                                       leader_epoch=leader_epoch, isr=w.replicas, partition_epoch=w.partition_epoch,
                                       replicas=w.replicas),)),))


def update_metadata(controller_epoch: int, broker_epoch: int) -> UpdateMetadataRequest:
    # Were it applied, it would empty the broker's metadata cache: no live brokers, no topics changed.
    return UpdateMetadataRequest(controller_id=3000, controller_epoch=controller_epoch, broker_epoch=broker_epoch,
                                 topic_states=(), live_brokers=())


def stop_replica(controller_epoch: int, broker_epoch: int) -> StopReplicaRequest:
    return StopReplicaRequest(controller_id=3000, controller_epoch=controller_epoch, broker_epoch=broker_epoch,
                              delete_partitions=True, topics=(StopReplicaTopic(name=TOPIC, partition_indexes=(0, 1, 2)),))


def alter_partition(w: World, *, broker_id: int | None = None, broker_epoch: int | None = None,
                    leader_epoch: int | None = None, partition_epoch: int | None = None,
                    new_isr: tuple[int, ...] | None = None, topic: str = TOPIC) -> AlterPartitionRequest:
    broker_id = w.leader if broker_id is None else broker_id
    return AlterPartitionRequest(
        broker_id=broker_id, broker_epoch=w.broker_epochs[broker_id] if broker_epoch is None else broker_epoch,
        topics=(AlterPartitionTopicData(topic_name=topic, partitions=(AlterPartitionPartitionData(
            partition_index=0, leader_epoch=w.leader_epoch if leader_epoch is None else leader_epoch,
            new_isr=(w.leader, w.followers[0]) if new_isr is None else new_isr,
            partition_epoch=w.partition_epoch if partition_epoch is None else partition_epoch),)),))


def create_topic(name: str = "never-created", **fields_) -> CreateTopicsRequest:
    return CreateTopicsRequest(topics=(CreatableTopic(name=name, **{"num_partitions": 1, "replication_factor": 1,
                                                                    **fields_}),), timeout_ms=5000)


def elect(election_type: int = 0, topic: str = TOPIC, partitions: tuple[int, ...] = (0,)) -> ElectLeadersRequest:
    return ElectLeadersRequest(election_type=election_type,
                               topic_partitions=(TopicPartitions(topic=topic, partitions=partitions),))


def protocols(protocol_type_metadata: bytes | None = None) -> tuple[JoinGroupRequestProtocol, ...]:
    return (JoinGroupRequestProtocol(name="range", metadata=protocol_type_metadata or encode_subscription(
        Subscription.of([TOPIC]))),)


def join(w: World, *, group_id: str = GROUP, member_id: str | None = None, protocol_type: str = "consumer",
         session_timeout_ms: int = SESSION_TIMEOUT_MS, with_protocols: bool = True) -> JoinGroupRequest:
    return JoinGroupRequest(group_id=group_id, protocol_type=protocol_type,
                            protocols=protocols() if with_protocols else (),
                            member_id=w.member_id if member_id is None else member_id,
                            session_timeout_ms=session_timeout_ms)


def commit(w: World, *, group_id: str = GROUP, generation_id: int | None = None, member_id: str | None = None,
           metadata: str = "bad", partitions: tuple[int, ...] = (0,), topic: str = TOPIC) -> OffsetCommitRequest:
    return OffsetCommitRequest(
        group_id=group_id, generation_id=w.generation_id if generation_id is None else generation_id,
        member_id=w.member_id if member_id is None else member_id,
        topics=(OffsetCommitRequestTopic(name=topic, partitions=tuple(
            OffsetCommitRequestPartition(partition_index=p, committed_offset=0, committed_metadata=metadata)
            for p in partitions)),))


def follower_truncate(w: World, epoch: int) -> FollowerTruncateRequest:
    return FollowerTruncateRequest(partitions=(FollowerTruncatePartition(
        topic=TOPIC, partition=0, current_leader_epoch=epoch, mode=TruncationMode.FULLY_AND_START_AT, offset=0),))


def follower_append(w: World, *, epoch: int | None = None, offset: int | None = None, records: Any = b"",
                    ) -> FollowerAppendRequest:
    return FollowerAppendRequest(partitions=(FollowerAppendPartition(
        topic=TOPIC, partition=0, current_leader_epoch=w.leader_epoch if epoch is None else epoch,
        fetch_offset=w.log_end_offset if offset is None else offset, records=records,
        leader_high_watermark=w.log_end_offset),))


def no_records(w: World, response) -> str | None:
    data = response.responses[0].partitions[0]
    return None if len(data.records) == 0 else f"{len(data.records)} bytes of records served to a non-replica"


def epoch_answer(response, expected: tuple[int, int]) -> str | None:
    """Kafka's ``LeaderEpochFileCache.endOffsetFor``: (-1, -1) for the undefined epoch; for an epoch
    below every known one, that epoch and the start offset of the first known epoch."""
    result = response.topics[0].partitions[0]
    answered = (result.leader_epoch, result.end_offset)
    return None if answered == expected else f"(epoch, end offset) {answered}, expected {expected}"


def same_broker_epoch(w: World, response) -> str | None:
    expected = w.broker_epochs[w.leader]
    return None if response.broker_epoch == expected else f"broker epoch {response.broker_epoch}, not {expected}"


CASES = [
    # Produce, to TOPIC-0's leader.
    Case("Produce", "acks=2", leader,
         lambda w: produce_request(TOPIC, 0, make_batch([b"x"]), acks=2), ErrorCode.INVALID_REQUIRED_ACKS),
    Case("Produce", "a batch whose CRC does not match", leader,
         lambda w: produce_request(TOPIC, 0, corrupt_batch()), ErrorCode.CORRUPT_MESSAGE),
    Case("Produce", "bytes that are no record batch", leader,
         lambda w: produce_request(TOPIC, 0, b"not a record batch at all, not even close to 61 bytes long....."),
         ErrorCode.CORRUPT_MESSAGE),
    Case("Produce", "records None", leader,
         lambda w: produce_request(TOPIC, 0, None), ErrorCode.CORRUPT_MESSAGE),
    Case("Produce", "a control batch from a client", leader,
         lambda w: produce_request(TOPIC, 0, client_batch(control=True)), ErrorCode.INVALID_RECORD),
    Case("Produce", "a producer id with base sequence -1", leader,
         lambda w: produce_request(TOPIC, 0, client_batch(producer_id=5, base_sequence=-1)), ErrorCode.INVALID_RECORD),
    Case("Produce", "a batch over max.message.bytes", leader,
         lambda w: produce_request(TOPIC, 0, make_batch([b"x" * (2 * MAX_MESSAGE_BYTES)])), ErrorCode.MESSAGE_TOO_LARGE),
    Case("Produce", "an unknown topic", leader,
         lambda w: produce_request("no-such-topic", 0, make_batch([b"x"])), ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
    Case("Produce", "a partition the topic does not have", leader,
         lambda w: produce_request(TOPIC, 99, make_batch([b"x"])), ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
    Case("Produce", "to the internal __consumer_offsets", leader,
         lambda w: produce_request(OFFSETS_TOPIC, 0, make_batch([b"x"], keys=[b"garbage key"])),
         ErrorCode.INVALID_TOPIC_EXCEPTION),
    Case("Produce", "stale: to a follower", follower,
         lambda w: produce_request(TOPIC, 0, make_batch([b"x"])), ErrorCode.NOT_LEADER_OR_FOLLOWER),
    Case("Produce", "a string", leader, lambda w: "produce please", RAISES),
    Case("Produce", "None", leader, lambda w: None, RAISES),
    Case("Produce", "topic_data None", leader,
         lambda w: ProduceRequest(acks=1, timeout_ms=1000, topic_data=None), RAISES),
    Case("Produce", "a partition index that is a string", leader,
         lambda w: ProduceRequest(acks=1, timeout_ms=1000, topic_data=(TopicProduceData(name=TOPIC, partition_data=(
             PartitionProduceData(index="0", records=make_batch([b"x"])),)),)), RAISES),

    # Fetch, consumer form.
    Case("Fetch", "stale: current_leader_epoch older than the leader's", leader,
         lambda w: fetch(epoch=w.leader_epoch - 1), ErrorCode.FENCED_LEADER_EPOCH),
    Case("Fetch", "current_leader_epoch newer than the leader's", leader,
         lambda w: fetch(epoch=w.leader_epoch + 1), ErrorCode.UNKNOWN_LEADER_EPOCH),
    Case("Fetch", "an offset past the log end", leader,
         lambda w: fetch(offset=w.log_end_offset + 100, epoch=w.leader_epoch), ErrorCode.OFFSET_OUT_OF_RANGE),
    Case("Fetch", "a negative offset", leader, lambda w: fetch(offset=-5), ErrorCode.OFFSET_OUT_OF_RANGE),
    Case("Fetch", "stale: to a follower", follower, lambda w: fetch(), ErrorCode.NOT_LEADER_OR_FOLLOWER),
    Case("Fetch", "an unknown topic", leader, lambda w: fetch("no-such-topic"),
         ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
    Case("Fetch", "negative max_bytes", leader, lambda w: fetch(max_bytes=-1), ErrorCode.INVALID_REQUEST),
    Case("Fetch", "a group request (JoinGroup), which no broker serves", leader,
         lambda w: JoinGroupRequest(group_id=GROUP, protocol_type="consumer", protocols=()), RAISES),
    Case("Fetch", "topics as strings", leader,
         lambda w: FetchRequest(max_wait_ms=0, min_bytes=0, max_bytes=1, topics=(TOPIC,)), RAISES),
    # Fetch, follower form.
    Case("Fetch (follower)", "stale: current_leader_epoch older than the leader's", leader,
         lambda w: fetch(offset=w.log_end_offset, epoch=w.leader_epoch - 1, replica_id=w.followers[0]),
         ErrorCode.FENCED_LEADER_EPOCH),
    Case("Fetch (follower)", "current_leader_epoch newer than the leader's", leader,
         lambda w: fetch(offset=w.log_end_offset, epoch=w.leader_epoch + 1, replica_id=w.followers[0]),
         ErrorCode.UNKNOWN_LEADER_EPOCH),
    Case("Fetch (follower)", "an offset past the leader's log end", leader,
         lambda w: fetch(offset=w.log_end_offset + 100, epoch=w.leader_epoch, replica_id=w.followers[0]),
         ErrorCode.OFFSET_OUT_OF_RANGE),
    Case("Fetch (follower)", "from a broker that is no replica: no records", leader,
         lambda w: fetch(offset=0, epoch=w.leader_epoch, replica_id=42), ErrorCode.NONE, no_records),

    # ListOffsets.
    Case("ListOffsets", "stale: current_leader_epoch older than the leader's", leader,
         lambda w: list_offsets(epoch=w.leader_epoch - 1), ErrorCode.FENCED_LEADER_EPOCH),
    Case("ListOffsets", "current_leader_epoch newer than the leader's", leader,
         lambda w: list_offsets(epoch=w.leader_epoch + 1), ErrorCode.UNKNOWN_LEADER_EPOCH),
    Case("ListOffsets", "an unknown topic", leader, lambda w: list_offsets("no-such-topic"),
         ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
    Case("ListOffsets", "stale: to a follower", follower, lambda w: list_offsets(),
         ErrorCode.NOT_LEADER_OR_FOLLOWER),
    Case("ListOffsets", "the same partition twice", leader, lambda w: list_offsets(times=2),
         ErrorCode.INVALID_REQUEST),
    # (ElectLeaders was this case's request until brokers took it and forwarded it, as Kafka's do.)
    Case("ListOffsets", "a controller's request (ControlledShutdown), which no broker serves", leader,
         lambda w: ControlledShutdownRequest(broker_id=0, broker_epoch=1), RAISES),

    # Metadata (a read of the broker's cache: nothing can be stale).
    Case("Metadata", "an unknown topic", follower,
         lambda w: MetadataRequest(topics=("no-such-topic",)), ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
    # Auto-creation (auto.create.topics.enable) refuses the name as Kafka's createTopic does.
    Case("Metadata", "an invalid topic name to auto-create", follower,
         lambda w: MetadataRequest(topics=("bad/name",), allow_auto_topic_creation=True),
         ErrorCode.INVALID_TOPIC_EXCEPTION),
    Case("Metadata", "a topic name that is a number", follower,
         lambda w: MetadataRequest(topics=(TOPIC, 5)), RAISES),

    # OffsetForLeaderEpoch.
    Case("OffsetForLeaderEpoch", "stale: current_leader_epoch older than the leader's", leader,
         lambda w: epoch_end(0, w.leader_epoch - 1), ErrorCode.FENCED_LEADER_EPOCH),
    Case("OffsetForLeaderEpoch", "current_leader_epoch newer than the leader's", leader,
         lambda w: epoch_end(0, w.leader_epoch + 1), ErrorCode.UNKNOWN_LEADER_EPOCH),
    Case("OffsetForLeaderEpoch", "stale: to a follower", follower,
         lambda w: epoch_end(0, w.leader_epoch), ErrorCode.NOT_LEADER_OR_FOLLOWER),
    Case("OffsetForLeaderEpoch", "an unknown topic", leader,
         lambda w: epoch_end(0, -1, "no-such-topic"), ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
    Case("OffsetForLeaderEpoch", "the undefined epoch -1: undefined offset, no error", leader,
         lambda w: epoch_end(-1, w.leader_epoch), ErrorCode.NONE,
         lambda w, r: epoch_answer(r, (-1, -1))),
    Case("OffsetForLeaderEpoch", "an epoch below every known one: the first epoch's start, no error", leader,
         lambda w: epoch_end(-7, w.leader_epoch), ErrorCode.NONE,
         lambda w, r: epoch_answer(r, (-7, 0))),
    Case("OffsetForLeaderEpoch", "a group request (Heartbeat), which no broker serves", leader,
         lambda w: HeartbeatRequest(group_id=GROUP, generation_id=1, member_id="m"), RAISES),

    # LeaderAndIsr, UpdateMetadata, StopReplica: the controller's requests to a broker.
    Case("LeaderAndIsr", "stale controller epoch", leader,
         lambda w: leader_and_isr(w, controller_epoch=w.controller_epoch - 1, broker_epoch=w.broker_epochs[w.leader],
                                  leader_epoch=w.leader_epoch + 1, new_leader=w.followers[0]),
         ErrorCode.STALE_CONTROLLER_EPOCH),
    Case("LeaderAndIsr", "stale broker epoch (the broker's previous process)", leader,
         lambda w: leader_and_isr(w, controller_epoch=w.controller_epoch, broker_epoch=w.old_broker_epoch,
                                  leader_epoch=w.leader_epoch + 1, new_leader=w.followers[0]),
         ErrorCode.STALE_BROKER_EPOCH),
    Case("LeaderAndIsr", "stale: the current leader epoch again, with another topic config", leader,
         lambda w: leader_and_isr(w, controller_epoch=w.controller_epoch, broker_epoch=w.broker_epochs[w.leader],
                                  leader_epoch=w.leader_epoch, new_leader=w.leader,
                                  topic_config=(("max.message.bytes", "100"), ("min.insync.replicas", "4"))),
         ErrorCode.STALE_CONTROLLER_EPOCH),
    Case("LeaderAndIsr", "stale: an older leader epoch", leader,
         lambda w: leader_and_isr(w, controller_epoch=w.controller_epoch, broker_epoch=w.broker_epochs[w.leader],
                                  leader_epoch=w.leader_epoch - 1, new_leader=w.followers[0]),
         ErrorCode.STALE_CONTROLLER_EPOCH),
    Case("LeaderAndIsr", "a string", leader, lambda w: "become leader", RAISES),
    Case("UpdateMetadata", "stale controller epoch", follower,
         lambda w: update_metadata(w.controller_epoch - 1, w.broker_epochs[w.followers[0]]),
         ErrorCode.STALE_CONTROLLER_EPOCH),
    Case("UpdateMetadata", "stale broker epoch (the broker's previous process)", leader,
         lambda w: update_metadata(w.controller_epoch, w.old_broker_epoch), ErrorCode.STALE_BROKER_EPOCH),
    Case("UpdateMetadata", "live_brokers None", follower,
         lambda w: UpdateMetadataRequest(controller_id=3000, controller_epoch=w.controller_epoch,
                                         broker_epoch=w.broker_epochs[w.followers[0]], topic_states=(),
                                         live_brokers=None), RAISES),
    Case("StopReplica", "stale controller epoch, deleting", follower,
         lambda w: stop_replica(w.controller_epoch - 1, w.broker_epochs[w.followers[0]]),
         ErrorCode.STALE_CONTROLLER_EPOCH),
    Case("StopReplica", "stale broker epoch (the broker's previous process), deleting", leader,
         lambda w: stop_replica(w.controller_epoch, w.old_broker_epoch),
         ErrorCode.STALE_BROKER_EPOCH),
    Case("StopReplica", "partition indexes as a string", follower,
         lambda w: StopReplicaRequest(controller_id=3000, controller_epoch=w.controller_epoch - 1, broker_epoch=-1,
                                      topics=(StopReplicaTopic(name=TOPIC, partition_indexes="012"),)), RAISES),

    # The brokers' requests to the controller.
    Case("ControlledShutdown", "stale broker epoch (the broker's previous process)", controller,
         lambda w: ControlledShutdownRequest(broker_id=w.leader, broker_epoch=w.old_broker_epoch),
         ErrorCode.STALE_BROKER_EPOCH),
    Case("ControlledShutdown", "an unknown broker", controller,
         lambda w: ControlledShutdownRequest(broker_id=42, broker_epoch=1), ErrorCode.BROKER_NOT_AVAILABLE),
    Case("ControlledShutdown", "a broker id that is a string", controller,
         lambda w: ControlledShutdownRequest(broker_id=str(w.leader), broker_epoch=w.broker_epochs[w.leader]), RAISES),
    Case("BrokerRegistration", "another cluster's id", controller,
         lambda w: BrokerRegistrationRequest(broker_id=w.leader, cluster_id="some-other-cluster",
                                             incarnation_id="another-process", host="somewhere"),
         ErrorCode.INCONSISTENT_CLUSTER_ID),
    Case("BrokerRegistration", "stale: the broker's previous process, after its restart", controller,
         lambda w: BrokerRegistrationRequest(broker_id=w.leader, cluster_id=w.cluster_id,
                                             incarnation_id=w.old_incarnation_id,
                                             host=f"raykafka-broker-{w.leader}"),
         ErrorCode.DUPLICATE_BROKER_REGISTRATION),
    Case("BrokerRegistration", "stale: a retry from the current process gets its epoch again", controller,
         lambda w: BrokerRegistrationRequest(broker_id=w.leader, cluster_id=w.cluster_id,
                                             incarnation_id=observe(leader(w), "ping")["incarnation_id"],
                                             host=f"raykafka-broker-{w.leader}"),
         ErrorCode.NONE, same_broker_epoch),
    Case("BrokerRegistration", "None", controller, lambda w: None, RAISES),
    Case("BrokerHeartbeat", "stale broker epoch (the broker's previous process)", controller,
         lambda w: BrokerHeartbeatRequest(broker_id=w.leader, broker_epoch=w.old_broker_epoch,
                                          current_metadata_offset=-1), ErrorCode.STALE_BROKER_EPOCH),
    Case("BrokerHeartbeat", "an unknown broker", controller,
         lambda w: BrokerHeartbeatRequest(broker_id=42, broker_epoch=1, current_metadata_offset=-1),
         ErrorCode.BROKER_ID_NOT_REGISTERED),
    Case("BrokerHeartbeat", "a FetchRequest", controller, lambda w: fetch(), RAISES),
    Case("AlterPartition", "stale broker epoch (the leader's previous process)", controller,
         lambda w: alter_partition(w, broker_epoch=w.old_broker_epoch), ErrorCode.STALE_BROKER_EPOCH),
    Case("AlterPartition", "stale leader epoch", controller,
         lambda w: alter_partition(w, leader_epoch=w.leader_epoch - 1), ErrorCode.FENCED_LEADER_EPOCH),
    Case("AlterPartition", "stale partition epoch", controller,
         lambda w: alter_partition(w, partition_epoch=w.partition_epoch - 1), ErrorCode.INVALID_UPDATE_VERSION),
    Case("AlterPartition", "an ISR without the leader", controller,
         lambda w: alter_partition(w, new_isr=w.followers), ErrorCode.INVALID_REQUEST),
    Case("AlterPartition", "an ISR naming a broker that is no replica", controller,
         lambda w: alter_partition(w, new_isr=(w.leader, 42)), ErrorCode.INVALID_REQUEST),
    Case("AlterPartition", "stale: from a follower", controller,
         lambda w: alter_partition(w, broker_id=w.followers[0], new_isr=(w.followers[0], w.leader)),
         ErrorCode.NOT_LEADER_OR_FOLLOWER),
    Case("AlterPartition", "an unknown topic", controller,
         lambda w: alter_partition(w, topic="no-such-topic"), ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
    Case("AlterPartition", "an ISR as a list of strings", controller,
         lambda w: alter_partition(w, new_isr=("0", "1")), RAISES),

    # Admin requests to the controller.
    Case("CreateTopics", "a topic that exists", controller, lambda w: create_topic(TOPIC),
         ErrorCode.TOPIC_ALREADY_EXISTS),
    Case("CreateTopics", "__consumer_offsets, which exists", controller,
         lambda w: create_topic(OFFSETS_TOPIC), ErrorCode.TOPIC_ALREADY_EXISTS),
    Case("CreateTopics", "an illegal character", controller, lambda w: create_topic("bad/name"),
         ErrorCode.INVALID_TOPIC_EXCEPTION),
    Case("CreateTopics", "an empty name", controller, lambda w: create_topic(""),
         ErrorCode.INVALID_TOPIC_EXCEPTION),
    Case("CreateTopics", "'..'", controller, lambda w: create_topic(".."),
         ErrorCode.INVALID_TOPIC_EXCEPTION),
    Case("CreateTopics", "zero partitions", controller,
         lambda w: create_topic(num_partitions=0), ErrorCode.INVALID_PARTITIONS),
    Case("CreateTopics", "replication factor 0", controller,
         lambda w: create_topic(replication_factor=0), ErrorCode.INVALID_REPLICATION_FACTOR),
    Case("CreateTopics", "replication factor above the broker count", controller,
         lambda w: create_topic(replication_factor=4), ErrorCode.INVALID_REPLICATION_FACTOR),
    Case("CreateTopics", "an unknown config key", controller,
         lambda w: create_topic(configs=(CreateableTopicConfig(name="no.such.key", value="1"),)),
         ErrorCode.INVALID_CONFIG),
    Case("CreateTopics", "a config value that is no number", controller,
         lambda w: create_topic(configs=(CreateableTopicConfig(name="min.insync.replicas", value="many"),)),
         ErrorCode.INVALID_CONFIG),
    Case("CreateTopics", "both a partition count and an assignment", controller,
         lambda w: create_topic(assignments=(CreatableReplicaAssignment(partition_index=0, broker_ids=(0,)),)),
         ErrorCode.INVALID_REQUEST),
    Case("CreateTopics", "an assignment naming an unknown broker", controller,
         lambda w: create_topic(num_partitions=-1, replication_factor=-1, assignments=(
             CreatableReplicaAssignment(partition_index=0, broker_ids=(0, 42)),)),
         ErrorCode.INVALID_REPLICA_ASSIGNMENT),
    Case("CreateTopics", "the same new topic twice", controller,
         lambda w: CreateTopicsRequest(topics=(CreatableTopic(name="twice", num_partitions=1, replication_factor=1),
                                               CreatableTopic(name="twice", num_partitions=1, replication_factor=1))),
         ErrorCode.INVALID_REQUEST),
    Case("CreateTopics", "topics None", controller,
         lambda w: CreateTopicsRequest(topics=None), RAISES),
    Case("DeleteTopics", "an unknown topic", controller,
         lambda w: DeleteTopicsRequest(topic_names=("no-such-topic",), timeout_ms=5000),
         ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
    Case("DeleteTopics", "an empty name", controller,
         lambda w: DeleteTopicsRequest(topic_names=("",), timeout_ms=5000), ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
    Case("DeleteTopics", "a bare topic name instead of a list", controller,
         lambda w: DeleteTopicsRequest(topic_names=TOPIC), RAISES),
    Case("ElectLeaders", "an unknown topic", controller, lambda w: elect(topic="no-such-topic"),
         ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
    Case("ElectLeaders", "a partition the topic does not have", controller,
         lambda w: elect(partitions=(99,)), ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
    Case("ElectLeaders", "stale: the preferred replica leads already", controller,
         lambda w: elect(), ErrorCode.ELECTION_NOT_NEEDED),
    Case("ElectLeaders", "unclean election where a leader exists", controller,
         lambda w: elect(UNCLEAN_ELECTION), ErrorCode.ELECTION_NOT_NEEDED),
    Case("ElectLeaders", "an unknown election type", controller,
         lambda w: elect(7), ErrorCode.INVALID_REQUEST),
    Case("ElectLeaders", "a ProduceRequest, which the controller does not serve", controller,
         lambda w: produce_request(TOPIC, 0, make_batch([b"x"])), RAISES),

    # FindCoordinator, to any broker.
    Case("FindCoordinator", "an unknown key type", follower,
         lambda w: FindCoordinatorRequest(key=GROUP, key_type=7), ErrorCode.INVALID_REQUEST),
    Case("FindCoordinator", "an empty group id", follower,
         lambda w: FindCoordinatorRequest(key=""), ErrorCode.INVALID_GROUP_ID),
    Case("FindCoordinator", "key None", follower,
         lambda w: FindCoordinatorRequest(key=None), RAISES),

    # The group APIs, to the group's coordinator unless said otherwise.
    Case("JoinGroup", "an empty group id", coordinator, lambda w: join(w, group_id=""),
         ErrorCode.INVALID_GROUP_ID),
    Case("JoinGroup", "a session timeout below group.min.session.timeout.ms", coordinator,
         lambda w: join(w, session_timeout_ms=10), ErrorCode.INVALID_SESSION_TIMEOUT),
    Case("JoinGroup", "a session timeout above group.max.session.timeout.ms", coordinator,
         lambda w: join(w, session_timeout_ms=SESSION_TIMEOUT_MS + 1), ErrorCode.INVALID_SESSION_TIMEOUT),
    Case("JoinGroup", "the member, with another protocol type", coordinator,
         lambda w: join(w, protocol_type="connect"), ErrorCode.INCONSISTENT_GROUP_PROTOCOL),
    Case("JoinGroup", "a new member, with another protocol type", coordinator,
         lambda w: join(w, member_id="", protocol_type="connect"), ErrorCode.INCONSISTENT_GROUP_PROTOCOL),
    Case("JoinGroup", "the member, with no protocols", coordinator,
         lambda w: join(w, with_protocols=False), ErrorCode.INCONSISTENT_GROUP_PROTOCOL),
    Case("JoinGroup", "stale: a member id the group does not have", coordinator,
         lambda w: join(w, member_id="consumer-long-gone"), ErrorCode.UNKNOWN_MEMBER_ID),
    Case("JoinGroup", "to a broker that does not coordinate the group", wrong_coordinator,
         lambda w: join(w), ErrorCode.NOT_COORDINATOR),
    Case("JoinGroup", "a FetchRequest", coordinator, lambda w: fetch(), RAISES),
    Case("SyncGroup", "stale generation", coordinator,
         lambda w: SyncGroupRequest(group_id=GROUP, generation_id=w.generation_id - 1, member_id=w.member_id),
         ErrorCode.ILLEGAL_GENERATION),
    Case("SyncGroup", "stale: a member id the group does not have", coordinator,
         lambda w: SyncGroupRequest(group_id=GROUP, generation_id=w.generation_id, member_id="consumer-long-gone"),
         ErrorCode.UNKNOWN_MEMBER_ID),
    Case("SyncGroup", "another protocol type", coordinator,
         lambda w: SyncGroupRequest(group_id=GROUP, generation_id=w.generation_id, member_id=w.member_id,
                                    protocol_type="connect"), ErrorCode.INCONSISTENT_GROUP_PROTOCOL),
    Case("SyncGroup", "an empty group id", coordinator,
         lambda w: SyncGroupRequest(group_id="", generation_id=w.generation_id, member_id=w.member_id),
         ErrorCode.INVALID_GROUP_ID),
    Case("SyncGroup", "to a broker that does not coordinate the group", wrong_coordinator,
         lambda w: SyncGroupRequest(group_id=GROUP, generation_id=w.generation_id, member_id=w.member_id),
         ErrorCode.NOT_COORDINATOR),
    Case("SyncGroup", "an assignment that is a string", coordinator,
         lambda w: SyncGroupRequest(group_id=GROUP, generation_id=w.generation_id, member_id=w.member_id,
                                    assignments=(SyncGroupRequestAssignment(member_id=w.member_id, assignment="all"),)),
         RAISES),
    Case("Heartbeat", "stale generation", coordinator,
         lambda w: HeartbeatRequest(group_id=GROUP, generation_id=w.generation_id - 1, member_id=w.member_id),
         ErrorCode.ILLEGAL_GENERATION),
    Case("Heartbeat", "stale: a member id the group does not have", coordinator,
         lambda w: HeartbeatRequest(group_id=GROUP, generation_id=w.generation_id, member_id="consumer-long-gone"),
         ErrorCode.UNKNOWN_MEMBER_ID),
    Case("Heartbeat", "a group the coordinator does not know", coordinator,
         lambda w: HeartbeatRequest(group_id=group_beside("no-such-group"), generation_id=1, member_id=w.member_id),
         ErrorCode.UNKNOWN_MEMBER_ID),
    Case("Heartbeat", "an empty group id", coordinator,
         lambda w: HeartbeatRequest(group_id="", generation_id=w.generation_id, member_id=w.member_id),
         ErrorCode.INVALID_GROUP_ID),
    Case("Heartbeat", "to a broker that does not coordinate the group", wrong_coordinator,
         lambda w: HeartbeatRequest(group_id=GROUP, generation_id=w.generation_id, member_id=w.member_id),
         ErrorCode.NOT_COORDINATOR),
    Case("Heartbeat", "a generation that is a string", coordinator,
         lambda w: HeartbeatRequest(group_id=GROUP, generation_id=str(w.generation_id), member_id=w.member_id),
         RAISES),
    Case("LeaveGroup", "stale: a member id the group does not have", coordinator,
         lambda w: LeaveGroupRequest(group_id=GROUP, members=(MemberIdentity(member_id="consumer-long-gone"),)),
         ErrorCode.UNKNOWN_MEMBER_ID),
    Case("LeaveGroup", "an empty group id", coordinator,
         lambda w: LeaveGroupRequest(group_id="", members=(MemberIdentity(member_id=w.member_id),)),
         ErrorCode.INVALID_GROUP_ID),
    Case("LeaveGroup", "to a broker that does not coordinate the group", wrong_coordinator,
         lambda w: LeaveGroupRequest(group_id=GROUP, members=(MemberIdentity(member_id=w.member_id),)),
         ErrorCode.NOT_COORDINATOR),
    Case("LeaveGroup", "members as bare strings", coordinator,
         lambda w: LeaveGroupRequest(group_id=GROUP, members=(w.member_id,)), RAISES),
    Case("OffsetCommit", "stale generation", coordinator,
         lambda w: commit(w, generation_id=w.generation_id - 1), ErrorCode.ILLEGAL_GENERATION),
    Case("OffsetCommit", "stale: a member id the group does not have", coordinator,
         lambda w: commit(w, member_id="consumer-long-gone"), ErrorCode.UNKNOWN_MEMBER_ID),
    Case("OffsetCommit", "without a member id, to a group with members", coordinator,
         lambda w: commit(w, generation_id=-1, member_id=""), ErrorCode.UNKNOWN_MEMBER_ID),
    Case("OffsetCommit", "a generation of a group the coordinator never saw", coordinator,
         lambda w: commit(w, group_id=group_beside("never-seen")), ErrorCode.ILLEGAL_GENERATION),
    Case("OffsetCommit", "metadata over offset.metadata.max.bytes", coordinator,
         lambda w: commit(w, metadata="m" * 5000), ErrorCode.OFFSET_METADATA_TOO_LARGE),
    Case("OffsetCommit", "a commit larger than __consumer_offsets' max.message.bytes", coordinator,
         lambda w: commit(w, metadata="m" * 4000, partitions=tuple(range(PARTITIONS))),
         ErrorCode.INVALID_COMMIT_OFFSET_SIZE),
    Case("OffsetCommit", "an unknown topic", coordinator,
         lambda w: commit(w, topic="no-such-topic"), ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
    Case("OffsetCommit", "an unknown partition", coordinator,
         lambda w: commit(w, partitions=(99,)), ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
    Case("OffsetCommit", "to a broker that does not coordinate the group", wrong_coordinator,
         lambda w: commit(w), ErrorCode.NOT_COORDINATOR),
    Case("OffsetCommit", "group id None", coordinator,
         lambda w: commit(w, group_id=None), RAISES),
    Case("OffsetFetch", "to a broker that does not coordinate the group", wrong_coordinator,
         lambda w: OffsetFetchRequest(group_id=GROUP), ErrorCode.NOT_COORDINATOR),
    Case("OffsetFetch", "None", coordinator, lambda w: None, RAISES),
    Case("DescribeGroups", "to a broker that does not coordinate the group", wrong_coordinator,
         lambda w: DescribeGroupsRequest(groups=(GROUP,)), ErrorCode.NOT_COORDINATOR),
    Case("DescribeGroups", "a bare group id instead of a list", coordinator,
         lambda w: DescribeGroupsRequest(groups=GROUP), RAISES),
    Case("ListGroups", "a bare state instead of a list", coordinator,
         lambda w: ListGroupsRequest(states_filter="Stable"), RAISES),
    Case("ListGroups", "a broker's request (Metadata), which no group coordinator serves", coordinator,
         lambda w: MetadataRequest(topics=(TOPIC,)), RAISES),

    # The replica fetcher's requests to its own broker (raykafka's, not Kafka APIs).
    Case("FollowerTruncate", "stale leader epoch", follower,
         lambda w: follower_truncate(w, w.leader_epoch - 1), ErrorCode.FENCED_LEADER_EPOCH),
    Case("FollowerTruncate", "to the leader", leader,
         lambda w: follower_truncate(w, w.leader_epoch), ErrorCode.NOT_LEADER_OR_FOLLOWER),
    Case("FollowerTruncate", "a mode that is a string", follower,
         lambda w: FollowerTruncateRequest(partitions=(FollowerTruncatePartition(
             topic=TOPIC, partition=0, current_leader_epoch=w.leader_epoch - 1, mode="fully-and-start-at"),)), RAISES),
    Case("FollowerAppend", "stale leader epoch", follower,
         lambda w: follower_append(w, epoch=w.leader_epoch - 1, records=make_batch([b"x"])),
         ErrorCode.FENCED_LEADER_EPOCH),
    Case("FollowerAppend", "stale: an offset other than the log end", follower,
         lambda w: follower_append(w, offset=w.log_end_offset + 5), ErrorCode.OFFSET_OUT_OF_RANGE),
    Case("FollowerAppend", "a batch whose CRC does not match", follower,
         lambda w: follower_append(w, records=corrupt_batch()), ErrorCode.CORRUPT_MESSAGE),
    Case("FollowerAppend", "records None", follower,
         lambda w: follower_append(w, records=None), ErrorCode.CORRUPT_MESSAGE),
    Case("FollowerAppend", "batches that do not continue the log (UnexpectedAppendOffset)", follower,
         lambda w: follower_append(w, records=make_batch([b"x"])),
         ErrorCode.UNKNOWN_SERVER_ERROR),
    Case("FollowerAppend", "to the leader", leader,
         lambda w: follower_append(w, records=make_batch([b"x"])), ErrorCode.NOT_LEADER_OR_FOLLOWER),
    Case("FollowerAppend", "None", follower, lambda w: None, RAISES),
]


def run_case(world: World, case: Case) -> tuple[str, str | None]:
    """(what the actor answered, what is wrong with it or None)."""
    try:
        response = call(case.target(world), case.request(world))
    except Exception as exc:  # a refused request, or a crash
        text = f"{type(exc).__name__}: {exc}".splitlines()[0][:160]
        if case.expect == RAISES and getattr(exc, "error_code", None) == ErrorCode.INVALID_REQUEST:
            return "raised INVALID_REQUEST", None
        return f"raised {text}", "expected " + ("INVALID_REQUEST raised" if case.expect == RAISES else case.expect.name)
    found = codes_in(response)
    answered = ", ".join(sorted(code.name for code in found)) or "NONE"
    if case.expect == RAISES:
        return answered, "expected INVALID_REQUEST raised"
    if found != ({case.expect} if case.expect != ErrorCode.NONE else set()):
        return answered, f"expected {case.expect.name}"
    problem = case.check(world, response) if case.check else None
    return answered, problem


def test_every_bad_input_gets_kafkas_error_and_changes_nothing(world):
    before_processes = processes(world)
    before = snapshot(world)
    rows, wrong = [], []
    for case in CASES:
        answered, problem = run_case(world, case)
        expected = "INVALID_REQUEST raised" if case.expect == RAISES else case.expect.name
        rows.append(f"{case.api:22} {case.case[:70]:70} {expected:28} {answered}")
        if problem:
            wrong.append(f"{case.name}: {problem}, got {answered}")
    print("\n" + "\n".join(rows))
    after_processes = processes(world)
    died = sorted(key for key in before_processes if before_processes[key] != after_processes.get(key))
    after = snapshot(world)
    changed = sorted(key for key in before.keys() | after.keys() if before.get(key) != after.get(key))
    problems = [f"{len(wrong)} of {len(CASES)} cases answered wrongly:", *wrong] if wrong else []
    problems += [f"died or restarted: {', '.join(died)}"] if died else []
    problems += [f"changed by bad input: {key}: {before.get(key)!r} -> {after.get(key)!r}" for key in changed]
    assert not problems, "\n".join(problems)

    # The forged topic config of the stale LeaderAndIsr (max.message.bytes=100, min.insync.replicas=4)
    # was not applied: an acks=all produce of a record over 100 bytes still succeeds.
    response = call(leader(world), produce_request(TOPIC, 0, make_batch([b"v" * 300])))
    assert codes_in(response) == set(), response
