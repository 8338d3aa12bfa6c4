"""Topic names are validated as Kafka validates them, and replicas are assigned exactly as Kafka's
rack-unaware ``assignReplicasToBrokers`` assigns them (expected table from Kafka's AdminTest)."""
from __future__ import annotations

import pytest

from actors.core.controller.topics import assign_replicas_to_brokers
from actors.core.topics import validate_topic_name
from actors.core.errors import ErrorCode, KafkaProtocolError

KAFKA_ADMIN_TEST_ASSIGNMENT = {
    0: [0, 1, 2], 1: [1, 2, 3], 2: [2, 3, 4], 3: [3, 4, 0], 4: [4, 0, 1],
    5: [0, 2, 3], 6: [1, 3, 4], 7: [2, 4, 0], 8: [3, 0, 1], 9: [4, 1, 2],
}


def test_assignment_matches_kafkas_admin_test():
    assert assign_replicas_to_brokers(num_partitions=10, replication_factor=3, brokers=[0, 1, 2, 3, 4],
                                      start_index=0, next_replica_shift=0) == KAFKA_ADMIN_TEST_ASSIGNMENT


@pytest.mark.parametrize("partitions,factor,brokers", [(6, 3, [0, 1, 2]), (7, 2, [3, 5, 9, 11]), (1, 1, [4])])
def test_assignment_is_balanced_and_has_distinct_replicas(partitions, factor, brokers):
    assignment = assign_replicas_to_brokers(num_partitions=partitions, replication_factor=factor, brokers=brokers)
    assert sorted(assignment) == list(range(partitions))
    for replicas in assignment.values():
        assert len(replicas) == factor == len(set(replicas)) and set(replicas) <= set(brokers)
    leaders = [replicas[0] for replicas in assignment.values()]
    assert max(leaders.count(b) for b in brokers) - min(leaders.count(b) for b in brokers) <= 1


@pytest.mark.parametrize("partitions,factor,brokers,error", [
    (0, 1, [0], ErrorCode.INVALID_PARTITIONS),
    (-3, 1, [0], ErrorCode.INVALID_PARTITIONS),
    (3, 0, [0], ErrorCode.INVALID_REPLICATION_FACTOR),
    (3, 4, [0, 1, 2], ErrorCode.INVALID_REPLICATION_FACTOR),
])
def test_impossible_assignments_get_kafkas_errors(partitions, factor, brokers, error):
    with pytest.raises(KafkaProtocolError) as raised:
        assign_replicas_to_brokers(num_partitions=partitions, replication_factor=factor, brokers=brokers)
    assert raised.value.error_code == error


@pytest.mark.parametrize("name", ["t", "my.topic", "under_score-dash", "x" * 249, "__consumer_offsets"])
def test_legal_topic_names(name):
    validate_topic_name(name)


@pytest.mark.parametrize("name", ["", ".", "..", "x" * 250, "bad/name", "space name", "ümlaut", None, 7])
def test_illegal_topic_names_are_invalid_topic_exception(name):
    with pytest.raises(KafkaProtocolError) as raised:
        validate_topic_name(name)
    assert raised.value.error_code == ErrorCode.INVALID_TOPIC_EXCEPTION
