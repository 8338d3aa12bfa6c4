"""Proves the shells refuse a request they cannot parse before it reaches a core: the schema check
names the first ill-typed field of any request (table-driven), every request handler the shells
step has a request type to check against, a driver answers such a request with
INVALID_REQUEST without stepping the core, and that error survives the pickling Ray does."""
from __future__ import annotations

import pickle

import pytest

from actors.core.errors import ErrorCode, KafkaProtocolError
from actors.core.messages.fetch import FetchPartition, FetchRequest, FetchTopic
from actors.core.messages.heartbeat import HeartbeatRequest
from actors.core.messages.join_group import JoinGroupRequest, JoinGroupRequestProtocol
from actors.core.messages.leader_and_isr import (
    LeaderAndIsrPartitionState, LeaderAndIsrRequest, LeaderAndIsrTopicState,
)
from actors.core.messages.metadata import MetadataRequest
from actors.core.messages.produce import PartitionProduceData, ProduceRequest, TopicProduceData
from actors.core.messages.validation import request_schema_error
from actors.core.fetcher.follower_messages import (
    FollowerTruncatePartition, FollowerTruncateRequest, TruncationMode,
)
from actors.drivers.base import Driver
from actors.core.apis import BY_REQUEST_TYPE



def produce(index=0, name="t", records=b"batch", topic_data=None) -> ProduceRequest:
    return ProduceRequest(acks=1, timeout_ms=10, topic_data=topic_data if topic_data is not None else (
        TopicProduceData(name=name, partition_data=(PartitionProduceData(index=index, records=records),)),))


def leader_and_isr(config) -> LeaderAndIsrRequest:
    return LeaderAndIsrRequest(controller_id=1, controller_epoch=1, broker_epoch=1, topic_states=(
        LeaderAndIsrTopicState(topic_name="t", topic_config=config, partition_states=(LeaderAndIsrPartitionState(
            partition_index=0, controller_epoch=1, leader=0, leader_epoch=0, isr=(0,), partition_epoch=0,
            replicas=(0,)),)),))


# (case, request, request type, the error named, or None for a well-formed request)
CASES = [
    ("a well-formed produce", produce(), ProduceRequest, None),
    ("records are not checked here (the log answers CORRUPT_MESSAGE)", produce(records=None), ProduceRequest, None),
    ("lists are accepted for arrays", ProduceRequest(acks=1, timeout_ms=1, topic_data=[]), ProduceRequest, None),
    ("None for optional topics", MetadataRequest(topics=None), MetadataRequest, None),
    ("a Kafka client's Produce version", ProduceRequest(acks=1, timeout_ms=1, topic_data=(), request_api_version=8),
     ProduceRequest, None),
    ("a Produce version that is a str", ProduceRequest(acks=1, timeout_ms=1, topic_data=(), request_api_version="8"),
     ProduceRequest, "request_api_version: expected int, got str"),
    ("a str", "produce", ProduceRequest, "expected ProduceRequest, got str"),
    ("None", None, ProduceRequest, "expected ProduceRequest, got NoneType"),
    ("another request type", FetchRequest(max_wait_ms=0, min_bytes=0, max_bytes=1, topics=()), JoinGroupRequest,
     "expected JoinGroupRequest, got FetchRequest"),
    ("an array that is None", ProduceRequest(acks=1, timeout_ms=1, topic_data=None),
     ProduceRequest, "topic_data: expected an array (tuple), got NoneType"),
    ("a nested str that is an int", produce(name=5), ProduceRequest, "topic_data[0].name: expected str, got int"),
    ("a nested int that is a str", produce(index="0"), ProduceRequest,
     "topic_data[0].partition_data[0].index: expected int, got str"),
    ("an optional array of str holding an int", MetadataRequest(topics=("a", 5)), MetadataRequest,
     "topics[1]: expected str, got int"),
    ("a bool that is an int", MetadataRequest(allow_auto_topic_creation=1), MetadataRequest,
     "allow_auto_topic_creation: expected bool, got int"),
    ("bytes that are a str", JoinGroupRequest(group_id="g", protocol_type="consumer", protocols=(
        JoinGroupRequestProtocol(name="range", metadata="subscription"),)), JoinGroupRequest,
     "protocols[0].metadata: expected bytes, got str"),
    ("an enum given by value", FollowerTruncateRequest(partitions=(FollowerTruncatePartition(
        topic="t", partition=0, current_leader_epoch=0, mode="to-offset"),)), FollowerTruncateRequest,
     "partitions[0].mode: expected TruncationMode, got str"),
    ("a well-formed enum", FollowerTruncateRequest(partitions=(FollowerTruncatePartition(
        topic="t", partition=0, current_leader_epoch=0, mode=TruncationMode.TO_OFFSET),)), FollowerTruncateRequest,
     None),
    ("a pair with one element", leader_and_isr((("a", "b"), ("c",))), LeaderAndIsrRequest,
     "topic_states[0].topic_config[1]: expected a tuple of 2, got tuple"),
    ("a well-formed pair", leader_and_isr((("a", "b"),)), LeaderAndIsrRequest, None),
    ("an array of str instead of messages", FetchRequest(max_wait_ms=0, min_bytes=0, max_bytes=1, topics=("t",)),
     FetchRequest, "topics[0]: expected FetchTopic, got str"),
    ("a deep field", FetchRequest(max_wait_ms=0, min_bytes=0, max_bytes=1, topics=(FetchTopic(topic="t", partitions=(
        FetchPartition(partition=0, fetch_offset=None, partition_max_bytes=1),)),)), FetchRequest,
     "topics[0].partitions[0].fetch_offset: expected int, got NoneType"),
]


@pytest.mark.parametrize("case,request_,request_type,expected", CASES, ids=[c[0] for c in CASES])
def test_the_schema_check_names_the_first_ill_typed_field(case, request_, request_type, expected):
    assert request_schema_error(request_, request_type) == expected


@pytest.mark.parametrize("request_type", sorted(BY_REQUEST_TYPE, key=lambda t: t.__name__), ids=lambda t: t.__name__)
def test_every_request_type_has_a_schema_checker(request_type):
    # Compiling a checker walks every nested field's annotation; an unsupported one fails here.
    assert request_schema_error(None, request_type) is not None


class _Clock:
    def now_ms(self) -> int:
        return 0


class _Log:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def log(self, level: str, message: str) -> None:
        self.lines.append(message)


def test_a_driver_refuses_an_unparsable_request_without_stepping_the_core():
    stepped = []

    def handle_heartbeat(request_id, request, now_ms):
        stepped.append(request)
        return []

    log = _Log()
    driver = Driver("test", messenger=None, clock=_Clock(), log=log)
    with pytest.raises(KafkaProtocolError) as raised:
        driver.request(handle_heartbeat, HeartbeatRequest(group_id="g", generation_id="1", member_id="m"),
                       stepped.append, request_type=HeartbeatRequest)
    assert raised.value.error_code == ErrorCode.INVALID_REQUEST and "generation_id" in str(raised.value)
    with pytest.raises(KafkaProtocolError):
        driver.request(lambda *_: [], None, stepped.append, request_type=HeartbeatRequest)
    assert stepped == [] and driver.requests_pending == 0 and len(log.lines) == 2


def test_a_kafka_protocol_error_survives_pickling_with_its_code():
    error = pickle.loads(pickle.dumps(KafkaProtocolError(ErrorCode.INVALID_REQUEST, "not a valid FetchRequest")))
    assert (error.error_code, str(error)) == (ErrorCode.INVALID_REQUEST, "INVALID_REQUEST: not a valid FetchRequest")
