"""A new topic's checks (``validate_new_topic``; its name by actors/core/topics.py) and Kafka's
rack-unaware replica assignment (``AdminUtils.assignReplicasToBrokers``).

Kafka spreads leaders round-robin over the brokers from a start index, and places each
partition's followers at a shift from its leader that grows by one every time the round-robin
wraps, so that replicas of consecutive partitions do not always land on the same broker pairs.
The start index and initial shift are random in Kafka; here the caller passes them in (the
controller draws them from its seeded random source), so tests can pin them.
"""
from __future__ import annotations

import collections

from actors.core.controller.state import PartitionState, ReplicaState
from actors.core.effects import Respond
from actors.core.errors import ErrorCode, KafkaProtocolError
from actors.core.messages.create_topics import CreatableTopicConfigs, CreatableTopicResult, CreateTopicsResponse
from actors.core.topics import validate_topic_name


def assign_replicas_to_brokers(*, num_partitions: int, replication_factor: int, brokers: list[int],
                               start_index: int = 0, next_replica_shift: int = 0,
                               start_partition_id: int = 0) -> dict[int, list[int]]:
    """Partition index -> replica list, leader first. Raises Kafka's errors for impossible asks.
    ``start_partition_id``: the first partition's index, where CreatePartitions continues a topic
    (Kafka's ``assignReplicasToBrokersRackUnaware`` with ``startPartitionId``)."""
    if not isinstance(num_partitions, int) or num_partitions <= 0:
        raise KafkaProtocolError(ErrorCode.INVALID_PARTITIONS, "number of partitions must be larger than 0")
    if not isinstance(replication_factor, int) or replication_factor <= 0:
        raise KafkaProtocolError(ErrorCode.INVALID_REPLICATION_FACTOR,
                                 "replication factor must be larger than 0")
    if replication_factor > len(brokers):
        raise KafkaProtocolError(ErrorCode.INVALID_REPLICATION_FACTOR,
                                 f"replication factor: {replication_factor} larger than available "
                                 f"brokers: {len(brokers)}")
    ordered = sorted(brokers)
    count = len(ordered)
    start_index %= count
    shift = next_replica_shift % count
    assignment: dict[int, list[int]] = {}
    for partition in range(max(0, start_partition_id), max(0, start_partition_id) + num_partitions):
        if partition > 0 and partition % count == 0:
            shift += 1
        first_index = (partition + start_index) % count
        replicas = [ordered[first_index]]
        for j in range(replication_factor - 1):
            replicas.append(ordered[_replica_index(first_index, shift, j, count)])
        assignment[partition] = replicas
    return assignment


def _replica_index(first_index: int, shift: int, replica: int, count: int) -> int:
    step = 1 + (shift + replica) % (count - 1)
    return (first_index + step) % count


def validate_new_topic(topic, *, existing: set[str], live_brokers: list[int], defaults,
                       random_source) -> tuple[dict[int, tuple[int, ...]], dict[str, str]]:
    """Check a ``CreatableTopic`` as Kafka's ``AdminManager.createTopics`` does; returns
    (assignment, config overrides) or raises ``KafkaProtocolError`` with Kafka's error code."""
    from actors.core.config import TOPIC_CONFIG_KEYS
    from actors.core.topic_configs import validate_topic_config

    validate_topic_name(topic.name)
    if topic.name in existing:
        raise KafkaProtocolError(ErrorCode.TOPIC_ALREADY_EXISTS, f"topic {topic.name!r} already exists")
    config = {}
    for entry in topic.configs:
        if entry.name not in TOPIC_CONFIG_KEYS:
            raise KafkaProtocolError(ErrorCode.INVALID_CONFIG, f"unknown topic config {entry.name!r}")
        if entry.value is not None:
            config[entry.name] = str(entry.value)
    validate_topic_config(config, defaults.overrides())
    if topic.assignments:
        if topic.num_partitions != -1 or topic.replication_factor != -1:
            raise KafkaProtocolError(ErrorCode.INVALID_REQUEST, "both a partition count or replication "
                                                                "factor and an explicit assignment were set")
        return _validate_explicit_assignment(topic.assignments, live_brokers), config
    num_partitions = defaults.get_int("num.partitions", 1) if topic.num_partitions == -1 else topic.num_partitions
    factor = (defaults.get_int("default.replication.factor", 1) if topic.replication_factor == -1
              else topic.replication_factor)
    if not live_brokers:
        raise KafkaProtocolError(ErrorCode.INVALID_REPLICATION_FACTOR, "no live brokers")
    assignment = assign_replicas_to_brokers(
        num_partitions=num_partitions, replication_factor=factor, brokers=live_brokers,
        start_index=random_source.randrange(len(live_brokers)),
        next_replica_shift=random_source.randrange(len(live_brokers)))
    return {p: tuple(r) for p, r in assignment.items()}, config


def _validate_explicit_assignment(assignments, live_brokers: list[int]) -> dict[int, tuple[int, ...]]:
    result = {a.partition_index: tuple(a.broker_ids) for a in assignments}
    if sorted(result) != list(range(len(result))):
        raise KafkaProtocolError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                                 "partitions must be numbered consecutively from 0")
    sizes = {len(replicas) for replicas in result.values()}
    if len(sizes) != 1 or 0 in sizes:
        raise KafkaProtocolError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                                 "every partition needs the same, non-zero number of replicas")
    for partition, replicas in result.items():
        if len(set(replicas)) != len(replicas):
            raise KafkaProtocolError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                                     f"partition {partition} lists a broker twice")
        unknown = sorted(set(replicas) - set(live_brokers))
        if unknown:
            raise KafkaProtocolError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                                     f"partition {partition} names brokers {unknown} that are not live")
    return result


def created_topic_configs(config: dict[str, str], defaults) -> tuple[CreatableTopicConfigs, ...]:
    """Every topic config of a topic created with overrides ``config`` on brokers configured as
    ``defaults``, with its value and source: the v5+ CreateTopics answer (KIP-525)."""
    from actors.core.topic_config_synonyms import resolve_topic_config
    return tuple(CreatableTopicConfigs(name=c.name, value=c.value, config_source=c.source)
                 for c in resolve_topic_config(config, broker_overrides=defaults.overrides()))


def create_topics(requests, request_id: int, request, *, defaults, random_source,
                  elect_offline_partitions, log) -> list:
    """CreateTopics on the controller, as Kafka 2.4's ``AdminManager.createTopics`` and the
    controller's ``onNewPartitionCreation``: validate, store, elect, and answer per topic.
    ``log`` makes the controller's log line; ``elect_offline_partitions`` is its election."""
    context = requests.context
    results = []
    effects: list = []
    named = collections.Counter(topic.name for topic in request.topics)
    for topic in request.topics:
        if named[topic.name] > 1:
            # Kafka refuses every entry of a topic named more than once, and creates none of them.
            results.append(CreatableTopicResult(name=topic.name, error_code=ErrorCode.INVALID_REQUEST,
                                                error_message="Found multiple entries for this topic."))
            continue
        try:
            assignment, config = validate_new_topic(
                topic, existing=set(context.topics), live_brokers=sorted(context.live_broker_ids),
                defaults=defaults, random_source=random_source)
        except KafkaProtocolError as exc:
            results.append(CreatableTopicResult(name=topic.name, error_code=exc.error_code,
                                                error_message=exc.message or None))
            continue
        results.append(CreatableTopicResult(name=topic.name, num_partitions=len(assignment),
                                            replication_factor=len(assignment[0]),
                                            configs=created_topic_configs(config, defaults)))
        if request.validate_only:
            continue
        context.add_topic(topic.name, assignment, config)
        for partition, replicas in assignment.items():
            context.partition_states.initialize((topic.name, partition), PartitionState.NEW_PARTITION)
            for replica in replicas:
                context.replica_states.initialize(((topic.name, partition), replica), ReplicaState.NEW_REPLICA)
        effects.append(log(f"created topic {topic.name} with assignment "
                           f"{ {p: list(r) for p, r in assignment.items()} }"))
    effects += elect_offline_partitions()
    for name in {r.name for r in results if r.error_code == ErrorCode.NONE and not request.validate_only}:
        for topic_partition in context.partition_states.partitions_of_topic(name):
            for replica in context.replicas(topic_partition):
                if replica in context.live_or_shutting_down_broker_ids:
                    context.replica_states.transition((topic_partition, replica), ReplicaState.ONLINE_REPLICA)
    effects.append(Respond(request_id=request_id, response=CreateTopicsResponse(topics=tuple(results))))
    return effects
