"""The ``__consumer_offsets`` keys and values use Kafka's versioned binary schemas: hand-built
bytes of each version decode, what we write round-trips, tombstones read as None, corrupt
bytes raise SchemaError; and the group state table is Kafka's."""
from __future__ import annotations

import itertools
import struct

import pytest

from actors.core.group import offsets_topic_records as rec
from actors.core.group.group_metadata import (
    VALID_PREVIOUS_STATES, GroupMetadata, GroupState, MemberMetadata, OffsetAndMetadata, is_valid_transition,
)
from actors.core.group.wire import SchemaError


def s(text: str) -> bytes:
    return struct.pack(">h", len(text)) + text.encode()


def i16(v): return struct.pack(">h", v)
def i32(v): return struct.pack(">i", v)
def i64(v): return struct.pack(">q", v)
def b(data): return i32(len(data)) + data


def test_keys_are_kafkas_layout():
    assert rec.offset_commit_key("g", ("t", 3)) == i16(1) + s("g") + s("t") + i32(3)
    assert rec.group_metadata_key("g") == i16(2) + s("g")
    assert rec.decode_key(i16(0) + s("g") + s("t") + i32(3)) == rec.OffsetCommitKey("g", ("t", 3))
    assert rec.decode_key(rec.group_metadata_key("g")) == rec.GroupMetadataKey("g")
    with pytest.raises(SchemaError):
        rec.decode_key(i16(3) + s("g"))


# (version, bytes, expected)
OFFSET_VALUES = [
    (0, i16(0) + i64(5) + s("m") + i64(100), OffsetAndMetadata(offset=5, metadata="m", commit_timestamp_ms=100)),
    (1, i16(1) + i64(5) + s("m") + i64(100) + i64(200),
     OffsetAndMetadata(offset=5, metadata="m", commit_timestamp_ms=100, expire_timestamp_ms=200)),
    (2, i16(2) + i64(5) + s("") + i64(100), OffsetAndMetadata(offset=5, commit_timestamp_ms=100)),
    (3, i16(3) + i64(5) + i32(7) + s("m") + i64(100),
     OffsetAndMetadata(offset=5, leader_epoch=7, metadata="m", commit_timestamp_ms=100)),
]


@pytest.mark.parametrize("version,data,expected", OFFSET_VALUES, ids=[f"v{c[0]}" for c in OFFSET_VALUES])
def test_offset_values_of_every_version_decode(version, data, expected):
    assert rec.decode_offset_commit_value(data) == expected


def test_offset_values_are_written_as_v3_or_v1_with_an_expire_time():
    assert rec.offset_commit_value(OFFSET_VALUES[3][2]) == OFFSET_VALUES[3][1]
    assert rec.offset_commit_value(OFFSET_VALUES[1][2]) == OFFSET_VALUES[1][1]
    assert rec.decode_offset_commit_value(None) is None


def member_v0():
    return s("m1") + s("client") + s("host") + i32(10_000) + b(b"sub") + b(b"asg")


GROUP_VALUES = [
    (0, i16(0) + s("consumer") + i32(3) + s("range") + s("m1") + i32(1) + member_v0(), 10_000, None, None),
    (1, i16(1) + s("consumer") + i32(3) + s("range") + s("m1") + i32(1)
     + s("m1") + s("client") + s("host") + i32(60_000) + i32(10_000) + b(b"sub") + b(b"asg"), 60_000, None, None),
    (2, i16(2) + s("consumer") + i32(3) + s("range") + s("m1") + i64(123) + i32(1)
     + s("m1") + s("client") + s("host") + i32(60_000) + i32(10_000) + b(b"sub") + b(b"asg"), 60_000, 123, None),
    (3, i16(3) + s("consumer") + i32(3) + s("range") + s("m1") + i64(123) + i32(1)
     + s("m1") + s("inst") + s("client") + s("host") + i32(60_000) + i32(10_000) + b(b"sub") + b(b"asg"),
     60_000, 123, "inst"),
]


@pytest.mark.parametrize("version,data,rebalance_ms,timestamp,instance", GROUP_VALUES,
                         ids=[f"v{c[0]}" for c in GROUP_VALUES])
def test_group_values_of_every_version_decode(version, data, rebalance_ms, timestamp, instance):
    record = rec.decode_group_metadata_value(data)
    assert (record.protocol_type, record.generation_id, record.protocol_name, record.leader_id) == \
        ("consumer", 3, "range", "m1")
    assert record.current_state_timestamp_ms == timestamp
    (member,) = record.members
    assert (member.member_id, member.group_instance_id, member.client_id, member.client_host) == \
        ("m1", instance, "client", "host")
    assert (member.rebalance_timeout_ms, member.session_timeout_ms, member.subscription, member.assignment) == \
        (rebalance_ms, 10_000, b"sub", b"asg")
    if version == 3:
        assert rec.group_metadata_value(record) == data


def test_group_value_written_from_a_group_round_trips():
    group = GroupMetadata("g", state_timestamp_ms=55, generation_id=2)
    group.add(MemberMetadata(member_id="m1", group_id="g", client_id="c", client_host="h", rebalance_timeout_ms=1,
                             session_timeout_ms=2, protocol_type="consumer",
                             supported_protocols=(("range", b"r"), ("sticky", b"s"))), None)
    group.protocol_name = "sticky"
    record = rec.group_metadata_record(group, {"m1": b"assigned"})
    decoded = rec.decode_group_metadata_value(rec.group_metadata_value(record))
    assert decoded == record
    assert decoded.members[0].subscription == b"s" and decoded.members[0].assignment == b"assigned"
    empty = rec.GroupMetadataRecord(protocol_type="consumer", generation_id=3, protocol_name=None, leader_id=None,
                                    current_state_timestamp_ms=9)
    assert rec.decode_group_metadata_value(rec.group_metadata_value(empty)) == empty
    assert rec.decode_group_metadata_value(None) is None


@pytest.mark.parametrize("data", [
    b"", i16(9) + s("x"),  # unknown version
    GROUP_VALUES[3][1][:-3],  # truncated
    i16(3) + s("consumer") + i32(1) + i16(-1) + i16(-1) + i64(0) + i32(1)
    + s("m") + i16(-1) + s("c") + s("h") + i32(1) + i32(1) + b(b"") + b(b""),  # members but no protocol
], ids=["empty", "unknown version", "truncated", "members without protocol"])
def test_corrupt_group_values_are_schema_errors(data):
    with pytest.raises(SchemaError):
        rec.decode_group_metadata_value(data)


KAFKA_TABLE = {  # Kafka 2.4 GroupMetadata.validPreviousStates, spelled out
    "Dead": {"Stable", "PreparingRebalance", "CompletingRebalance", "Empty", "Dead"},
    "CompletingRebalance": {"PreparingRebalance"},
    "Stable": {"CompletingRebalance"},
    "PreparingRebalance": {"Stable", "CompletingRebalance", "Empty"},
    "Empty": {"PreparingRebalance"},
}


@pytest.mark.parametrize("current,target", list(itertools.product(GroupState, GroupState)),
                         ids=lambda state: state.kafka_name)
def test_group_transitions_follow_kafkas_table(current, target):
    allowed = current.kafka_name in KAFKA_TABLE[target.kafka_name]
    assert is_valid_transition(current, target) == allowed
    assert {s.kafka_name for s in VALID_PREVIOUS_STATES[target]} == KAFKA_TABLE[target.kafka_name]
    group = GroupMetadata("g", state_timestamp_ms=0, state=current)
    if allowed:
        group.transition_to(target, 7)
        assert (group.state, group.state_timestamp_ms) == (target, 7)
    else:
        with pytest.raises(AssertionError):
            group.transition_to(target, 7)
