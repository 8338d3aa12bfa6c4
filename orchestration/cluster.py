"""``Cluster``: start a Kafka-shaped cluster of broker actors on Ray, and steer it from outside.

``Cluster.start`` connects to the Ray that is running in this process, or starts a local one,
creates one broker actor per broker id (each with its own log directory under ``log_dir``, and
``max_restarts=-1`` so that Ray restarts a killed broker, which then recovers from its directory),
and places partition leaders. Clients made by ``producer`` and ``consumer`` find brokers by name in
the cluster's Ray namespace, so a Ray task elsewhere can build its own with the same namespace.
"""
from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from dataclasses import dataclass

import ray
from loguru import logger

from actors.broker import BrokerActorRemote, broker_actor_name
from orchestration.client import BrokerDirectory
from orchestration.consumer import Consumer
from orchestration.errors import KafkaError
from orchestration.interim_placement import InterimLeaderPlacement
from orchestration.producer import Producer
from actors.core.errors import ErrorCode

BROKER_START_TIMEOUT_S = 120


@dataclass(frozen=True)
class PartitionDescription:
    topic: str
    partition: int
    leader: int
    replicas: list[int]
    isr: list[int]
    leader_epoch: int
    high_watermark: int
    log_end_offset: int
    log_start_offset: int


class Cluster:
    def __init__(self, *, namespace: str, broker_ids: list[int], log_dir: str, config: dict[str, str],
                 owns_ray: bool, owns_log_dir: bool) -> None:
        self.namespace = namespace
        self.broker_ids = list(broker_ids)
        self.log_dir = log_dir
        self.config = dict(config)
        self._owns_ray = owns_ray
        self._owns_log_dir = owns_log_dir
        self._handles: dict[int, object] = {}
        self._clients: list = []
        self.directory = BrokerDirectory(namespace=namespace, bootstrap_broker_ids=self.broker_ids)
        self._placement = InterimLeaderPlacement(self.directory, self.broker_ids)
        self._closed = False

    # --------------------------------------------------------------------------------- start
    @classmethod
    def start(cls, brokers: int = 3, log_dir: str | None = None, config: dict | None = None, *,
              namespace: str | None = None, num_cpus: int | None = None) -> "Cluster":
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
                      owns_ray=owns_ray, owns_log_dir=owns_log_dir)
        try:
            for broker_id in cluster.broker_ids:
                cluster._create_broker(broker_id)
            ray.get([cluster._handles[b].ping.remote() for b in cluster.broker_ids],
                    timeout=BROKER_START_TIMEOUT_S)
            cluster._placement.start()
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
            max_task_retries=0, num_cpus=0, max_concurrency=1000,
        ).remote(broker_id, self.broker_log_dir(broker_id), self.config)
        self._handles[broker_id] = handle
        return handle

    # -------------------------------------------------------------------------------- topics
    def create_topic(self, name: str, partitions: int = 1, replication_factor: int = 1,
                     config: dict | None = None) -> None:
        self._placement.create_topic(name, partitions, replication_factor, config)
        self.directory.refresh_metadata()

    def topics(self) -> list[str]:
        return self._placement.topic_names()

    def describe_topic(self, name: str) -> list[PartitionDescription]:
        states = self._placement.partition_states(name)
        positions = {}
        for leader in sorted({s["leader"] for s in states.values()}):
            try:
                for entry in ray.get(self.broker(leader).describe_partitions.remote(), timeout=30):
                    if entry["topic"] == name and entry["is_leader"]:
                        positions[entry["partition"]] = entry
            except Exception as exc:  # a dead leader: report what the placement knows
                logger.warning("broker {} did not describe {}: {}", leader, name, exc)
        result = []
        for partition, state in sorted(states.items()):
            seen = positions.get(partition, {})
            result.append(PartitionDescription(
                topic=name, partition=partition, leader=state["leader"], replicas=state["replicas"],
                isr=state["isr"], leader_epoch=state["leader_epoch"],
                high_watermark=seen.get("high_watermark", -1), log_end_offset=seen.get("log_end_offset", -1),
                log_start_offset=seen.get("log_start_offset", -1)))
        return result

    # ------------------------------------------------------------------------------- clients
    def producer(self, config: dict | None = None) -> Producer:
        producer = Producer(self._new_directory(), config)
        self._clients.append(producer)
        return producer

    def consumer(self, config: dict | None = None) -> Consumer:
        consumer = Consumer(self._new_directory(), config)
        self._clients.append(consumer)
        return consumer

    def _new_directory(self) -> BrokerDirectory:
        return BrokerDirectory(namespace=self.namespace, bootstrap_broker_ids=self.broker_ids)

    # -------------------------------------------------------------------------------- faults
    def broker(self, broker_id: int):
        """The broker actor's handle (to send it requests directly, or to watch it)."""
        if broker_id not in self._handles:
            raise KafkaError(ErrorCode.BROKER_NOT_AVAILABLE, f"no broker {broker_id}")
        return self._handles[broker_id]

    def kill(self, role: str, broker_id: int | None = None, restart: bool = True) -> None:
        """Kill an actor as a crash would: no shutdown hook runs. Ray restarts it when ``restart``."""
        if role != "broker":
            raise ValueError(f"unknown role {role!r}; this cluster has only 'broker' actors")
        ray.kill(self.broker(broker_id), no_restart=not restart)

    def restart_broker(self, broker_id: int) -> None:
        """Start a broker again from its log directory (after ``kill(..., restart=False)``)."""
        handle = self.broker(broker_id)
        try:
            ray.kill(handle, no_restart=True)
        except Exception:
            pass
        handle = self._create_broker(broker_id)
        ray.get(handle.ping.remote(), timeout=BROKER_START_TIMEOUT_S)

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
        self._placement.stop()
        for broker_id, handle in self._handles.items():
            try:
                ray.get(handle.shutdown.remote(), timeout=30)
            except Exception:
                pass  # already dead: its next start recovers from the log
            ray.kill(handle, no_restart=True)
        if self._owns_ray:
            ray.shutdown()
        if self._owns_log_dir:
            shutil.rmtree(self.log_dir, ignore_errors=True)

    def __enter__(self) -> "Cluster":
        return self

    def __exit__(self, *exc) -> None:
        self.shutdown()
