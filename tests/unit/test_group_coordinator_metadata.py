"""The group coordinator's view of the cluster's partitions, which its broker hands it: OffsetCommit
for a partition outside it answers UNKNOWN_TOPIC_OR_PARTITION as Kafka 2.4's KafkaApis does, and a
deleted partition's offsets leave every group and get tombstones in __consumer_offsets, so a
reload does not bring them back (Kafka's ``handleDeletedPartitions``). Driven with the fake clock
and fake offsets log of ``test_group_coordinator``, no Ray."""
from __future__ import annotations

from actors.core.effects import CoordinatorMetadataUpdate
from actors.core.errors import ErrorCode
from actors.core.group import offsets_topic_records as rec
from tests.unit.test_group_coordinator import KNOWN_PARTITIONS, Driver, group_in_partition


def metadata(version, partitions=KNOWN_PARTITIONS, deleted=()) -> CoordinatorMetadataUpdate:
    return CoordinatorMetadataUpdate(version=version, partitions=tuple(partitions), deleted_partitions=tuple(deleted))


def delete_topic(driver: Driver, topic: str, version=(1, 5)) -> None:
    gone = [tp for tp in KNOWN_PARTITIONS if tp[0] == topic]
    driver.apply(driver.core.on_metadata_update(
        metadata(version, [tp for tp in KNOWN_PARTITIONS if tp[0] != topic], gone), driver.now_ms))


def reloaded(driver: Driver, group: str) -> Driver:
    """A new coordinator that loads ``group``'s offsets partition from ``driver``'s log."""
    partition = driver.core.partition_for(group)
    fresh = Driver(own=())
    fresh.core.begin_loading(partition)
    fresh.apply(fresh.core.on_become_leader(partition, list(driver.log[partition]), fresh.now_ms))
    return fresh


# ---------------------------------------------------------------------------------- OffsetCommit
def test_a_commit_for_an_unknown_topic_or_partition_answers_unknown_and_the_rest_is_committed():
    driver = Driver()
    commit = driver.commit("g", {("t", 0): 5, ("nope", 0): 1, ("t", 99): 2})
    assert driver.commit_errors(commit) == {("t", 0): ErrorCode.NONE,
                                            ("nope", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                            ("t", 99): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    assert driver.fetch("g")[1] == {("t", 0): 5}
    keys = [key for partition_log in driver.log.values() for key, _ in partition_log]
    assert keys == [rec.offset_commit_key("g", ("t", 0))], "nothing written for the unknown partitions"


def test_unknown_partitions_are_answered_before_the_group_is_looked_at():
    # Kafka's KafkaApis filters them before the coordinator sees the request.
    theirs = group_in_partition(1)
    driver = Driver(own=[0])
    assert driver.commit_errors(driver.commit(theirs, {("nope", 0): 1})) == \
        {("nope", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    assert driver.commit_errors(driver.commit(theirs, {("nope", 0): 1, ("t", 0): 1})) == \
        {("nope", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ("t", 0): ErrorCode.NOT_COORDINATOR}


def test_a_coordinator_that_has_no_view_yet_knows_no_partition():
    # As a Kafka broker whose metadata cache has not been filled yet.
    driver = Driver(known_partitions=None)
    assert driver.commit_errors(driver.commit("g", {("t", 0): 1})) == {("t", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}


def test_an_older_view_does_not_replace_a_newer_one():
    driver = Driver()  # view version (0, 1)
    driver.apply(driver.core.on_metadata_update(metadata((0, 2), [("t", 0), ("new", 0)]), driver.now_ms))
    driver.apply(driver.core.on_metadata_update(metadata((0, 1), [("t", 0)]), driver.now_ms))
    assert driver.commit_errors(driver.commit("g", {("new", 0): 1})) == {("new", 0): ErrorCode.NONE}
    # A restarted broker registers with a higher broker epoch; its counter starts again.
    driver.apply(driver.core.on_metadata_update(metadata((3, 0), [("t", 0)]), driver.now_ms))
    assert driver.commit_errors(driver.commit("g", {("new", 0): 1})) == \
        {("new", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}


# ---------------------------------------------------------------------------- deleted partitions
def test_deleted_partitions_leave_every_group_with_tombstones_and_a_reload_does_not_bring_them_back():
    driver = Driver()
    (member,), generation = driver.stable_group("busy")
    driver.commit("busy", {("t", 0): 3, ("u", 0): 4}, member_id=member, generation=generation)
    driver.commit("simple", {("t", 0): 5, ("t", 1): 6, ("u", 1): 7})
    delete_topic(driver, "t")
    assert driver.fetch("busy")[1] == {("u", 0): 4}
    assert driver.fetch("simple")[1] == {("u", 1): 7}
    busy_log = driver.log[driver.core.partition_for("busy")]
    assert (rec.offset_commit_key("busy", ("t", 0)), None) in busy_log
    simple_log = driver.log[driver.core.partition_for("simple")]
    assert {(rec.offset_commit_key("simple", ("t", p)), None) for p in (0, 1)} <= set(simple_log)
    assert reloaded(driver, "busy").fetch("busy")[1] == {("u", 0): 4}
    assert reloaded(driver, "simple").fetch("simple")[1] == {("u", 1): 7}
    assert driver.commit_errors(driver.commit("simple", {("t", 0): 8})) == \
        {("t", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}, "the deleted topic is unknown from now on"


def test_an_empty_group_left_without_offsets_dies_with_its_metadata_tombstone():
    driver = Driver()
    (member,), generation = driver.stable_group("g")
    driver.commit("g", {("t", 0): 3}, member_id=member, generation=generation)
    driver.leave("g", member)
    delete_topic(driver, "t")
    assert driver.state("g") is None
    assert driver.log[driver.core.partition_for("g")][-2:] == \
        [(rec.offset_commit_key("g", ("t", 0)), None), (rec.group_metadata_key("g"), None)]
    assert reloaded(driver, "g").state("g") is None


def test_a_deletion_heard_while_a_partition_loads_applies_to_the_groups_it_loads():
    old = Driver()
    old.commit("g", {("t", 0): 5, ("u", 0): 6})
    partition = old.core.partition_for("g")
    new = Driver(own=())
    new.core.begin_loading(partition)
    delete_topic(new, "t")
    new.apply(new.core.on_become_leader(partition, list(old.log[partition]), new.now_ms))
    assert new.fetch("g")[1] == {("u", 0): 6}
    assert new.log[partition] == [(rec.offset_commit_key("g", ("t", 0)), None)]


def test_a_commit_in_flight_when_its_partition_is_deleted_does_not_come_back_into_the_cache():
    # Kafka's onOffsetCommitAppend applies an acknowledged commit only while it is still pending.
    driver = Driver(auto_ack=False)
    driver.commit("g", {("t", 0): 5})
    (in_flight,) = driver.unacked
    delete_topic(driver, "t")
    driver.ack(in_flight)
    assert driver.fetch("g")[1] == {}


def test_a_stale_update_still_deletes_what_the_newer_view_does_not_hold():
    driver = Driver()
    driver.commit("g", {("t", 0): 5, ("u", 0): 6})
    newer = [tp for tp in KNOWN_PARTITIONS if tp != ("t", 0) and tp != ("u", 0)]
    driver.apply(driver.core.on_metadata_update(metadata((0, 9), newer + [("u", 0)]), driver.now_ms))
    # A late update from before: it deleted t-0 (gone from the newer view too) and u-0, which the
    # newer view holds again (the topic was created anew): only t-0's offsets go.
    driver.apply(driver.core.on_metadata_update(metadata((0, 3), newer, [("t", 0), ("u", 0)]), driver.now_ms))
    assert driver.fetch("g")[1] == {("u", 0): 6}


def test_deleting_partitions_nobody_committed_for_writes_nothing():
    driver = Driver()
    driver.commit("g", {("u", 0): 6})
    before = {p: list(entries) for p, entries in driver.log.items()}
    delete_topic(driver, "t")
    assert driver.log == before
    assert driver.fetch("g")[1] == {("u", 0): 6}
