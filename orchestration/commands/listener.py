"""``--bootstrap-server HOST:PORT``: the topics commands and the console producer and consumer
against any Kafka listener (raykafka's or Apache Kafka's), through confluent-kafka's AdminClient,
Producer and Consumer instead of Ray.

``ListenerTarget`` answers the calls those commands make of a ``Cluster`` (``topics``,
``create_topic``, ``describe_topic``, ``producer``, ``consumer``, ...) with the same shapes, so each
command reads the same either way. What the Kafka protocol does not say is left out: a partition's
leader epoch and log end offset are -1 (its high watermark is the listed end offset).
"""
from __future__ import annotations

import uuid
from types import SimpleNamespace

from actors.codecs.record_batches import ConsumerRecord
from actors.core.errors import ErrorCode
from orchestration.admin.admin_client import PartitionDescription
from orchestration.errors import KafkaError

TIMEOUT_S = 30  # one admin call, flush or metadata read; Kafka's tools wait 30 s by default too


def _kafka_error(error) -> KafkaError:
    """confluent-kafka's error (or the exception carrying it) as raykafka's, by Kafka's code."""
    inner = error.args[0] if getattr(error, "args", None) and hasattr(error.args[0], "code") else error
    code = inner.code() if hasattr(inner, "code") else ErrorCode.UNKNOWN_SERVER_ERROR
    try:
        return KafkaError(ErrorCode(code), inner.str() if hasattr(inner, "str") else str(inner))
    except ValueError:  # one of librdkafka's own (negative) codes: no Kafka error code
        return KafkaError(ErrorCode.UNKNOWN_SERVER_ERROR, inner.str() if hasattr(inner, "str") else str(inner))


def _result(future, timeout_s: float = TIMEOUT_S):
    try:
        return future.result(timeout=timeout_s)
    except Exception as exc:
        raise _kafka_error(exc) from None


class ListenerTarget:
    """The calls the topics and console commands make, against ``bootstrap_servers``."""

    def __init__(self, bootstrap_servers: str) -> None:
        from confluent_kafka.admin import AdminClient
        self.bootstrap_servers = bootstrap_servers
        self._admin = AdminClient({"bootstrap.servers": bootstrap_servers})

    def close(self) -> None:
        pass

    def topics(self) -> list[str]:
        try:
            return sorted(self._admin.list_topics(timeout=TIMEOUT_S).topics)
        except Exception as exc:
            raise _kafka_error(exc) from None

    def create_topic(self, name: str, partitions: int = 1, replication_factor: int = 1, config=None,
                     assignment=None) -> None:
        from confluent_kafka.admin import NewTopic
        topic = (NewTopic(name, replica_assignment=assignment, config=config or {}) if assignment
                 else NewTopic(name, num_partitions=partitions, replication_factor=replication_factor,
                               config=config or {}))
        _result(self._admin.create_topics([topic], operation_timeout=TIMEOUT_S)[name])

    def delete_topic(self, name: str) -> None:
        _result(self._admin.delete_topics([name], operation_timeout=TIMEOUT_S)[name])

    def create_partitions(self, name: str, count: int, assignment=None) -> None:
        from confluent_kafka.admin import NewPartitions
        _result(self._admin.create_partitions([NewPartitions(name, count, assignment)])[name])

    def describe_topic(self, name: str) -> list[PartitionDescription]:
        from confluent_kafka import TopicCollection, TopicPartition
        described = _result(self._admin.describe_topics(TopicCollection([name]))[name])
        consumer = self._new_consumer({"group.id": f"raykafka-describe-{uuid.uuid4().hex[:8]}"})
        try:
            rows = []
            for p in sorted(described.partitions, key=lambda p: p.id):
                start, end = consumer.get_watermark_offsets(TopicPartition(name, p.id), timeout=TIMEOUT_S) \
                    if p.leader is not None else (-1, -1)
                rows.append(PartitionDescription(
                    topic=name, partition=p.id, leader=p.leader.id if p.leader is not None else -1,
                    replicas=[n.id for n in p.replicas], isr=[n.id for n in p.isr], leader_epoch=-1,
                    partition_epoch=-1, high_watermark=end, log_end_offset=-1, log_start_offset=start))
            return rows
        except Exception as exc:
            raise _kafka_error(exc) from None
        finally:
            consumer.close()

    def describe_topic_config(self, name: str) -> dict[str, dict]:
        from confluent_kafka.admin import ConfigResource
        resource = ConfigResource(ConfigResource.Type.TOPIC, name)
        entries = _result(self._admin.describe_configs([resource])[resource])
        return {key: {"value": entry.value, "source": _config_source(entry.source)} for key, entry in entries.items()}

    def alter_topic_config(self, name: str, set: dict[str, str], delete: list[str]) -> None:
        from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource
        entries = [ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET) for k, v in set.items()]
        entries += [ConfigEntry(k, None, incremental_operation=AlterConfigOpType.DELETE) for k in delete]
        resource = ConfigResource(ConfigResource.Type.TOPIC, name, incremental_configs=entries)
        _result(self._admin.incremental_alter_configs([resource])[resource])

    def _new_consumer(self, config: dict):
        from confluent_kafka import Consumer
        return Consumer({"bootstrap.servers": self.bootstrap_servers, "enable.partition.eof": False, **config})

    def producer(self, config: dict) -> ListenerProducer:
        from confluent_kafka import Producer
        return ListenerProducer(Producer({"bootstrap.servers": self.bootstrap_servers, **config}))

    def consumer(self, config: dict) -> ListenerConsumer:
        # librdkafka's consumer needs a group even to read assigned partitions, as Kafka's console
        # consumer makes one up; without --group its offsets are never committed.
        config = {"group.id": f"raykafka-console-consumer-{uuid.uuid4().hex[:8]}", **config}
        return ListenerConsumer(self._new_consumer(config))


def _config_source(source) -> str:
    from confluent_kafka.admin import ConfigSource
    return source.name if hasattr(source, "name") else ConfigSource(source).name


class ListenerProducer:
    """``send`` / ``flush`` as raykafka's producer has them."""

    def __init__(self, producer) -> None:
        self._producer = producer

    def send(self, topic: str, value=None, key=None, partition=None, headers=None):
        done = SimpleNamespace(error=None, metadata=None)

        def delivered(error, message):
            done.error = error
            done.metadata = None if error else SimpleNamespace(partition=message.partition(), offset=message.offset())
        kwargs = {"partition": partition} if partition is not None else {}
        self._producer.produce(topic, value=value, key=key, headers=headers, on_delivery=delivered, **kwargs)
        self._producer.poll(0)

        def result(timeout: float):
            if done.error is not None:
                raise _kafka_error(done.error)
            if done.metadata is None:
                raise KafkaError(ErrorCode.REQUEST_TIMED_OUT, "no acknowledgement before the flush ended")
            return done.metadata
        return SimpleNamespace(result=result)

    def flush(self, timeout: float) -> None:
        self._producer.flush(timeout)


class ListenerConsumer:
    """``assign`` / ``subscribe`` / ``seek*`` / ``poll`` / ``commit`` as raykafka's consumer has them.
    A start position asked before the first poll goes into the assignment itself (librdkafka seeks
    only partitions it already fetches)."""

    def __init__(self, consumer) -> None:
        self._consumer = consumer
        self._assigned: list[tuple[str, int]] = []
        self._polled = False

    def subscribe(self, topics: list[str]) -> None:
        self._consumer.subscribe(topics)

    def assign(self, partitions: list[tuple[str, int]]) -> None:
        self._assigned = list(partitions)
        self._assign_at(None)

    def _assign_at(self, offset) -> None:
        from confluent_kafka import TopicPartition
        self._consumer.assign([TopicPartition(t, p) if offset is None else TopicPartition(t, p, offset)
                               for t, p in self._assigned])

    def seek_to_beginning(self) -> None:
        from confluent_kafka import OFFSET_BEGINNING
        self._assign_at(OFFSET_BEGINNING)

    def seek_to_end(self) -> None:
        from confluent_kafka import OFFSET_END
        self._assign_at(OFFSET_END)

    def seek(self, tp: tuple[str, int], offset: int) -> None:
        from confluent_kafka import TopicPartition
        if self._polled:
            self._consumer.seek(TopicPartition(tp[0], tp[1], offset))
        else:
            self._consumer.assign([TopicPartition(tp[0], tp[1], offset)])

    def poll(self, timeout_ms: int) -> list[ConsumerRecord]:
        self._polled = True
        records = []
        for message in self._consumer.consume(num_messages=500, timeout=timeout_ms / 1000):
            if message.error():
                raise _kafka_error(message.error())
            kind, timestamp = message.timestamp()
            records.append(ConsumerRecord(message.topic(), message.partition(), message.offset(),
                                          timestamp if kind else -1, message.key(), message.value(),
                                          tuple(message.headers() or ())))
        return records

    def commit(self) -> None:
        from confluent_kafka import KafkaException
        from confluent_kafka import KafkaError as ConfluentError
        try:
            self._consumer.commit(asynchronous=False)
        except KafkaException as exc:
            if exc.args[0].code() != ConfluentError._NO_OFFSET:  # nothing read: nothing to commit
                raise _kafka_error(exc) from None

    def close(self) -> None:
        self._consumer.close()
