"""``Cluster``: start a Kafka-shaped cluster of actors on Ray, and steer it from outside.

``Cluster.start`` connects to the Ray that is running in this process, or starts a local one, and
creates the controller actor and one broker actor per broker id (each with its own log directory
under ``log_dir``). Every actor is created with ``max_restarts=-1``: Ray restarts a killed one,
and it recovers (a broker from its log directory, the controller from the metadata store). Brokers
register with the controller, which decides every partition's leadership. Clients made by
``producer`` and ``consumer`` find brokers by name in the cluster's Ray namespace, so a Ray task
elsewhere can build its own with the same namespace.

With ``detached=True`` the actors outlive this process (detached.py says how), and
``Cluster.connect(namespace=..., address=...)`` gives another process (a second command, a Ray
job) the same API on them; ``close`` leaves such a cluster running, ``stop`` removes it.

The admin calls (topics, groups, elections, descriptions) come from ``AdminClient``
(admin_client.py), which ``Cluster`` extends with the actors it started.
"""
from __future__ import annotations

import os
import shutil
import tempfile
import uuid

import ray
from loguru import logger

from actors.broker import BrokerActorRemote, broker_actor_name, group_coordinator_actor_name
from actors.controller import ControllerActorRemote, controller_actor_name
from actors.core.errors import ErrorCode, KafkaProtocolError
from actors.core.log.log import Log
from actors.core.log.log_config import LogConfig
from actors.core.replica.replica_manager import partition_directory
from actors.core.topic_configs import check_broker_config
from actors.wire.listeners import check_listener_config, with_listeners_for_hosts
from actors.file_storage import FileStorage
from actors.group_coordinator import GroupCoordinatorRemote
from actors.ray_metadata_store import RayKeyValueStore
from orchestration.admin.admin_client import AdminClient
from orchestration.admin.detached import (
    ClusterInfo, delete_cluster_info, join_with_rays_auth, load_cluster_info, save_cluster_info,
)
from orchestration.admin.placement import BrokerPlacement
from orchestration.admin.ray_runtime import with_raykafka_ray_environment
from orchestration.admin.status import cluster_status
from orchestration.admin.wait import wait_until
from orchestration.history import HistoryWriter
from orchestration.clients.broker_directory import BrokerDirectory
from orchestration.clients.consumer import Consumer
from orchestration.clients.producer import Producer
from orchestration.errors import KafkaError

BROKER_START_TIMEOUT_S = 120
ROLES = ("broker", "controller", "request-send-thread", "replica-fetcher", "group-coordinator",
         "log-cleaner")


class Cluster(AdminClient):
    def __init__(self, *, namespace: str, broker_ids: list[int], log_dir: str, config: dict[str, str],
                 owns_ray: bool, owns_log_dir: bool, broker_resources: dict[int, dict[str, float]] | None = None,
                 controller_resources: dict[str, float] | None = None, detached: bool = False) -> None:
        self.namespace = namespace
        # Detached actors outlive this process; close() then leaves them running, stop() removes them.
        self.detached = detached
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
        # Where each broker's actors run (placement.py); None until start places the brokers.
        self.placement: BrokerPlacement | None = None
        # Each broker's log directory as its broker resolved it on its node (see broker_log_dir).
        self._node_log_dirs: dict[int, str] = {}
        self._closed = False

    # --------------------------------------------------------------------------------- start
    @classmethod
    def start(cls, brokers: int = 3, log_dir: str | None = None, config: dict | None = None, *,
              namespace: str | None = None, num_cpus: int | None = None,
              broker_resources: dict[int, dict[str, float]] | None = None,
              controller_resources: dict[str, float] | None = None, detached: bool = False,
              address: str | None = None) -> "Cluster":
        """Start a controller and ``brokers`` brokers; returns once every broker has registered.

        Brokers are placed by a placement group, one broker per Ray node when there are enough
        (``orchestration.admin.placement``); ``broker_resources`` pins them to Ray nodes by custom
        resource instead (see ``orchestration.admin.ray_nodes``), and a pinned broker whose node is
        gone waits for it to return. ``log_dir`` may name the node (``{node_id}``, ``{node_ip}``):
        each broker resolves it on the node it runs on.
        ``detached`` makes every actor outlive this process (see ``connect`` and ``stop``);
        ``address`` joins that running Ray (``auto``, or ``host:port``) instead of a local one."""
        if brokers < 1:
            raise ValueError("a cluster needs at least one broker")
        config = {str(k): str(v).lower() if isinstance(v, bool) else str(v) for k, v in (config or {}).items()}
        try:
            check_broker_config(config)  # before anything starts: a broker would refuse it at every restart
            check_listener_config(config)
        except KafkaProtocolError as exc:
            raise KafkaError(exc.error_code, exc.message) from None
        owns_ray = not ray.is_initialized()
        if owns_ray:
            if address is not None:
                join_with_rays_auth()
            else:  # a Ray of this process's own: started as raykafka starts its Rays
                with_raykafka_ray_environment(os.environ)
            ray.init(address=address, namespace=namespace or f"raykafka-{uuid.uuid4().hex[:8]}",
                     num_cpus=None if address else num_cpus, include_dashboard=False, log_to_driver=False)
        namespace = ray.get_runtime_context().namespace
        # On a Ray cluster that may span hosts (one joined by address, or with several nodes) the
        # brokers listen on their node's IP unless the config says otherwise, so stock clients on
        # other hosts can reach what the brokers advertise; on one machine, loopback.
        several_hosts = address is not None or sum(1 for node in ray.nodes() if node.get("Alive")) > 1
        config = with_listeners_for_hosts(config, several_hosts=several_hosts)
        owns_log_dir = log_dir is None
        log_dir = os.path.abspath(log_dir or tempfile.mkdtemp(prefix="raykafka-"))
        # Brokers refuse to create the offsets topic with fewer live brokers than its replication
        # factor (Kafka's default is 3), so a smaller cluster gets a factor it can meet, as a
        # one-broker Kafka is configured with offsets.topic.replication.factor=1.
        config.setdefault("offsets.topic.replication.factor", str(min(3, brokers)))
        cluster = cls(namespace=namespace, broker_ids=list(range(brokers)), log_dir=log_dir,
                      config=config,
                      owns_ray=owns_ray, owns_log_dir=owns_log_dir, broker_resources=broker_resources,
                      controller_resources=controller_resources, detached=detached)
        if detached and load_cluster_info(namespace) is not None:
            raise KafkaError(ErrorCode.INVALID_REQUEST, f"a raykafka cluster already runs in namespace {namespace!r}")
        try:
            RayKeyValueStore(namespace).clear()  # a new cluster: no controller state from an earlier one
            cluster.placement = BrokerPlacement.create(cluster.broker_ids, detached=detached,
                                                       broker_resources=broker_resources)
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
            for broker_id in cluster.broker_ids:
                cluster._note_node_log_dir(broker_id)
            if detached:
                save_cluster_info(ClusterInfo(namespace=namespace, broker_ids=cluster.broker_ids, log_dir=log_dir,
                                              config=cluster.config, detached=True,
                                              placement=cluster.placement.describe(),
                                              node_log_dirs=dict(cluster._node_log_dirs)))
        except BaseException:
            cluster.shutdown()
            raise
        logger.info("raykafka cluster with {} brokers up in namespace {} (logs in {})",
                    brokers, namespace, log_dir)
        return cluster

    @classmethod
    def connect(cls, namespace: str, address: str | None = None) -> "Cluster":
        """The cluster running in Ray namespace ``namespace`` (started with ``detached=True`` by
        another process), on the Ray at ``address`` (``auto``, ``host:port``, or the Ray this process
        is already connected to). ``close`` disconnects and leaves the cluster running."""
        owns_ray = not ray.is_initialized()
        if owns_ray:
            join_with_rays_auth()
            ray.init(address=address or "auto", namespace=namespace, log_to_driver=False)
        info = load_cluster_info(namespace)
        if info is None:
            if owns_ray:
                ray.shutdown()
            raise KafkaError(ErrorCode.BROKER_NOT_AVAILABLE, f"no raykafka cluster in Ray namespace {namespace!r}")
        cluster = cls(namespace=namespace, broker_ids=info.broker_ids, log_dir=info.log_dir, config=info.config,
                      owns_ray=owns_ray, owns_log_dir=False, detached=info.detached)
        cluster.placement = BrokerPlacement.restore(info.placement)
        cluster._node_log_dirs = {int(k): v for k, v in (info.node_log_dirs or {}).items()}
        for broker_id in info.broker_ids:
            for name, handles in ((broker_actor_name(broker_id), cluster._brokers),
                                  (group_coordinator_actor_name(broker_id), cluster._coordinators)):
                handle = _named_actor(name, namespace)
                if handle is not None:
                    handles[broker_id] = handle
        index = 0
        while (handle := _named_actor(controller_actor_name(index), namespace)) is not None:
            cluster._controllers.append(handle)
            index += 1
        return cluster

    def broker_log_dir(self, broker_id: int) -> str:
        """The broker's log directory: as the broker resolved it on its node when the cluster or
        ``restart_broker`` started it, else as configured (``<log_dir>/broker-<id>``, placeholders
        unresolved). A broker that Ray moved to another node since has a new one (``status`` shows
        it). Reading it from this process (``restart_broker(wipe_disk=True)``,
        ``truncate_replica_on_disk``) assumes this process sees the broker node's disk, as on one
        machine."""
        return self._node_log_dirs.get(broker_id) or self._configured_log_dir(broker_id)

    def _configured_log_dir(self, broker_id: int) -> str:
        return os.path.join(self.log_dir, f"broker-{broker_id}")

    def _note_node_log_dir(self, broker_id: int) -> dict:
        """Ask the broker where it runs and keep the log directory it resolved there."""
        ping = ray.get(self.broker(broker_id).ping.remote(), timeout=BROKER_START_TIMEOUT_S)
        self._node_log_dirs[broker_id] = ping["log_dir"]
        return ping

    def _placed(self, broker_id: int) -> dict:
        """Ray options that put one of ``broker_id``'s actors on the broker's node."""
        if self.placement is not None:
            return self.placement.actor_options(broker_id)
        return {"resources": self.broker_resources[broker_id]} if broker_id in self.broker_resources else {}

    def _create_broker(self, broker_id: int):
        handle = BrokerActorRemote.options(
            name=broker_actor_name(broker_id), namespace=self.namespace, max_restarts=-1,
            max_task_retries=0, num_cpus=0, max_concurrency=1000, lifetime=self._lifetime, **self._placed(broker_id),
        ).remote(broker_id, self._configured_log_dir(broker_id), self.config, self.namespace)
        self._brokers[broker_id] = handle
        return handle

    def _create_group_coordinator(self, broker_id: int):
        handle = GroupCoordinatorRemote.options(
            name=group_coordinator_actor_name(broker_id), namespace=self.namespace, max_restarts=-1,
            max_task_retries=0, num_cpus=0, max_concurrency=1000, lifetime=self._lifetime, **self._placed(broker_id),
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
            max_concurrency=1000, resources=self.controller_resources, lifetime=self._lifetime,
        ).remote(namespace=self.namespace, actor_name=name, config=self.config,
                 send_thread_options={broker_id: self._placed(broker_id) for broker_id in self.broker_ids})
        ray.get(handle.ping.remote(), timeout=BROKER_START_TIMEOUT_S)
        self._controllers.append(handle)
        return handle

    def status(self) -> dict:
        """Brokers (up, epoch, node, process, actor id, log directory), the controller and its
        epoch, and partition health; see ``orchestration.admin.status``."""
        return cluster_status(self)

    @property
    def _lifetime(self) -> str | None:
        return "detached" if self.detached else None

    # ----------------------------------------------------------------------------- handles
    def broker(self, broker_id: int):
        """The broker actor's handle (to send it requests directly, or to watch it)."""
        if broker_id not in self._brokers and broker_id in self.broker_ids:
            # Started by another process after this one connected (a restart_broker elsewhere).
            handle = _named_actor(broker_actor_name(broker_id), self.namespace)
            if handle is not None:
                self._brokers[broker_id] = handle
        if broker_id not in self._brokers:
            raise KafkaError(ErrorCode.BROKER_NOT_AVAILABLE, f"no broker {broker_id}")
        return self._brokers[broker_id]

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
        ``log-cleaner``: ``broker_id``'s log cleaner; the broker starts another, which cleans again
        from the last round that was swapped in (a round cut short leaves the logs whole).
        """
        if role == "broker":
            _kill_and_wait_gone(self.broker(broker_id), f"broker {broker_id}", restart)
        elif role == "controller":
            _kill_and_wait_gone(self.controller(), "the controller", restart)
        elif role == "replica-fetcher":
            fetchers = ray.get(self.broker(broker_id).fetchers.remote(), timeout=30)
            if not fetchers:
                raise KafkaError(ErrorCode.BROKER_NOT_AVAILABLE, f"broker {broker_id} runs no fetcher")
            for entry in fetchers.values():
                ray.kill(entry["actor"], no_restart=True)
        elif role == "group-coordinator":
            if broker_id not in self._coordinators:
                raise KafkaError(ErrorCode.BROKER_NOT_AVAILABLE, f"no group coordinator {broker_id}")
            _kill_and_wait_gone(self._coordinators[broker_id], f"group coordinator {broker_id}", restart)
        elif role == "log-cleaner":
            cleaner = ray.get(self.broker(broker_id).log_cleaner.remote(), timeout=30)["actor"]
            if cleaner is None:
                raise KafkaError(ErrorCode.BROKER_NOT_AVAILABLE, f"broker {broker_id} runs no log cleaner")
            ray.kill(cleaner, no_restart=True)
        elif role == "request-send-thread":
            thread = self._ask_controller(lambda controller: controller.send_thread.remote(broker_id))
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
        if broker_id not in self.broker_ids:
            raise KafkaError(ErrorCode.BROKER_NOT_AVAILABLE, f"no broker {broker_id}")
        try:
            ray.kill(self.broker(broker_id), no_restart=True)
        except Exception:
            pass  # already down (killed with no restart, perhaps by another process)
        wait_until(lambda: _actor_gone(broker_actor_name(broker_id), self.namespace), 30,
                   f"broker {broker_id}'s old actor to go")
        if wipe_disk:
            shutil.rmtree(self.broker_log_dir(broker_id), ignore_errors=True)
        self._create_broker(broker_id)
        incarnation = self._note_node_log_dir(broker_id)["incarnation_id"]
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
    def close(self) -> None:
        """Close this process's clients and leave a detached cluster running (``stop`` removes
        it); a cluster that is not detached is shut down, as its actors end with this process."""
        if not self.detached:
            self.shutdown()
            return
        if self._closed:
            return
        self._closed = True
        self._close_clients()
        if self._owns_ray:
            ray.shutdown()

    def stop(self) -> None:
        """Remove every actor of the cluster, detached or not; the log directory stays."""
        self._owns_log_dir = False
        self._closed = False
        self.shutdown()

    def _close_clients(self) -> None:
        for client in self._clients:
            try:
                client.close()
            except Exception as exc:
                logger.warning("closing a client: {}", exc)
        self._clients.clear()

    def shutdown(self) -> None:
        """Remove every actor; delete the log directory when this cluster made it."""
        if self._closed:
            return
        self._closed = True
        self._close_clients()
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
        if self.placement is not None:
            self.placement.remove()
        try:
            RayKeyValueStore(self.namespace).clear()
            delete_cluster_info(self.namespace)
        except Exception:
            pass
        if self._owns_ray:
            ray.shutdown()
        if self._owns_log_dir:
            shutil.rmtree(self.log_dir, ignore_errors=True)

    def __enter__(self) -> "Cluster":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _named_actor(name: str, namespace: str):
    try:
        return ray.get_actor(name, namespace=namespace)
    except ValueError:
        return None


def _actor_gone(name: str, namespace: str) -> bool:
    try:
        ray.get_actor(name, namespace=namespace)
    except ValueError:
        return True
    return False


KILL_TIMEOUT_S = 30.0


def _kill_and_wait_gone(handle, what: str, restart: bool) -> None:
    """``ray.kill`` and return once the killed process no longer answers.

    ``ray.kill`` only asks Ray to end the process: a call made right after it can still be served
    by the old process, and a script that kills a broker and then waits for "the broker is back,
    following" would see the broker as it was before the crash. The process id the actor reports
    (``ping``) tells the old process from the one Ray starts in its place; an actor that cannot
    say (it is stuck or already dead) is killed without the wait."""
    try:
        before = ray.get(handle.ping.remote(), timeout=5).get("pid")
    except Exception:  # already dead, restarting or unresponsive: nothing to tell apart
        before = None
    ray.kill(handle, no_restart=not restart)
    if before is None:
        return

    def old_process_gone() -> bool:
        try:
            return ray.get(handle.ping.remote(), timeout=2).get("pid") != before
        except ray.exceptions.GetTimeoutError:
            return False  # no answer yet: ask again
        except ray.exceptions.RayError:  # ActorDiedError, ActorUnavailableError (restarting)
            return True

    wait_until(old_process_gone, KILL_TIMEOUT_S, f"{what}'s killed process to stop answering")
