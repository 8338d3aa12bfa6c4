"""Static members (KIP-345) keep their place across restarts as Kafka's GroupCoordinator keeps
them: the pure coordinator is driven step by step with a fake clock and a fake
``__consumer_offsets`` log (the ``Driver`` of test_group_coordinator), restarting members by
rejoining with their ``group.instance.id`` and no member id."""
from __future__ import annotations

import random

import pytest

from actors.core.errors import ErrorCode
from actors.core.group.assignors import subscription_metadata
from actors.core.group.group_metadata import GroupState
from actors.core.messages.heartbeat import HeartbeatRequest
from actors.core.messages.join_group import JoinGroupRequest, JoinGroupRequestProtocol
from actors.core.messages.leave_group import LeaveGroupRequest, MemberIdentity
from actors.core.messages.offset_commit import (
    OffsetCommitRequest, OffsetCommitRequestPartition, OffsetCommitRequestTopic,
)
from actors.core.messages.sync_group import SyncGroupRequest
from tests.unit.test_group_coordinator import JOIN_WAIT_MS, PROTOCOLS, REBALANCE_MS, SESSION_MS, Driver


def static_join(driver: Driver, instance: str | None, member_id: str = "", protocols=PROTOCOLS) -> int:
    return driver.call("handle_join_group", JoinGroupRequest(
        group_id="g", member_id=member_id, group_instance_id=instance, protocol_type="consumer",
        protocols=protocols, session_timeout_ms=SESSION_MS, rebalance_timeout_ms=REBALANCE_MS, client_id="client"))


def static_group(driver: Driver, instances=("a", "b")):
    """Static members join and sync; returns ({instance: member id}, generation, leader member id)."""
    joins = {instance: static_join(driver, instance) for instance in instances}
    assert not any(j in driver.answers for j in joins.values()), "a static member needs no MEMBER_ID_REQUIRED round"
    driver.advance(JOIN_WAIT_MS)
    answers = {instance: driver.answers[j] for instance, j in joins.items()}
    assert all(a.error_code == ErrorCode.NONE for a in answers.values()), answers
    leader = next(iter(answers.values())).leader
    generation = next(iter(answers.values())).generation_id
    for instance, answer in answers.items():
        plan = {m.member_id: m.group_instance_id.encode() for m in answer.members} if answer.member_id == leader else {}
        sync = driver.sync("g", generation, answer.member_id, plan)
        assert driver.answers[sync].error_code == ErrorCode.NONE
    assert driver.state() is GroupState.STABLE
    return {instance: a.member_id for instance, a in answers.items()}, generation, leader


def heartbeat(driver: Driver, member_id: str, generation: int, instance: str | None) -> ErrorCode:
    return driver.ask("handle_heartbeat", HeartbeatRequest(
        group_id="g", generation_id=generation, member_id=member_id, group_instance_id=instance)).error_code


def sync(driver: Driver, member_id: str, generation: int, instance: str | None):
    return driver.ask("handle_sync_group", SyncGroupRequest(
        group_id="g", generation_id=generation, member_id=member_id, group_instance_id=instance))


def commit(driver: Driver, member_id: str, generation: int, instance: str | None) -> ErrorCode:
    answer = driver.ask("handle_offset_commit", OffsetCommitRequest(
        group_id="g", generation_id=generation, member_id=member_id, group_instance_id=instance,
        topics=(OffsetCommitRequestTopic(name="t", partitions=(
            OffsetCommitRequestPartition(partition_index=0, committed_offset=7),)),)))
    return answer.topics[0].partitions[0].error_code


def leave(driver: Driver, *members: tuple[str, str | None]):
    return driver.ask("handle_leave_group", LeaveGroupRequest(group_id="g", members=tuple(
        MemberIdentity(member_id=member_id, group_instance_id=instance) for member_id, instance in members)))


# ------------------------------------------------------------------------------- the restart
def test_a_restarted_static_member_takes_its_place_without_a_rebalance():
    driver = Driver()
    ids, generation, leader = static_group(driver)
    answer = driver.answers[static_join(driver, "b")]
    assert answer.error_code == ErrorCode.NONE
    assert (answer.generation_id, answer.leader, answer.members) == (generation, leader, ())
    assert answer.member_id not in (ids["a"], ids["b"]) and answer.member_id.startswith("b-")
    assert driver.state() is GroupState.STABLE
    assert heartbeat(driver, ids["a"], generation, "a") == ErrorCode.NONE  # the other member is untouched
    assert sync(driver, answer.member_id, generation, "b").assignment == b"b"  # its old assignment
    assert heartbeat(driver, answer.member_id, generation, "b") == ErrorCode.NONE
    assert driver.core.groups["g"].generation_id == generation


def test_a_restarted_leader_is_told_the_old_leader_id_so_it_does_not_assign():
    driver = Driver()
    ids, generation, leader = static_group(driver)
    assert leader == ids["a"]
    answer = driver.answers[static_join(driver, "a")]
    assert (answer.error_code, answer.generation_id, answer.leader, answer.members) == \
        (ErrorCode.NONE, generation, ids["a"], ())
    assert driver.core.groups["g"].leader_id == answer.member_id  # it still leads the next rebalance


@pytest.mark.parametrize("request_kind,instance,expected", [
    ("heartbeat", "b", ErrorCode.FENCED_INSTANCE_ID),
    ("sync", "b", ErrorCode.FENCED_INSTANCE_ID),
    ("commit", "b", ErrorCode.FENCED_INSTANCE_ID),
    ("join", "b", ErrorCode.FENCED_INSTANCE_ID),
    ("leave", "b", ErrorCode.FENCED_INSTANCE_ID),
    ("heartbeat", None, ErrorCode.UNKNOWN_MEMBER_ID),  # the old id is no member any more
    ("sync", None, ErrorCode.UNKNOWN_MEMBER_ID),
    ("commit", None, ErrorCode.UNKNOWN_MEMBER_ID),
    ("join", None, ErrorCode.UNKNOWN_MEMBER_ID),
    ("heartbeat", "nobody", ErrorCode.UNKNOWN_MEMBER_ID),  # an instance id nobody holds
])
def test_the_replaced_member_id_is_fenced(request_kind, instance, expected):
    driver = Driver()
    ids, generation, _ = static_group(driver)
    new_id = driver.answers[static_join(driver, "b")].member_id
    old_id = ids["b"]
    if request_kind == "heartbeat":
        error = heartbeat(driver, old_id, generation, instance)
    elif request_kind == "sync":
        error = sync(driver, old_id, generation, instance).error_code
    elif request_kind == "commit":
        error = commit(driver, old_id, generation, instance)
    elif request_kind == "join":
        error = driver.answers[static_join(driver, instance, member_id=old_id)].error_code
    else:
        error = leave(driver, (old_id, instance)).members[0].error_code
    assert error == expected
    assert driver.state() is GroupState.STABLE and driver.core.groups["g"].generation_id == generation
    assert driver.core.groups["g"].static_members == {"a": ids["a"], "b": new_id}


def test_requests_parked_under_the_old_id_are_answered_fenced():
    driver = Driver()
    ids, generation, _ = static_group(driver)
    parked = static_join(driver, "b", member_id=ids["b"], protocols=(JoinGroupRequestProtocol(
        name="range", metadata=subscription_metadata("range", ["t", "u"])),))  # changed: a rebalance
    assert parked not in driver.answers and driver.state() is GroupState.PREPARING_REBALANCE
    restarted = static_join(driver, "b")
    assert driver.answers[parked].error_code == ErrorCode.FENCED_INSTANCE_ID
    assert restarted not in driver.answers  # parked in the rebalance like any rejoin
    static_join(driver, "a", member_id=ids["a"])
    answer = driver.answers[restarted]
    assert (answer.error_code, answer.generation_id) == (ErrorCode.NONE, generation + 1)


def test_a_restart_while_the_assignment_is_made_starts_a_new_rebalance():
    driver = Driver()
    ids, generation, leader = static_group(driver)
    static_join(driver, "a", member_id=ids["a"])  # the leader rejoins: a rebalance
    follower_join = static_join(driver, "b", member_id=ids["b"])
    assert driver.answers[follower_join].generation_id == generation + 1
    parked_sync = driver.sync("g", generation + 1, ids["b"])
    assert driver.state() is GroupState.COMPLETING_REBALANCE
    restarted = static_join(driver, "b")
    assert driver.answers[parked_sync].error_code == ErrorCode.FENCED_INSTANCE_ID
    assert driver.state() is GroupState.PREPARING_REBALANCE and restarted not in driver.answers


def test_a_restart_in_a_full_group_is_no_new_member():
    driver = Driver(config={"group.max.size": 2})
    ids, generation, _ = static_group(driver)
    assert driver.answers[static_join(driver, "c")].error_code == ErrorCode.GROUP_MAX_SIZE_REACHED
    answer = driver.answers[static_join(driver, "b")]
    assert (answer.error_code, answer.generation_id) == (ErrorCode.NONE, generation)


def test_a_protocol_change_on_restart_rebalances():
    driver = Driver()
    ids, generation, _ = static_group(driver)
    other = (JoinGroupRequestProtocol(name="roundrobin", metadata=subscription_metadata("roundrobin", ["t"])),
             *PROTOCOLS)
    static_join(driver, "a", member_id=ids["a"], protocols=other)  # a rebalance; it now prefers roundrobin
    static_join(driver, "b", member_id=ids["b"])
    assert driver.core.groups["g"].protocol_name == "range"  # b supports only range
    driver.sync("g", generation + 1, ids["a"], {ids["a"]: b"a", ids["b"]: b"b"})
    driver.sync("g", generation + 1, ids["b"])
    assert driver.state() is GroupState.STABLE
    restarted = static_join(driver, "b", protocols=other)  # now both prefer roundrobin
    assert restarted not in driver.answers and driver.state() is GroupState.PREPARING_REBALANCE


# ----------------------------------------------------------------------------- persistence
def test_the_new_member_id_is_written_before_the_answer_and_survives_a_failover():
    driver = Driver(auto_ack=False)
    ids, generation, _ = static_group_acked(driver)
    restarted = static_join(driver, "b")
    assert restarted not in driver.answers and driver.unacked  # waits for its group record
    driver.ack_all()
    new_id = driver.answers[restarted].member_id
    partition = driver.core.partition_for("g")
    new = Driver(own=())
    new.core.begin_loading(partition)
    new.apply(new.core.on_become_leader(partition, driver.log[partition], new.now_ms))
    assert new.core.groups["g"].static_members == {"a": ids["a"], "b": new_id}
    assert heartbeat(new, ids["b"], generation, "b") == ErrorCode.FENCED_INSTANCE_ID
    assert sync(new, new_id, generation, "b").assignment == b"b"
    again = new.answers[static_join(new, "a")]
    assert (again.error_code, again.generation_id) == (ErrorCode.NONE, generation)
    assert new.state() is GroupState.STABLE


def static_group_acked(driver: Driver):
    """``static_group`` for a driver whose appends are acknowledged by hand."""
    driver.auto_ack = True
    result = static_group(driver)
    driver.auto_ack = False
    return result


def test_a_failed_write_puts_the_old_member_id_back():
    driver = Driver(auto_ack=False)
    ids, generation, _ = static_group_acked(driver)
    restarted = static_join(driver, "b")
    driver.ack_all(ErrorCode.NOT_LEADER_OR_FOLLOWER)
    answer = driver.answers[restarted]
    assert (answer.error_code, answer.member_id) == (ErrorCode.NOT_COORDINATOR, "")
    assert driver.core.groups["g"].static_members == {"a": ids["a"], "b": ids["b"]}
    assert heartbeat(driver, ids["b"], generation, "b") == ErrorCode.NONE
    assert driver.state() is GroupState.STABLE


# ------------------------------------------------------------------------- leaving and expiry
def test_leave_group_by_instance_id_removes_the_static_member_and_rebalances():
    driver = Driver()
    ids, generation, _ = static_group(driver)
    answer = leave(driver, ("", "b"))
    assert answer.members[0].error_code == ErrorCode.NONE
    assert driver.core.groups["g"].static_members == {"a": ids["a"]}
    assert driver.state() is GroupState.PREPARING_REBALANCE
    assert driver.answers[static_join(driver, "a", member_id=ids["a"])].generation_id == generation + 1


def test_leave_group_naming_no_instance_leaves_an_empty_instance_id_alone():
    driver = Driver()
    ids, _, _ = static_group(driver, instances=("", "b"))
    assert leave(driver, ("someone", None)).members[0].error_code == ErrorCode.UNKNOWN_MEMBER_ID
    assert driver.core.groups["g"].static_members == {"": ids[""], "b": ids["b"]}
    assert driver.state() is GroupState.STABLE


def test_session_expiry_removes_a_static_member_and_its_instance_id():
    driver = Driver()
    ids, generation, _ = static_group(driver)
    driver.advance(SESSION_MS // 2)
    assert heartbeat(driver, ids["a"], generation, "a") == ErrorCode.NONE
    driver.advance(SESSION_MS // 2)  # b's session ends
    assert heartbeat(driver, ids["a"], generation, "a") == ErrorCode.REBALANCE_IN_PROGRESS
    assert driver.core.groups["g"].static_members == {"a": ids["a"]}
    assert heartbeat(driver, ids["b"], generation, "b") == ErrorCode.UNKNOWN_MEMBER_ID
    late = static_join(driver, "b")  # after its session: a new member in the rebalance
    static_join(driver, "a", member_id=ids["a"])
    answer = driver.answers[late]
    assert (answer.error_code, answer.generation_id) == (ErrorCode.NONE, generation + 1)
    assert answer.member_id != ids["b"]


def test_a_rebalance_keeps_a_static_member_that_missed_it():
    driver = Driver()
    ids, generation, _ = static_group(driver)
    rejoin = static_join(driver, "a", member_id=ids["a"])  # the leader rejoins
    for _ in range(REBALANCE_MS // (SESSION_MS // 2)):
        driver.advance(SESSION_MS // 2)
        if rejoin in driver.answers:
            break
        # b is alive (heartbeats) but does not rejoin; Kafka keeps a static member anyway
        heartbeat(driver, ids["b"], generation, "b")
    answer = driver.answers[rejoin]
    assert (answer.error_code, answer.generation_id) == (ErrorCode.NONE, generation + 1)
    assert {m.member_id for m in answer.members} == {ids["a"], ids["b"]}
    assert ids["b"] in driver.core.groups["g"].members
    assert heartbeat(driver, ids["b"], generation, "b") == ErrorCode.ILLEGAL_GENERATION  # it rejoins next


# ---------------------------------------------------------------------------------- the mix
def test_random_static_and_dynamic_traffic_keeps_the_instance_map_and_answers_everything():
    rng = random.Random(2345)
    driver = Driver(auto_ack=False)
    requests = []
    known: dict[str, str] = {}  # instance -> the member id it was last told
    for _ in range(600):
        instance = rng.choice(["a", "b", "c", None])
        action = rng.choice(["restart", "rejoin", "heartbeat", "leave", "ack", "ack", "advance"])
        generation = driver.core.groups["g"].generation_id if "g" in driver.core.groups else -1
        member_id = known.get(instance or "", "")
        if action == "restart":
            requests.append(static_join(driver, instance))
        elif action == "rejoin":
            requests.append(static_join(driver, instance, member_id=member_id))
        elif action == "heartbeat":
            heartbeat(driver, member_id, generation, instance)
        elif action == "leave" and instance is not None:
            leave(driver, ("", instance))
        elif action == "ack" and driver.unacked:
            driver.ack(driver.unacked[0], rng.choice([ErrorCode.NONE, ErrorCode.NONE, ErrorCode.REQUEST_TIMED_OUT]))
        else:
            driver.advance(rng.choice([10, 100, 1000, SESSION_MS]))
        for request_id in requests:
            answer = driver.answers.get(request_id)
            if answer is not None and answer.member_id:
                for name, member in (driver.core.groups["g"].members.items() if "g" in driver.core.groups else ()):
                    if name == answer.member_id and member.group_instance_id is not None:
                        known[member.group_instance_id] = name
        group = driver.core.groups.get("g")
        if group is not None:
            assert group.static_members == {m.group_instance_id: member_id for member_id, m in group.members.items()
                                            if m.group_instance_id is not None}
            assert group.leader_id is None or group.leader_id in group.members
            assert group.num_members_awaiting_join == sum(m.is_awaiting_join for m in group.members.values())
    driver.apply(driver.core.on_resign(driver.core.partition_for("g")))
    driver.ack_all()
    driver.advance(10 * REBALANCE_MS)
    assert not [r for r in requests if r not in driver.answers]
