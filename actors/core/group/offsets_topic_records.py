"""The records a group coordinator keeps in ``__consumer_offsets``: Kafka's own binary schemas
(``GroupMetadataManager`` at 2.4), so a partition written here reads like Kafka's.

Every key and value starts with an int16 schema version, then the fields, big-endian (``string``:
int16 length then UTF-8, -1 for a null ``nullable string``; ``bytes``: int32 length then bytes;
``array``: int32 count then elements).

Keys (the log is compacted on them; the last write for a key wins, a null value deletes):

- Offset commit key, version 1 (0 reads the same): ``group string, topic string, partition int32``.
- Group metadata key, version 2: ``group string``.

Offset commit values:

- v0: ``offset int64, metadata string, timestamp int64``
- v1: ``offset int64, metadata string, commit_timestamp int64, expire_timestamp int64``
- v2: ``offset int64, metadata string, commit_timestamp int64``
- v3: ``offset int64, leader_epoch int32, metadata string, commit_timestamp int64``

Written as v3, or v1 when the commit carried an explicit retention time (as Kafka 2.4 does).

Group metadata values: ``protocol_type string, generation int32, protocol nullable string,
leader nullable string``, then from v2 ``current_state_timestamp int64`` (-1: unknown), then
``members array`` of ``member_id string``, from v3 ``group_instance_id nullable string``, then
``client_id string, client_host string``, from v1 ``rebalance_timeout int32``, then
``session_timeout int32, subscription bytes, assignment bytes``. Written as v3; v0 to v3 are read.

A null value is a tombstone: for an offset key it deletes that offset, for a group key the group.
Malformed bytes raise ``SchemaError``.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from actors.core.group.group_metadata import GroupMetadata, OffsetAndMetadata
from actors.core.group.wire import Reader, SchemaError, Writer
from actors.core.messages._base import NO_EPOCH

TopicPartition = tuple[str, int]

OFFSET_COMMIT_KEY_VERSION = 1
GROUP_METADATA_KEY_VERSION = 2
GROUP_METADATA_VALUE_VERSION = 3


@dataclass(frozen=True, slots=True)
class OffsetCommitKey:
    group_id: str
    topic_partition: TopicPartition


@dataclass(frozen=True, slots=True)
class GroupMetadataKey:
    group_id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class MemberRecord:
    member_id: str
    group_instance_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    rebalance_timeout_ms: int
    session_timeout_ms: int
    subscription: bytes  # the member's metadata for the group's protocol
    assignment: bytes


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupMetadataRecord:
    protocol_type: str
    generation_id: int
    protocol_name: str | None
    leader_id: str | None
    current_state_timestamp_ms: int | None
    members: tuple[MemberRecord, ...] = ()


# ------------------------------------------------------------------------------------------ keys
def offset_commit_key(group_id: str, topic_partition: TopicPartition) -> bytes:
    topic, partition = topic_partition
    return Writer().int16(OFFSET_COMMIT_KEY_VERSION).string(group_id).string(topic).int32(partition).build()


def group_metadata_key(group_id: str) -> bytes:
    return Writer().int16(GROUP_METADATA_KEY_VERSION).string(group_id).build()


def decode_key(key: bytes) -> OffsetCommitKey | GroupMetadataKey:
    reader = Reader(key)
    version = reader.int16()
    if version in (0, 1):
        group_id, topic = reader.string(), reader.string()
        return OffsetCommitKey(group_id, (topic, reader.int32()))
    if version == 2:
        return GroupMetadataKey(reader.string())
    raise SchemaError(f"unknown __consumer_offsets key version {version}")


# -------------------------------------------------------------------------------- offset values
def offset_commit_value(committed: OffsetAndMetadata) -> bytes:
    if committed.expire_timestamp_ms is not None:
        return (Writer().int16(1).int64(committed.offset).string(committed.metadata)
                .int64(committed.commit_timestamp_ms).int64(committed.expire_timestamp_ms).build())
    return (Writer().int16(3).int64(committed.offset).int32(committed.leader_epoch)
            .string(committed.metadata).int64(committed.commit_timestamp_ms).build())


def decode_offset_commit_value(value: bytes | None) -> OffsetAndMetadata | None:
    if value is None:
        return None
    reader = Reader(value)
    version = reader.int16()
    if version not in (0, 1, 2, 3):
        raise SchemaError(f"unknown offset commit value version {version}")
    offset = reader.int64()
    leader_epoch = reader.int32() if version == 3 else NO_EPOCH
    metadata = reader.string()
    commit_timestamp_ms = reader.int64()
    expire_timestamp_ms = reader.int64() if version == 1 else None
    return OffsetAndMetadata(offset=offset, leader_epoch=leader_epoch, metadata=metadata,
                             commit_timestamp_ms=commit_timestamp_ms, expire_timestamp_ms=expire_timestamp_ms)


# --------------------------------------------------------------------------------- group values
def group_metadata_record(group: GroupMetadata, assignment: Mapping[str, bytes]) -> GroupMetadataRecord:
    """What Kafka's ``storeGroup`` writes: the group after a rebalance, with the leader's assignment."""
    members = tuple(
        MemberRecord(member_id=m.member_id, group_instance_id=m.group_instance_id, client_id=m.client_id,
                     client_host=m.client_host, rebalance_timeout_ms=m.rebalance_timeout_ms,
                     session_timeout_ms=m.session_timeout_ms,
                     subscription=m.metadata(group.protocol_name) if group.protocol_name else b"",
                     assignment=assignment.get(m.member_id, b""))
        for m in group.members.values())
    return GroupMetadataRecord(protocol_type=group.protocol_type or "", generation_id=group.generation_id,
                               protocol_name=group.protocol_name, leader_id=group.leader_id,
                               current_state_timestamp_ms=group.state_timestamp_ms, members=members)


def group_metadata_value(record: GroupMetadataRecord) -> bytes:
    writer = (Writer().int16(GROUP_METADATA_VALUE_VERSION).string(record.protocol_type)
              .int32(record.generation_id).nullable_string(record.protocol_name)
              .nullable_string(record.leader_id)
              .int64(-1 if record.current_state_timestamp_ms is None else record.current_state_timestamp_ms)
              .array_length(len(record.members)))
    for member in record.members:
        (writer.string(member.member_id).nullable_string(member.group_instance_id)
         .string(member.client_id).string(member.client_host).int32(member.rebalance_timeout_ms)
         .int32(member.session_timeout_ms).bytes(member.subscription).bytes(member.assignment))
    return writer.build()


def _read_member(reader: Reader, version: int) -> MemberRecord:
    member_id = reader.string()
    group_instance_id = reader.nullable_string() if version >= 3 else None
    client_id, client_host = reader.string(), reader.string()
    rebalance_timeout_ms = reader.int32() if version >= 1 else None
    session_timeout_ms = reader.int32()
    return MemberRecord(
        member_id=member_id, group_instance_id=group_instance_id, client_id=client_id,
        client_host=client_host, session_timeout_ms=session_timeout_ms,
        # Version 0 predates rebalance timeouts; Kafka then uses the session timeout.
        rebalance_timeout_ms=session_timeout_ms if rebalance_timeout_ms is None else rebalance_timeout_ms,
        subscription=reader.bytes() or b"", assignment=reader.bytes() or b"")


def decode_group_metadata_value(value: bytes | None) -> GroupMetadataRecord | None:
    if value is None:
        return None
    reader = Reader(value)
    version = reader.int16()
    if version not in (0, 1, 2, 3):
        raise SchemaError(f"unknown group metadata value version {version}")
    protocol_type = reader.string()
    generation_id = reader.int32()
    protocol_name = reader.nullable_string()
    leader_id = reader.nullable_string()
    timestamp = reader.int64() if version >= 2 else -1
    members = tuple(_read_member(reader, version) for _ in range(reader.array_length()))
    if members and protocol_name is None:
        raise SchemaError("group metadata with members but no protocol")
    if len({member.member_id for member in members}) != len(members):
        raise SchemaError("group metadata with duplicate member ids")
    return GroupMetadataRecord(protocol_type=protocol_type, generation_id=generation_id,
                               protocol_name=protocol_name, leader_id=leader_id,
                               current_state_timestamp_ms=None if timestamp == -1 else timestamp,
                               members=members)
