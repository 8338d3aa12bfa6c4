"""Proves the consumer's group mode (subscribe, rebalance, heartbeats, commit, close) behaves as
Kafka 2.4's KafkaConsumer does, by running real Consumers without Ray against in-process
coordinators: the pure GroupCoordinatorCore behind a fake channel that can also answer scripted
errors, and a fake metadata directory whose partitions have no leader (so nothing is fetched)."""
from __future__ import annotations

import itertools
import random
import time
from concurrent.futures import Future

import pytest

from actors.core.apis import GROUP_COORDINATOR, api_of, handler_for
from actors.core.effects import CoordinatorMetadataUpdate, Respond, Send
from actors.core.errors import ErrorCode
from actors.core.group.consumer_protocol import decode_subscription
from actors.core.group.coordinator import GroupCoordinatorCore
from actors.core.group.messages import OffsetsLogAppendResponse
from actors.core.group.sticky_assignor import decode_user_data
from actors.core.messages.find_coordinator import FindCoordinatorResponse
from actors.core.messages.heartbeat import HeartbeatResponse
from actors.core.messages.join_group import JoinGroupResponse
from orchestration.clients.consumer import Consumer
from orchestration.clients.consumer_coordinator import CommitFailedError, parse_assignors
from orchestration.errors import KafkaError
from orchestration.clients.group_member import MemberState

GROUP = "orders"
TOPICS = {"t": 3, "u": 1}


class CoreCoordinator:
    """A group coordinator in this process: the pure core with its own clock; a request becomes a
    future that the core's Respond effect resolves (at once, or later for a parked JoinGroup), and
    every append to __consumer_offsets succeeds at once."""

    def __init__(self, node_id: int, *, owns_group: bool = True) -> None:
        self.node_id = node_id
        self.now_ms = 0
        self.core = GroupCoordinatorCore(broker_id=node_id, now_ms=0, member_id_random=random.Random(node_id),
                                         config={"offsets.topic.num.partitions": 1,
                                                 "group.initial.rebalance.delay.ms": 0})
        self._pending: dict[int, Future] = {}
        self._ids = itertools.count(1)
        # The broker's metadata cache holds TOPICS' partitions (commits for others are refused).
        self._apply(self.core.on_metadata_update(CoordinatorMetadataUpdate(version=(0, 1), partitions=tuple(
            (topic, index) for topic, count in TOPICS.items() for index in range(count))), 0))
        if owns_group:
            self.core.begin_loading(0)
            self._apply(self.core.on_become_leader(0, [], 0))

    def call(self, request) -> Future:
        future: Future = Future()
        request_id = next(self._ids)
        self._pending[request_id] = future
        _, handler = handler_for(GROUP_COORDINATOR, request)
        self._apply(handler(self.core, request_id, request, self.now_ms))
        self._apply(self.core.tick(self.now_ms))
        return future

    def advance(self, ms: int) -> None:
        self.now_ms += ms
        self._apply(self.core.tick(self.now_ms))

    def _apply(self, effects) -> None:
        for effect in effects:
            if isinstance(effect, Respond):
                self._pending.pop(effect.request_id).set_result(effect.response)
            elif isinstance(effect, Send):
                append = effect.message
                self._apply(self.core.on_offsets_log_response(append, OffsetsLogAppendResponse(
                    append_id=append.append_id, partition=append.partition, base_offset=0), self.now_ms))

    def group(self):
        return self.core.groups.get(GROUP)


class FakeChannel:
    """The consumer's seam to coordinators. FindCoordinator names the coordinators in
    ``find_answers`` in turn (the last one from then on); ``script`` holds canned answers per method,
    used before the coordinator is asked. ``events`` records every request (shared with listeners)."""

    def __init__(self, coordinators: dict[str, CoreCoordinator], find_answers: list[str] | None = None,
                 events: list | None = None) -> None:
        self.coordinators = coordinators
        self.find_answers = list(find_answers or list(coordinators))
        self.events = events if events is not None else []
        self.script: dict[str, list] = {}

    def find_coordinator(self, request) -> Future:
        self.events.append(("find_coordinator", request))
        name = self.find_answers.pop(0) if len(self.find_answers) > 1 else self.find_answers[0]
        return _done(FindCoordinatorResponse(node_id=self.coordinators[name].node_id, host=name))

    def send(self, coordinator_name: str, request) -> Future:
        method = api_of(request).name  # the API table's name, e.g. "join_group"
        self.events.append((method, request))
        if self.script.get(method):
            return _done(self.script[method].pop(0))
        return self.coordinators[coordinator_name].call(request)

    def requests(self, method: str) -> list:
        return [request for name, request in self.events if name == method]


class FakeDirectory:
    """Metadata with partition counts and no leaders, so a consumer never sends a Fetch."""

    namespace = "unit-test"

    def __init__(self, partitions: dict[str, int]) -> None:
        self.partitions = dict(partitions)

    def refresh_metadata(self) -> None:
        pass

    def partitions_for(self, topic: str, *, refresh_if_missing: bool = True) -> dict[int, tuple[int, int]]:
        if topic not in self.partitions:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, topic)
        return {p: (-1, 0) for p in range(self.partitions[topic])}

    def leader_for(self, topic: str, partition: int) -> tuple[int, int]:
        return -1, 0


class RecordingListener:
    def __init__(self, events: list) -> None:
        self.events = events

    def on_partitions_revoked(self, partitions) -> None:
        self.events.append(("revoked", list(partitions)))

    def on_partitions_assigned(self, partitions) -> None:
        self.events.append(("assigned", list(partitions)))


def _done(response) -> Future:
    future: Future = Future()
    future.set_result(response)
    return future


def make_consumer(channel, client_id="a", directory=None, **config) -> Consumer:
    settings = {"group.id": GROUP, "client.id": client_id, "retry.backoff.ms": "1",
                "auto.offset.reset": "earliest", **config}
    return Consumer(directory or FakeDirectory(TOPICS), settings, coordinator_channel=channel, heartbeat_thread=False)


def poll_until(consumers, condition, rounds: int = 50) -> None:
    for _ in range(rounds):
        for consumer in consumers:
            consumer.poll(timeout_ms=0)
        if condition():
            return
    raise AssertionError("condition not reached")


def membership(consumer):
    return consumer._coordinator.membership


def heartbeat(consumer) -> None:
    """One heartbeat now (as the thread would send when due)."""
    beat = membership(consumer).heartbeat
    beat.timers.next_heartbeat_ms = 0
    beat.step()


def stable_pair(strategy="range", topics=("t", "u")):
    coordinator = CoreCoordinator(1)
    channel = FakeChannel({"coordinator-1": coordinator})
    a = make_consumer(channel, "a", **{"partition.assignment.strategy": strategy})
    b = make_consumer(channel, "b", **{"partition.assignment.strategy": strategy})
    a.subscribe(list(topics))
    a.poll(timeout_ms=0)  # a alone: generation 1
    assert a.assignment() == {(topic, p) for topic in topics for p in range(TOPICS[topic])}
    b.subscribe(list(topics))
    b.poll(timeout_ms=0)  # b's JoinGroup parks: a must rejoin first
    heartbeat(a)  # REBALANCE_IN_PROGRESS
    poll_until([a, b], lambda: membership(a).is_stable() and membership(b).is_stable())
    return coordinator, channel, a, b


# ------------------------------------------------------------------------------------ joining
def test_first_join_is_answered_member_id_required_then_succeeds_with_that_id():
    coordinator = CoreCoordinator(1)
    channel = FakeChannel({"coordinator-1": coordinator})
    consumer = make_consumer(channel)
    consumer.subscribe(["t"])
    assert consumer.poll(timeout_ms=0) == []

    joins = channel.requests("join_group")
    assert len(joins) == 2 and joins[0].member_id == ""
    assigned_id = joins[1].member_id
    assert assigned_id.startswith("a-"), "the coordinator's id, built from client.id"
    assert joins[1].session_timeout_ms == 10000 and joins[1].rebalance_timeout_ms == 300000
    assert [p.name for p in joins[1].protocols] == ["range"]
    assert decode_subscription(joins[1].protocols[0].metadata).topics == ("t",)
    member = membership(consumer)
    assert member.state is MemberState.STABLE
    assert (member.generation.generation_id, member.generation.member_id) == (1, assigned_id)
    assert consumer.assignment() == {("t", 0), ("t", 1), ("t", 2)}
    assert coordinator.group().leader_id == assigned_id


@pytest.mark.parametrize("strategy, expected_a, expected_b", [
    # range: per topic, consecutive ranges to the sorted members; a (sorted first) gets the extra.
    ("range", {("t", 0), ("t", 1), ("u", 0)}, {("t", 2)}),
    # roundrobin: t-0, t-1, t-2, u-0 dealt to a, b, a, b.
    ("roundrobin", {("t", 0), ("t", 2)}, {("t", 1), ("u", 0)}),
])
def test_leader_assigns_with_the_chosen_assignor_and_the_follower_gets_its_share_from_sync(
        strategy, expected_a, expected_b):
    coordinator, channel, a, b = stable_pair(strategy)
    assert a.assignment() == expected_a and b.assignment() == expected_b
    group = coordinator.group()
    assert group.protocol_name == strategy and group.generation_id == 2
    leader_id = membership(a).generation.member_id
    assert group.leader_id == leader_id
    syncs = [s for s in channel.requests("sync_group") if s.generation_id == 2]
    by_member = {s.member_id: s for s in syncs}
    follower_id = membership(b).generation.member_id
    assert len(by_member[leader_id].assignments) == 2, "the leader sends everyone's assignment"
    assert by_member[follower_id].assignments == (), "a follower sends none and gets its own back"


def test_preferred_strategies_are_sent_in_order_and_the_group_votes():
    assert parse_assignors("roundrobin, range") == ("roundrobin", "range")
    with pytest.raises(KafkaError) as excinfo:
        parse_assignors("fair")
    assert excinfo.value.error_code == ErrorCode.INVALID_CONFIG
    coordinator = CoreCoordinator(1)
    channel = FakeChannel({"coordinator-1": coordinator})
    consumer = make_consumer(channel, **{"partition.assignment.strategy": "sticky,range"})
    consumer.subscribe(["t"])
    consumer.poll(timeout_ms=0)
    assert [p.name for p in channel.requests("join_group")[-1].protocols] == ["sticky", "range"]
    assert coordinator.group().protocol_name == "sticky"


def test_sticky_rejoin_carries_the_previous_assignment_and_generation():
    _, channel, a, b = stable_pair("sticky", topics=("t",))
    a_join = [j for j in channel.requests("join_group") if j.member_id == membership(a).generation.member_id][-1]
    user_data = decode_subscription(a_join.protocols[0].metadata).user_data
    previous = decode_user_data(user_data)
    assert previous.partitions == (("t", 0), ("t", 1), ("t", 2)) and previous.generation == 1
    assert len(a.assignment()) + len(b.assignment()) == 3 and a.assignment().isdisjoint(b.assignment())


def test_subscribe_and_commit_need_a_group_id():
    consumer = Consumer(FakeDirectory(TOPICS), {})
    for call in (lambda: consumer.subscribe(["t"]), lambda: consumer.commit(), lambda: consumer.committed([("t", 0)])):
        with pytest.raises(KafkaError) as excinfo:
            call()
        assert excinfo.value.error_code == ErrorCode.INVALID_GROUP_ID


def test_assign_and_subscribe_are_mutually_exclusive():
    consumer = make_consumer(FakeChannel({"coordinator-1": CoreCoordinator(1)}))
    consumer.assign([("t", 0)])
    with pytest.raises(RuntimeError):
        consumer.subscribe(["t"])
    consumer.unsubscribe()
    consumer.subscribe(["t"])
    with pytest.raises(RuntimeError):
        consumer.assign([("t", 0)])


# ---------------------------------------------------------------------- coordinator errors
def test_not_coordinator_makes_the_consumer_find_the_coordinator_again():
    # coordinator-1 does not own the group's __consumer_offsets partition: it answers NOT_COORDINATOR.
    wrong, right = CoreCoordinator(1, owns_group=False), CoreCoordinator(2)
    channel = FakeChannel({"coordinator-1": wrong, "coordinator-2": right},
                          find_answers=["coordinator-1", "coordinator-2"])
    consumer = make_consumer(channel)
    consumer.subscribe(["t"])
    poll_until([consumer], lambda: membership(consumer).is_stable())
    assert len(channel.requests("find_coordinator")) == 2
    assert membership(consumer).coordinator.name == "coordinator-2"
    assert right.group().generation_id == 1 and wrong.group() is None

    # Later the heartbeat hears NOT_COORDINATOR: the coordinator is looked up again.
    channel.script["heartbeat"] = [HeartbeatResponse(error_code=ErrorCode.NOT_COORDINATOR)]
    heartbeat(consumer)
    assert membership(consumer).coordinator is None
    heartbeat(consumer)
    assert membership(consumer).coordinator.name == "coordinator-2"
    assert len(channel.requests("find_coordinator")) == 3
    assert membership(consumer).is_stable(), "a new coordinator is no reason to rebalance"


def test_coordinator_not_available_is_retried_after_backoff():
    coordinator = CoreCoordinator(1)
    channel = FakeChannel({"coordinator-1": coordinator})
    answers = [FindCoordinatorResponse(error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE)]
    real_find = channel.find_coordinator

    def find_coordinator(request):
        if answers:
            channel.events.append(("find_coordinator", request))
            return _done(answers.pop(0))
        return real_find(request)

    channel.find_coordinator = find_coordinator
    consumer = make_consumer(channel)
    consumer.subscribe(["t"])
    for _ in range(100):  # bounded: each poll waits at most 5 ms
        consumer.poll(timeout_ms=5)
        if membership(consumer).is_stable():
            break
    assert membership(consumer).is_stable()
    assert len(channel.requests("find_coordinator")) == 2 and not answers


def test_illegal_generation_from_heartbeat_makes_the_next_poll_rejoin_with_the_same_member_id():
    coordinator = CoreCoordinator(1)
    events: list = []
    channel = FakeChannel({"coordinator-1": coordinator}, events=events)
    consumer = make_consumer(channel)
    consumer.subscribe(["t"], RecordingListener(events))
    consumer.poll(timeout_ms=0)
    member_id = membership(consumer).generation.member_id

    channel.script["heartbeat"] = [HeartbeatResponse(error_code=ErrorCode.ILLEGAL_GENERATION)]
    heartbeat(consumer)
    assert membership(consumer).state is MemberState.UNJOINED
    with pytest.raises(CommitFailedError):
        consumer.commit({("t", 0): 1})
    del events[:]
    consumer.poll(timeout_ms=0)
    joins = channel.requests("join_group")
    assert joins and all(j.member_id == member_id for j in joins), "ILLEGAL_GENERATION keeps the member id"
    assert [e[0] for e in events if e[0] in ("revoked", "assigned")] == ["revoked", "assigned"]
    assert membership(consumer).generation.generation_id == 2


def test_unknown_member_id_makes_the_consumer_join_as_a_new_member():
    coordinator = CoreCoordinator(1)
    channel = FakeChannel({"coordinator-1": coordinator})
    consumer = make_consumer(channel)
    consumer.subscribe(["t"])
    consumer.poll(timeout_ms=0)
    channel.script["heartbeat"] = [HeartbeatResponse(error_code=ErrorCode.UNKNOWN_MEMBER_ID)]
    heartbeat(consumer)
    assert membership(consumer).generation.member_id == ""
    del channel.events[:]
    consumer.poll(timeout_ms=0)
    assert channel.requests("join_group")[0].member_id == ""
    new_id = channel.requests("join_group")[-1].member_id
    assert new_id and not membership(consumer).is_stable(), "the JoinGroup waits for the old member"
    coordinator.advance(11_000)  # the old member's session (10 s) expires at the coordinator
    consumer.poll(timeout_ms=0)  # picks up the parked JoinGroup's answer
    assert membership(consumer).is_stable() and membership(consumer).generation.member_id == new_id
    assert list(coordinator.group().members) == [new_id]


def test_rebalance_in_progress_from_join_rejoins_and_a_fatal_join_error_raises():
    coordinator = CoreCoordinator(1)
    channel = FakeChannel({"coordinator-1": coordinator})
    consumer = make_consumer(channel)
    consumer.subscribe(["t"])
    channel.script["join_group"] = [JoinGroupResponse(error_code=ErrorCode.REBALANCE_IN_PROGRESS)]
    consumer.poll(timeout_ms=0)
    assert membership(consumer).is_stable()

    other = make_consumer(channel, "b")
    other.subscribe(["t"])
    channel.script["join_group"] = [JoinGroupResponse(error_code=ErrorCode.INCONSISTENT_GROUP_PROTOCOL)]
    with pytest.raises(KafkaError) as excinfo:
        other.poll(timeout_ms=0)
    assert excinfo.value.error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL


def test_the_leader_rebalances_when_a_subscribed_topic_appears():
    directory = FakeDirectory(TOPICS)
    channel = FakeChannel({"coordinator-1": CoreCoordinator(1)})
    consumer = make_consumer(channel, directory=directory)
    consumer.subscribe(["t", "later"])
    consumer.poll(timeout_ms=0)
    assert consumer.assignment() == {("t", 0), ("t", 1), ("t", 2)}, "a missing topic is skipped"
    directory.partitions["later"] = 2
    consumer._coordinator._next_metadata_check_ms = 0  # the leader's next metadata check is due
    consumer.poll(timeout_ms=0)  # notices the new topic and rebalances
    assert consumer.assignment() == {("t", 0), ("t", 1), ("t", 2), ("later", 0), ("later", 1)}
    assert membership(consumer).generation.generation_id == 2


# ------------------------------------------------------------------------------- offsets
def test_commit_and_committed_round_trip_and_a_new_member_starts_at_the_committed_offset():
    coordinator = CoreCoordinator(1)
    channel = FakeChannel({"coordinator-1": coordinator})
    consumer = make_consumer(channel, **{"enable.auto.commit": "false"})
    consumer.subscribe(["t"])
    consumer.poll(timeout_ms=0)
    assert consumer.committed([("t", 0), ("t", 1)]) == {("t", 0): None, ("t", 1): None}

    consumer.seek(("t", 0), 42)
    consumer.seek(("t", 1), 7)
    consumer.commit()  # the positions of the owned partitions
    assert consumer.committed([("t", 0), ("t", 1), ("t", 2)]) == {("t", 0): 42, ("t", 1): 7, ("t", 2): None}
    commit = channel.requests("offset_commit")[-1]
    assert (commit.generation_id, commit.member_id) == (1, membership(consumer).generation.member_id)
    consumer.commit({("t", 2): 5})
    assert consumer.committed([("t", 2)]) == {("t", 2): 5}
    consumer.close()

    successor = make_consumer(channel, "b")
    successor.subscribe(["t"])
    successor.poll(timeout_ms=0)
    assert successor.position(("t", 0)) == 42 and successor.position(("t", 2)) == 5


def test_assign_mode_with_a_group_id_commits_outside_any_generation_and_starts_at_committed():
    coordinator = CoreCoordinator(1)
    channel = FakeChannel({"coordinator-1": coordinator})
    consumer = make_consumer(channel)
    consumer.assign([("t", 0)])
    consumer.commit({("t", 0): 9})
    commit = channel.requests("offset_commit")[-1]
    assert (commit.generation_id, commit.member_id) == (-1, "")
    other = make_consumer(channel, "b")
    other.assign([("t", 0)])
    other.poll(timeout_ms=0)
    assert other.position(("t", 0)) == 9
    assert not channel.requests("join_group"), "assign mode never joins"


def test_auto_commit_runs_on_the_interval_and_before_a_rebalance():
    _, channel, a, b = stable_pair()
    a.seek(("t", 0), 3)
    commits_before = len(channel.requests("offset_commit"))
    a.poll(timeout_ms=0)
    assert len(channel.requests("offset_commit")) == commits_before, "not due yet"
    a._coordinator._next_auto_commit_ms = 0
    a.poll(timeout_ms=0)
    a.poll(timeout_ms=0)
    assert a.committed([("t", 0)]) == {("t", 0): 3}

    # A rebalance (b leaves) commits a's positions before a revokes its partitions.
    a.seek(("t", 0), 4)
    b.close()
    heartbeat(a)
    a.poll(timeout_ms=0)
    assert a.committed([("t", 0)]) == {("t", 0): 4}


# ------------------------------------------------------------------- listener and leaving
def test_listener_sees_revoked_before_join_and_assigned_after_sync():
    coordinator = CoreCoordinator(1)
    events: list = []
    channel = FakeChannel({"coordinator-1": coordinator}, events=events)
    consumer = make_consumer(channel)
    consumer.subscribe(["t"], RecordingListener(events))
    consumer.poll(timeout_ms=0)
    consumer.subscribe(["t", "u"], RecordingListener(events))  # a new subscription rebalances
    consumer.poll(timeout_ms=0)
    flow = [name for name, _ in events if name in ("revoked", "assigned", "join_group", "sync_group")]
    assert flow == ["revoked", "join_group", "join_group", "sync_group", "assigned",
                    "revoked", "join_group", "sync_group", "assigned"]
    listened = [(name, parts) for name, parts in events if name in ("revoked", "assigned")]
    assert listened == [("revoked", []), ("assigned", [("t", 0), ("t", 1), ("t", 2)]),
                        ("revoked", [("t", 0), ("t", 1), ("t", 2)]),
                        ("assigned", [("t", 0), ("t", 1), ("t", 2), ("u", 0)])]


def test_close_commits_revokes_and_sends_leave_group():
    coordinator = CoreCoordinator(1)
    events: list = []
    channel = FakeChannel({"coordinator-1": coordinator}, events=events)
    consumer = make_consumer(channel)
    consumer.subscribe(["t"], RecordingListener(events))
    consumer.poll(timeout_ms=0)
    member_id = membership(consumer).generation.member_id
    consumer.seek(("t", 1), 11)
    del events[:]
    consumer.close()
    names = [name for name, _ in events]
    assert names == ["offset_commit", "revoked", "leave_group"]
    leave = channel.requests("leave_group")[0]
    assert [m.member_id for m in leave.members] == [member_id]
    assert coordinator.group().members == {} and coordinator.group().offsets[("t", 1)].offset == 11
    with pytest.raises(KafkaError):
        consumer.poll(timeout_ms=0)


def test_a_consumer_that_stops_polling_keeps_heartbeating_then_leaves_after_max_poll_interval():
    coordinator = CoreCoordinator(1)
    channel = FakeChannel({"coordinator-1": coordinator})
    consumer = make_consumer(channel, **{"max.poll.interval.ms": "60000", "session.timeout.ms": "30000",
                                         "heartbeat.interval.ms": "1000"})
    consumer.subscribe(["t"])
    consumer.poll(timeout_ms=0)
    member = membership(consumer)
    start_ms = member.heartbeat.timers.last_poll_ms
    for now_ms in range(int(start_ms) + 1000, int(start_ms) + 60000, 1000):
        member.heartbeat.step(now_ms)
    heartbeats = len(channel.requests("heartbeat"))
    assert heartbeats >= 50 and not channel.requests("leave_group")
    member.heartbeat.step(start_ms + 61000)
    assert len(channel.requests("leave_group")) == 1
    assert member.state is MemberState.UNJOINED and coordinator.group().members == {}
    consumer.poll(timeout_ms=0)  # polling again rejoins, as a new member
    assert member.is_stable() and member.generation.generation_id == 3


def test_heartbeat_thread_runs_in_the_background_and_stops_on_close():
    coordinator = CoreCoordinator(1)
    channel = FakeChannel({"coordinator-1": coordinator})
    consumer = Consumer(FakeDirectory(TOPICS), {"group.id": GROUP, "heartbeat.interval.ms": "10",
                                                "session.timeout.ms": "6000", "retry.backoff.ms": "1"},
                        coordinator_channel=channel)
    consumer.subscribe(["t"])
    consumer.poll(timeout_ms=0)
    beat = membership(consumer).heartbeat
    assert beat.alive
    for _ in range(500):  # bounded wait for a few background heartbeats
        if len(channel.requests("heartbeat")) >= 3:
            break
        time.sleep(0.01)
    assert len(channel.requests("heartbeat")) >= 3
    consumer.close()
    assert not beat.alive
