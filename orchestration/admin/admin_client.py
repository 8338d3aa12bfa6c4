"""``AdminClient``: Kafka's AdminClient calls on a raykafka cluster, and the retry rule they share.

Admin calls (describing, creating and deleting topics, describing and listing groups, preferred
leader elections, describing the cluster) behave as Kafka's AdminClient: each retries Kafka's
retriable errors (no coordinator yet, a coordinator loading, leadership or controllership moving,
a request timing out, an actor restarting) with backoff until its ``timeout_ms`` (default
``default.api.timeout.ms``, 60 s) has passed, and only then raises the last error; any other error
(``TOPIC_ALREADY_EXISTS``, ``INVALID_PARTITIONS``, ...) is raised at once. All go through
``AdminClient._admin_call``.

``AdminClient`` finds the controller and brokers by name in its Ray namespace; ``Cluster``
(cluster.py) extends it with the actors it starts and the faults it injects, and gives it
``broker(broker_id)``.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import ray
from loguru import logger
from ray.exceptions import RayError

from actors.core.controller.channel_queue import ChannelQueueStatus
from actors.core.errors import ErrorCode
from actors.core.messages.describe_log_dirs import DescribeLogDirsRequest
from actors.core.messages.create_topics import (
    CreatableReplicaAssignment, CreatableTopic, CreateableTopicConfig, CreateTopicsRequest,
)
from actors.core.messages.delete_topics import DeleteTopicsRequest
from actors.core.messages.elect_leaders import (
    PREFERRED_ELECTION, UNCLEAN_ELECTION, ElectLeadersRequest, TopicPartitions,
)
from actors.core.messages.list_offsets import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP
from actors.core.messages.metadata import MetadataRequest
from actors.ray_metadata_store import active_controller
from orchestration.admin.groups import (
    GroupDescription, commit_offsets, delete_group, delete_offsets, describe_group, list_groups, list_offset,
)
from orchestration.admin.records import delete_records_once
from orchestration.admin.status import client_listener
from orchestration.admin.topic_admin import TopicAdmin
from orchestration.admin.wait import wait_until
from orchestration.clients.broker_directory import BrokerDirectory, call_with_retries
from orchestration.errors import KafkaError

CONVERGE_TIMEOUT_S = 60
DEFAULT_API_TIMEOUT_MS = 60000  # Kafka's default.api.timeout.ms: how long an admin call keeps retrying
# Kafka's retry.backoff.ms, doubling up to ADMIN_RETRY_BACKOFF_MAX_MS as KIP-580's clients do (2.4
# keeps it fixed): a minute of retries then costs about sixty calls, not six hundred.
ADMIN_RETRY_BACKOFF_MS = 100
ADMIN_RETRY_BACKOFF_MAX_MS = 1000
ADMIN_ATTEMPT_TIMEOUT_MIN_S = 1.0  # the shortest wait for one attempt's answer, even near the deadline
# Kafka's NotControllerException is a RetriableException too; the core's ErrorCode.retriable leaves
# it out because only an admin client retries it.
ADMIN_RETRIABLE = frozenset({ErrorCode.NOT_CONTROLLER})
# Answers after which the metadata a call used is probably stale: it is refreshed before the retry.
_STALE_METADATA = frozenset({ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.LEADER_NOT_AVAILABLE,
                             ErrorCode.UNKNOWN_TOPIC_OR_PARTITION})


@dataclass(frozen=True)
class PartitionDescription:
    topic: str
    partition: int
    leader: int
    replicas: list[int]
    isr: list[int]
    leader_epoch: int
    partition_epoch: int
    high_watermark: int
    log_end_offset: int
    log_start_offset: int


class AdminClient(TopicAdmin):
    """Admin calls against the cluster in Ray namespace ``namespace`` whose brokers are
    ``broker_ids``; ``directory`` is the metadata a topic change refreshes."""

    namespace: str
    broker_ids: list[int]
    directory: BrokerDirectory

    def broker(self, broker_id: int):
        """The broker actor's handle; the subclass that knows the actors provides it."""
        raise NotImplementedError

    def controller(self):
        """The active controller's actor handle (as published in the metadata store)."""
        found = active_controller(self.namespace)
        if found is None:
            raise KafkaError(ErrorCode.NOT_CONTROLLER, "no active controller")
        try:
            return ray.get_actor(found["actor_name"], namespace=self.namespace)
        except ValueError as exc:  # gone, and its successor has not published itself yet
            raise KafkaError(ErrorCode.NOT_CONTROLLER, f"no controller actor {found['actor_name']!r}") from exc

    # ------------------------------------------------------------------------------- admin calls
    def _admin_call(self, what: str, attempt, timeout_ms: int | None, *, final: frozenset = frozenset()):
        """Run an admin call as Kafka's AdminClient does: ``attempt(deadline)`` again after every
        retriable error (Kafka's ``RetriableException`` list, plus ``NOT_CONTROLLER``) until
        ``timeout_ms`` (default ``default.api.timeout.ms``) has passed, then the last error is raised;
        any other error, and any in ``final`` (what this call takes as the answer, not as a
        passing state), is raised at once. The one retry loop of every admin method."""
        def is_retriable(error: KafkaError) -> bool:
            return error.error_code not in final and (error.retriable or error.error_code in ADMIN_RETRIABLE)
        return call_with_retries(attempt, timeout_ms=DEFAULT_API_TIMEOUT_MS if timeout_ms is None else timeout_ms,
                                 what=what, retry_backoff_ms=ADMIN_RETRY_BACKOFF_MS,
                                 retry_backoff_max_ms=ADMIN_RETRY_BACKOFF_MAX_MS, is_retriable=is_retriable)

    def _ask_controller(self, call: Callable[[Any], Any], *, deadline: float | None = None):
        """One call to the active controller (``call`` takes its handle and returns the Ray call,
        e.g. ``lambda controller: controller.describe_topic.remote(name)``), waiting for its
        answer until ``deadline`` (``time.monotonic``; at least ADMIN_ATTEMPT_TIMEOUT_MIN_S), else 60 s."""
        return ray.get(call(self.controller()), timeout=_attempt_timeout_s(deadline))

    def _request_controller(self, request, *, deadline: float | None = None):
        """One Kafka request to the active controller (its ``handle``, which dispatches by the
        request's type), waiting for the answer as ``_ask_controller`` does."""
        return ray.get(self.controller().handle.remote(request), timeout=_attempt_timeout_s(deadline))

    def _observe_controller(self, what: str, call: Callable[[Any], Any], *, timeout_ms: int | None = None):
        """A read-only question to the controller (``call`` as for ``_ask_controller``), asked
        again while it restarts or moves (a read has no effect, so repeating it is safe)."""
        return self._admin_call(f"controller {what}", lambda deadline: self._ask_controller(call, deadline=deadline),
                                timeout_ms)

    def controller_epoch(self, *, timeout_ms: int | None = None) -> int:
        return self._observe_controller("controller_epoch", lambda controller: controller.controller_epoch.remote(),
                                        timeout_ms=timeout_ms)

    def controller_queue_sizes(self, *, timeout_ms: int | None = None) -> dict[int, ChannelQueueStatus | None]:
        """Per broker id, the controller's queue of control requests for it: ``queue_size`` (the
        waiting requests, Kafka's QueueSize), ``head_queue_time_ms`` (how long the oldest has
        waited), ``last_queue_time_ms`` (enqueue-to-send time of the last one sent, Kafka's
        RequestQueueTimeMs), whether one is in flight, and how many were dropped at the queue's
        limit. None for a send thread that is being replaced."""
        return self._observe_controller("queue_sizes", lambda controller: controller.queue_sizes.remote(),
                                        timeout_ms=timeout_ms)

    def describe_cluster(self, *, timeout_ms: int | None = None) -> dict:
        """The controller's view: its epoch and the live brokers with their epochs."""
        return self._observe_controller("describe_cluster", lambda controller: controller.describe_cluster.remote(),
                                        timeout_ms=timeout_ms)

    @property
    def bootstrap_servers(self) -> str:
        """"host:port,..." of every registered broker's client listener: all a stock Kafka client
        (confluent-kafka, kafka-python, aiokafka, kcat) needs to connect. The client listener is
        PLAINTEXT when the brokers have one, else the first of ``advertised.listeners``."""
        brokers = self.describe_cluster()["brokers"]
        return self.listener_addresses(client_listener(
            name for _, info in sorted(brokers.items()) for name in info.get("listeners", {})))

    def _listeners_known_everywhere(self) -> bool:
        names = {name for info in self.describe_cluster()["brokers"].values() for name in info.get("listeners", {})}
        for broker_id in self.broker_ids:
            for name in names:
                response = ray.get(self.broker(broker_id).handle.remote(
                    MetadataRequest(topics=(), listener_name=name)), timeout=10)
                if len(response.brokers) < len(self.broker_ids):
                    return False
        return True

    def listener_addresses(self, listener_name: str, *, timeout_ms: int | None = None) -> str:
        """"host:port,..." of every registered broker's listener ``listener_name`` (``EXTERNAL``,
        say, when ``listeners`` names an internal and an external one)."""
        brokers = self.describe_cluster(timeout_ms=timeout_ms)["brokers"]
        return ",".join(info["listeners"][listener_name] for _, info in sorted(brokers.items())
                        if listener_name in info.get("listeners", {}))

    # -------------------------------------------------------------------------------- topics
    def create_topic(self, name: str, partitions: int = 1, replication_factor: int = 1,
                     config: dict | None = None, assignment: list[list[int]] | None = None, *,
                     timeout_ms: int | None = None) -> None:
        """CreateTopics through the controller, retried within ``timeout_ms`` (default
        ``default.api.timeout.ms``); then waits (up to CONVERGE_TIMEOUT_S) until every partition's
        leader serves it.

        ``assignment`` lists each partition's replicas (the first is the preferred leader) and
        replaces ``partitions`` and ``replication_factor``, as kafka-topics' --replica-assignment.

        A retry after an attempt whose fate is unknown (it timed out, or the controller died or
        restarted while it ran) may find the topic that attempt created. Kafka 2.4's AdminClient
        then reports ``TopicExistsException`` for a topic its own call made; here
        ``TOPIC_ALREADY_EXISTS`` after such an attempt counts as success when the topic has the
        partitions and replicas asked for (whoever made it, the caller gets the topic it asked
        for), and is raised otherwise. With no such attempt before it, it is raised at once."""
        explicit = tuple(CreatableReplicaAssignment(partition_index=i, broker_ids=tuple(replicas))
                         for i, replicas in enumerate(assignment or ()))
        request = CreateTopicsRequest(topics=(CreatableTopic(
            name=name, num_partitions=-1 if explicit else partitions,
            replication_factor=-1 if explicit else replication_factor, assignments=explicit,
            configs=tuple(CreateableTopicConfig(name=str(k), value=str(v)) for k, v in (config or {}).items())),))
        fate_unknown = False  # set once an attempt may have created the topic

        def attempt(deadline: float) -> None:
            nonlocal fate_unknown
            try:
                result = self._request_controller(request, deadline=deadline).topics[0]
            except RayError:
                fate_unknown = True  # timed out, or the controller went away while it ran
                raise
            if result.error_code == ErrorCode.TOPIC_ALREADY_EXISTS and fate_unknown and self._has_layout(
                    name, partitions, replication_factor, assignment, deadline):
                logger.info("topic {!r} exists as asked: an earlier attempt of this call created it", name)
                return
            if result.error_code != ErrorCode.NONE:
                raise KafkaError(result.error_code, result.error_message or name)

        self._admin_call(f"CreateTopics {name}", attempt, timeout_ms)
        wait_until(lambda: all(p.leader >= 0 and p.log_end_offset >= 0 for p in self.describe_topic(name)),
                   CONVERGE_TIMEOUT_S, f"every partition of {name!r} to have a serving leader")
        self.directory.refresh_metadata()

    def _has_layout(self, name: str, partitions: int, replication_factor: int,
                    assignment: list[list[int]] | None, deadline: float) -> bool:
        """Whether topic ``name`` has the partitions and replicas a create_topic asked for."""
        described = sorted(self.describe_topic(name, timeout_ms=_remaining_ms(deadline)), key=lambda p: p.partition)
        if assignment:
            return [list(p.replicas) for p in described] == [list(r) for r in assignment]
        return len(described) == partitions and all(len(p.replicas) == replication_factor for p in described)

    def delete_topic(self, name: str, *, timeout_ms: int | None = None) -> None:
        """DeleteTopics through the controller, retried within ``timeout_ms``; then waits (up to
        CONVERGE_TIMEOUT_S) until the topic is gone everywhere. ``UNKNOWN_TOPIC_OR_PARTITION`` is
        raised at once, unless an earlier attempt of this call may have deleted the topic (see
        ``create_topic``: Kafka 2.4 would report it)."""
        fate_unknown = False

        def attempt(deadline: float) -> None:
            nonlocal fate_unknown
            try:
                result = self._request_controller(DeleteTopicsRequest(topic_names=(name,)),
                                                  deadline=deadline).responses[0]
            except RayError:
                fate_unknown = True
                raise
            if result.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION and fate_unknown:
                return  # an earlier attempt's deletion finished meanwhile
            if result.error_code != ErrorCode.NONE:
                raise KafkaError(result.error_code, result.error_message or name)

        self._admin_call(f"DeleteTopics {name}", attempt, timeout_ms, final=frozenset({ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}))
        wait_until(lambda: name not in self.topics(), CONVERGE_TIMEOUT_S, f"topic {name!r} to be deleted")

    def topics(self, *, timeout_ms: int | None = None) -> list[str]:
        return self.describe_cluster(timeout_ms=timeout_ms)["topics"]

    def describe_topic(self, name: str, *, timeout_ms: int | None = None) -> list[PartitionDescription]:
        """Leader, replicas, ISR and epochs as the controller knows them; HW and LEO from the leader.
        A topic the controller does not know is ``UNKNOWN_TOPIC_OR_PARTITION`` at once."""
        return self._admin_call(f"describe topic {name}", lambda deadline: self._describe_topic_once(name, deadline),
                                timeout_ms, final=frozenset({ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}))

    def _describe_topic_once(self, name: str, deadline: float) -> list[PartitionDescription]:
        described = self._ask_controller(lambda controller: controller.describe_topic.remote(name), deadline=deadline)
        if described is None:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic {name!r}")
        positions = {}
        for leader in sorted({p["leader"] for p in described if p["leader"] >= 0}):
            try:
                for entry in ray.get(self.broker(leader).describe_partitions.remote(), timeout=10):
                    if entry["topic"] == name and entry["is_leader"]:
                        positions[entry["partition"]] = entry
            except Exception as exc:  # a dead leader: report what the controller knows
                logger.debug("broker {} did not describe {}: {!r}", leader, name, exc)
        result = []
        for p in described:
            seen = positions.get(p["partition"], {})
            if seen.get("leader_epoch", p["leader_epoch"]) != p["leader_epoch"]:
                seen = {}  # the broker has not applied this leadership yet
            result.append(PartitionDescription(
                topic=name, partition=p["partition"], leader=p["leader"], replicas=p["replicas"],
                isr=p["isr"], leader_epoch=p["leader_epoch"], partition_epoch=p["partition_epoch"],
                high_watermark=seen.get("high_watermark", -1), log_end_offset=seen.get("log_end_offset", -1),
                log_start_offset=seen.get("log_start_offset", -1)))
        return result

    def replica_digests(self, topic: str, partition: int, end_offset: int) -> dict[int, list]:
        """Per live replica, (base offset, last offset, CRC) of each batch below ``end_offset``."""
        digests = {}
        for broker_id in next(p.replicas for p in self.describe_topic(topic) if p.partition == partition):
            try:
                digests[broker_id] = ray.get(self.broker(broker_id).replica_digest.remote(
                    topic, partition, end_offset), timeout=60)
            except Exception as exc:
                logger.debug("broker {} gave no digest: {!r}", broker_id, exc)
        return digests

    def describe_group(self, group_id: str, *, timeout_ms: int | None = None) -> GroupDescription:
        """State, protocol, generation, members with assignments, and per partition the committed
        offset, the log end offset (high watermark) and the lag. Asked again while the group has
        no coordinator yet (``__consumer_offsets`` being created), its coordinator loads or moves."""
        return self._admin_call(f"describe group {group_id}", lambda deadline: describe_group(
            self._new_directory(), group_id, deadline=deadline), timeout_ms)

    def list_groups(self, *, timeout_ms: int | None = None) -> list[tuple[str, str]]:
        """(group id, state) of every group the coordinators know."""
        return self._admin_call("list groups", lambda deadline: list_groups(
            self._new_directory(), self.broker_ids, deadline=deadline), timeout_ms)

    def delete_group(self, group_id: str, *, timeout_ms: int | None = None) -> None:
        """DeleteGroups: an Empty group and its committed offsets go; ``NON_EMPTY_GROUP`` and
        ``GROUP_ID_NOT_FOUND`` are raised at once."""
        self._admin_call(f"delete group {group_id}", lambda deadline: delete_group(
            self._new_directory(), group_id, deadline=deadline), timeout_ms)

    def reset_offsets(self, group_id: str, topic: str, *, to: str = "earliest", offset: int | None = None,
                      shift_by: int = 0, partitions: list[int] | None = None, execute: bool = True,
                      timeout_ms: int | None = None) -> dict[tuple[str, int], int]:
        """kafka-consumer-groups --reset-offsets: per partition of ``topic`` (or ``partitions``) the
        new offset, ``to`` ``earliest``, ``latest``, ``offset`` (``offset``) or ``current`` (the
        committed one), plus ``shift_by``, kept within the log; committed when ``execute`` (the
        group must have no members), else only computed (a dry run)."""
        directory = self._new_directory()
        chosen = partitions if partitions is not None else [p.partition for p in self.describe_topic(topic)]
        committed = self.describe_group(group_id).offsets if to == "current" else {}
        planned = {}
        for partition in chosen:
            tp = (topic, partition)
            earliest = self._admin_call("ListOffsets", lambda _: list_offset(directory, tp, EARLIEST_TIMESTAMP), timeout_ms)
            latest = self._admin_call("ListOffsets", lambda _: list_offset(directory, tp, LATEST_TIMESTAMP), timeout_ms)
            base = {"earliest": earliest, "latest": latest, "offset": offset,
                    "current": committed[tp].committed_offset if tp in committed else earliest}[to]
            if base is None:
                raise ValueError("reset to an offset needs the offset")
            planned[tp] = min(latest, max(earliest, base + shift_by))
        if execute:
            self._admin_call(f"reset offsets of {group_id}", lambda deadline: commit_offsets(
                directory, group_id, planned, deadline=deadline), timeout_ms)
        return planned

    def elect_preferred_leaders(self, topic: str | None = None, *,
                                timeout_ms: int | None = None) -> dict[tuple[str, int], str]:
        """Preferred-replica election; per partition, Kafka's outcome name (NONE, ELECTION_NOT_NEEDED, ...)."""
        return self.elect_leaders("preferred", topic, timeout_ms=timeout_ms)

    def elect_leaders(self, election_type: str = "preferred", topic: str | None = None,
                      partitions: list[int] | None = None, *,
                      timeout_ms: int | None = None) -> dict[tuple[str, int], str]:
        """ElectLeaders, ``preferred`` or ``unclean`` (an out-of-sync replica may lead a partition
        whose ISR has no live member, losing what it had not copied), over ``topic``'s partitions
        (or only ``partitions``), or every partition; per partition, Kafka's outcome name."""
        types = {"preferred": PREFERRED_ELECTION, "unclean": UNCLEAN_ELECTION}
        if election_type not in types:
            raise ValueError(f"election type is preferred or unclean, not {election_type!r}")
        deadline = time.monotonic() + (DEFAULT_API_TIMEOUT_MS if timeout_ms is None else timeout_ms) / 1000
        wanted = None
        if topic is not None:
            wanted = (TopicPartitions(topic=topic, partitions=tuple(partitions if partitions is not None else (
                p.partition for p in self.describe_topic(topic, timeout_ms=_remaining_ms(deadline))))),)
        request = ElectLeadersRequest(election_type=types[election_type], topic_partitions=wanted)

        def attempt(attempt_deadline: float):
            response = self._request_controller(request, deadline=attempt_deadline)
            if response.error_code != ErrorCode.NONE:
                raise KafkaError(response.error_code, "ElectLeaders")
            return response

        response = self._admin_call("ElectLeaders", attempt, _remaining_ms(deadline))
        return {(r.topic, p.partition_id): ErrorCode(p.error_code).name
                for r in response.replica_election_results for p in r.partition_result}

    def delete_records(self, offsets: dict[tuple[str, int], int], *,
                       timeout_ms: int | None = None) -> dict[tuple[str, int], int]:
        """DeleteRecords: each partition's records below its offset (-1: below the high watermark)
        go, as Kafka's ``AdminClient.deleteRecords``; returns each partition's low watermark once
        every in-sync replica has moved its log start offset there. Retried within ``timeout_ms``
        while leadership moves; OFFSET_OUT_OF_RANGE (above the high watermark), POLICY_VIOLATION (a
        compacted topic) and the like are raised at once."""
        directory = self._new_directory()
        done: dict[tuple[str, int], int] = {}
        request_timeout_ms = DEFAULT_API_TIMEOUT_MS // 2 if timeout_ms is None else timeout_ms

        def attempt(deadline: float) -> None:
            try:
                delete_records_once(directory, offsets, done,
                                    timeout_ms=max(1, min(request_timeout_ms, _remaining_ms(deadline))))
            except KafkaError as exc:
                if exc.retriable or exc.error_code in _STALE_METADATA:
                    directory.refresh_metadata()
                raise

        self._admin_call("DeleteRecords", attempt, timeout_ms)
        return done

    def delete_offsets(self, group_id: str, partitions: list[tuple[str, int]], *,
                       timeout_ms: int | None = None) -> dict[tuple[str, int], ErrorCode]:
        """OffsetDelete, as Kafka's ``AdminClient.deleteConsumerGroupOffsets``: the group's committed
        offsets of ``partitions`` go where the group does not consume their topic; returns each
        partition's answer (``GROUP_SUBSCRIBED_TO_TOPIC`` where it does). ``GROUP_ID_NOT_FOUND``
        and ``NON_EMPTY_GROUP`` are raised at once; a coordinator not there yet is waited for."""
        return self._admin_call(f"delete offsets of group {group_id}", lambda deadline: delete_offsets(
            self._new_directory(), group_id, partitions, deadline=deadline), timeout_ms)

    def describe_log_dirs(self, broker_ids: list[int] | None = None, *,
                          timeout_ms: int | None = None) -> dict[int, dict[str, dict]]:
        """DescribeLogDirs at each broker (default: every live one), as Kafka's
        ``AdminClient.describeLogDirs``: per broker, per log directory its ``error`` (an ErrorCode)
        and ``partitions``, each ``(topic, partition)`` with its ``size`` in bytes, ``offset_lag``
        (behind the high watermark) and ``is_future``."""
        chosen = sorted(self.describe_cluster(timeout_ms=timeout_ms)["brokers"]) if broker_ids is None else broker_ids
        directory = self._new_directory()
        described: dict[int, dict[str, dict]] = {}
        for broker_id in chosen:
            answer = self._admin_call(f"DescribeLogDirs at broker {broker_id}", lambda deadline: directory.call(
                broker_id, DescribeLogDirsRequest(), timeout_ms=max(1, _remaining_ms(deadline))), timeout_ms)
            described[int(broker_id)] = {result.log_dir: {
                "error": ErrorCode(result.error_code),
                "partitions": {(topic.name, p.partition_index): {
                    "size": p.partition_size, "offset_lag": p.offset_lag, "is_future": p.is_future_key}
                    for topic in result.topics for p in topic.partitions}} for result in answer.results}
        return described

    def _new_directory(self) -> BrokerDirectory:
        return BrokerDirectory(namespace=self.namespace, bootstrap_broker_ids=self.broker_ids)


def _remaining_ms(deadline: float) -> int:
    return max(0, int((deadline - time.monotonic()) * 1000))


def _attempt_timeout_s(deadline: float | None) -> float:
    """How long one attempt waits for its answer: until ``deadline``, but never less than
    ADMIN_ATTEMPT_TIMEOUT_MIN_S (an attempt made at the deadline still gets its chance)."""
    if deadline is None:
        return DEFAULT_API_TIMEOUT_MS / 1000
    return max(ADMIN_ATTEMPT_TIMEOUT_MIN_S, deadline - time.monotonic())
