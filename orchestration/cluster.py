"""``Cluster``: start a Kafka-shaped cluster of actors on Ray, and steer it from outside.

``Cluster.start`` connects to the Ray that is running in this process, or starts a local one, and
creates the controller actor and one broker actor per broker id (each with its own log directory
under ``log_dir``). Every actor is created with ``max_restarts=-1``: Ray restarts a killed one,
and it recovers (a broker from its log directory, the controller from the metadata store). Brokers
register with the controller, which decides every partition's leadership. Clients made by
``producer`` and ``consumer`` find brokers by name in the cluster's Ray namespace, so a Ray task
elsewhere can build its own with the same namespace.

Admin calls (describing, creating and deleting topics, describing and listing groups, preferred
leader elections, describing the cluster) behave as Kafka's AdminClient: each retries Kafka's
retriable errors (no coordinator yet, a coordinator loading, leadership or controllership moving,
a request timing out, an actor restarting) with backoff until its ``timeout_ms`` (default
``default.api.timeout.ms``, 60 s) has passed, and only then raises the last error; any other error
(``TOPIC_ALREADY_EXISTS``, ``INVALID_PARTITIONS``, ...) is raised at once. All go through
``Cluster._admin_call``.
"""
from __future__ import annotations

import os
import shutil
import tempfile
import time
import uuid
from dataclasses import dataclass

import ray
from loguru import logger
from ray.exceptions import RayError

from actors.broker import BrokerActorRemote, broker_actor_name, group_coordinator_actor_name
from actors.group_coordinator import GroupCoordinatorRemote
from actors.controller import ControllerActorRemote, controller_actor_name
from actors.core.controller.channel_queue import ChannelQueueStatus
from actors.core.errors import ErrorCode
from actors.core.log.log import Log, LogConfig
from actors.core.replica.replica_manager import partition_directory
from actors.file_storage import FileStorage
from actors.core.messages.create_topics import (
    CreatableReplicaAssignment, CreatableTopic, CreateableTopicConfig, CreateTopicsRequest,
)
from actors.core.messages.delete_topics import DeleteTopicsRequest
from actors.core.messages.metadata import MetadataRequest
from actors.core.messages.elect_leaders import ElectLeadersRequest, TopicPartitions
from actors.ray_metadata_store import RayKeyValueStore, active_controller
from orchestration.client import BrokerDirectory, call_with_retries
from orchestration.consumer import Consumer
from orchestration.errors import KafkaError
from orchestration.groups import GroupDescription, describe_group, list_groups
from orchestration.history import HistoryWriter
from orchestration.producer import Producer

BROKER_START_TIMEOUT_S = 120
CONVERGE_TIMEOUT_S = 60
POLL_INTERVAL_S = 0.05
ROLES = ("broker", "controller", "request-send-thread", "replica-fetcher", "group-coordinator")
DEFAULT_API_TIMEOUT_MS = 60000  # Kafka's default.api.timeout.ms: how long an admin call keeps retrying
# Kafka's retry.backoff.ms, doubling up to ADMIN_RETRY_BACKOFF_MAX_MS as KIP-580's clients do (2.4
# keeps it fixed): a minute of retries then costs about sixty calls, not six hundred.
ADMIN_RETRY_BACKOFF_MS = 100
ADMIN_RETRY_BACKOFF_MAX_MS = 1000
ADMIN_ATTEMPT_TIMEOUT_MIN_S = 1.0  # the shortest wait for one attempt's answer, even near the deadline
# Kafka's NotControllerException is a RetriableException too; the core's ErrorCode.retriable leaves
# it out because only an admin client retries it.
ADMIN_RETRIABLE = frozenset({ErrorCode.NOT_CONTROLLER})


def wait_until(condition, timeout_s: float, what: str):
    """Poll ``condition`` until it returns something truthy; bounded by ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    last_error = None
    while time.monotonic() < deadline:
        try:
            result = condition()
            if result:
                return result
        except Exception as exc:  # an actor restarting: keep polling
            last_error = exc
        time.sleep(POLL_INTERVAL_S)
    raise TimeoutError(f"timed out after {timeout_s}s waiting for {what}"
                       + (f" (last error: {last_error!r})" if last_error else ""))


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


class Cluster:
    def __init__(self, *, namespace: str, broker_ids: list[int], log_dir: str, config: dict[str, str],
                 owns_ray: bool, owns_log_dir: bool, broker_resources: dict[int, dict[str, float]] | None = None,
                 controller_resources: dict[str, float] | None = None) -> None:
        self.namespace = namespace
        # Custom Ray resources per broker id: pins a broker (and its coordinator) to a Ray node.
        self.broker_resources = {int(k): dict(v) for k, v in (broker_resources or {}).items()}
        self.controller_resources = dict(controller_resources) if controller_resources else None
        self.broker_ids = list(broker_ids)
        self.log_dir = log_dir
        self.config = dict(config)
        self._owns_ray = owns_ray
        self._owns_log_dir = owns_log_dir
        self._brokers: dict[int, object] = {}
        self._coordinators: dict[int, object] = {}
        self._controllers: list = []  # every controller actor this cluster started, newest last
        self._clients: list = []
        self.directory = BrokerDirectory(namespace=namespace, bootstrap_broker_ids=self.broker_ids)
        self._closed = False

    # --------------------------------------------------------------------------------- start
    @classmethod
    def start(cls, brokers: int = 3, log_dir: str | None = None, config: dict | None = None, *,
              namespace: str | None = None, num_cpus: int | None = None,
              broker_resources: dict[int, dict[str, float]] | None = None,
              controller_resources: dict[str, float] | None = None) -> "Cluster":
        """Start a controller and ``brokers`` brokers; returns once every broker has registered.

        ``broker_resources`` pins brokers to Ray nodes by custom resource (see
        ``orchestration.ray_nodes``); a pinned broker whose node is gone waits for it to return."""
        if brokers < 1:
            raise ValueError("a cluster needs at least one broker")
        owns_ray = not ray.is_initialized()
        if owns_ray:
            ray.init(namespace=namespace or f"raykafka-{uuid.uuid4().hex[:8]}", num_cpus=num_cpus,
                     include_dashboard=False, log_to_driver=False)
        namespace = ray.get_runtime_context().namespace
        owns_log_dir = log_dir is None
        log_dir = os.path.abspath(log_dir or tempfile.mkdtemp(prefix="raykafka-"))
        cluster = cls(namespace=namespace, broker_ids=list(range(brokers)), log_dir=log_dir,
                      config={str(k): str(v) for k, v in (config or {}).items()},
                      owns_ray=owns_ray, owns_log_dir=owns_log_dir, broker_resources=broker_resources,
                      controller_resources=controller_resources)
        try:
            RayKeyValueStore(namespace).clear()  # a new cluster: no controller state from an earlier one
            cluster.start_controller()
            for broker_id in cluster.broker_ids:
                cluster._create_broker(broker_id)
                cluster._create_group_coordinator(broker_id)
            wait_until(lambda: set(cluster.describe_cluster()["brokers"]) == set(cluster.broker_ids),
                       BROKER_START_TIMEOUT_S, "every broker to register")
            # A stock client's first Metadata must list the brokers (librdkafka cannot use an
            # empty answer), so the cluster is ready once every broker's cache has them all.
            wait_until(cluster._listeners_known_everywhere, BROKER_START_TIMEOUT_S,
                       "every broker's metadata to list every broker's Kafka listener")
        except BaseException:
            cluster.shutdown()
            raise
        logger.info("raykafka cluster with {} brokers up in namespace {} (logs in {})",
                    brokers, namespace, log_dir)
        return cluster

    def broker_log_dir(self, broker_id: int) -> str:
        return os.path.join(self.log_dir, f"broker-{broker_id}")

    def _create_broker(self, broker_id: int):
        handle = BrokerActorRemote.options(
            name=broker_actor_name(broker_id), namespace=self.namespace, max_restarts=-1,
            max_task_retries=0, num_cpus=0, max_concurrency=1000, resources=self.broker_resources.get(broker_id),
        ).remote(broker_id, self.broker_log_dir(broker_id), self.config, self.namespace)
        self._brokers[broker_id] = handle
        return handle

    def _create_group_coordinator(self, broker_id: int):
        handle = GroupCoordinatorRemote.options(
            name=group_coordinator_actor_name(broker_id), namespace=self.namespace, max_restarts=-1,
            max_task_retries=0, num_cpus=0, max_concurrency=1000, resources=self.broker_resources.get(broker_id),
        ).remote(broker_id=broker_id, namespace=self.namespace, broker_actor_name=broker_actor_name(broker_id),
                 config=self.config)
        self._coordinators[broker_id] = handle
        return handle

    def start_controller(self):
        """Start a controller actor. It claims a new controller epoch; a controller running before
        it (paused, say) becomes a zombie that brokers fence by epoch."""
        name = controller_actor_name(len(self._controllers))
        handle = ControllerActorRemote.options(
            name=name, namespace=self.namespace, max_restarts=-1, max_task_retries=0, num_cpus=0,
            max_concurrency=1000, resources=self.controller_resources,
        ).remote(namespace=self.namespace, actor_name=name, config=self.config)
        ray.get(handle.ping.remote(), timeout=BROKER_START_TIMEOUT_S)
        self._controllers.append(handle)
        return handle

    # ----------------------------------------------------------------------------- handles
    def broker(self, broker_id: int):
        """The broker actor's handle (to send it requests directly, or to watch it)."""
        if broker_id not in self._brokers:
            raise KafkaError(ErrorCode.BROKER_NOT_AVAILABLE, f"no broker {broker_id}")
        return self._brokers[broker_id]

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

    def _ask_controller(self, method: str, *args, deadline: float | None = None):
        """One call to the active controller, waiting for its answer until ``deadline``
        (``time.monotonic``; at least ADMIN_ATTEMPT_TIMEOUT_MIN_S), else 60 s."""
        return ray.get(getattr(self.controller(), method).remote(*args), timeout=_attempt_timeout_s(deadline))

    def _observe_controller(self, method: str, *args, timeout_ms: int | None = None):
        """A read-only question to the controller, asked again while it restarts or moves (a
        read has no effect, so repeating it is safe)."""
        return self._admin_call(f"controller {method}", lambda deadline: self._ask_controller(
            method, *args, deadline=deadline), timeout_ms)

    def controller_epoch(self, *, timeout_ms: int | None = None) -> int:
        return self._observe_controller("controller_epoch", timeout_ms=timeout_ms)

    def controller_queue_sizes(self, *, timeout_ms: int | None = None) -> dict[int, ChannelQueueStatus | None]:
        """Per broker id, the controller's queue of control requests for it: ``queue_size`` (the
        waiting requests, Kafka's QueueSize), ``head_queue_time_ms`` (how long the oldest has
        waited), ``last_queue_time_ms`` (enqueue-to-send time of the last one sent, Kafka's
        RequestQueueTimeMs), whether one is in flight, and how many were dropped at the queue's
        limit. None for a send thread that is being replaced."""
        return self._observe_controller("queue_sizes", timeout_ms=timeout_ms)

    def describe_cluster(self, *, timeout_ms: int | None = None) -> dict:
        """The controller's view: its epoch and the live brokers with their epochs."""
        return self._observe_controller("describe_cluster", timeout_ms=timeout_ms)

    @property
    def bootstrap_servers(self) -> str:
        """"host:port,..." of every registered broker's PLAINTEXT Kafka listener: all a stock
        Kafka client (confluent-kafka, kafka-python, aiokafka, kcat) needs to connect."""
        return self.listener_addresses("PLAINTEXT")

    def _listeners_known_everywhere(self) -> bool:
        names = {name for info in self.describe_cluster()["brokers"].values() for name in info.get("listeners", {})}
        for broker_id in self.broker_ids:
            for name in names:
                response = ray.get(self.broker(broker_id).handle_metadata.remote(
                    MetadataRequest(topics=(), listener_name=name)), timeout=10)
                if len(response.brokers) < len(self.broker_ids):
                    return False
        return True

    def listener_addresses(self, listener_name: str, *, timeout_ms: int | None = None) -> str:
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
                result = self._ask_controller("handle_create_topics", request, deadline=deadline).topics[0]
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
                result = self._ask_controller("handle_delete_topics", DeleteTopicsRequest(topic_names=(name,)),
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
        described = self._ask_controller("describe_topic", name, deadline=deadline)
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

    def elect_preferred_leaders(self, topic: str | None = None, *,
                                timeout_ms: int | None = None) -> dict[tuple[str, int], str]:
        """Preferred-replica election; per partition, Kafka's outcome name (NONE, ELECTION_NOT_NEEDED, ...)."""
        deadline = time.monotonic() + (DEFAULT_API_TIMEOUT_MS if timeout_ms is None else timeout_ms) / 1000
        wanted = None
        if topic is not None:
            wanted = (TopicPartitions(topic=topic, partitions=tuple(
                p.partition for p in self.describe_topic(topic, timeout_ms=_remaining_ms(deadline)))),)
        request = ElectLeadersRequest(topic_partitions=wanted)

        def attempt(attempt_deadline: float):
            response = self._ask_controller("handle_elect_leaders", request, deadline=attempt_deadline)
            if response.error_code != ErrorCode.NONE:
                raise KafkaError(response.error_code, "ElectLeaders")
            return response

        response = self._admin_call("ElectLeaders", attempt, _remaining_ms(deadline))
        return {(r.topic, p.partition_id): ErrorCode(p.error_code).name
                for r in response.replica_election_results for p in r.partition_result}

    # ------------------------------------------------------------------------------- clients
    def producer(self, config: dict | None = None, *, history: HistoryWriter | None = None,
                 process: str | None = None) -> Producer:
        """A producer of this cluster; with ``history`` it records every send (see ``Producer``)."""
        producer = Producer(self._new_directory(), config, history=history, process=process)
        self._clients.append(producer)
        return producer

    def consumer(self, config: dict | None = None, *, history: HistoryWriter | None = None,
                 process: str | None = None) -> Consumer:
        """A consumer of this cluster; with ``history`` it records every poll that returns records."""
        consumer = Consumer(self._new_directory(), config, history=history, process=process)
        self._clients.append(consumer)
        return consumer

    def _new_directory(self) -> BrokerDirectory:
        return BrokerDirectory(namespace=self.namespace, bootstrap_broker_ids=self.broker_ids)

    # -------------------------------------------------------------------------------- faults
    def kill(self, role: str, broker_id: int | None = None, restart: bool = True) -> None:
        """Kill an actor as a crash would (no shutdown hook runs).

        ``broker``: Ray restarts it when ``restart``, and it recovers from its log directory;
        otherwise it stays down until ``restart_broker``. ``controller``: Ray restarts it when
        ``restart``, with a higher epoch and the same state. ``request-send-thread``: the
        controller's thread for ``broker_id``; the controller always replaces it, as Kafka's
        controller does, and re-sends that broker the current state. ``replica-fetcher``: every
        fetcher of ``broker_id``; the broker replaces them, and they resume from its log end.
        ``group-coordinator``: ``broker_id``'s coordinator; Ray restarts it when ``restart`` and it
        reloads its groups from the ``__consumer_offsets`` partitions its broker leads.
        """
        if role == "broker":
            ray.kill(self.broker(broker_id), no_restart=not restart)
        elif role == "controller":
            ray.kill(self.controller(), no_restart=not restart)
        elif role == "replica-fetcher":
            fetchers = ray.get(self.broker(broker_id).fetchers.remote(), timeout=30)
            if not fetchers:
                raise KafkaError(ErrorCode.BROKER_NOT_AVAILABLE, f"broker {broker_id} runs no fetcher")
            for entry in fetchers.values():
                ray.kill(entry["actor"], no_restart=True)
        elif role == "group-coordinator":
            if broker_id not in self._coordinators:
                raise KafkaError(ErrorCode.BROKER_NOT_AVAILABLE, f"no group coordinator {broker_id}")
            ray.kill(self._coordinators[broker_id], no_restart=not restart)
        elif role == "request-send-thread":
            thread = self._ask_controller("send_thread", broker_id)
            if thread is None:
                raise KafkaError(ErrorCode.BROKER_NOT_AVAILABLE, f"no send thread for broker {broker_id}")
            ray.kill(thread, no_restart=True)
        else:
            raise ValueError(f"unknown role {role!r}; roles are {', '.join(ROLES)}")

    def controlled_shutdown(self, broker_id: int, timeout_s: float = 120) -> str:
        """Kafka's controlled shutdown: leaderships move away first, then the broker stops.

        Returns the outcome (``NONE``, or ``REQUEST_TIMED_OUT`` when leaderships remained after
        ``controlled.shutdown.max.retries``). The broker stays down until ``restart_broker``.
        """
        handle = self.broker(broker_id)
        outcome = ray.get(handle.controlled_shutdown.remote(), timeout=timeout_s)
        ray.get(handle.shutdown.remote(), timeout=timeout_s)
        ray.kill(handle, no_restart=True)
        return outcome

    def restart_broker(self, broker_id: int, *, wipe_disk: bool = False) -> None:
        """Start a broker again from its log directory (or, with ``wipe_disk``, from an empty one:
        a lost disk); returns once it has registered."""
        handle = self.broker(broker_id)
        try:
            ray.kill(handle, no_restart=True)
        except Exception:
            pass
        wait_until(lambda: _actor_gone(broker_actor_name(broker_id), self.namespace), 30,
                   f"broker {broker_id}'s old actor to go")
        if wipe_disk:
            shutil.rmtree(self.broker_log_dir(broker_id), ignore_errors=True)
        self._create_broker(broker_id)
        incarnation = ray.get(self.broker(broker_id).ping.remote(), timeout=BROKER_START_TIMEOUT_S)["incarnation_id"]
        wait_until(lambda: ray.get(self.broker(broker_id).describe_broker.remote(), timeout=10)["state"] == "RUNNING"
                   and broker_id in self.describe_cluster()["brokers"], BROKER_START_TIMEOUT_S,
                   f"broker {broker_id} (incarnation {incarnation}) to register")

    def truncate_replica_on_disk(self, broker_id: int, topic: str, partition: int, keep_below: int) -> None:
        """Cut one replica's log files back to the offsets below ``keep_below`` while its broker
        is down (the unflushed tail a power loss takes); the broker recovers from that on start."""
        if not _actor_gone(broker_actor_name(broker_id), self.namespace):
            wait_until(lambda: _actor_gone(broker_actor_name(broker_id), self.namespace), 30,
                       f"broker {broker_id} to be down before its disk is touched")
        storage = FileStorage(self.broker_log_dir(broker_id))
        try:
            log = Log.open(storage, partition_directory(topic, partition), LogConfig.from_properties({}))
            log.truncate_to(keep_below)
            log.flush()
            log.close()
        finally:
            storage.close()

    # ------------------------------------------------------------------------------ shutdown
    def shutdown(self) -> None:
        if self._closed:
            return
        self._closed = True
        for client in self._clients:
            try:
                client.close()
            except Exception as exc:
                logger.warning("closing a client: {}", exc)
        for handle in self._coordinators.values():
            try:
                ray.kill(handle, no_restart=True)
            except Exception:
                pass
        for handle in self._brokers.values():
            try:
                ray.get(handle.shutdown.remote(), timeout=30)
            except Exception:
                pass  # already dead: its next start recovers from the log
            ray.kill(handle, no_restart=True)
        for handle in self._controllers:
            try:
                ray.kill(handle, no_restart=True)
            except Exception:
                pass
        try:
            RayKeyValueStore(self.namespace).clear()
        except Exception:
            pass
        if self._owns_ray:
            ray.shutdown()
        if self._owns_log_dir:
            shutil.rmtree(self.log_dir, ignore_errors=True)

    def __enter__(self) -> "Cluster":
        return self

    def __exit__(self, *exc) -> None:
        self.shutdown()


def _remaining_ms(deadline: float) -> int:
    return max(0, int((deadline - time.monotonic()) * 1000))


def _attempt_timeout_s(deadline: float | None) -> float:
    """How long one attempt waits for its answer: until ``deadline``, but never less than
    ADMIN_ATTEMPT_TIMEOUT_MIN_S (an attempt made at the deadline still gets its chance)."""
    if deadline is None:
        return DEFAULT_API_TIMEOUT_MS / 1000
    return max(ADMIN_ATTEMPT_TIMEOUT_MIN_S, deadline - time.monotonic())


def _actor_gone(name: str, namespace: str) -> bool:
    try:
        ray.get_actor(name, namespace=namespace)
    except ValueError:
        return True
    return False
