"""DescribeCluster (API key 60, KIP-700): the cluster id, a controller id and the brokers, for admin clients.

Kafka's admin client asks it (``Admin.describeCluster``) of a broker when the broker lists the
API, and Metadata otherwise. A broker answers from its metadata cache as Kafka's
``KafkaApis.handleDescribeCluster`` and ``AuthHelper.computeDescribeClusterResponse`` do: the
brokers with an endpoint on the listener the request came in on, a broker's id standing in for
the controller (Kafka's brokers name a random live broker: the controller of a KRaft cluster is
no broker a client could reach, and raykafka's is no broker either), and the cluster's authorized
operations only when asked for. ``endpoint_type`` (v1, KIP-919) other than brokers is refused.
"""
from __future__ import annotations

from typing import ClassVar

from actors.core.errors import ErrorCode
from actors.core.messages._base import message
from actors.core.messages.metadata import MetadataResponse

ENDPOINT_TYPE_BROKERS = 1
ENDPOINT_TYPE_CONTROLLERS = 2
# The schema's default for cluster_authorized_operations: "not asked for" (Kafka's Int.MinValue).
AUTHORIZED_OPERATIONS_OMITTED = -2147483648
# With no authorizer every operation Kafka supports on the cluster resource is allowed
# (AclEntry.supportedOperations(CLUSTER)): CREATE 5, ALTER 7, DESCRIBE 8, CLUSTER_ACTION 9,
# DESCRIBE_CONFIGS 10, ALTER_CONFIGS 11, IDEMPOTENT_WRITE 12, as Utils.to32BitField sets them.
CLUSTER_OPERATIONS = sum(1 << code for code in (5, 7, 8, 9, 10, 11, 12))


@message
class DescribeClusterRequest:
    API_KEY: ClassVar[int] = 60
    include_cluster_authorized_operations: bool = False
    endpoint_type: int = ENDPOINT_TYPE_BROKERS
    include_fenced_brokers: bool = False  # raykafka's cache holds registered, unfenced brokers only
    # The Kafka listener the request came in on (brokers are described by their endpoint on it).
    listener_name: str | None = None
    request_api_version: int = 0  # v0 answers a wrong endpoint type INVALID_REQUEST, as Kafka does


@message
class DescribeClusterBroker:
    broker_id: int
    host: str
    port: int
    rack: str | None = None
    is_fenced: bool = False


@message
class DescribeClusterResponse:
    error_code: ErrorCode = ErrorCode.NONE
    error_message: str | None = None
    endpoint_type: int = ENDPOINT_TYPE_BROKERS
    cluster_id: str = ""
    controller_id: int = -1
    brokers: tuple[DescribeClusterBroker, ...] = ()
    cluster_authorized_operations: int = AUTHORIZED_OPERATIONS_OMITTED
    throttle_time_ms: int = 0


def describe_cluster(metadata: MetadataResponse, request: DescribeClusterRequest) -> DescribeClusterResponse:
    """The answer to ``request`` from ``metadata``, the cache's answer of no topics on the same listener."""
    if request.endpoint_type not in (ENDPOINT_TYPE_BROKERS, ENDPOINT_TYPE_CONTROLLERS):
        return DescribeClusterResponse(
            error_code=ErrorCode.INVALID_REQUEST if request.request_api_version == 0 else ErrorCode.UNSUPPORTED_ENDPOINT_TYPE,
            error_message=f"Unsupported endpoint type {request.endpoint_type}")
    if request.endpoint_type != ENDPOINT_TYPE_BROKERS:
        return DescribeClusterResponse(
            error_code=ErrorCode.INVALID_REQUEST if request.request_api_version == 0 else ErrorCode.MISMATCHED_ENDPOINT_TYPE,
            error_message="The request was sent to an endpoint of type BROKER, but we wanted an endpoint of type CONTROLLER")
    brokers = tuple(DescribeClusterBroker(broker_id=b.node_id, host=b.host, port=b.port, rack=b.rack)
                    for b in metadata.brokers)
    return DescribeClusterResponse(
        cluster_id=metadata.cluster_id or "", brokers=brokers,
        controller_id=min((b.broker_id for b in brokers), default=-1),
        cluster_authorized_operations=CLUSTER_OPERATIONS if request.include_cluster_authorized_operations
        else AUTHORIZED_OPERATIONS_OMITTED)
