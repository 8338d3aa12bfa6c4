"""The request type of every Kafka API handler a driver steps, by handler name (``handle_<api>``):
what a request is parsed as before it reaches a core."""
from __future__ import annotations

from actors.core.group.messages import DeleteGroupsRequest
from actors.core.messages.allocate_producer_ids import AllocateProducerIdsRequest
from actors.core.messages.alter_partition import AlterPartitionRequest
from actors.core.messages.broker_heartbeat import BrokerHeartbeatRequest
from actors.core.messages.broker_registration import BrokerRegistrationRequest
from actors.core.messages.controlled_shutdown import ControlledShutdownRequest
from actors.core.messages.create_topics import CreateTopicsRequest
from actors.core.messages.delete_topics import DeleteTopicsRequest
from actors.core.messages.describe_groups import DescribeGroupsRequest
from actors.core.messages.elect_leaders import ElectLeadersRequest
from actors.core.messages.fetch import FetchRequest
from actors.core.messages.find_coordinator import FindCoordinatorRequest
from actors.core.messages.heartbeat import HeartbeatRequest
from actors.core.messages.incremental_alter_configs import IncrementalAlterConfigsRequest
from actors.core.messages.init_producer_id import InitProducerIdRequest
from actors.core.messages.join_group import JoinGroupRequest
from actors.core.messages.leader_and_isr import LeaderAndIsrRequest
from actors.core.messages.leave_group import LeaveGroupRequest
from actors.core.messages.list_groups import ListGroupsRequest
from actors.core.messages.list_offsets import ListOffsetsRequest
from actors.core.messages.metadata import MetadataRequest
from actors.core.messages.offset_commit import OffsetCommitRequest
from actors.core.messages.offset_fetch import OffsetFetchRequest
from actors.core.messages.offset_for_leader_epoch import OffsetForLeaderEpochRequest
from actors.core.messages.partition_reassignments import (
    AlterPartitionReassignmentsRequest, ListPartitionReassignmentsRequest,
)
from actors.core.messages.produce import ProduceRequest
from actors.core.messages.stop_replica import StopReplicaRequest
from actors.core.messages.sync_group import SyncGroupRequest
from actors.core.messages.update_metadata import UpdateMetadataRequest
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
