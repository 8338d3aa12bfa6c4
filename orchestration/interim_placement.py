"""A stand-in for the controller until the controller actor exists.

It decides partition leadership the simplest way that is still correct for replication factor 1:
the first replica of Kafka's assignment leads, the ISR is the leader alone, and every broker gets
the result as LeaderAndIsr and UpdateMetadata requests, exactly as the controller will send them.
A watcher pings each broker; when a broker comes back as a new incarnation (Ray restarted it after
a kill), its partitions get a new leader epoch and every broker is told again, which is what the
controller does when a broker re-registers. This module goes away when the controller lands.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field

import ray

from actors.core.config import TOPIC_CONFIG_KEYS, KafkaConfig
from actors.core.controller.topics import assign_replicas_to_brokers, validate_topic_name
from actors.core.errors import ErrorCode, KafkaProtocolError
from actors.core.messages.leader_and_isr import (
    LeaderAndIsrPartitionState, LeaderAndIsrRequest, LeaderAndIsrTopicState,
)
from actors.core.messages.update_metadata import (
    UpdateMetadataBroker, UpdateMetadataPartitionState, UpdateMetadataRequest, UpdateMetadataTopicState,
)
from actors.broker import broker_actor_name
from orchestration.client import BrokerDirectory
from orchestration.errors import KafkaError

CONTROLLER_ID = -1  # no controller broker: the placement speaks for the cluster
WATCH_INTERVAL_S = 0.3


@dataclass
class _TopicState:
    assignment: dict[int, list[int]]
    config: dict[str, str]
    leader_epochs: dict[int, int] = field(default_factory=dict)


class InterimLeaderPlacement:
    def __init__(self, directory: BrokerDirectory, broker_ids: list[int]) -> None:
        self._directory = directory
        self._broker_ids = list(broker_ids)
        self._topics: dict[str, _TopicState] = {}
        self._incarnations: dict[int, str] = {}
        self._lock = threading.RLock()
        self._stop = threading.Event()
        self._watcher = threading.Thread(target=self._watch, name="raykafka-placement-watch", daemon=True)
        self.controller_epoch = 1

    def start(self) -> None:
        for broker_id in self._broker_ids:
            self._incarnations[broker_id] = self._ping(broker_id)
        self._send_update_metadata()
        self._watcher.start()

    def stop(self) -> None:
        self._stop.set()
        if self._watcher.is_alive():
            self._watcher.join(timeout=5)

    # --------------------------------------------------------------------------------- topics
    def create_topic(self, name: str, partitions: int, replication_factor: int,
                     config: dict | None = None) -> None:
        try:
            validate_topic_name(name)
            overrides = {str(k): str(v) for k, v in (config or {}).items()}
            unknown = sorted(set(overrides) - TOPIC_CONFIG_KEYS)
            if unknown:
                raise KafkaProtocolError(ErrorCode.INVALID_CONFIG, f"unknown topic configs {unknown}")
            checked = KafkaConfig(overrides)
            for key in ("segment.bytes", "max.message.bytes", "min.insync.replicas"):
                checked.get_int(key, minimum=1)
            with self._lock:
                if name in self._topics:
                    raise KafkaProtocolError(ErrorCode.TOPIC_ALREADY_EXISTS, f"topic {name!r} already exists")
                assignment = assign_replicas_to_brokers(
                    num_partitions=partitions, replication_factor=replication_factor,
                    brokers=self._broker_ids)
                self._topics[name] = _TopicState(assignment, overrides, {p: 0 for p in assignment})
        except KafkaProtocolError as exc:
            raise KafkaError(exc.error_code, str(exc)) from None
        self._send_leader_and_isr(topics=[name])
        self._send_update_metadata()

    def topic_names(self) -> list[str]:
        with self._lock:
            return sorted(self._topics)

    def partition_states(self, name: str) -> dict[int, dict]:
        with self._lock:
            state = self._topics.get(name)
            if state is None:
                raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic {name!r}")
            return {p: {"leader": replicas[0], "replicas": list(replicas), "isr": [replicas[0]],
                        "leader_epoch": state.leader_epochs[p]}
                    for p, replicas in state.assignment.items()}

    # ------------------------------------------------------------------------------ requests
    def _partition_states(self, topics: list[str], broker_id: int | None):
        for name in topics:
            state = self._topics[name]
            for partition, replicas in sorted(state.assignment.items()):
                if broker_id is None or broker_id in replicas:
                    yield name, partition, replicas, state.leader_epochs[partition]

    def _send_leader_and_isr(self, topics: list[str], only_broker: int | None = None) -> None:
        with self._lock:
            targets = [only_broker] if only_broker is not None else self._broker_ids
            requests = {}
            for broker_id in targets:
                by_topic: dict[str, list[LeaderAndIsrPartitionState]] = {}
                for name, partition, replicas, epoch in self._partition_states(topics, broker_id):
                    by_topic.setdefault(name, []).append(LeaderAndIsrPartitionState(
                        partition_index=partition, controller_epoch=self.controller_epoch,
                        leader=replicas[0], leader_epoch=epoch, isr=(replicas[0],),
                        partition_epoch=epoch, replicas=tuple(replicas), is_new=epoch == 0))
                if by_topic:
                    requests[broker_id] = LeaderAndIsrRequest(
                        controller_id=CONTROLLER_ID, controller_epoch=self.controller_epoch, broker_epoch=-1,
                        topic_states=tuple(LeaderAndIsrTopicState(
                            topic_name=name, partition_states=tuple(states),
                            topic_config=tuple(sorted(self._topics[name].config.items())))
                            for name, states in by_topic.items()))
        refs = {b: self._directory.broker(b).handle_leader_and_isr.remote(r) for b, r in requests.items()}
        for broker_id, ref in refs.items():
            response = ray.get(ref, timeout=30)
            if response.error_code != ErrorCode.NONE:
                raise KafkaError(response.error_code, f"LeaderAndIsr to broker {broker_id}")

    def _send_update_metadata(self) -> None:
        with self._lock:
            topic_states = []
            for name in sorted(self._topics):
                topic_states.append(UpdateMetadataTopicState(topic_name=name, partition_states=tuple(
                    UpdateMetadataPartitionState(
                        partition_index=partition, controller_epoch=self.controller_epoch,
                        leader=replicas[0], leader_epoch=epoch, isr=(replicas[0],),
                        partition_epoch=epoch, replicas=tuple(replicas), offline_replicas=())
                    for _, partition, replicas, epoch in self._partition_states([name], None))))
            request = UpdateMetadataRequest(
                controller_id=CONTROLLER_ID, controller_epoch=self.controller_epoch, broker_epoch=-1,
                topic_states=tuple(topic_states), live_brokers=tuple(
                    UpdateMetadataBroker(id=b, host=broker_actor_name(b), port=0, rack=None)
                    for b in self._broker_ids))
        refs = [self._directory.broker(b).handle_update_metadata.remote(request) for b in self._broker_ids]
        ray.get(refs, timeout=30)

    # ------------------------------------------------------------------------------ watching
    def _ping(self, broker_id: int) -> str:
        return ray.get(self._directory.broker(broker_id).ping.remote(), timeout=60)["incarnation_id"]

    def _watch(self) -> None:
        while not self._stop.wait(WATCH_INTERVAL_S):
            for broker_id in self._broker_ids:
                try:
                    incarnation = self._ping(broker_id)
                except Exception:
                    continue  # dead or restarting; a later ping sees the new incarnation
                if incarnation != self._incarnations.get(broker_id):
                    try:
                        self.on_broker_restarted(broker_id)
                        self._incarnations[broker_id] = incarnation
                    except Exception:
                        continue  # try again on the next round

    def on_broker_restarted(self, broker_id: int) -> None:
        """A new leader epoch for everything the restarted broker leads, told to every broker."""
        with self._lock:
            names = []
            for name, state in self._topics.items():
                for partition, replicas in state.assignment.items():
                    if replicas[0] == broker_id:
                        state.leader_epochs[partition] += 1
                        names.append(name)
            names = sorted(set(names))
        if names:
            self._send_leader_and_isr(topics=names)
        self._send_update_metadata()
