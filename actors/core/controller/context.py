"""The controller's in-memory view of the cluster, mirrored to the metadata store on every change.

Theory of operation. ``ControllerContext`` holds what Kafka's ``ControllerContext`` holds: the
live brokers with their epochs, each topic's replica assignment and configuration, each
partition's ``LeaderAndIsr``, the partition and replica state machines, and the topics queued for
deletion. Loading reads the metadata store; ``set_leadership``, ``add_topic`` and friends write
through to it before the in-memory copy changes, so a controller that dies between two steps
leaves the store as consistent as the last finished step. Queries answer the questions elections
and request batches ask (who is live, which partitions a broker leads or hosts).
"""
from __future__ import annotations

from dataclasses import dataclass

from actors.core.controller.metadata_store import MetadataStore
from actors.core.controller.state import LeaderAndIsr, PartitionStates, ReplicaStates, TopicPartition
from actors.core.messages._base import NO_LEADER
from actors.core.messages.broker_registration import BrokerEndpoint


@dataclass(slots=True)
class BrokerInfo:
    broker_id: int
    broker_epoch: int
    host: str  # the broker actor's name in the cluster's Ray namespace
    incarnation_id: str
    last_heartbeat_ms: int
    shutting_down: bool = False
    listeners: tuple[BrokerEndpoint, ...] = ()  # its Kafka listeners, as it registered them

    def as_record(self) -> dict:
        return {"broker_id": self.broker_id, "broker_epoch": self.broker_epoch, "host": self.host,
                "incarnation_id": self.incarnation_id,
                "listeners": [[e.name, e.host, e.port, e.security_protocol] for e in self.listeners]}


@dataclass(slots=True)
class TopicInfo:
    assignment: dict[int, tuple[int, ...]]  # partition -> replicas, preferred leader first
    config: dict[str, str]


class ControllerContext:
    def __init__(self, store: MetadataStore) -> None:
        self.store = store
        self.brokers: dict[int, BrokerInfo] = {}  # registered and not fenced
        self.topics: dict[str, TopicInfo] = {}
        self.leadership: dict[TopicPartition, LeaderAndIsr] = {}
        self.topics_to_delete: set[str] = set()
        self.partition_states = PartitionStates()
        self.replica_states = ReplicaStates()

    def load(self, now_ms: int) -> None:
        """Read everything a new controller needs; registered brokers count as live until their
        session runs out without a heartbeat."""
        for broker_id, record in self.store.brokers().items():
            self.brokers[broker_id] = BrokerInfo(broker_id, record["broker_epoch"], record["host"],
                                                 record.get("incarnation_id", ""), last_heartbeat_ms=now_ms,
                                                 listeners=tuple(BrokerEndpoint(name=n, host=h, port=p, security_protocol=s)
                                                                 for n, h, p, s in record.get("listeners", ())))
        for name, record in self.store.topics().items():
            self.topics[name] = TopicInfo({int(p): tuple(r) for p, r in record["partitions"].items()},
                                          dict(record["config"]))
        for topic_partition, record in self.store.partition_states().items():
            if topic_partition[0] in self.topics:
                self.leadership[topic_partition] = LeaderAndIsr(
                    leader=record["leader"], leader_epoch=record["leader_epoch"], isr=tuple(record["isr"]),
                    partition_epoch=record["partition_epoch"], controller_epoch=record["controller_epoch"])
        self.topics_to_delete = {t for t in self.store.topics_to_delete() if t in self.topics}

    # ------------------------------------------------------------------------------ writes
    def put_broker(self, info: BrokerInfo) -> None:
        self.store.put_broker(info.broker_id, info.as_record())
        self.brokers[info.broker_id] = info

    def remove_broker(self, broker_id: int) -> BrokerInfo | None:
        if broker_id not in self.brokers:
            return None
        self.store.delete_broker(broker_id)
        return self.brokers.pop(broker_id)

    def add_topic(self, name: str, assignment: dict[int, tuple[int, ...]], config: dict[str, str]) -> None:
        self.store.put_topic(name, {p: list(r) for p, r in assignment.items()}, config)
        self.topics[name] = TopicInfo(dict(assignment), dict(config))

    def set_topic_config(self, name: str, config: dict[str, str]) -> None:
        """The topic's whole set of overrides, replaced (Kafka's /config/topics/<topic>)."""
        topic = self.topics[name]
        self.store.put_topic(name, {p: list(r) for p, r in topic.assignment.items()}, config)
        topic.config = dict(config)

    def set_assignment(self, topic_partition: TopicPartition, replicas: tuple[int, ...]) -> None:
        """One partition's replicas, replaced (a reassignment's steps; Kafka's /brokers/topics/<topic>)."""
        topic = self.topics[topic_partition[0]]
        assignment = dict(topic.assignment)
        assignment[topic_partition[1]] = tuple(replicas)
        self.store.put_topic(topic_partition[0], {p: list(r) for p, r in assignment.items()}, topic.config)
        topic.assignment = assignment

    def remove_topic(self, name: str) -> None:
        self.store.delete_topic(name)
        self.topics.pop(name, None)
        self.topics_to_delete.discard(name)
        for topic_partition in [tp for tp in self.leadership if tp[0] == name]:
            del self.leadership[topic_partition]
        self.partition_states.remove_topic(name)
        self.replica_states.remove_topic(name)

    def mark_for_deletion(self, name: str) -> None:
        self.store.mark_topic_for_deletion(name)
        self.topics_to_delete.add(name)

    def set_leadership(self, topic_partition: TopicPartition, leader_and_isr: LeaderAndIsr) -> None:
        self.store.put_partition_state(topic_partition[0], topic_partition[1], {
            "leader": leader_and_isr.leader, "leader_epoch": leader_and_isr.leader_epoch,
            "isr": list(leader_and_isr.isr), "partition_epoch": leader_and_isr.partition_epoch,
            "controller_epoch": leader_and_isr.controller_epoch})
        self.leadership[topic_partition] = leader_and_isr

    # ----------------------------------------------------------------------------- queries
    @property
    def live_broker_ids(self) -> set[int]:
        return {b for b, info in self.brokers.items() if not info.shutting_down}

    @property
    def live_or_shutting_down_broker_ids(self) -> set[int]:
        return set(self.brokers)

    @property
    def shutting_down_broker_ids(self) -> set[int]:
        return {b for b, info in self.brokers.items() if info.shutting_down}

    def replicas(self, topic_partition: TopicPartition) -> tuple[int, ...]:
        topic = self.topics.get(topic_partition[0])
        return () if topic is None else topic.assignment.get(topic_partition[1], ())

    def all_partitions(self) -> list[TopicPartition]:
        return [(name, p) for name in sorted(self.topics) for p in sorted(self.topics[name].assignment)]

    def partitions_on_broker(self, broker_id: int) -> list[TopicPartition]:
        return [tp for tp in self.all_partitions() if broker_id in self.replicas(tp)]

    def partitions_led_by(self, broker_id: int) -> list[TopicPartition]:
        return [tp for tp, state in sorted(self.leadership.items()) if state.leader == broker_id]

    def topic_config_pairs(self, topic: str) -> tuple[tuple[str, str], ...]:
        info = self.topics.get(topic)
        return () if info is None else tuple(sorted(info.config.items()))

    def describe_topic(self, name: str) -> list[dict] | None:
        """Each partition's replicas, leader, ISR, epochs and state, as ``kafka-topics --describe``."""
        topic = self.topics.get(name)
        if topic is None:
            return None
        described = []
        for partition, replicas in sorted(topic.assignment.items()):
            leadership = self.leadership.get((name, partition))
            described.append({
                "partition": partition, "replicas": list(replicas),
                "leader": leadership.leader if leadership else NO_LEADER,
                "isr": list(leadership.isr) if leadership else [],
                "leader_epoch": leadership.leader_epoch if leadership else -1,
                "partition_epoch": leadership.partition_epoch if leadership else -1,
                "state": self.partition_states.get((name, partition)).name,
            })
        return described

    def partition_state_lookup(self, topic_partition: TopicPartition):
        """For the request batch: (leadership, replicas, offline replicas), or None."""
        leadership = self.leadership.get(topic_partition)
        if leadership is None:
            return None
        replicas = self.replicas(topic_partition)
        live = self.live_or_shutting_down_broker_ids
        return leadership, replicas, tuple(r for r in replicas if r not in live)
