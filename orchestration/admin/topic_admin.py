"""Admin calls that change a topic's configuration, its partition count and its replicas, as Kafka's
AdminClient has them: ``incrementalAlterConfigs``/``describeConfigs``, ``createPartitions`` and
``alterPartitionReassignments``/``listPartitionReassignments``.

A config change goes to a broker (a live one, another on each retry), which checks it and forwards
it to the controller; a reassignment and its listing go to the controller. Each call retries
Kafka's retriable errors through ``AdminClient._admin_call`` and raises any other error code at
once as a ``KafkaError``.
"""
from __future__ import annotations

import itertools
import time

import ray
from ray.exceptions import RayError

from actors.core.errors import ErrorCode
from actors.core.messages.create_partitions import (
    CreatePartitionsAssignment, CreatePartitionsRequest, CreatePartitionsTopic,
)
from actors.core.messages.incremental_alter_configs import (
    OP_DELETE, OP_SET, RESOURCE_TOPIC, AlterableConfig, AlterConfigsResource, IncrementalAlterConfigsRequest,
)
from actors.core.messages.partition_reassignments import (
    AlterPartitionReassignmentsRequest, ListPartitionReassignmentsRequest, ReassignablePartition, ReassignableTopic,
)
from orchestration.admin.wait import wait_until
from orchestration.errors import KafkaError

ATTEMPT_TIMEOUT_MIN_S = 1.0  # as the AdminClient's: an attempt made at the deadline still gets its chance
PARTITIONS_SERVED_TIMEOUT_S = 60  # new partitions' leaders serving them, after the controller answered


class TopicAdmin:
    """Mixed into ``AdminClient``; uses its ``_admin_call``, ``_ask_controller``, ``broker`` and
    ``describe_cluster``."""

    def alter_topic_config(self, topic: str, set: dict[str, str] | None = None, delete: list[str] | tuple = (),
                           *, validate_only: bool = False, timeout_ms: int | None = None) -> None:
        """IncrementalAlterConfigs on ``topic``: each key of ``set`` to its value, each of ``delete``
        back to the default. ``INVALID_CONFIG``, ``UNKNOWN_TOPIC_OR_PARTITION`` and
        ``INVALID_REQUEST`` are raised at once."""
        ops = tuple(AlterableConfig(name=str(k), config_operation=OP_SET, value=str(v)) for k, v in (set or {}).items())
        ops += tuple(AlterableConfig(name=str(k), config_operation=OP_DELETE) for k in delete)
        request = IncrementalAlterConfigsRequest(validate_only=validate_only, resources=(AlterConfigsResource(
            resource_type=RESOURCE_TOPIC, resource_name=topic, configs=ops),))
        brokers = itertools.cycle(sorted(self.describe_cluster(timeout_ms=timeout_ms)["brokers"]) or [0])

        def attempt(deadline: float) -> None:
            broker_id = int(next(brokers))
            response = ray.get(self.broker(broker_id).handle.remote(request),
                               timeout=max(ATTEMPT_TIMEOUT_MIN_S, deadline - time.monotonic()))
            (result,) = response.responses
            if result.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION and \
                    self._ask_controller(lambda controller: controller.describe_topic_config.remote(topic), deadline=deadline) is not None:
                # The topic is new and this broker's metadata has not caught up: retriable, as
                # Kafka's UnknownTopicOrPartitionException is for its clients.
                raise KafkaError(ErrorCode.LEADER_NOT_AVAILABLE, f"broker {broker_id} does not know {topic} yet")
            if result.error_code != ErrorCode.NONE:
                raise KafkaError(result.error_code, result.error_message or f"alter config of {topic}")

        self._admin_call(f"alter config of {topic}", attempt, timeout_ms,
                         final=frozenset({ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}))

    def describe_topic_config(self, topic: str, *, timeout_ms: int | None = None) -> dict[str, dict]:
        """Each topic key with ``value`` and ``source`` (``DYNAMIC_TOPIC_CONFIG`` for the topic's
        override, ``DEFAULT_CONFIG`` otherwise), as DescribeConfigs answers it."""
        def attempt(deadline: float) -> dict:
            described = self._ask_controller(lambda controller: controller.describe_topic_config.remote(topic), deadline=deadline)
            if described is None:
                raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic {topic!r}")
            return described
        return self._admin_call(f"describe config of {topic}", attempt, timeout_ms,
                                final=frozenset({ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}))

    def create_partitions(self, topic: str, count: int, assignment: list[list[int]] | None = None, *,
                          validate_only: bool = False, timeout_ms: int | None = None) -> None:
        """CreatePartitions: ``topic`` grows to ``count`` partitions, the new ones on the replicas
        ``assignment`` lists (one list per new partition, preferred leader first) or where the
        controller continues the topic's assignment; then waits until every partition has a serving
        leader. Kafka's errors (``INVALID_PARTITIONS``, ``INVALID_REPLICA_ASSIGNMENT``,
        ``UNKNOWN_TOPIC_OR_PARTITION``, ...) are raised at once, except that ``INVALID_PARTITIONS``
        after an attempt whose fate is unknown counts as success when the topic has ``count``
        partitions (that attempt added them; see ``create_topic``)."""
        request = CreatePartitionsRequest(validate_only=validate_only, topics=(CreatePartitionsTopic(
            name=topic, count=count, assignments=None if assignment is None else tuple(
                CreatePartitionsAssignment(broker_ids=tuple(r)) for r in assignment)),))
        fate_unknown = False

        def attempt(deadline: float) -> None:
            nonlocal fate_unknown
            try:
                (result,) = self._request_controller(request, deadline=deadline).results
            except RayError:
                fate_unknown = True
                raise
            if result.error_code == ErrorCode.INVALID_PARTITIONS and fate_unknown and \
                    len(self.describe_topic(topic)) == count:
                return
            if result.error_code != ErrorCode.NONE:
                raise KafkaError(result.error_code, result.error_message or f"CreatePartitions {topic}")

        self._admin_call(f"CreatePartitions {topic}", attempt, timeout_ms)
        if not validate_only:
            wait_until(lambda: self._all_served(topic, count), PARTITIONS_SERVED_TIMEOUT_S,
                       f"every partition of {topic!r} to have a serving leader")

    def _all_served(self, topic: str, count: int) -> bool:
        described = self.describe_topic(topic)
        return len(described) >= count and all(p.leader >= 0 and p.log_end_offset >= 0 for p in described)

    def alter_partition_reassignments(self, reassignments: dict[tuple[str, int], list[int] | None], *,
                                      timeout_ms: int | None = None) -> dict[tuple[str, int], str]:
        """AlterPartitionReassignments: per (topic, partition) the target replicas (None cancels);
        per partition, Kafka's outcome name (NONE, INVALID_REPLICA_ASSIGNMENT, ...)."""
        by_topic: dict[str, list[ReassignablePartition]] = {}
        for (topic, partition), replicas in sorted(reassignments.items()):
            by_topic.setdefault(topic, []).append(ReassignablePartition(
                partition_index=partition, replicas=None if replicas is None else tuple(replicas)))
        request = AlterPartitionReassignmentsRequest(topics=tuple(
            ReassignableTopic(name=t, partitions=tuple(ps)) for t, ps in by_topic.items()))

        def attempt(deadline: float):
            response = self._request_controller(request, deadline=deadline)
            if response.error_code != ErrorCode.NONE:
                raise KafkaError(response.error_code, response.error_message or "AlterPartitionReassignments")
            return response

        response = self._admin_call("AlterPartitionReassignments", attempt, timeout_ms)
        return {(t.name, p.partition_index): ErrorCode(p.error_code).name
                for t in response.responses for p in t.partitions}

    def list_partition_reassignments(self, *, timeout_ms: int | None = None) -> dict[tuple[str, int], dict]:
        """ListPartitionReassignments: per partition being moved, its ``replicas`` (the union of old
        and new while the move runs), ``adding_replicas`` and ``removing_replicas``."""
        def attempt(deadline: float):
            response = self._request_controller(ListPartitionReassignmentsRequest(), deadline=deadline)
            if response.error_code != ErrorCode.NONE:
                raise KafkaError(response.error_code, response.error_message or "ListPartitionReassignments")
            return response

        response = self._admin_call("ListPartitionReassignments", attempt, timeout_ms)
        return {(t.name, p.partition_index): {"replicas": list(p.replicas), "adding_replicas": list(p.adding_replicas),
                                              "removing_replicas": list(p.removing_replicas)}
                for t in response.topics for p in t.partitions}
