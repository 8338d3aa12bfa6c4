"""Kafka's broker and controller metrics as ``Metric`` effects, named after Kafka's MBeans.

Theory of operation. The cores never touch a metrics library: they return ``Metric`` effects, and
the shell exports each one (on Ray, through ``ray.util.metrics``, to the metrics export port and the
dashboard). Every name here says its kind: a gauge is set to the value, a counter (``_total``) is
increased by it, a histogram (``_ms``) observes it. The names are Kafka's MBeans in Prometheus
spelling under ``raykafka_``, with the broker id, topic or request as tags:

| metric | Kafka's MBean |
|---|---|
| replica_manager_under_replicated_partitions | kafka.server:type=ReplicaManager,name=UnderReplicatedPartitions |
| replica_manager_isr_shrinks_total / _isr_expands_total | ReplicaManager IsrShrinksPerSec / IsrExpandsPerSec |
| delayed_operation_purgatory_size (delayed_operation=Produce/Fetch) | DelayedOperationPurgatory PurgatorySize |
| broker_topic_bytes_in_total / _messages_in_total (topic) | BrokerTopicMetrics BytesInPerSec / MessagesInPerSec |
| broker_topic_bytes_out_total (topic) | BrokerTopicMetrics BytesOutPerSec (fetches by consumers) |
| broker_topic_replication_bytes_out_total (topic) | BrokerTopicMetrics ReplicationBytesOutPerSec (by followers) |
| consumer_group_lag (group, topic, partition) | Burrow's per-partition group lag: log end offset minus committed offset, computed by the group coordinator (kafka.consumer's records-lag is the consumer's own view) |
| request_total_time_ms (request) | kafka.network:type=RequestMetrics,name=TotalTimeMs |
| controller_active_controller_count, controller_epoch | KafkaController ActiveControllerCount, ControllerEpoch (ZK) |
| controller_offline_partitions_count | KafkaController OfflinePartitionsCount |
| controller_leader_elections_total / _unclean_leader_elections_total | ControllerStats LeaderElectionRateAndTimeMs / UncleanLeaderElectionsPerSec |
| controller_channel_queue_size, controller_channel_request_queue_time_ms | ControllerChannelManager QueueSize, RequestRateAndQueueTimeMs |

A rate (Kafka's ``PerSec``) is the counter's ``rate()`` in Prometheus.
"""
from __future__ import annotations

import functools

from actors.core.effects import Metric

GAUGE, COUNTER, HISTOGRAM = "gauge", "counter", "histogram"
LATENCY_BOUNDARIES_MS = (1, 5, 10, 50, 100, 500, 1_000, 5_000, 10_000, 60_000)

UNDER_REPLICATED_PARTITIONS = "raykafka_replica_manager_under_replicated_partitions"
ISR_SHRINKS = "raykafka_replica_manager_isr_shrinks_total"
ISR_EXPANDS = "raykafka_replica_manager_isr_expands_total"
PURGATORY_SIZE = "raykafka_delayed_operation_purgatory_size"
BYTES_IN = "raykafka_broker_topic_bytes_in_total"
MESSAGES_IN = "raykafka_broker_topic_messages_in_total"
BYTES_OUT = "raykafka_broker_topic_bytes_out_total"
REPLICATION_BYTES_OUT = "raykafka_broker_topic_replication_bytes_out_total"
CONSUMER_GROUP_LAG = "raykafka_consumer_group_lag"
REQUEST_TOTAL_TIME = "raykafka_request_total_time_ms"
ACTIVE_CONTROLLER_COUNT = "raykafka_controller_active_controller_count"
CONTROLLER_EPOCH = "raykafka_controller_epoch"
OFFLINE_PARTITIONS = "raykafka_controller_offline_partitions_count"
LEADER_ELECTIONS = "raykafka_controller_leader_elections_total"
UNCLEAN_LEADER_ELECTIONS = "raykafka_controller_unclean_leader_elections_total"
CHANNEL_QUEUE_SIZE = "raykafka_controller_channel_queue_size"
CHANNEL_QUEUE_TIME = "raykafka_controller_channel_request_queue_time_ms"

# name -> (kind, description)
METRICS: dict[str, tuple[str, str]] = {
    UNDER_REPLICATED_PARTITIONS: (GAUGE, "Partitions this broker leads whose ISR is smaller than their replicas"),
    ISR_SHRINKS: (COUNTER, "ISR shrinks the controller accepted from this broker"),
    ISR_EXPANDS: (COUNTER, "ISR expansions the controller accepted from this broker"),
    PURGATORY_SIZE: (GAUGE, "Requests waiting in this broker's purgatory (Produce: acks=all, Fetch: long polls)"),
    BYTES_IN: (COUNTER, "Bytes appended by produce requests to the partitions of a topic this broker leads"),
    MESSAGES_IN: (COUNTER, "Records appended by produce requests to the partitions of a topic this broker leads"),
    BYTES_OUT: (COUNTER, "Record bytes sent to consumers from the partitions of a topic this broker leads"),
    REPLICATION_BYTES_OUT: (COUNTER, "Record bytes sent to followers from the partitions of a topic this broker leads"),
    CONSUMER_GROUP_LAG: (GAUGE, "Per group and partition: the log end offset (high watermark) minus the "
                                "group's committed offset, as the group coordinator sees them"),
    REQUEST_TOTAL_TIME: (HISTOGRAM, "Time from a request's arrival at the broker to its answer, per API"),
    ACTIVE_CONTROLLER_COUNT: (GAUGE, "1 on the active controller, 0 on one that resigned"),
    CONTROLLER_EPOCH: (GAUGE, "The controller's epoch"),
    OFFLINE_PARTITIONS: (GAUGE, "Partitions without a leader"),
    LEADER_ELECTIONS: (COUNTER, "Leader elections the controller made (offline partitions, preferred, unclean)"),
    UNCLEAN_LEADER_ELECTIONS: (COUNTER, "Elections of a leader from outside the ISR"),
    CHANNEL_QUEUE_SIZE: (GAUGE, "Control requests waiting for a broker, the one in flight excluded (Kafka's QueueSize)"),
    CHANNEL_QUEUE_TIME: (HISTOGRAM, "Time from enqueue to send of each control request (Kafka's "
                                    "RequestRateAndQueueTimeMs)"),
}


def kind_of(name: str) -> str:
    """A metric's kind; a name not listed is a gauge."""
    return METRICS.get(name, (GAUGE, ""))[0]


def description_of(name: str) -> str:
    return METRICS.get(name, (GAUGE, name))[1]


def broker_tags(broker_id: int, **more: str) -> tuple[tuple[str, str], ...]:
    return (("broker_id", str(broker_id)),) + tuple((k, str(v)) for k, v in sorted(more.items()))


def broker_gauges(*, broker_id: int, partitions, produce_purgatory_size: int,
                  fetch_purgatory_size: int) -> list[Metric]:
    """The broker's gauges (the replica manager sets them once a second, on its tick): the
    under-replicated partitions it leads and its purgatories' sizes."""
    under = sum(1 for p in partitions if p.is_leader and len(p.isr) < len(p.replicas))
    return [Metric(name=UNDER_REPLICATED_PARTITIONS, value=under, tags=broker_tags(broker_id)),
            Metric(name=PURGATORY_SIZE, value=produce_purgatory_size,
                   tags=broker_tags(broker_id, delayed_operation="Produce")),
            Metric(name=PURGATORY_SIZE, value=fetch_purgatory_size,
                   tags=broker_tags(broker_id, delayed_operation="Fetch"))]


def isr_change(broker_id: int, old_isr_size: int, new_isr_size: int) -> list[Metric]:
    if new_isr_size < old_isr_size:
        return [Metric(name=ISR_SHRINKS, value=1, tags=broker_tags(broker_id))]
    if new_isr_size > old_isr_size:
        return [Metric(name=ISR_EXPANDS, value=1, tags=broker_tags(broker_id))]
    return []


@functools.lru_cache(maxsize=4096)
def _topic_tags(broker_id: int, topic: str) -> tuple[tuple[str, str], ...]:
    """A broker's tags for one topic, made once: every Produce request asks for them."""
    return broker_tags(broker_id, topic=topic)


def bytes_in(broker_id: int, topic: str, size_in_bytes: int, record_count: int) -> list[Metric]:
    tags = _topic_tags(broker_id, topic)
    return [Metric(name=BYTES_IN, value=size_in_bytes, tags=tags),
            Metric(name=MESSAGES_IN, value=record_count, tags=tags)]


def bytes_out(broker_id: int, topic: str, size_in_bytes: int, *, replication: bool) -> list[Metric]:
    return [Metric(name=REPLICATION_BYTES_OUT if replication else BYTES_OUT, value=size_in_bytes,
                   tags=broker_tags(broker_id, topic=topic))]


def consumer_group_lag(broker_id: int, group_id: str, topic: str, partition: int, lag: int) -> Metric:
    return Metric(name=CONSUMER_GROUP_LAG, value=lag,
                  tags=broker_tags(broker_id, group=group_id, topic=topic, partition=str(partition)))


def controller_gauges(*, active: bool, controller_epoch: int, offline_partitions: int) -> list[Metric]:
    return [Metric(name=ACTIVE_CONTROLLER_COUNT, value=1 if active else 0),
            Metric(name=CONTROLLER_EPOCH, value=controller_epoch),
            Metric(name=OFFLINE_PARTITIONS, value=offline_partitions)]


def leader_elections(count: int, *, unclean: int = 0) -> list[Metric]:
    metrics = [Metric(name=LEADER_ELECTIONS, value=count)] if count else []
    return metrics + ([Metric(name=UNCLEAN_LEADER_ELECTIONS, value=unclean)] if unclean else [])
