"""The pure group coordinator answers JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit,
OffsetFetch, DescribeGroups and ListGroups as Kafka 2.4's GroupCoordinatorTest expects, driven step
by step with a fake clock and a fake ``__consumer_offsets`` log, no Ray."""
from __future__ import annotations

import itertools
import random

import pytest

from actors.core.effects import ArmTimer, CoordinatorMetadataUpdate, Respond, Send
from actors.core.errors import ErrorCode
from actors.core.group import offsets_topic_records as rec
from actors.core.group.assignors import subscription_metadata
from actors.core.group.coordinator import GroupCoordinatorCore
from actors.core.group.group_metadata import GroupState, OffsetAndMetadata
from actors.core.group.messages import (
    OFFSETS_LOG_DESTINATION, DeleteGroupsRequest, OffsetsLogAppendRequest, OffsetsLogAppendResponse,
)
from actors.core.messages.describe_groups import DescribeGroupsRequest
from actors.core.messages.heartbeat import HeartbeatRequest
from actors.core.messages.join_group import JoinGroupRequest, JoinGroupRequestProtocol
from actors.core.messages.leave_group import LeaveGroupRequest, MemberIdentity
from actors.core.messages.list_groups import ListGroupsRequest
from actors.core.messages.offset_commit import (
    OffsetCommitRequest, OffsetCommitRequestPartition, OffsetCommitRequestTopic,
)
from actors.core.messages.offset_fetch import OffsetFetchRequest, OffsetFetchRequestTopic
from actors.core.messages.sync_group import SyncGroupRequest, SyncGroupRequestAssignment

PARTITIONS = 4
SESSION_MS = 10_000
REBALANCE_MS = 30_000
INITIAL_DELAY_MS = 50  # as GroupCoordinatorTest configures it
# Members that join a new group during its initial delay extend it once more (InitialDelayedJoin).
JOIN_WAIT_MS = 2 * INITIAL_DELAY_MS
PROTOCOLS = (JoinGroupRequestProtocol(name="range", metadata=subscription_metadata("range", ["t"])),)
# The partitions the coordinator's broker knows: OffsetCommit for any other is UNKNOWN_TOPIC_OR_PARTITION.
KNOWN_PARTITIONS = tuple((topic, index) for topic in ("t", "u") for index in range(8))


class Driver:
    """A GroupCoordinatorCore with a fake clock and a fake offsets log; ``answers`` maps request id
    to response. Appends are acknowledged at once unless ``auto_ack`` is False."""

    def __init__(self, config: dict | None = None, now_ms: int = 0, own=range(PARTITIONS), auto_ack=True,
                 known_partitions=KNOWN_PARTITIONS):
        settings = {"offsets.topic.num.partitions": PARTITIONS,
                    "group.initial.rebalance.delay.ms": INITIAL_DELAY_MS, **(config or {})}
        self.now_ms = now_ms
        self.core = GroupCoordinatorCore(broker_id=1, now_ms=now_ms, config=settings,
                                         member_id_random=random.Random(42))
        self.answers: dict[int, object] = {}
        self.timers: list[int] = []
        self.unacked: list[OffsetsLogAppendRequest] = []
        self.log: dict[int, list[tuple[bytes, bytes | None]]] = {p: [] for p in range(PARTITIONS)}
        self.auto_ack = auto_ack
        self._ids = itertools.count(1)
        if known_partitions is not None:
            self.apply(self.core.on_metadata_update(CoordinatorMetadataUpdate(
                version=(0, 1), partitions=tuple(known_partitions)), now_ms))
        for partition in own:
            self.core.begin_loading(partition)
            self.apply(self.core.on_become_leader(partition, [], now_ms))

    def apply(self, effects) -> None:
        sends = []
        for effect in effects:
            if isinstance(effect, Respond):
                assert effect.request_id not in self.answers, "a request was answered twice"
                self.answers[effect.request_id] = effect.response
            elif isinstance(effect, Send):
                assert effect.destination == OFFSETS_LOG_DESTINATION
                sends.append(effect.message)
            elif isinstance(effect, ArmTimer):
                self.timers.append(effect.deadline_ms)
        self.unacked += sends
        if self.auto_ack:
            self.ack_all()

    def ack(self, append: OffsetsLogAppendRequest, error: ErrorCode = ErrorCode.NONE) -> None:
        self.unacked.remove(append)
        base_offset = -1
        if error is ErrorCode.NONE:
            base_offset = len(self.log[append.partition])
            self.log[append.partition] += list(append.records)
        response = OffsetsLogAppendResponse(append_id=append.append_id, partition=append.partition,
                                            error_code=error, base_offset=base_offset)
        self.apply(self.core.on_offsets_log_response(append, response, self.now_ms))

    def ack_all(self, error: ErrorCode = ErrorCode.NONE) -> None:
        while self.unacked:
            self.ack(self.unacked[0], error)

    def call(self, handler: str, request, **kwargs) -> int:
        request_id = next(self._ids)
        self.apply(getattr(self.core, handler)(request_id, request, self.now_ms, **kwargs))
        return request_id

    def ask(self, handler: str, request, **kwargs):
        request_id = self.call(handler, request, **kwargs)
        assert request_id in self.answers, f"{handler} was parked, not answered"
        return self.answers[request_id]

    def advance(self, ms: int) -> None:
        """Move the clock, ticking at every deadline on the way, as the shell's timers would."""
        target = self.now_ms + ms
        while (deadline := self.core.next_deadline_ms()) is not None and deadline <= target:
            self.now_ms = max(self.now_ms, deadline)
            self.apply(self.core.tick(self.now_ms))
        self.now_ms = target
        self.apply(self.core.tick(self.now_ms))

    # ---------------------------------------------------------------------------- requests
    def join(self, group="g", member_id="", protocols=PROTOCOLS, protocol_type="consumer",
             session_ms=SESSION_MS, rebalance_ms=REBALANCE_MS) -> int:
        return self.call("handle_join_group", JoinGroupRequest(
            group_id=group, member_id=member_id, protocol_type=protocol_type, protocols=protocols,
            session_timeout_ms=session_ms, rebalance_timeout_ms=rebalance_ms, client_id="client"))

    def dynamic_join(self, group="g", **kwargs) -> int:
        """KIP-394's two steps: MEMBER_ID_REQUIRED, then the parked join with the new id."""
        first = self.answers[self.join(group, **kwargs)]
        assert first.error_code == ErrorCode.MEMBER_ID_REQUIRED and first.member_id
        return self.join(group, member_id=first.member_id, **kwargs)

    def sync(self, group, generation, member_id, assignments=None) -> int:
        return self.call("handle_sync_group", SyncGroupRequest(
            group_id=group, generation_id=generation, member_id=member_id,
            assignments=tuple(SyncGroupRequestAssignment(member_id=m, assignment=a)
                              for m, a in (assignments or {}).items())))

    def heartbeat(self, group, member_id, generation) -> ErrorCode:
        return self.ask("handle_heartbeat", HeartbeatRequest(
            group_id=group, generation_id=generation, member_id=member_id)).error_code

    def commit(self, group, offsets, member_id="", generation=-1, **kwargs) -> int:
        topics = {}
        for (topic, partition), offset in offsets.items():
            topics.setdefault(topic, []).append(OffsetCommitRequestPartition(
                partition_index=partition, committed_offset=offset, **kwargs))
        return self.call("handle_offset_commit", OffsetCommitRequest(
            group_id=group, generation_id=generation, member_id=member_id,
            topics=tuple(OffsetCommitRequestTopic(name=t, partitions=tuple(p)) for t, p in topics.items())))

    def commit_errors(self, request_id) -> dict:
        return {(t.name, p.partition_index): p.error_code
                for t in self.answers[request_id].topics for p in t.partitions}

    def fetch(self, group, partitions=None):
        topics = None
        if partitions is not None:
            by_topic = {}
            for topic, index in partitions:
                by_topic.setdefault(topic, []).append(index)
            topics = tuple(OffsetFetchRequestTopic(name=t, partition_indexes=tuple(i)) for t, i in by_topic.items())
        response = self.ask("handle_offset_fetch", OffsetFetchRequest(group_id=group, topics=topics))
        return response.error_code, {(t.name, p.partition_index): p.committed_offset
                                     for t in response.topics for p in t.partitions}

    def leave(self, group, *member_ids):
        return self.ask("handle_leave_group", LeaveGroupRequest(
            group_id=group, members=tuple(MemberIdentity(member_id=m) for m in member_ids)))

    def describe(self, *groups):
        return self.ask("handle_describe_groups", DescribeGroupsRequest(groups=groups)).groups

    def state(self, group="g") -> GroupState | None:
        cached = self.core.groups.get(group)
        return None if cached is None else cached.state

    def stable_group(self, group="g", members=1):
        """Join ``members`` members and sync; returns (member ids in join order, generation)."""
        joins = [self.dynamic_join(group) for _ in range(members)]
        self.advance(JOIN_WAIT_MS)
        results = [self.answers[j] for j in joins]
        assert all(r.error_code == ErrorCode.NONE for r in results), results
        leader, generation = results[0].leader, results[0].generation_id
        syncs = [self.sync(group, generation, r.member_id,
                           {m.member_id: m.member_id.encode() for m in r.members} if r.member_id == leader else None)
                 for r in results]
        assert all(self.answers[s].error_code == ErrorCode.NONE for s in syncs)
        assert self.state(group) is GroupState.STABLE
        return [r.member_id for r in results], generation


def group_in_partition(partition: int, prefix: str = "group") -> str:
    core = GroupCoordinatorCore(broker_id=0, now_ms=0, config={"offsets.topic.num.partitions": PARTITIONS})
    return next(f"{prefix}-{i}" for i in itertools.count() if core.partition_for(f"{prefix}-{i}") == partition)


# ------------------------------------------------------------------------------------- JoinGroup
def test_unknown_member_gets_member_id_required_then_joins_as_leader_of_generation_1():
    driver = Driver()
    first = driver.answers[driver.join()]
    assert first.error_code == ErrorCode.MEMBER_ID_REQUIRED
    assert first.member_id.startswith("client-")
    assert driver.state() is GroupState.EMPTY
    join = driver.join(member_id=first.member_id)
    assert join not in driver.answers  # parked for the initial rebalance delay
    assert driver.state() is GroupState.PREPARING_REBALANCE
    driver.advance(INITIAL_DELAY_MS)
    result = driver.answers[join]
    assert (result.error_code, result.generation_id, result.leader, result.member_id) == \
        (ErrorCode.NONE, 1, first.member_id, first.member_id)
    assert (result.protocol_type, result.protocol_name) == ("consumer", "range")
    assert [(m.member_id, m.metadata) for m in result.members] == [(first.member_id, PROTOCOLS[0].metadata)]
    assert driver.state() is GroupState.COMPLETING_REBALANCE


def test_join_with_a_member_id_to_an_unknown_group_is_unknown_member():
    driver = Driver()
    assert driver.answers[driver.join(member_id="made-up")].error_code == ErrorCode.UNKNOWN_MEMBER_ID
    assert driver.state() is None


OTHER = (JoinGroupRequestProtocol(name="roundrobin", metadata=b"x"),)
# (case, join arguments, expected error); each against a new group
BAD_JOINS = [
    ("session timeout below group.min.session.timeout.ms", dict(session_ms=5999), ErrorCode.INVALID_SESSION_TIMEOUT),
    ("session timeout above group.max.session.timeout.ms", dict(session_ms=1_800_001), ErrorCode.INVALID_SESSION_TIMEOUT),
    ("empty group id", dict(group=""), ErrorCode.INVALID_GROUP_ID),
    ("empty protocol type", dict(protocol_type=""), ErrorCode.INCONSISTENT_GROUP_PROTOCOL),
    ("no protocols", dict(protocols=()), ErrorCode.INCONSISTENT_GROUP_PROTOCOL),
]


@pytest.mark.parametrize("case,kwargs,expected", BAD_JOINS, ids=[c[0] for c in BAD_JOINS])
def test_bad_join_gets_kafkas_error(case, kwargs, expected):
    driver = Driver()
    assert driver.answers[driver.join(**kwargs)].error_code == expected


@pytest.mark.parametrize("kwargs", [dict(protocol_type="connect"), dict(protocols=OTHER)],
                         ids=["other protocol type", "no common protocol"])
@pytest.mark.parametrize("known_member", [False, True], ids=["new member", "existing member"])
def test_join_inconsistent_with_the_group_is_inconsistent_group_protocol(kwargs, known_member):
    driver = Driver()
    (member,), _ = driver.stable_group()
    answer = driver.answers[driver.join(member_id=member if known_member else "", **kwargs)]
    assert answer.error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    assert driver.state() is GroupState.STABLE


def test_generation_increments_with_every_rebalance_and_the_first_member_leads():
    driver = Driver()
    (leader,), generation = driver.stable_group()
    assert generation == 1
    for expected_generation in (2, 4):  # a join, then a leave: two rebalances per round
        other = driver.dynamic_join()
        rejoin = driver.join(member_id=leader)
        assert driver.answers[rejoin].generation_id == expected_generation
        assert driver.answers[rejoin].leader == leader
        assert len(driver.answers[rejoin].members) == 2 and driver.answers[other].members == ()
        follower = driver.answers[other].member_id
        driver.sync("g", expected_generation, follower)
        driver.sync("g", expected_generation, leader, {leader: b"a", follower: b"b"})
        driver.leave("g", follower)
        driver.advance(1)
        rejoin = driver.join(member_id=leader)
        driver.sync("g", driver.answers[rejoin].generation_id, leader, {leader: b"a"})
    assert driver.core.groups["g"].generation_id == 5


def test_protocol_is_chosen_by_vote_among_protocols_every_member_supports():
    driver = Driver()
    both = (JoinGroupRequestProtocol(name="range", metadata=b"r"), JoinGroupRequestProtocol(name="sticky", metadata=b"s"))
    sticky_first = (both[1], both[0])
    joins = [driver.dynamic_join(protocols=p) for p in (both, sticky_first, sticky_first)]
    driver.advance(JOIN_WAIT_MS)
    assert {driver.answers[j].protocol_name for j in joins} == {"sticky"}
    assert [m.metadata for m in driver.answers[joins[0]].members] == [b"s", b"s", b"s"]


def test_initial_rebalance_delay_waits_and_extends_while_members_arrive():
    driver = Driver(config={"group.initial.rebalance.delay.ms": 3000})
    first = driver.dynamic_join(rebalance_ms=10_000)
    assert 3000 in driver.timers
    driver.advance(1000)
    second = driver.dynamic_join(rebalance_ms=10_000)
    driver.advance(1999)
    assert first not in driver.answers  # t=2999
    driver.advance(1)  # t=3000: a member arrived during the delay, so wait another 3000
    assert first not in driver.answers and second not in driver.answers
    driver.advance(3000)
    assert driver.answers[first].generation_id == driver.answers[second].generation_id == 1


def test_initial_rebalance_delay_extensions_are_bounded_by_the_rebalance_timeout():
    driver = Driver(config={"group.initial.rebalance.delay.ms": 3000})
    first = driver.dynamic_join(rebalance_ms=7000)
    driver.advance(1000)
    driver.dynamic_join(rebalance_ms=7000)  # extends the delay to 6000
    driver.advance(3000)
    driver.dynamic_join(rebalance_ms=7000)  # extends it once more, but only to 7000
    driver.advance(2999)
    assert first not in driver.answers
    driver.advance(1)
    assert driver.answers[first].error_code == ErrorCode.NONE and driver.now_ms == 7000


def test_pending_member_that_never_rejoins_is_forgotten_after_its_session_timeout():
    driver = Driver()
    (leader,), _ = driver.stable_group()
    pending = driver.answers[driver.join()].member_id
    rejoin = driver.join(member_id=leader)  # PreparingRebalance, waiting for the pending member
    assert rejoin not in driver.answers
    driver.advance(SESSION_MS)
    assert driver.answers[rejoin].error_code == ErrorCode.NONE
    assert pending not in driver.core.groups["g"].pending_members
    assert driver.answers[driver.join(member_id=pending)].error_code == ErrorCode.UNKNOWN_MEMBER_ID


def test_new_member_join_times_out_after_the_new_member_timeout():
    driver = Driver(config={"raykafka.group.new.member.join.timeout.ms": 5000})
    (old,), generation = driver.stable_group()
    new_join = driver.dynamic_join(rebalance_ms=60_000)
    for _ in range(5):  # the old member heartbeats but does not rejoin
        driver.advance(1000)
        assert driver.heartbeat("g", old, generation) == ErrorCode.REBALANCE_IN_PROGRESS
    assert driver.answers[new_join].error_code == ErrorCode.UNKNOWN_MEMBER_ID
    assert len(driver.core.groups["g"].members) == 1


def test_a_newer_join_from_the_same_member_supersedes_the_parked_one():
    driver = Driver()
    (leader, follower), generation = driver.stable_group(members=2)
    first = driver.join(member_id=leader)
    second = driver.join(member_id=leader)
    assert driver.answers[first].error_code == ErrorCode.REBALANCE_IN_PROGRESS
    driver.join(member_id=follower)
    assert driver.answers[second].generation_id == generation + 1


def test_unchanged_follower_rejoining_a_stable_group_does_not_rebalance():
    driver = Driver()
    (leader, follower), generation = driver.stable_group(members=2)
    answer = driver.answers[driver.join(member_id=follower)]
    assert (answer.error_code, answer.generation_id, answer.leader, answer.members) == \
        (ErrorCode.NONE, generation, leader, ())
    assert driver.state() is GroupState.STABLE


def test_changed_follower_or_rejoining_leader_triggers_a_rebalance():
    changed = (JoinGroupRequestProtocol(name="range", metadata=subscription_metadata("range", ["t", "u"])),)
    for who, protocols in (("follower", changed), ("leader", PROTOCOLS)):
        driver = Driver()
        (leader, follower), _ = driver.stable_group(members=2)
        join = driver.join(member_id=follower if who == "follower" else leader, protocols=protocols)
        assert join not in driver.answers and driver.state() is GroupState.PREPARING_REBALANCE, who


def test_member_repeating_its_join_during_completing_rebalance_gets_the_same_answer():
    driver = Driver()
    joins = [driver.dynamic_join() for _ in range(2)]
    driver.advance(JOIN_WAIT_MS)
    leader = driver.answers[joins[0]]
    again = driver.answers[driver.join(member_id=leader.member_id)]
    assert (again.generation_id, again.leader, again.members) == (leader.generation_id, leader.leader, leader.members)
    assert driver.state() is GroupState.COMPLETING_REBALANCE


def test_group_max_size_refuses_new_members():
    driver = Driver(config={"group.max.size": 2})
    driver.stable_group(members=2)
    answer = driver.answers[driver.join()]
    assert (answer.error_code, answer.member_id) == (ErrorCode.GROUP_MAX_SIZE_REACHED, "")


# ------------------------------------------------------------------------------------- SyncGroup
def test_sync_hands_out_the_leaders_assignment_once_it_is_in_the_log():
    driver = Driver(auto_ack=False)
    joins = [driver.dynamic_join() for _ in range(2)]
    driver.advance(JOIN_WAIT_MS)
    leader, follower = (driver.answers[j].member_id for j in joins)
    follower_sync = driver.sync("g", 1, follower)
    leader_sync = driver.sync("g", 1, leader, {leader: b"L", follower: b"F"})
    assert follower_sync not in driver.answers and leader_sync not in driver.answers
    assert len(driver.unacked) == 1 and driver.state() is GroupState.COMPLETING_REBALANCE
    driver.ack_all()
    assert driver.answers[leader_sync].assignment == b"L"
    assert driver.answers[follower_sync].assignment == b"F"
    assert driver.answers[follower_sync].protocol_name == "range"
    assert driver.state() is GroupState.STABLE
    # A Stable group answers a repeated SyncGroup at once.
    assert driver.answers[driver.sync("g", 1, follower)].assignment == b"F"


def test_members_waiting_in_sync_outlive_their_session_and_are_timed_again_after_it():
    driver = Driver(auto_ack=False, config={"offsets.commit.timeout.ms": 4 * SESSION_MS})
    joins = [driver.dynamic_join() for _ in range(2)]
    driver.advance(JOIN_WAIT_MS)
    leader, follower = (driver.answers[j].member_id for j in joins)
    syncs = [driver.sync("g", 1, follower), driver.sync("g", 1, leader, {leader: b"L", follower: b"F"})]
    driver.advance(2 * SESSION_MS)  # the group write is slow: parked members are kept alive
    assert driver.state() is GroupState.COMPLETING_REBALANCE
    driver.ack_all()
    assert [driver.answers[s].assignment for s in syncs] == [b"F", b"L"]
    driver.advance(SESSION_MS - 1)
    assert driver.heartbeat("g", leader, 1) == ErrorCode.NONE  # the follower stays silent
    driver.advance(1)
    assert list(driver.core.groups["g"].members) == [leader]


@pytest.mark.parametrize("append_error,expected", [
    (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.NOT_COORDINATOR),
    (ErrorCode.NOT_ENOUGH_REPLICAS, ErrorCode.COORDINATOR_NOT_AVAILABLE),
    (ErrorCode.REQUEST_TIMED_OUT, ErrorCode.REBALANCE_IN_PROGRESS),
    (ErrorCode.MESSAGE_TOO_LARGE, ErrorCode.UNKNOWN_SERVER_ERROR),
])
def test_failed_group_write_fails_the_syncs_and_rebalances(append_error, expected):
    driver = Driver(auto_ack=False)
    joins = [driver.dynamic_join() for _ in range(2)]
    driver.advance(JOIN_WAIT_MS)
    leader, follower = (driver.answers[j].member_id for j in joins)
    syncs = [driver.sync("g", 1, follower), driver.sync("g", 1, leader, {leader: b"L", follower: b"F"})]
    driver.ack_all(append_error)
    assert [(driver.answers[s].error_code, driver.answers[s].assignment) for s in syncs] == [(expected, b"")] * 2
    assert driver.state() is GroupState.PREPARING_REBALANCE


BAD_SYNCS = [
    ("unknown group", dict(group_id="nope"), ErrorCode.UNKNOWN_MEMBER_ID),
    ("unknown member", dict(member_id="stranger"), ErrorCode.UNKNOWN_MEMBER_ID),
    ("old generation", dict(generation_id=0), ErrorCode.ILLEGAL_GENERATION),
    ("other protocol type", dict(protocol_type="connect"), ErrorCode.INCONSISTENT_GROUP_PROTOCOL),
    ("other protocol", dict(protocol_name="sticky"), ErrorCode.INCONSISTENT_GROUP_PROTOCOL),
    ("empty group id", dict(group_id=""), ErrorCode.INVALID_GROUP_ID),
]


@pytest.mark.parametrize("case,fields,expected", BAD_SYNCS, ids=[c[0] for c in BAD_SYNCS])
def test_bad_sync_is_refused(case, fields, expected):
    driver = Driver()
    (leader,), generation = driver.stable_group()
    request = {"group_id": "g", "generation_id": generation, "member_id": leader, **fields}
    assert driver.ask("handle_sync_group", SyncGroupRequest(**request)).error_code == expected


def test_sync_during_preparing_rebalance_is_rebalance_in_progress():
    driver = Driver()
    (leader, follower), generation = driver.stable_group(members=2)
    driver.join(member_id=leader)
    assert driver.answers[driver.sync("g", generation, follower)].error_code == ErrorCode.REBALANCE_IN_PROGRESS


@pytest.mark.parametrize("new_group", [False, True], ids=["old leader", "new leader"])
def test_leader_failure_during_sync_sends_followers_back_to_rejoin(new_group):
    driver = Driver()
    if new_group:  # both members are new: the leader's session starts with its JoinGroup answer
        joins = [driver.dynamic_join() for _ in range(2)]
        driver.advance(JOIN_WAIT_MS)
        leader, follower = (driver.answers[j].member_id for j in joins)
        generation = driver.answers[joins[0]].generation_id
    else:
        (leader,), _ = driver.stable_group()
        other = driver.dynamic_join()
        rejoin = driver.join(member_id=leader)
        generation = driver.answers[rejoin].generation_id
        follower = driver.answers[other].member_id
    follower_sync = driver.sync("g", generation, follower)  # the leader never syncs
    driver.advance(SESSION_MS - 1)
    assert follower_sync not in driver.answers
    driver.advance(1)
    assert driver.answers[follower_sync].error_code == ErrorCode.REBALANCE_IN_PROGRESS
    assert driver.state() is GroupState.PREPARING_REBALANCE
    assert leader not in driver.core.groups["g"].members


# ------------------------------------------------------------------------------------- Heartbeat
def test_heartbeat_answers():
    driver = Driver()
    assert driver.heartbeat("nope", "m", 1) == ErrorCode.UNKNOWN_MEMBER_ID  # unknown group
    (leader, follower), generation = driver.stable_group(members=2)
    assert driver.heartbeat("g", leader, generation) == ErrorCode.NONE
    assert driver.heartbeat("g", "stranger", generation) == ErrorCode.UNKNOWN_MEMBER_ID
    assert driver.heartbeat("g", leader, generation + 1) == ErrorCode.ILLEGAL_GENERATION
    assert driver.heartbeat("", leader, generation) == ErrorCode.INVALID_GROUP_ID
    driver.join(member_id=leader)  # PreparingRebalance
    assert driver.heartbeat("g", follower, generation) == ErrorCode.REBALANCE_IN_PROGRESS
    driver.join(member_id=follower)  # CompletingRebalance
    assert driver.heartbeat("g", follower, generation + 1) == ErrorCode.REBALANCE_IN_PROGRESS


def test_heartbeats_keep_a_member_alive_and_silence_expels_it():
    driver = Driver()
    (member,), generation = driver.stable_group()
    for _ in range(5):
        driver.advance(SESSION_MS // 2)
        assert driver.heartbeat("g", member, generation) == ErrorCode.NONE
    driver.advance(SESSION_MS)
    assert driver.state() is GroupState.EMPTY
    assert driver.core.groups["g"].generation_id == generation + 1
    assert driver.heartbeat("g", member, generation) == ErrorCode.UNKNOWN_MEMBER_ID


def test_session_timeout_during_rebalance_expels_the_silent_member():
    driver = Driver()
    (first,), generation = driver.stable_group()
    other = driver.dynamic_join()
    driver.advance(SESSION_MS // 2)
    assert driver.heartbeat("g", first, generation) == ErrorCode.REBALANCE_IN_PROGRESS
    driver.advance(SESSION_MS)  # the first member's session runs out before it rejoins
    answer = driver.answers[other]
    assert (answer.error_code, answer.generation_id, answer.leader) == (ErrorCode.NONE, generation + 1, answer.member_id)
    assert driver.heartbeat("g", first, answer.generation_id) == ErrorCode.UNKNOWN_MEMBER_ID


def test_rebalance_timeout_expels_members_that_did_not_rejoin():
    driver = Driver()
    (leader, follower), generation = driver.stable_group(members=2)
    rejoin = driver.join(member_id=leader)
    for _ in range(REBALANCE_MS // 5000):  # the follower keeps heartbeating but never rejoins
        driver.advance(5000)
        driver.heartbeat("g", follower, generation)
    assert driver.answers[rejoin].generation_id == generation + 1
    assert list(driver.core.groups["g"].members) == [leader]


# ------------------------------------------------------------------------------------ LeaveGroup
def test_leave_from_an_empty_group_or_an_unknown_group_is_unknown_member():
    driver = Driver()
    driver.commit("g", {("t", 0): 1})  # an Empty group holding offsets
    for group in ("g", "nope"):
        answer = driver.leave(group, "m")
        assert answer.error_code == ErrorCode.NONE
        assert [m.error_code for m in answer.members] == [ErrorCode.UNKNOWN_MEMBER_ID]


def test_leave_of_the_only_member_of_a_stable_group_empties_it():
    driver = Driver()
    (member,), generation = driver.stable_group()
    driver.unacked.clear()
    assert [m.error_code for m in driver.leave("g", member).members] == [ErrorCode.NONE]
    group = driver.core.groups["g"]
    assert (group.state, group.generation_id, group.leader_id, group.protocol_name) == \
        (GroupState.EMPTY, generation + 1, None, None)
    empty_record = rec.decode_group_metadata_value(driver.log[driver.core.partition_for("g")][-1][1])
    assert (empty_record.generation_id, empty_record.members) == (generation + 1, ())


def test_leave_while_preparing_rebalance_completes_the_rebalance_for_those_who_rejoined():
    driver = Driver()
    (leader, stays, leaves), generation = driver.stable_group(members=3)
    joins = [driver.join(member_id=leader), driver.join(member_id=stays)]
    assert not any(j in driver.answers for j in joins)
    assert [m.error_code for m in driver.leave("g", leaves).members] == [ErrorCode.NONE]
    answers = [driver.answers[j] for j in joins]
    assert [(a.error_code, a.generation_id, a.leader) for a in answers] == [(ErrorCode.NONE, generation + 1, leader)] * 2
    assert list(driver.core.groups["g"].members) == [leader, stays]


def test_leave_of_a_member_with_a_parked_join_answers_it_unknown_member():
    driver = Driver()
    (leader, follower), _ = driver.stable_group(members=2)
    leader_join = driver.join(member_id=leader)
    driver.leave("g", leader)
    assert driver.answers[leader_join].error_code == ErrorCode.UNKNOWN_MEMBER_ID


def test_leader_leaving_during_completing_rebalance_sends_followers_back_to_rejoin():
    driver = Driver()
    joins = [driver.dynamic_join() for _ in range(2)]
    driver.advance(JOIN_WAIT_MS)
    leader, follower = (driver.answers[j].member_id for j in joins)
    follower_sync = driver.sync("g", 1, follower)
    driver.leave("g", leader)
    assert driver.answers[follower_sync].error_code == ErrorCode.REBALANCE_IN_PROGRESS
    assert driver.state() is GroupState.PREPARING_REBALANCE


def test_pending_member_may_leave_and_stops_blocking_the_rebalance():
    driver = Driver()
    (leader,), _ = driver.stable_group()
    pending = driver.answers[driver.join()].member_id
    rejoin = driver.join(member_id=leader)
    assert rejoin not in driver.answers
    assert [m.error_code for m in driver.leave("g", pending).members] == [ErrorCode.NONE]
    assert driver.answers[rejoin].error_code == ErrorCode.NONE


# ---------------------------------------------------------------------------------- OffsetCommit
def test_simple_consumer_commits_on_a_new_group_and_fetches_them_back():
    driver = Driver()
    commit = driver.commit("g", {("t", 0): 10, ("t", 1): 20, ("u", 0): 5})
    assert set(driver.commit_errors(commit).values()) == {ErrorCode.NONE}
    assert driver.state() is GroupState.EMPTY and driver.core.groups["g"].generation_id == 0
    assert driver.fetch("g", [("t", 0), ("t", 1), ("t", 2)]) == (ErrorCode.NONE, {("t", 0): 10, ("t", 1): 20, ("t", 2): -1})
    assert driver.fetch("g") == (ErrorCode.NONE, {("t", 0): 10, ("t", 1): 20, ("u", 0): 5})
    assert driver.fetch("unknown", [("t", 0)]) == (ErrorCode.NONE, {("t", 0): -1})


def test_commit_is_visible_only_once_the_log_acknowledged_it():
    driver = Driver(auto_ack=False)
    commit = driver.commit("g", {("t", 0): 10})
    assert commit not in driver.answers
    assert driver.fetch("g", [("t", 0)])[1] == {("t", 0): -1}
    driver.ack_all()
    assert driver.commit_errors(commit) == {("t", 0): ErrorCode.NONE}
    assert driver.fetch("g", [("t", 0)])[1] == {("t", 0): 10}


def test_member_commits_with_the_current_generation_and_stale_ones_are_refused():
    driver = Driver()
    (leader, follower), generation = driver.stable_group(members=2)
    cases = [
        (dict(member_id=leader, generation=generation), ErrorCode.NONE),
        (dict(member_id=leader, generation=generation - 1), ErrorCode.ILLEGAL_GENERATION),
        (dict(member_id="stranger", generation=generation), ErrorCode.UNKNOWN_MEMBER_ID),
        (dict(member_id="", generation=-1), ErrorCode.UNKNOWN_MEMBER_ID),  # not Empty: no simple commits
    ]
    for kwargs, expected in cases:
        assert driver.commit_errors(driver.commit("g", {("t", 0): 7}, **kwargs)) == {("t", 0): expected}, kwargs
    driver.join(member_id=leader)  # PreparingRebalance: a member may still commit
    assert driver.commit_errors(driver.commit("g", {("t", 0): 8}, member_id=follower, generation=generation)) == \
        {("t", 0): ErrorCode.NONE}
    driver.join(member_id=follower)  # CompletingRebalance
    assert driver.commit_errors(driver.commit("g", {("t", 0): 9}, member_id=follower, generation=generation + 1)) == \
        {("t", 0): ErrorCode.REBALANCE_IN_PROGRESS}
    assert driver.fetch("g", [("t", 0)])[1] == {("t", 0): 8}


def test_commit_with_a_generation_to_an_unknown_group_is_illegal_generation():
    driver = Driver()
    assert driver.commit_errors(driver.commit("g", {("t", 0): 1}, member_id="m", generation=3)) == \
        {("t", 0): ErrorCode.ILLEGAL_GENERATION}
    assert driver.state() is None


@pytest.mark.parametrize("append_error,expected", [
    (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.NOT_COORDINATOR),
    (ErrorCode.KAFKA_STORAGE_ERROR, ErrorCode.NOT_COORDINATOR),
    (ErrorCode.NOT_ENOUGH_REPLICAS, ErrorCode.COORDINATOR_NOT_AVAILABLE),
    (ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND, ErrorCode.COORDINATOR_NOT_AVAILABLE),
    (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.COORDINATOR_NOT_AVAILABLE),
    (ErrorCode.RECORD_LIST_TOO_LARGE, ErrorCode.INVALID_COMMIT_OFFSET_SIZE),
    (ErrorCode.REQUEST_TIMED_OUT, ErrorCode.REQUEST_TIMED_OUT),
])
def test_failed_offset_write_answers_kafkas_mapped_error_and_commits_nothing(append_error, expected):
    driver = Driver(auto_ack=False)
    commit = driver.commit("g", {("t", 0): 1})
    driver.ack_all(append_error)
    assert driver.commit_errors(commit) == {("t", 0): expected}
    assert driver.fetch("g", [("t", 0)])[1] == {("t", 0): -1}
    assert not driver.core.groups["g"].pending_offset_commits


def test_lost_offset_write_times_out_and_a_late_answer_is_ignored():
    driver = Driver(auto_ack=False, config={"offsets.commit.timeout.ms": 1000})
    commit = driver.commit("g", {("t", 0): 1})
    append = driver.unacked[0]
    driver.advance(1999)
    assert commit not in driver.answers
    driver.advance(1)
    assert driver.commit_errors(commit) == {("t", 0): ErrorCode.REQUEST_TIMED_OUT}
    driver.ack(append)  # too late: already answered, and not answered twice
    assert driver.fetch("g", [("t", 0)])[1] == {("t", 0): -1}


def test_oversized_metadata_is_refused_per_partition():
    driver = Driver(config={"offset.metadata.max.bytes": 4})
    commit = driver.call("handle_offset_commit", OffsetCommitRequest(group_id="g", topics=(
        OffsetCommitRequestTopic(name="t", partitions=(
            OffsetCommitRequestPartition(partition_index=0, committed_offset=1, committed_metadata="toolong"),
            OffsetCommitRequestPartition(partition_index=1, committed_offset=2, committed_metadata="ok"))),)))
    assert driver.commit_errors(commit) == {("t", 0): ErrorCode.OFFSET_METADATA_TOO_LARGE, ("t", 1): ErrorCode.NONE}
    assert driver.fetch("g")[1] == {("t", 1): 2}
    only_large = driver.commit("g", {("t", 2): 1}, committed_metadata="toolong")
    assert driver.commit_errors(only_large) == {("t", 2): ErrorCode.OFFSET_METADATA_TOO_LARGE}


def test_offset_commits_are_bounded_by_the_purgatory_size():
    driver = Driver(auto_ack=False, config={"raykafka.purgatory.max.size": 2})
    commits = [driver.commit("g", {("t", 0): offset}) for offset in range(3)]
    assert driver.commit_errors(commits[2]) == {("t", 0): ErrorCode.COORDINATOR_NOT_AVAILABLE}
    driver.ack_all()
    assert driver.fetch("g", [("t", 0)])[1] == {("t", 0): 1}  # the later write wins


# ---------------------------------------------------------------------------- Describe and List
def test_describe_reports_state_protocol_and_members_as_kafka_does():
    driver = Driver()
    (leader, follower), _ = driver.stable_group(members=2)
    described, unknown = driver.describe("g", "nope")
    assert (described.error_code, described.group_state, described.protocol_type, described.protocol_data) == \
        (ErrorCode.NONE, "Stable", "consumer", "range")
    assert [(m.member_id, m.client_id, m.member_assignment) for m in described.members] == \
        [(leader, "client", leader.encode()), (follower, "client", follower.encode())]
    assert all(m.member_metadata == PROTOCOLS[0].metadata for m in described.members)
    assert (unknown.error_code, unknown.group_state, unknown.members) == (ErrorCode.NONE, "Dead", ())
    driver.join(member_id=leader)
    (rebalancing,) = driver.describe("g")
    assert (rebalancing.group_state, rebalancing.protocol_data) == ("PreparingRebalance", "")
    assert {m.member_assignment for m in rebalancing.members} == {b""}


def test_list_groups_reports_every_cached_group_with_its_state():
    driver = Driver()
    driver.stable_group("a")
    driver.commit("b", {("t", 0): 1})
    response = driver.ask("handle_list_groups", ListGroupsRequest())
    assert response.error_code == ErrorCode.NONE
    assert [(g.group_id, g.protocol_type, g.group_state) for g in response.groups] == \
        [("a", "consumer", "Stable"), ("b", "", "Empty")]
    filtered = driver.ask("handle_list_groups", ListGroupsRequest(states_filter=("stable",)))
    assert [g.group_id for g in filtered.groups] == ["a"]


def test_delete_groups_deletes_only_empty_groups():
    driver = Driver()
    driver.stable_group("busy")
    driver.commit("idle", {("t", 0): 1})
    results = driver.ask("handle_delete_groups", DeleteGroupsRequest(groups_names=("busy", "idle", "nope")))
    assert {r.group_id: r.error_code for r in results.results} == {
        "busy": ErrorCode.NON_EMPTY_GROUP, "idle": ErrorCode.NONE, "nope": ErrorCode.GROUP_ID_NOT_FOUND}
    assert "idle" not in driver.core.groups
    assert driver.log[driver.core.partition_for("idle")][-1] == (rec.offset_commit_key("idle", ("t", 0)), None)


# ----------------------------------------------------------------------------- expiry and cleanup
RETENTION = {"offsets.retention.minutes": 1, "offsets.retention.check.interval.ms": 1000}


def test_offsets_of_an_empty_group_expire_and_the_group_dies_with_tombstones():
    driver = Driver(config=RETENTION)
    (member,), generation = driver.stable_group()
    driver.commit("g", {("t", 0): 5}, member_id=member, generation=generation)
    driver.leave("g", member)
    emptied_at = driver.now_ms
    driver.advance(59_000)
    assert driver.fetch("g", [("t", 0)])[1] == {("t", 0): 5}
    driver.advance(60_000 - (driver.now_ms - emptied_at) + 1000)
    assert driver.state() is None
    partition_log = driver.log[driver.core.partition_for("g")]
    assert partition_log[-2:] == [(rec.offset_commit_key("g", ("t", 0)), None), (rec.group_metadata_key("g"), None)]


def test_offsets_of_a_stable_group_do_not_expire():
    driver = Driver(config=RETENTION)
    (member,), generation = driver.stable_group()
    driver.commit("g", {("t", 0): 5}, member_id=member, generation=generation)
    for _ in range(20):  # twice the retention
        driver.advance(SESSION_MS // 2)
        assert driver.heartbeat("g", member, generation) == ErrorCode.NONE
    assert driver.fetch("g", [("t", 0)])[1] == {("t", 0): 5}


def test_simple_consumer_offsets_expire_per_commit_and_leave_no_group_tombstone():
    driver = Driver(config=RETENTION)
    driver.commit("g", {("t", 0): 5})
    driver.advance(30_000)
    driver.commit("g", {("t", 1): 6})
    driver.advance(31_000)
    assert driver.fetch("g")[1] == {("t", 1): 6}
    driver.advance(30_000)
    assert driver.state() is None
    assert (rec.group_metadata_key("g"), None) not in driver.log[driver.core.partition_for("g")]


def test_empty_group_without_offsets_dies_at_the_next_cleanup():
    driver = Driver(config=RETENTION)
    (member,), _ = driver.stable_group()
    driver.leave("g", member)
    driver.advance(1000)
    assert driver.state() is None


# ----------------------------------------------------------------------- immigration / emigration
def test_requests_for_a_partition_being_loaded_wait_for_the_load():
    driver = Driver(own=())
    driver.core.begin_loading(driver.core.partition_for("g"))
    assert driver.answers[driver.join()].error_code == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    assert driver.commit_errors(driver.commit("g", {("t", 0): 1})) == {("t", 0): ErrorCode.COORDINATOR_LOAD_IN_PROGRESS}
    assert driver.fetch("g", [("t", 0)])[0] == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    assert driver.describe("g")[0].error_code == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    assert driver.ask("handle_list_groups", ListGroupsRequest()).error_code == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    assert driver.leave("g", "m").error_code == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    assert driver.heartbeat("g", "m", 1) == ErrorCode.NONE  # answered blindly, as Kafka does
    assert driver.answers[driver.sync("g", 1, "m")].error_code == ErrorCode.REBALANCE_IN_PROGRESS


def test_groups_of_partitions_this_broker_does_not_lead_get_not_coordinator():
    mine, theirs = group_in_partition(0), group_in_partition(1)
    driver = Driver(own=[0])
    assert driver.answers[driver.join(mine)].error_code == ErrorCode.MEMBER_ID_REQUIRED
    assert driver.answers[driver.join(theirs)].error_code == ErrorCode.NOT_COORDINATOR
    assert driver.heartbeat(theirs, "m", 1) == ErrorCode.NOT_COORDINATOR
    assert driver.answers[driver.sync(theirs, 1, "m")].error_code == ErrorCode.NOT_COORDINATOR
    assert driver.commit_errors(driver.commit(theirs, {("t", 0): 1})) == {("t", 0): ErrorCode.NOT_COORDINATOR}
    assert driver.fetch(theirs, [("t", 0)])[0] == ErrorCode.NOT_COORDINATOR
    assert driver.describe(theirs)[0].error_code == ErrorCode.NOT_COORDINATOR


def _loaded_partition_records():
    """A log as a previous coordinator left it: a Stable group, offsets, overwritten and deleted ones."""
    member = rec.MemberRecord(member_id="m1", client_id="c", client_host="h", rebalance_timeout_ms=REBALANCE_MS,
                              session_timeout_ms=SESSION_MS, subscription=PROTOCOLS[0].metadata, assignment=b"A")
    stable = rec.GroupMetadataRecord(protocol_type="consumer", generation_id=7, protocol_name="range",
                                     leader_id="m1", current_state_timestamp_ms=0, members=(member,))
    offset = rec.offset_commit_value
    return [
        (rec.group_metadata_key("g"), rec.group_metadata_value(stable)),
        (rec.offset_commit_key("g", ("t", 0)), offset(OffsetAndMetadata(offset=1, commit_timestamp_ms=0))),
        (rec.offset_commit_key("g", ("t", 0)), offset(OffsetAndMetadata(offset=2, commit_timestamp_ms=0))),
        (rec.offset_commit_key("g", ("t", 1)), offset(OffsetAndMetadata(offset=3, commit_timestamp_ms=0))),
        (rec.offset_commit_key("g", ("t", 1)), None),
        (rec.group_metadata_key("gone"), rec.group_metadata_value(stable)),
        (rec.offset_commit_key("gone", ("t", 0)), offset(OffsetAndMetadata(offset=9, commit_timestamp_ms=0))),
        (rec.group_metadata_key("gone"), None),
        (rec.offset_commit_key("gone", ("t", 0)), None),
        (rec.offset_commit_key("simple", ("t", 0)), offset(OffsetAndMetadata(offset=5, commit_timestamp_ms=0))),
        (b"\x00\x09garbage", b"ignored"),
    ]


def test_becoming_leader_loads_groups_and_offsets_with_tombstones_applied():
    driver = Driver(config={"offsets.topic.num.partitions": 1}, own=())
    driver.core.begin_loading(0)
    driver.apply(driver.core.on_become_leader(0, _loaded_partition_records(), driver.now_ms))
    group = driver.core.groups["g"]
    assert (group.state, group.generation_id, group.leader_id, list(group.members)) == \
        (GroupState.STABLE, 7, "m1", ["m1"])
    assert "gone" not in driver.core.groups
    assert driver.fetch("g")[1] == {("t", 0): 2}
    assert driver.state("simple") is GroupState.EMPTY and driver.fetch("simple")[1] == {("t", 0): 5}
    assert driver.heartbeat("g", "m1", 7) == ErrorCode.NONE
    assert driver.answers[driver.sync("g", 7, "m1")].assignment == b"A"
    driver.advance(SESSION_MS)  # the loaded member stops heartbeating
    assert driver.state() is GroupState.EMPTY


def test_a_loaded_group_over_the_size_limit_rebalances_at_once():
    old = Driver()
    (first, second), generation = old.stable_group(members=2)
    partition = old.core.partition_for("g")
    new = Driver(own=(), config={"group.max.size": 1})
    new.core.begin_loading(partition)
    new.apply(new.core.on_become_leader(partition, old.log[partition], new.now_ms))
    assert new.state() is GroupState.PREPARING_REBALANCE
    assert new.heartbeat("g", first, generation) == ErrorCode.REBALANCE_IN_PROGRESS
    assert new.answers[new.join(member_id=first)].error_code == ErrorCode.GROUP_MAX_SIZE_REACHED  # shed
    answer = new.answers[new.join(member_id=second)]
    assert (answer.error_code, answer.generation_id, answer.leader) == (ErrorCode.NONE, generation + 1, second)


def test_a_new_coordinator_resumes_from_what_the_old_one_wrote():
    old = Driver()
    (leader, follower), generation = old.stable_group(members=2)
    old.commit("g", {("t", 0): 42}, member_id=leader, generation=generation)
    partition = old.core.partition_for("g")
    new = Driver(own=())
    new.core.begin_loading(partition)
    new.apply(new.core.on_become_leader(partition, old.log[partition], new.now_ms))
    assert new.heartbeat("g", follower, generation) == ErrorCode.NONE
    assert new.answers[new.sync("g", generation, follower)].assignment == follower.encode()
    assert new.fetch("g", [("t", 0)])[1] == {("t", 0): 42}
    assert new.describe("g")[0].group_state == "Stable"


def test_resigning_answers_parked_requests_not_coordinator_and_forgets_the_groups():
    driver = Driver()
    (leader, follower), generation = driver.stable_group(members=2)
    parked_join = driver.join(member_id=leader)
    driver.stable_group("h")
    other = driver.dynamic_join("h")
    partition = driver.core.partition_for("g")
    driver.apply(driver.core.on_resign(partition))
    assert driver.answers[parked_join].error_code == ErrorCode.NOT_COORDINATOR
    assert driver.heartbeat("g", follower, generation) == ErrorCode.NOT_COORDINATOR
    assert driver.answers[driver.join(member_id=follower)].error_code == ErrorCode.NOT_COORDINATOR
    if driver.core.partition_for("h") == partition:
        assert driver.answers[other].error_code == ErrorCode.NOT_COORDINATOR
    assert "g" not in driver.core.groups


def test_resigning_answers_parked_syncs_not_coordinator():
    driver = Driver(auto_ack=False)
    joins = [driver.dynamic_join() for _ in range(2)]
    driver.advance(JOIN_WAIT_MS)
    follower_sync = driver.sync("g", 1, driver.answers[joins[1]].member_id)
    driver.apply(driver.core.on_resign(driver.core.partition_for("g")))
    assert driver.answers[follower_sync].error_code == ErrorCode.NOT_COORDINATOR


def test_a_commit_in_flight_when_resigning_is_still_answered_by_its_append():
    driver = Driver(auto_ack=False)
    commit = driver.commit("g", {("t", 0): 1})
    driver.apply(driver.core.on_resign(driver.core.partition_for("g")))
    driver.ack_all(ErrorCode.NOT_LEADER_OR_FOLLOWER)
    assert driver.commit_errors(commit) == {("t", 0): ErrorCode.NOT_COORDINATOR}


# ------------------------------------------------------------------------------------ invariants
@pytest.mark.parametrize("seed", range(20))
def test_random_member_behaviour_never_double_answers_and_leaves_nothing_parked(seed):
    """Members join, sync, heartbeat, commit, leave and go silent at random; the driver asserts that
    no request is answered twice, and after resigning nothing may still be parked."""
    rng = random.Random(seed)
    driver = Driver(auto_ack=False)
    members: dict[str, int] = {}  # member id -> last generation it saw
    requests = []
    for _ in range(300):
        action = rng.choice(["join", "rejoin", "sync", "heartbeat", "commit", "leave", "ack", "time"])
        member = rng.choice(sorted(members)) if members else None
        if action == "join" or member is None:
            answer = driver.answers[driver.join()]
            if answer.error_code == ErrorCode.MEMBER_ID_REQUIRED:
                members[answer.member_id] = -1
                requests.append(driver.join(member_id=answer.member_id))
        elif action == "rejoin":
            requests.append(driver.join(member_id=member))
        elif action == "sync":
            generation = driver.core.groups["g"].generation_id if "g" in driver.core.groups else -1
            requests.append(driver.sync("g", generation, member, {m: b"x" for m in members}))
        elif action == "heartbeat":
            driver.heartbeat("g", member, members[member])
        elif action == "commit":
            requests.append(driver.commit("g", {("t", 0): rng.randrange(100)}, member_id=member,
                                          generation=rng.choice([-1, members[member]])))
        elif action == "leave":
            driver.leave("g", member)
            del members[member]
        elif action == "ack" and driver.unacked:
            driver.ack(driver.unacked[0], rng.choice([ErrorCode.NONE, ErrorCode.NONE, ErrorCode.REQUEST_TIMED_OUT]))
        else:
            driver.advance(rng.choice([10, 100, 1000, SESSION_MS]))
        for request_id in requests:
            answer = driver.answers.get(request_id)
            if getattr(answer, "generation_id", -1) >= 0 and getattr(answer, "member_id", None) in members:
                members[answer.member_id] = answer.generation_id
        group = driver.core.groups.get("g")
        if group is not None:
            assert group.leader_id is None or group.leader_id in group.members
            assert (group.leader_id is None) == (not group.members)
            assert group.num_members_awaiting_join == sum(m.is_awaiting_join for m in group.members.values())
    driver.apply(driver.core.on_resign(driver.core.partition_for("g")))
    driver.ack_all()
    driver.advance(10 * REBALANCE_MS)
    unanswered = [r for r in requests if r not in driver.answers]
    assert not unanswered
