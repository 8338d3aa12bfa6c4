"""Every message type, one module per Kafka API, and each request's Kafka API key.

Import messages from here (``from actors.core.messages import FetchRequest``); the modules are
split only to keep each API's types together. ``API_KEYS`` maps each request class name to
Kafka's API key; each ``<Api>Request`` has a matching ``<Api>Response``.
"""
from __future__ import annotations

from actors.core.messages._base import NO_LEADER, NO_EPOCH, CONSUMER_REPLICA_ID
from actors.core.messages.produce import (
    PartitionProduceData,
    TopicProduceData,
    ProduceRequest,
    PartitionProduceResponse,
    TopicProduceResponse,
    ProduceResponse,
)
from actors.core.messages.fetch import (
    FetchPartition,
    FetchTopic,
    FetchRequest,
    EpochEndOffset,
    LeaderIdAndEpoch,
    FetchPartitionData,
    FetchableTopicResponse,
    FetchResponse,
)
from actors.core.messages.list_offsets import (
    LATEST_TIMESTAMP,
    EARLIEST_TIMESTAMP,
    ListOffsetsPartition,
    ListOffsetsTopic,
    ListOffsetsRequest,
    ListOffsetsPartitionResponse,
    ListOffsetsTopicResponse,
    ListOffsetsResponse,
)
from actors.core.messages.metadata import (
    MetadataRequest,
    MetadataResponseBroker,
    MetadataResponsePartition,
    MetadataResponseTopic,
    MetadataResponse,
)
from actors.core.messages.leader_and_isr import (
    LeaderAndIsrPartitionState,
    LeaderAndIsrTopicState,
    LeaderAndIsrLiveLeader,
    LeaderAndIsrRequest,
    LeaderAndIsrPartitionError,
    LeaderAndIsrResponse,
)
from actors.core.messages.stop_replica import (
    StopReplicaTopic,
    StopReplicaRequest,
    StopReplicaPartitionError,
    StopReplicaResponse,
)
from actors.core.messages.update_metadata import (
    UpdateMetadataPartitionState,
    UpdateMetadataTopicState,
    UpdateMetadataBroker,
    UpdateMetadataRequest,
    UpdateMetadataResponse,
)
from actors.core.messages.controlled_shutdown import (
    ControlledShutdownRequest,
    RemainingPartition,
    ControlledShutdownResponse,
)
from actors.core.messages.offset_commit import (
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
    OffsetCommitRequest,
    OffsetCommitResponsePartition,
    OffsetCommitResponseTopic,
    OffsetCommitResponse,
)
from actors.core.messages.offset_fetch import (
    OffsetFetchRequestTopic,
    OffsetFetchRequest,
    OffsetFetchResponsePartition,
    OffsetFetchResponseTopic,
    OffsetFetchResponse,
)
from actors.core.messages.find_coordinator import (
    COORDINATOR_KEY_TYPE_GROUP,
    COORDINATOR_KEY_TYPE_TRANSACTION,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
)
from actors.core.messages.join_group import (
    UNKNOWN_GENERATION_ID,
    UNKNOWN_MEMBER_ID,
    JoinGroupRequestProtocol,
    JoinGroupRequest,
    JoinGroupResponseMember,
    JoinGroupResponse,
)
from actors.core.messages.heartbeat import HeartbeatRequest, HeartbeatResponse
from actors.core.messages.leave_group import (
    MemberIdentity,
    LeaveGroupRequest,
    MemberResponse,
    LeaveGroupResponse,
)
from actors.core.messages.sync_group import (
    SyncGroupRequestAssignment,
    SyncGroupRequest,
    SyncGroupResponse,
)
from actors.core.messages.describe_groups import (
    DescribeGroupsRequest,
    DescribedGroupMember,
    DescribedGroup,
    DescribeGroupsResponse,
)
from actors.core.messages.list_groups import ListGroupsRequest, ListedGroup, ListGroupsResponse
from actors.core.messages.create_topics import (
    CreatableReplicaAssignment,
    CreateableTopicConfig,
    CreatableTopic,
    CreateTopicsRequest,
    CreatableTopicResult,
    CreateTopicsResponse,
)
from actors.core.messages.delete_topics import (
    DeleteTopicsRequest,
    DeletableTopicResult,
    DeleteTopicsResponse,
)
from actors.core.messages.offset_for_leader_epoch import (
    UNDEFINED_EPOCH_OFFSET,
    OffsetForLeaderPartition,
    OffsetForLeaderTopic,
    OffsetForLeaderEpochRequest,
    OffsetForLeaderPartitionResult,
    OffsetForLeaderTopicResult,
    OffsetForLeaderEpochResponse,
)
from actors.core.messages.alter_partition import (
    AlterPartitionPartitionData,
    AlterPartitionTopicData,
    AlterPartitionRequest,
    AlterPartitionResponsePartitionData,
    AlterPartitionResponseTopicData,
    AlterPartitionResponse,
)
from actors.core.messages.broker_registration import (
    BrokerRegistrationRequest,
    BrokerRegistrationResponse,
)
from actors.core.messages.broker_heartbeat import BrokerHeartbeatRequest, BrokerHeartbeatResponse

# Kafka's API keys (org.apache.kafka.common.protocol.ApiKeys), by request class name.
API_KEYS: dict[str, int] = {
    "ProduceRequest": 0,
    "FetchRequest": 1,
    "ListOffsetsRequest": 2,
    "MetadataRequest": 3,
    "LeaderAndIsrRequest": 4,
    "StopReplicaRequest": 5,
    "UpdateMetadataRequest": 6,
    "ControlledShutdownRequest": 7,
    "OffsetCommitRequest": 8,
    "OffsetFetchRequest": 9,
    "FindCoordinatorRequest": 10,
    "JoinGroupRequest": 11,
    "HeartbeatRequest": 12,
    "LeaveGroupRequest": 13,
    "SyncGroupRequest": 14,
    "DescribeGroupsRequest": 15,
    "ListGroupsRequest": 16,
    "CreateTopicsRequest": 19,
    "DeleteTopicsRequest": 20,
    "OffsetForLeaderEpochRequest": 23,
    "AlterPartitionRequest": 56,
    "BrokerRegistrationRequest": 62,
    "BrokerHeartbeatRequest": 63,
}

__all__ = [
    "API_KEYS",
    "NO_LEADER",
    "NO_EPOCH",
    "CONSUMER_REPLICA_ID",
    "PartitionProduceData",
    "TopicProduceData",
    "ProduceRequest",
    "PartitionProduceResponse",
    "TopicProduceResponse",
    "ProduceResponse",
    "FetchPartition",
    "FetchTopic",
    "FetchRequest",
    "EpochEndOffset",
    "LeaderIdAndEpoch",
    "FetchPartitionData",
    "FetchableTopicResponse",
    "FetchResponse",
    "LATEST_TIMESTAMP",
    "EARLIEST_TIMESTAMP",
    "ListOffsetsPartition",
    "ListOffsetsTopic",
    "ListOffsetsRequest",
    "ListOffsetsPartitionResponse",
    "ListOffsetsTopicResponse",
    "ListOffsetsResponse",
    "MetadataRequest",
    "MetadataResponseBroker",
    "MetadataResponsePartition",
    "MetadataResponseTopic",
    "MetadataResponse",
    "LeaderAndIsrPartitionState",
    "LeaderAndIsrTopicState",
    "LeaderAndIsrLiveLeader",
    "LeaderAndIsrRequest",
    "LeaderAndIsrPartitionError",
    "LeaderAndIsrResponse",
    "StopReplicaTopic",
    "StopReplicaRequest",
    "StopReplicaPartitionError",
    "StopReplicaResponse",
    "UpdateMetadataPartitionState",
    "UpdateMetadataTopicState",
    "UpdateMetadataBroker",
    "UpdateMetadataRequest",
    "UpdateMetadataResponse",
    "ControlledShutdownRequest",
    "RemainingPartition",
    "ControlledShutdownResponse",
    "OffsetCommitRequestPartition",
    "OffsetCommitRequestTopic",
    "OffsetCommitRequest",
    "OffsetCommitResponsePartition",
    "OffsetCommitResponseTopic",
    "OffsetCommitResponse",
    "OffsetFetchRequestTopic",
    "OffsetFetchRequest",
    "OffsetFetchResponsePartition",
    "OffsetFetchResponseTopic",
    "OffsetFetchResponse",
    "COORDINATOR_KEY_TYPE_GROUP",
    "COORDINATOR_KEY_TYPE_TRANSACTION",
    "FindCoordinatorRequest",
    "FindCoordinatorResponse",
    "UNKNOWN_GENERATION_ID",
    "UNKNOWN_MEMBER_ID",
    "JoinGroupRequestProtocol",
    "JoinGroupRequest",
    "JoinGroupResponseMember",
    "JoinGroupResponse",
    "HeartbeatRequest",
    "HeartbeatResponse",
    "MemberIdentity",
    "LeaveGroupRequest",
    "MemberResponse",
    "LeaveGroupResponse",
    "SyncGroupRequestAssignment",
    "SyncGroupRequest",
    "SyncGroupResponse",
    "DescribeGroupsRequest",
    "DescribedGroupMember",
    "DescribedGroup",
    "DescribeGroupsResponse",
    "ListGroupsRequest",
    "ListedGroup",
    "ListGroupsResponse",
    "CreatableReplicaAssignment",
    "CreateableTopicConfig",
    "CreatableTopic",
    "CreateTopicsRequest",
    "CreatableTopicResult",
    "CreateTopicsResponse",
    "DeleteTopicsRequest",
    "DeletableTopicResult",
    "DeleteTopicsResponse",
    "UNDEFINED_EPOCH_OFFSET",
    "OffsetForLeaderPartition",
    "OffsetForLeaderTopic",
    "OffsetForLeaderEpochRequest",
    "OffsetForLeaderPartitionResult",
    "OffsetForLeaderTopicResult",
    "OffsetForLeaderEpochResponse",
    "AlterPartitionPartitionData",
    "AlterPartitionTopicData",
    "AlterPartitionRequest",
    "AlterPartitionResponsePartitionData",
    "AlterPartitionResponseTopicData",
    "AlterPartitionResponse",
    "BrokerRegistrationRequest",
    "BrokerRegistrationResponse",
    "BrokerHeartbeatRequest",
    "BrokerHeartbeatResponse",
]
