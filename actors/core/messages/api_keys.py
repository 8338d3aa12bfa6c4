"""Kafka's API key of each request type, by the request class's name."""
from __future__ import annotations

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
    "InitProducerIdRequest": 22,
    "OffsetForLeaderEpochRequest": 23,
    "ElectLeadersRequest": 43,
    "IncrementalAlterConfigsRequest": 44,
    "AlterPartitionReassignmentsRequest": 45,
    "ListPartitionReassignmentsRequest": 46,
    "AlterPartitionRequest": 56,
    "BrokerRegistrationRequest": 62,
    "BrokerHeartbeatRequest": 63,
    "AllocateProducerIdsRequest": 67,
}

__all__ = ["API_KEYS"]
