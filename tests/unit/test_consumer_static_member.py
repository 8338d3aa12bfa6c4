"""The Python consumer with ``group.instance.id`` is a static member (KIP-345) as Kafka's consumer is:
it names its instance in every group request, sends no LeaveGroup when it closes, takes its place
back without a rebalance when restarted, and an older incarnation it replaced is fenced; shown by
running real Consumers without Ray against the pure coordinator (test_consumer_group_client's
fakes)."""
from __future__ import annotations

import pytest

from actors.core.errors import ErrorCode
from orchestration.errors import KafkaError
from tests.unit.test_consumer_group_client import (
    CoreCoordinator, FakeChannel, RecordingListener, heartbeat, make_consumer, membership, poll_until,
)

GROUP_REQUESTS = ("join_group", "sync_group", "heartbeat", "offset_commit")


def static_pair():
    coordinator = CoreCoordinator(1)
    events: list = []
    channel = FakeChannel({"coordinator-1": coordinator}, events=events)
    a = make_consumer(channel, "a", **{"group.instance.id": "instance-a"})
    b = make_consumer(channel, "b", **{"group.instance.id": "instance-b"})
    b_events: list = []
    a.subscribe(["t", "u"])
    a.poll(timeout_ms=0)  # a alone: generation 1
    b.subscribe(["t", "u"], RecordingListener(b_events))
    b.poll(timeout_ms=0)  # b's JoinGroup parks: a must rejoin first
    heartbeat(a)  # REBALANCE_IN_PROGRESS
    poll_until([a, b], lambda: membership(a).is_stable() and membership(b).is_stable())
    assert coordinator.group().size == 2 and a.assignment() and b.assignment()
    return coordinator, channel, a, b, b_events


def test_a_restarted_static_consumer_takes_its_place_back_without_a_rebalance():
    coordinator, channel, a, b, b_events = static_pair()
    generation = coordinator.group().generation_id
    kept, b_assignment = a.assignment(), b.assignment()
    assert kept and b_assignment
    b_events_before = list(b_events)
    a.commit({partition: 3 for partition in kept})
    a.close()
    assert channel.requests("leave_group") == []  # a static member does not leave
    assert coordinator.group().size == 2

    restarted = make_consumer(channel, "a", **{"group.instance.id": "instance-a"})
    restarted.subscribe(["t", "u"])
    poll_until([restarted, b], lambda: membership(restarted).is_stable())
    heartbeat(b)
    b.poll(timeout_ms=0)
    assert coordinator.group().generation_id == generation
    assert restarted.assignment() == kept
    assert membership(b).is_stable() and b.assignment() == b_assignment and b_events == b_events_before
    restarted.commit({partition: 4 for partition in kept})  # the new member id may commit
    assert all(coordinator.group().offsets[partition].offset == 4 for partition in kept)
    for method in GROUP_REQUESTS:
        sent = channel.requests(method)
        assert sent and all(r.group_instance_id in ("instance-a", "instance-b") for r in sent), method


def test_the_older_incarnation_is_fenced_and_raises_fenced_instance_id():
    coordinator, channel, a, b, _ = static_pair()
    duplicate = make_consumer(channel, "a2", **{"group.instance.id": "instance-a"})
    duplicate.subscribe(["t", "u"])
    poll_until([duplicate], lambda: membership(duplicate).is_stable())
    heartbeat(a)
    with pytest.raises(KafkaError) as excinfo:
        a.poll(timeout_ms=0)
    assert excinfo.value.error_code == ErrorCode.FENCED_INSTANCE_ID


def test_a_dynamic_consumer_still_leaves_on_close():
    coordinator = CoreCoordinator(1)
    channel = FakeChannel({"coordinator-1": coordinator})
    consumer = make_consumer(channel)
    consumer.subscribe(["t"])
    poll_until([consumer], lambda: membership(consumer).is_stable())
    consumer.close()
    assert len(channel.requests("leave_group")) == 1 and coordinator.group().size == 0
    assert all(r.group_instance_id is None for r in channel.requests("join_group"))
