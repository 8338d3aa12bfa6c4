"""The admin APIs stock clients call are served on Kafka's wire at their non-flexible versions: each
request kio writes becomes the core's request, the core answers with Kafka's error codes (bad input
changes nothing), and the answer reads back as Kafka's response of that version."""
from __future__ import annotations

import pytest
from kio.index import load_request_schema

from actors.core.errors import ErrorCode
from actors.core.group.messages import DeletableGroupResult, DeleteGroupsRequest, DeleteGroupsResponse
from actors.wire.apis import CODECS
from actors.wire.frames import decode_request, encode_response
from actors.wire.versions import SUPPORTED_VERSIONS
from tests.unit.test_group_coordinator import PARTITIONS, Driver
from tests.unit.test_wire_frames import CONTEXT, read_response, request_frame


def _schema_module(api_key: int, version: int, request: bool = True):
    schema = load_request_schema(api_key, version)
    return schema, __import__(schema.__module__, fromlist=["*"])


def _through_the_wire(api_key: int, version: int, body):
    return CODECS[api_key].to_core(decode_request(request_frame(api_key, version, body)).body, version, CONTEXT)


def _answer(api_key: int, version: int, response):
    return read_response(api_key, version, encode_response(1, CODECS[api_key].to_kio(response, version, None)))[1]


# ----------------------------------------------------------------------------- DeleteGroups (42)
@pytest.mark.parametrize("version", [0, 1])
def test_delete_groups_is_served_on_the_wire(version):
    assert SUPPORTED_VERSIONS[42] == (0, 1)  # v2 is flexible
    schema, _ = _schema_module(42, version)
    request = _through_the_wire(42, version, schema(groups_names=("a", "b")))
    assert request == DeleteGroupsRequest(groups_names=("a", "b"))
    answer = _answer(42, version, DeleteGroupsResponse(results=(
        DeletableGroupResult(group_id="a"), DeletableGroupResult(group_id="b", error_code=ErrorCode.NON_EMPTY_GROUP))))
    assert [(r.group_id, r.error_code) for r in answer.results] == [("a", 0), ("b", ErrorCode.NON_EMPTY_GROUP)]
    unreachable = CODECS[42].error_response(request, ErrorCode.COORDINATOR_NOT_AVAILABLE)
    assert {r.group_id: r.error_code for r in unreachable.results} == dict.fromkeys(
        ("a", "b"), ErrorCode.COORDINATOR_NOT_AVAILABLE)


def test_delete_groups_answers_not_coordinator_for_a_group_it_does_not_own_and_keeps_its_offsets():
    owner = Driver()
    owner.commit("g", {("t", 0): 7})
    partition = owner.core.partition_for("g")
    other = Driver(own=[p for p in range(PARTITIONS) if p != partition])
    (result,) = other.ask("handle_delete_groups", DeleteGroupsRequest(groups_names=("g",))).results
    assert result.error_code == ErrorCode.NOT_COORDINATOR
    (result,) = owner.ask("handle_delete_groups", DeleteGroupsRequest(groups_names=("g",))).results
    assert result.error_code == ErrorCode.NONE
    assert owner.fetch("g", [("t", 0)])[1] == {("t", 0): -1}
