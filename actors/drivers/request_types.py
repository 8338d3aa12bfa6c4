"""The request type of every Kafka API handler a driver steps, by handler name (``handle_<api>``):
what a request is parsed as before it reaches a core."""
from __future__ import annotations

from actors.core.group.messages import DeleteGroupsRequest
from actors.core.messages import (
    AllocateProducerIdsRequest, AlterPartitionRequest, BrokerHeartbeatRequest, BrokerRegistrationRequest, ControlledShutdownRequest,
    CreateTopicsRequest, DeleteTopicsRequest, DescribeGroupsRequest, ElectLeadersRequest, FetchRequest,
    FindCoordinatorRequest, HeartbeatRequest, IncrementalAlterConfigsRequest, AlterPartitionReassignmentsRequest,
    ListPartitionReassignmentsRequest, InitProducerIdRequest, JoinGroupRequest, LeaderAndIsrRequest, LeaveGroupRequest,
    ListGroupsRequest, ListOffsetsRequest, MetadataRequest, OffsetCommitRequest, OffsetFetchRequest,
    OffsetForLeaderEpochRequest, ProduceRequest, StopReplicaRequest, SyncGroupRequest, UpdateMetadataRequest,
)
from actors.core.fetcher.follower_messages import FollowerAppendRequest, FollowerTruncateRequest

REQUEST_TYPES: dict[str, type] = {
    "handle_produce": ProduceRequest,
    "handle_internal_produce": ProduceRequest,
    "handle_fetch": FetchRequest,
    "handle_list_offsets": ListOffsetsRequest,
    "handle_metadata": MetadataRequest,
    "handle_offset_for_leader_epoch": OffsetForLeaderEpochRequest,
    "handle_find_coordinator": FindCoordinatorRequest,
    "handle_init_producer_id": InitProducerIdRequest,
    "handle_follower_truncate": FollowerTruncateRequest,
    "handle_follower_append": FollowerAppendRequest,
    "handle_leader_and_isr": LeaderAndIsrRequest,
    "handle_update_metadata": UpdateMetadataRequest,
    "handle_stop_replica": StopReplicaRequest,
    "handle_broker_registration": BrokerRegistrationRequest,
    "handle_broker_heartbeat": BrokerHeartbeatRequest,
    "handle_controlled_shutdown": ControlledShutdownRequest,
    "handle_alter_partition": AlterPartitionRequest,
    "handle_create_topics": CreateTopicsRequest,
    "handle_delete_topics": DeleteTopicsRequest,
    "handle_elect_leaders": ElectLeadersRequest,
    "handle_allocate_producer_ids": AllocateProducerIdsRequest,
    "handle_incremental_alter_configs": IncrementalAlterConfigsRequest,
    "handle_alter_partition_reassignments": AlterPartitionReassignmentsRequest,
    "handle_list_partition_reassignments": ListPartitionReassignmentsRequest,
    "handle_join_group": JoinGroupRequest,
    "handle_sync_group": SyncGroupRequest,
    "handle_heartbeat": HeartbeatRequest,
    "handle_leave_group": LeaveGroupRequest,
    "handle_offset_commit": OffsetCommitRequest,
    "handle_offset_fetch": OffsetFetchRequest,
    "handle_describe_groups": DescribeGroupsRequest,
    "handle_list_groups": ListGroupsRequest,
    "handle_delete_groups": DeleteGroupsRequest,
}

# The handler a request of each type goes to (a client's produce; the group coordinator's own
# appends to __consumer_offsets go to handle_internal_produce, which it names itself).
HANDLER_NAMES: dict[type, str] = {request_type: name for name, request_type in reversed(REQUEST_TYPES.items())}


def handler_name(request: object) -> str:
    return HANDLER_NAMES[type(request)]
