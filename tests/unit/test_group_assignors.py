"""The range, roundrobin and sticky assignors reproduce Kafka's documented examples, and the sticky
one stays balanced and keeps partitions with their owners across members leaving and joining
(checked over seeded random subscriptions); the consumer protocol bytes match Kafka's layout."""
from __future__ import annotations

import random

import pytest

from actors.core.group.assignors import (
    ASSIGNORS, Assignment, Subscription, decode_assignment, decode_subscription, encode_assignment,
    encode_subscription, leader_assignments, range_assign, round_robin_assign, sticky_assign,
    subscription_metadata,
)
from actors.core.group.sticky_assignor import DEFAULT_GENERATION, decode_user_data, encode_user_data
from actors.core.group.wire import SchemaError
from actors.core.messages.join_group import JoinGroupResponseMember

S = Subscription.of


def tps(spec: str) -> list[tuple[str, int]]:
    """'t0p0 t1p2' -> [('t0', 0), ('t1', 2)]"""
    return [(item.split("p")[0], int(item.split("p")[1])) for item in spec.split()]


# (case, assignor, partitions per topic, subscriptions, expected) — the examples in Kafka's javadoc.
KAFKA_EXAMPLES = [
    ("range, two topics of three", range_assign, {"t0": 3, "t1": 3},
     {"C0": S(["t0", "t1"]), "C1": S(["t0", "t1"])},
     {"C0": tps("t0p0 t0p1 t1p0 t1p1"), "C1": tps("t0p2 t1p2")}),
    ("roundrobin, two topics of three", round_robin_assign, {"t0": 3, "t1": 3},
     {"C0": S(["t0", "t1"]), "C1": S(["t0", "t1"])},
     {"C0": tps("t0p0 t0p2 t1p1"), "C1": tps("t0p1 t1p0 t1p2")}),
    ("roundrobin, nested subscriptions", round_robin_assign, {"t0": 1, "t1": 2, "t2": 3},
     {"C0": S(["t0"]), "C1": S(["t0", "t1"]), "C2": S(["t0", "t1", "t2"])},
     {"C0": tps("t0p0"), "C1": tps("t1p0"), "C2": tps("t1p1 t2p0 t2p1 t2p2")}),
    ("range, more members than partitions", range_assign, {"t": 2},
     {"a": S(["t"]), "b": S(["t"]), "c": S(["t"])},
     {"a": tps("tp0"), "b": tps("tp1"), "c": []}),
    ("range, topic without metadata is skipped", range_assign, {"t": 1},
     {"a": S(["t", "missing"])}, {"a": tps("tp0")}),
    ("sticky, first assignment", sticky_assign, {"t0": 2, "t1": 2, "t2": 2, "t3": 2},
     {"C0": S(["t0", "t1", "t2", "t3"]), "C1": S(["t0", "t1", "t2", "t3"]), "C2": S(["t0", "t1", "t2", "t3"])},
     None),
]


@pytest.mark.parametrize("case,assign,partitions,subscriptions,expected", KAFKA_EXAMPLES,
                         ids=[c[0] for c in KAFKA_EXAMPLES])
def test_assignors_match_kafkas_examples(case, assign, partitions, subscriptions, expected):
    result = assign(partitions, subscriptions)
    if expected is not None:
        assert result == expected
    assert_valid(result, partitions, subscriptions)
    assert assign(partitions, dict(reversed(list(subscriptions.items())))) == result  # deterministic


def assert_valid(result, partitions, subscriptions):
    """Every existing subscribed partition assigned exactly once, to a member subscribed to it."""
    assigned = [tp for member in result for tp in result[member]]
    assert len(assigned) == len(set(assigned))
    wanted = {(t, i) for s in subscriptions.values() for t in s.topics for i in range(partitions.get(t, 0))}
    assert set(assigned) == wanted
    assert set(result) == set(subscriptions)
    for member, owned in result.items():
        assert all(topic in subscriptions[member].topics for topic, _ in owned)


def sizes(result) -> list[int]:
    return sorted(len(owned) for owned in result.values())


def with_owned(result, generation=1) -> dict[str, Subscription]:
    """Each member's next subscription after receiving ``result``, carrying it in its user data."""
    return {member: Subscription(topics=("t0", "t1", "t2"), user_data=encode_user_data(owned, generation))
            for member, owned in result.items()}


def moved(before, after) -> int:
    owner = {tp: member for member, owned in before.items() for tp in owned}
    return sum(1 for member, owned in after.items() for tp in owned if owner.get(tp, member) != member)


@pytest.mark.parametrize("seed", range(25))
def test_sticky_is_balanced_and_moves_only_what_balance_requires(seed):
    rng = random.Random(seed)
    partitions = {"t0": rng.randint(1, 8), "t1": rng.randint(1, 8), "t2": rng.randint(0, 8)}
    total = sum(partitions.values())
    members = [f"m{i:02d}" for i in range(rng.randint(2, 7))]
    first = sticky_assign(partitions, {m: S(["t0", "t1", "t2"]) for m in members})
    assert_valid(first, partitions, {m: S(["t0", "t1", "t2"]) for m in members})
    assert sizes(first)[-1] - sizes(first)[0] <= 1

    # One member leaves: only its partitions move.
    leaver = rng.choice(members)
    remaining = {m: s for m, s in with_owned(first).items() if m != leaver}
    after_leave = sticky_assign(partitions, remaining)
    assert sizes(after_leave)[-1] - sizes(after_leave)[0] <= 1
    kept = {m: o for m, o in first.items() if m != leaver}
    for member, owned in kept.items():
        # A member keeps everything it had, up to the balanced share it may hold.
        assert len(set(owned) & set(after_leave[member])) == min(len(owned), len(after_leave[member]))
    assert moved(kept, after_leave) == 0

    # One member joins: it takes a balanced share, and nothing else moves.
    joined = {**with_owned(after_leave), "zz-new": S(["t0", "t1", "t2"])}
    after_join = sticky_assign(partitions, joined)
    assert sizes(after_join)[-1] - sizes(after_join)[0] <= 1
    assert len(after_join["zz-new"]) == total // len(joined)
    assert moved(after_leave, after_join) == len(after_join["zz-new"])


def test_sticky_balances_unequal_subscriptions_as_far_as_they_allow():
    partitions = {"a": 4, "b": 2}
    subscriptions = {"only-a": S(["a"]), "both": S(["a", "b"]), "only-b": S(["b"])}
    result = sticky_assign(partitions, subscriptions)
    assert_valid(result, partitions, subscriptions)
    assert sizes(result) == [2, 2, 2]


def test_sticky_resolves_conflicting_claims_by_generation():
    partitions = {"t": 2}
    subscriptions = {
        "stale": Subscription(topics=("t",), user_data=encode_user_data([("t", 0), ("t", 1)], 3)),
        "fresh": Subscription(topics=("t",), user_data=encode_user_data([("t", 0), ("t", 1)], 4)),
    }
    result = sticky_assign(partitions, subscriptions)
    assert sizes(result) == [1, 1]
    # The fresher claim wins and must give one partition up; the stale member gets it back.
    assert set(result["fresh"]) | set(result["stale"]) == {("t", 0), ("t", 1)}


def test_sticky_uses_owned_partitions_when_there_is_no_user_data():
    subscriptions = {"a": S(["t"], owned_partitions=[("t", 1)]), "b": S(["t"], owned_partitions=[("t", 0)])}
    assert sticky_assign({"t": 2}, subscriptions) == {"a": [("t", 1)], "b": [("t", 0)]}


def test_sticky_user_data_round_trips_and_reads_version_0_and_garbage():
    data = encode_user_data([("t", 1), ("t", 0), ("u", 3)], 9)
    decoded = decode_user_data(data)
    assert (decoded.partitions, decoded.generation) == ((("t", 0), ("t", 1), ("u", 3)), 9)
    version_0 = data[:-4]  # the same assignment without the generation
    assert decode_user_data(version_0).partitions == decoded.partitions
    assert decode_user_data(version_0).generation == DEFAULT_GENERATION
    assert decode_user_data(b"\xff\xff").partitions == ()


def test_subscription_bytes_are_kafkas_consumer_protocol_v1():
    data = encode_subscription(S(["t"], user_data=b"u", owned_partitions=[("t", 0)]))
    assert data == (b"\x00\x01"                       # version 1
                    b"\x00\x00\x00\x01\x00\x01t"       # topics: ["t"]
                    b"\x00\x00\x00\x01u"               # user data
                    b"\x00\x00\x00\x01\x00\x01t\x00\x00\x00\x01\x00\x00\x00\x00")  # owned: t-0
    assert decode_subscription(data) == S(["t"], user_data=b"u", owned_partitions=[("t", 0)])
    version_0 = encode_subscription(S(["t"]), version=0)
    assert version_0 == b"\x00\x00\x00\x00\x00\x01\x00\x01t\xff\xff\xff\xff"
    assert decode_subscription(version_0) == S(["t"])
    assert decode_subscription(data + b"future fields") == decode_subscription(data)


def test_assignment_bytes_round_trip_and_bad_bytes_are_a_schema_error():
    assignment = Assignment(partitions=(("a", 0), ("a", 2), ("b", 1)), user_data=None)
    assert decode_assignment(encode_assignment(assignment)) == assignment
    assert decode_assignment(b"") == Assignment(partitions=())
    with pytest.raises(SchemaError):
        decode_assignment(b"\x00\x01\x00\x00\x00\x05")
    with pytest.raises(SchemaError):
        decode_subscription(b"\x00")


@pytest.mark.parametrize("protocol", sorted(ASSIGNORS))
def test_leader_assignments_turn_join_metadata_into_sync_assignments(protocol):
    members = [JoinGroupResponseMember(member_id=m, metadata=subscription_metadata(protocol, ["t"]))
               for m in ("b", "a")]
    result = leader_assignments(protocol, members, {"t": 3})
    decoded = {member: decode_assignment(data).partitions for member, data in result.items()}
    assert sorted(decoded) == ["a", "b"]
    assert sorted(tp for owned in decoded.values() for tp in owned) == [("t", 0), ("t", 1), ("t", 2)]


def test_sticky_subscription_metadata_carries_the_current_assignment():
    data = subscription_metadata("sticky", ["t"], owned_partitions=[("t", 2)], generation_id=5)
    subscription = decode_subscription(data)
    assert subscription.owned_partitions == (("t", 2),)
    assert decode_user_data(subscription.user_data).generation == 5
