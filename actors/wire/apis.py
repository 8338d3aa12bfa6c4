"""Each served API's translation between kio's request/response classes and raykafka's messages.

Where a request goes, and as what type, is the API table's (actors/core/apis.py). A ``Codec``, one
per API key the listeners serve, says how the kio request becomes the table's request type
(``to_core``), how the raykafka response becomes the kio response of the request's version
(``to_kio``), and what to answer when the group coordinator cannot be reached
(``error_response``: a raykafka response carrying one error code). Most conversions are
``convert``'s name matching, the default; ``_DIFFERENCES`` holds the APIs that differ, keyed by
API key, so an API whose conversion is by field name needs no entry here.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from actors.core.apis import BY_KEY, GROUP_COORDINATOR, Api
from actors.core.errors import ErrorCode
from actors.core.group.messages import DeletableGroupResult, DeleteGroupsRequest, DeleteGroupsResponse
from actors.core.messages._base import CONSUMER_REPLICA_ID
from actors.core.messages.alter_configs import AlterConfigsRequest
from actors.core.messages.create_topics import CreateTopicsRequest
from actors.core.messages.incremental_alter_configs import OP_SET, AlterableConfig, AlterConfigsResource
from actors.core.messages.delete_topics import DeleteTopicsRequest
from actors.core.messages.describe_cluster import DescribeClusterRequest
from actors.core.messages.describe_groups import DescribedGroup, DescribeGroupsRequest, DescribeGroupsResponse
from actors.core.messages.fetch import FetchRequest
from actors.core.messages.find_coordinator import FindCoordinatorRequest
from actors.core.messages.heartbeat import HeartbeatRequest, HeartbeatResponse
from actors.core.messages.init_producer_id import InitProducerIdRequest
from actors.core.messages.join_group import JoinGroupRequest, JoinGroupResponse
from actors.core.messages.leave_group import LeaveGroupRequest, LeaveGroupResponse, MemberIdentity
from actors.core.messages.list_groups import ListGroupsRequest, ListGroupsResponse
from actors.core.messages.list_offsets import ListOffsetsRequest
from actors.core.messages.metadata import MetadataRequest
from actors.core.messages.offset_commit import (
    OffsetCommitRequest, OffsetCommitResponse, OffsetCommitResponsePartition, OffsetCommitResponseTopic,
)
from actors.core.messages.offset_delete import OffsetDeleteResponse
from actors.core.messages.offset_fetch import OffsetFetchRequest, OffsetFetchResponse
from actors.core.messages.offset_for_leader_epoch import OffsetForLeaderEpochRequest
from actors.core.messages.produce import PartitionProduceData, ProduceRequest, TopicProduceData
from actors.core.messages.sync_group import SyncGroupRequest, SyncGroupResponse
from actors.core.replica.fetch import refuse_zstd
from actors.wire.convert import duration_ms, from_kio, to_kio
from actors.wire.frames import response_class
from actors.wire.produce_codec import read_produce_request, write_produce_response
from actors.wire.versions import SUPPORTED_VERSIONS

# The first Fetch version whose client may be sent zstd batches (KIP-110).
FETCH_ZSTD_VERSION = 10


@dataclass(frozen=True)
class WireContext:
    """What a translation may need to know about the connection it serves."""
    listener_name: str = "PLAINTEXT"
    client_id: str = ""
    client_host: str = ""


@dataclass(frozen=True)
class Codec:
    api: Api  # the table's entry: its key, name, request type and the kind that serves it
    to_core: Callable[[Any, int, WireContext], Any]
    to_kio: Callable[[Any, int, Any], Any]  # (raykafka response, version, kio request) -> kio response
    error_response: Callable[[Any, ErrorCode], Any] | None = None  # (raykafka request, code)
    # Where an API's requests are read and its responses written without kio (``produce_codec``):
    # (frame, body position, version) -> raykafka request, and (raykafka response, version) -> body.
    read: Callable[[Any, int, int], Any] | None = None
    write: Callable[[Any, int], bytes] | None = None


def _generic_to_core(message_type: type, **fixed: Any) -> Callable[[Any, int, WireContext], Any]:
    def convert(body: Any, version: int, context: WireContext) -> Any:
        return from_kio(message_type, body, **fixed)
    return convert


def _generic_to_kio(api_key: int) -> Callable[[Any, int, Any], Any]:
    def convert(response: Any, version: int, body: Any) -> Any:
        return to_kio(response_class(api_key, version), response)
    return convert


# ----------------------------------------------------------------------------- data APIs
def _produce_to_core(body: Any, version: int, context: WireContext) -> ProduceRequest:
    # Records may be null on the wire; an empty partition payload is what the log refuses.
    return ProduceRequest(
        acks=int(body.acks), timeout_ms=duration_ms(body.timeout), transactional_id=body.transactional_id,
        topic_data=tuple(TopicProduceData(name=str(topic.name), partition_data=tuple(
            PartitionProduceData(index=int(partition.index), records=bytes(partition.records or b""))
            for partition in topic.partition_data)) for topic in body.topic_data), request_api_version=version)


def _metadata_to_core(body: Any, version: int, context: WireContext) -> MetadataRequest:
    # Metadata v0 asks for every topic with an empty list; later versions with null.
    names = None if body.topics is None else tuple(str(topic.name) for topic in body.topics)
    if version == 0 and not names:
        names = None
    # The flag came with v4; before it every Metadata request allowed auto-creation.
    allow = True if version < 4 else bool(body.allow_auto_topic_creation)
    return MetadataRequest(topics=names, allow_auto_topic_creation=allow, listener_name=context.listener_name,
                           request_api_version=version)


def _metadata_to_kio(response: Any, version: int, body: Any) -> Any:
    """Admin clients send CreateTopics and DeleteTopics to the broker Metadata names controller;
    raykafka's controller is no broker, but every broker forwards those requests to it, so the
    lowest listed broker id stands in (it must be one the client can reach)."""
    controller_id = min((b.node_id for b in response.brokers), default=-1)
    return to_kio(response_class(3, version), response, controller_id=controller_id)


def _describe_cluster_to_core(body: Any, version: int, context: WireContext) -> DescribeClusterRequest:
    return from_kio(DescribeClusterRequest, body, listener_name=context.listener_name, request_api_version=version)


def _find_coordinator_to_core(body: Any, version: int, context: WireContext) -> FindCoordinatorRequest:
    if version >= 4:  # KIP-699: several keys, no single key
        return FindCoordinatorRequest(key="", key_type=int(body.key_type), listener_name=context.listener_name,
                                      coordinator_keys=tuple(str(key) for key in body.coordinator_keys))
    return from_kio(FindCoordinatorRequest, body, listener_name=context.listener_name)


def _consumer_only(message_type: type) -> Callable[[Any, int, WireContext], Any]:
    """A stock client is never a replica: its requests are a consumer's whatever replica_id says,
    so a forged replica id cannot read past the high watermark or count as a follower's ack."""
    def convert(body: Any, version: int, context: WireContext) -> Any:
        fixed: dict[str, Any] = {"replica_id": CONSUMER_REPLICA_ID}
        if message_type is FetchRequest and version < 7:
            # Fetch sessions (KIP-227) came with v7: an older fetch is a sessionless full one.
            fixed.update(session_id=0, session_epoch=-1)
        return from_kio(message_type, body, **fixed)
    return convert


def _fetch_to_kio(response: Any, version: int, body: Any) -> Any:
    if version < FETCH_ZSTD_VERSION:
        response = refuse_zstd(response)
    return to_kio(response_class(1, version), response)


# ----------------------------------------------------------------------------- group APIs
def _join_group_to_core(body: Any, version: int, context: WireContext) -> JoinGroupRequest:
    # The member id starts with the header's client id; DescribeGroups reports it and the host.
    fixed: dict[str, Any] = {"client_id": context.client_id, "client_host": context.client_host}
    if version == 0:  # v0 has no rebalance timeout: Kafka uses the session timeout for both
        fixed["rebalance_timeout_ms"] = duration_ms(body.session_timeout)
    return from_kio(JoinGroupRequest, body, **fixed)


def _offset_commit_to_core(body: Any, version: int, context: WireContext) -> OffsetCommitRequest:
    return from_kio(OffsetCommitRequest, body, generation_id=int(body.generation_id_or_member_epoch))


def _leave_group_to_core(body: Any, version: int, context: WireContext) -> LeaveGroupRequest:
    if version < 3:  # one member per request before KIP-345
        return LeaveGroupRequest(group_id=str(body.group_id), members=(MemberIdentity(member_id=str(body.member_id)),))
    return from_kio(LeaveGroupRequest, body)


def _leave_group_to_kio(response: LeaveGroupResponse, version: int, body: Any) -> Any:
    error_code = response.error_code
    if version < 3 and error_code == ErrorCode.NONE and response.members:
        error_code = response.members[0].error_code
    return to_kio(response_class(13, version), response, error_code=error_code)


def _offset_commit_error(request: OffsetCommitRequest, code: ErrorCode) -> OffsetCommitResponse:
    return OffsetCommitResponse(topics=tuple(OffsetCommitResponseTopic(name=topic.name, partitions=tuple(
        OffsetCommitResponsePartition(partition_index=p.partition_index, error_code=code) for p in topic.partitions))
        for topic in request.topics))


def _offset_fetch_error(request: OffsetFetchRequest, code: ErrorCode) -> OffsetFetchResponse:
    return OffsetFetchResponse(topics=(), error_code=code)


def _describe_groups_error(request: DescribeGroupsRequest, code: ErrorCode) -> DescribeGroupsResponse:
    return DescribeGroupsResponse(groups=tuple(DescribedGroup(group_id=g, error_code=code) for g in request.groups))


def _delete_groups_error(request: DeleteGroupsRequest, code: ErrorCode) -> DeleteGroupsResponse:
    return DeleteGroupsResponse(results=tuple(DeletableGroupResult(group_id=g, error_code=code)
                                              for g in request.groups_names))


# ----------------------------------------------------------------------------- admin APIs
def _alter_configs_to_core(body: Any, version: int, context: WireContext) -> AlterConfigsRequest:
    """AlterConfigs' configs as SET operations; the controller replaces the overrides with them."""
    return AlterConfigsRequest(validate_only=bool(body.validate_only), resources=tuple(AlterConfigsResource(
        resource_type=int(resource.resource_type), resource_name=str(resource.resource_name),
        configs=tuple(AlterableConfig(name=str(config.name), config_operation=OP_SET, value=config.value)
                      for config in resource.configs)) for resource in body.resources))


# ----------------------------------------------------------------------------- local APIs
def _api_versions_to_kio(response: Any, version: int, body: Any) -> Any:
    """``response`` is the error code: NONE, or UNSUPPORTED_VERSION for a version we lack."""
    keys = [{"api_key": key, "min_version": low, "max_version": high}
            for key, (low, high) in sorted(SUPPORTED_VERSIONS.items())]
    return to_kio(response_class(18, version), {"error_code": response, "api_keys": keys, "throttle_time_ms": 0})


def api_versions_error_response() -> Any:
    """ApiVersions v0's answer to a version the broker does not know (KIP-511)."""
    return _api_versions_to_kio(ErrorCode.UNSUPPORTED_VERSION, 0, None)


# SaslHandshake (17) and SaslAuthenticate (36) on a PLAINTEXT listener: Kafka 2.4's
# KafkaApis.handleSaslHandshakeRequest and handleSaslAuthenticateRequest answer ILLEGAL_SASL_STATE
# (with no mechanisms; SaslAuthenticate with a message), and the connection stays open.
SASL_ON_PLAINTEXT_MESSAGE = "SASL is not enabled on this listener (raykafka's listeners are PLAINTEXT)"


def _sasl_handshake_to_kio(response: Any, version: int, body: Any) -> Any:
    return to_kio(response_class(17, version), {"error_code": ErrorCode.ILLEGAL_SASL_STATE, "mechanisms": ()})


def _sasl_authenticate_to_kio(response: Any, version: int, body: Any) -> Any:
    return to_kio(response_class(36, version), {"error_code": ErrorCode.ILLEGAL_SASL_STATE,
                                                 "error_message": SASL_ON_PLAINTEXT_MESSAGE, "auth_bytes": b"",
                                                 "session_lifetime_ms": 0})


def _init_producer_id_to_core(body: Any, version: int, context: WireContext) -> InitProducerIdRequest:
    """An idempotent producer's InitProducerId, answered by the broker from its producer-id block;
    a transactional one (a transactional id) is refused there at once, as transactions are not built."""
    return InitProducerIdRequest(transactional_id=body.transactional_id,
                                 transaction_timeout_ms=duration_ms(body.transaction_timeout))


def _passthrough(body: Any, version: int, context: WireContext) -> Any:
    return body


def _simple_error(response_type: type) -> Callable[[Any, ErrorCode], Any]:
    return lambda request, code: response_type(error_code=code)


# Where an API's conversion is not ``convert``'s name matching, by API key.
_DIFFERENCES: dict[int, dict[str, Callable]] = {
    0: {"to_core": _produce_to_core, "read": read_produce_request, "write": write_produce_response},
    1: {"to_core": _consumer_only(FetchRequest), "to_kio": _fetch_to_kio},
    2: {"to_core": _consumer_only(ListOffsetsRequest)},
    3: {"to_core": _metadata_to_core, "to_kio": _metadata_to_kio},
    8: {"to_core": _offset_commit_to_core, "error_response": _offset_commit_error},
    9: {"error_response": _offset_fetch_error},
    10: {"to_core": _find_coordinator_to_core},
    11: {"to_core": _join_group_to_core, "error_response": _simple_error(JoinGroupResponse)},
    12: {"error_response": _simple_error(HeartbeatResponse)},
    13: {"to_core": _leave_group_to_core, "to_kio": _leave_group_to_kio,
         "error_response": _simple_error(LeaveGroupResponse)},
    14: {"error_response": _simple_error(SyncGroupResponse)},
    15: {"error_response": _describe_groups_error},
    16: {"error_response": _simple_error(ListGroupsResponse)},
    17: {"to_kio": _sasl_handshake_to_kio},
    18: {"to_kio": _api_versions_to_kio},
    # The broker forwards them to the controller and holds the answer until its metadata agrees.
    19: {"to_core": _generic_to_core(CreateTopicsRequest, forward_id=0)},
    20: {"to_core": _generic_to_core(DeleteTopicsRequest, forward_id=0)},
    22: {"to_core": _init_producer_id_to_core},
    23: {"to_core": _consumer_only(OffsetForLeaderEpochRequest)},
    33: {"to_core": _alter_configs_to_core},
    36: {"to_kio": _sasl_authenticate_to_kio},
    42: {"error_response": _delete_groups_error},
    47: {"error_response": _simple_error(OffsetDeleteResponse)},
    60: {"to_core": _describe_cluster_to_core},
}


def _codec(api: Api) -> Codec:
    differences = _DIFFERENCES.get(api.key, {})
    to_core = _passthrough if api.request_type is None else _generic_to_core(api.request_type)
    return Codec(api=api, **{"to_core": to_core, "to_kio": _generic_to_kio(api.key), **differences})


# API key -> its codec, for every API the listeners serve.
CODECS: dict[int, Codec] = {key: _codec(BY_KEY[key]) for key in SUPPORTED_VERSIONS}
assert set(_DIFFERENCES) <= set(CODECS), "a wire difference for an API the listeners do not serve"
assert all(codec.error_response is not None for codec in CODECS.values() if codec.api.kind is GROUP_COORDINATOR), \
    "every API the group coordinator serves has an answer for when it cannot be reached"
