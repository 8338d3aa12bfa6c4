"""OffsetDelete (KIP-496) deletes a group's committed offsets as Kafka 2.4's group coordinator
does: all of an Empty group's, only unsubscribed topics' for a live consumer group
(GROUP_SUBSCRIBED_TO_TOPIC for the rest), Kafka's group errors otherwise, tombstones written, and
the request and answer on Kafka's wire at v0; driven through the pure coordinator and the codec."""
from __future__ import annotations

import pytest
from kio.index import load_request_schema

from actors.core.errors import ErrorCode
from actors.core.messages.offset_delete import (
    OffsetDeleteRequest, OffsetDeleteRequestPartition, OffsetDeleteRequestTopic, OffsetDeleteResponse,
)
from actors.wire.versions import SUPPORTED_VERSIONS
from tests.unit.test_group_coordinator import OTHER, PARTITIONS, Driver
from tests.unit.test_wire_admin_apis import _answer, _through_the_wire


def _request(group: str, *partitions: tuple[str, int]) -> OffsetDeleteRequest:
    by_topic: dict[str, list[int]] = {}
    for topic, index in partitions:
        by_topic.setdefault(topic, []).append(index)
    return OffsetDeleteRequest(group_id=group, topics=tuple(OffsetDeleteRequestTopic(name=t, partitions=tuple(
        OffsetDeleteRequestPartition(partition_index=i) for i in ps)) for t, ps in by_topic.items()))


def _delete(driver: Driver, group: str, *partitions) -> tuple[ErrorCode, dict]:
    response = driver.ask("handle_offset_delete", _request(group, *partitions))
    assert isinstance(response, OffsetDeleteResponse)
    return response.error_code, {(t.name, p.partition_index): p.error_code for t in response.topics for p in t.partitions}


def test_a_stable_consumer_group_keeps_the_offsets_of_topics_it_subscribes_to():
    driver = Driver()
    (member,), generation = driver.stable_group("g")  # subscribed to topic t
    driver.commit("g", {("t", 0): 5, ("u", 0): 7, ("u", 1): 9}, member_id=member, generation=generation)
    error, codes = _delete(driver, "g", ("t", 0), ("u", 0), ("nope", 0))
    assert error == ErrorCode.NONE
    assert codes == {("t", 0): ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC, ("u", 0): ErrorCode.NONE,
                     ("nope", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    assert driver.fetch("g", [("t", 0), ("u", 0), ("u", 1)])[1] == {("t", 0): 5, ("u", 0): -1, ("u", 1): 9}


def test_an_empty_group_loses_every_named_offset_and_then_the_group():
    driver = Driver()
    driver.commit("g", {("t", 0): 5, ("u", 0): 7})
    assert _delete(driver, "g", ("t", 0)) == (ErrorCode.NONE, {("t", 0): ErrorCode.NONE})
    assert driver.fetch("g", [("t", 0), ("u", 0)])[1] == {("t", 0): -1, ("u", 0): 7}
    assert _delete(driver, "g", ("u", 0)) == (ErrorCode.NONE, {("u", 0): ErrorCode.NONE})
    assert _delete(driver, "g", ("u", 0)) == (ErrorCode.GROUP_ID_NOT_FOUND, {}), "no offsets left: the group ended"


def test_group_errors_answer_no_partitions_and_delete_nothing():
    driver = Driver()
    assert _delete(driver, "never", ("t", 0)) == (ErrorCode.GROUP_ID_NOT_FOUND, {})
    assert _delete(driver, "", ("t", 0)) == (ErrorCode.INVALID_GROUP_ID, {})
    driver.stable_group("c")
    other = Driver()
    other.commit("k", {("t", 0): 3})  # then a live group of another protocol type than consumer
    other.dynamic_join("k", protocol_type="connect", protocols=OTHER)
    other.advance(200)
    assert _delete(other, "k", ("t", 0)) == (ErrorCode.NON_EMPTY_GROUP, {})
    assert other.fetch("k", [("t", 0)])[1] == {("t", 0): 3}
    elsewhere = Driver(own=[p for p in range(PARTITIONS) if p != driver.core.partition_for("c")])
    assert _delete(elsewhere, "c", ("t", 0)) == (ErrorCode.NOT_COORDINATOR, {})


def test_offset_delete_is_served_on_the_wire():
    assert SUPPORTED_VERSIONS[47] == (0, 0)
    schema = load_request_schema(47, 0)
    module = __import__(schema.__module__, fromlist=["*"])
    body = schema(group_id="g", topics=(module.OffsetDeleteRequestTopic(name="u", partitions=(
        module.OffsetDeleteRequestPartition(partition_index=0),)),))
    request = _through_the_wire(47, 0, body)
    assert request == _request("g", ("u", 0))
    driver = Driver()
    driver.commit("g", {("u", 0): 7})
    answer = _answer(47, 0, driver.ask("handle_offset_delete", request))
    assert answer.error_code == 0
    assert [(t.name, p.partition_index, p.error_code) for t in answer.topics for p in t.partitions] == [("u", 0, 0)]
    from actors.wire.apis import CODECS
    assert CODECS[47].error_response(request, ErrorCode.COORDINATOR_NOT_AVAILABLE).error_code == \
        ErrorCode.COORDINATOR_NOT_AVAILABLE
