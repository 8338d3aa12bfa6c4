"""``--bootstrap-server HOST:PORT``: the data and admin commands (topics, console producer and
consumer, groups, leader-election, delete-records, log-dirs, reassign-partitions) against any Kafka
listener (raykafka's or Apache Kafka's), through a Kafka client instead of Ray.

``ListenerTarget`` answers the calls those commands make of a ``Cluster`` (``topics``,
``create_topic``, ``describe_topic``, ``producer``, ``consumer``, ``describe_group``, ...) with the
same shapes, so each command reads the same either way. Most go through confluent-kafka's
AdminClient, Producer and Consumer; the three Kafka admin calls confluent-kafka does not have
(OffsetDelete, DescribeLogDirs, and List/AlterPartitionReassignments) go through kafka-python's
KafkaAdminClient. What the Kafka protocol does not say is left out: a partition's leader epoch and
log end offset are -1 (its high watermark is the listed end offset), a group's generation is -1.
"""
from __future__ import annotations

import uuid
from types import SimpleNamespace

from actors.codecs.record_batches import ConsumerRecord
from actors.core.errors import ErrorCode
from orchestration.admin.admin_client import PartitionDescription
from orchestration.admin.groups import GroupDescription, GroupMember, PartitionLag
from orchestration.errors import KafkaError

TIMEOUT_S = 30  # one admin call, flush or metadata read; Kafka's tools wait 30 s by default too
# confluent-kafka's ConsumerGroupState by Kafka's name of the state (kafka-consumer-groups prints those).
_GROUP_STATES = {"UNKNOWN": "Unknown", "PREPARING_REBALANCING": "PreparingRebalance",
                 "COMPLETING_REBALANCING": "CompletingRebalance", "STABLE": "Stable", "DEAD": "Dead",
                 "EMPTY": "Empty"}


def _kafka_error(error) -> KafkaError:
    """confluent-kafka's error (or the exception carrying it) as raykafka's, by Kafka's code."""
    inner = error.args[0] if getattr(error, "args", None) and hasattr(error.args[0], "code") else error
    code = inner.code() if hasattr(inner, "code") else ErrorCode.UNKNOWN_SERVER_ERROR
    try:
        return KafkaError(ErrorCode(code), inner.str() if hasattr(inner, "str") else str(inner))
    except ValueError:  # one of librdkafka's own (negative) codes: no Kafka error code
        return KafkaError(ErrorCode.UNKNOWN_SERVER_ERROR, inner.str() if hasattr(inner, "str") else str(inner))


def _python_kafka_error(error) -> KafkaError:
    """kafka-python's error (a class or an instance, with Kafka's ``errno``) as raykafka's."""
    try:
        return KafkaError(ErrorCode(error.errno), str(error) if isinstance(error, Exception) else error.__name__)
    except (AttributeError, TypeError, ValueError):
        return KafkaError(ErrorCode.UNKNOWN_SERVER_ERROR, str(error))


def _code_name(error) -> str:
    """A per-partition answer's Kafka error name: None (confluent-kafka) or NoError (kafka-python) is NONE."""
    if error is None:
        return "NONE"
    if hasattr(error, "errno"):
        return _python_kafka_error(error).error_code.name
    return _kafka_error(error).error_code.name


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
        self._python_admin = None  # kafka-python's, made on first use

    def close(self) -> None:
        if self._python_admin is not None:
            self._python_admin.close()

    def _kafka_python(self, call, *args, **kwargs):
        """One call of kafka-python's KafkaAdminClient, for what confluent-kafka's AdminClient lacks."""
        from kafka import KafkaAdminClient
        from kafka.errors import KafkaError as PythonKafkaError
        try:
            if self._python_admin is None:
                self._python_admin = KafkaAdminClient(bootstrap_servers=self.bootstrap_servers.split(","),
                                                      client_id="raykafka-cli", request_timeout_ms=TIMEOUT_S * 1000)
            return getattr(self._python_admin, call)(*args, **kwargs)
        except PythonKafkaError as exc:
            raise _python_kafka_error(exc) from None

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

    def describe_cluster(self) -> dict:
        described = _result(self._admin.describe_cluster())
        return {"controller": described.controller.id if described.controller is not None else -1,
                "brokers": {n.id: {"host": n.host, "port": n.port} for n in described.nodes}}

    # kafka-consumer-groups

    def list_groups(self) -> list[tuple[str, str]]:
        listed = _result(self._admin.list_consumer_groups())
        return sorted((g.group_id, _GROUP_STATES.get(getattr(g.state, "name", ""), "Unknown")) for g in listed.valid)

    def _committed(self, group_id: str) -> dict[tuple[str, int], int]:
        from confluent_kafka import ConsumerGroupTopicPartitions
        answer = _result(self._admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group_id)])[group_id])
        return {(tp.topic, tp.partition): tp.offset for tp in answer.topic_partitions if tp.offset >= 0}

    def _watermarks(self, partitions) -> dict[tuple[str, int], tuple[int, int]]:
        from confluent_kafka import TopicPartition
        consumer = self._new_consumer({"group.id": f"raykafka-watermarks-{uuid.uuid4().hex[:8]}"})
        try:
            return {tp: consumer.get_watermark_offsets(TopicPartition(*tp), timeout=TIMEOUT_S) for tp in partitions}
        except Exception as exc:
            raise _kafka_error(exc) from None
        finally:
            consumer.close()

    def describe_group(self, group_id: str) -> GroupDescription:
        """Members and their assignments (DescribeGroups), committed offsets (OffsetFetch) and each
        partition's high watermark, as kafka-consumer-groups --describe gathers them."""
        described = _result(self._admin.describe_consumer_groups([group_id])[group_id])
        members = [GroupMember(member_id=m.member_id, client_id=m.client_id, client_host=m.host,
                               assignment=sorted((tp.topic, tp.partition) for tp in (
                                   m.assignment.topic_partitions if m.assignment else [])))
                   for m in described.members]
        committed = self._committed(group_id)
        partitions = sorted(set(committed) | {tp for m in members for tp in m.assignment})
        ends = self._watermarks(partitions)
        offsets = {tp: PartitionLag(committed_offset=committed.get(tp, -1), log_end_offset=ends[tp][1],
                                    lag=ends[tp][1] - committed[tp] if tp in committed else -1)
                   for tp in partitions}
        return GroupDescription(
            group_id=group_id, state=_GROUP_STATES.get(getattr(described.state, "name", ""), "Unknown"),
            protocol_type="" if described.is_simple_consumer_group else "consumer",
            protocol=described.partition_assignor or "", generation_id=-1,
            coordinator=described.coordinator.id if described.coordinator is not None else -1,
            members=members, offsets=offsets)

    def delete_group(self, group_id: str) -> None:
        _result(self._admin.delete_consumer_groups([group_id])[group_id])

    def reset_offsets(self, group_id: str, topic: str, *, to: str = "earliest", offset: int | None = None,
                      shift_by: int = 0, execute: bool = True) -> dict[tuple[str, int], int]:
        """As ``AdminClient.reset_offsets``: per partition of ``topic`` the new offset, kept within the
        log; committed (OffsetCommit of a group with no members) only when ``execute``."""
        from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
        committed = self._committed(group_id) if to == "current" else {}
        planned = {}
        for p in self.describe_topic(topic):
            tp = (topic, p.partition)
            earliest, latest = p.log_start_offset, p.high_watermark
            base = {"earliest": earliest, "latest": latest, "offset": offset,
                    "current": committed.get(tp, earliest)}[to]
            if base is None:
                raise ValueError("reset to an offset needs the offset")
            planned[tp] = min(latest, max(earliest, base + shift_by))
        if execute:
            request = ConsumerGroupTopicPartitions(group_id, [TopicPartition(t, p, o) for (t, p), o in planned.items()])
            answer = _result(self._admin.alter_consumer_group_offsets([request])[group_id])
            for tp in answer.topic_partitions:
                if tp.error is not None:
                    raise _kafka_error(tp.error)
        return planned

    def delete_offsets(self, group_id: str, partitions: list[tuple[str, int]]) -> dict[tuple[str, int], ErrorCode]:
        from kafka import TopicPartition
        answer = self._kafka_python("delete_group_offsets", group_id, [TopicPartition(t, p) for t, p in partitions])
        return {(tp.topic, tp.partition): ErrorCode[_code_name(error)] for tp, error in answer.items()}

    # kafka-leader-election, kafka-delete-records, kafka-log-dirs, kafka-reassign-partitions

    def elect_leaders(self, election_type: str = "preferred", topic: str | None = None,
                      partitions: list[int] | None = None) -> dict[tuple[str, int], str]:
        from confluent_kafka import ElectionType, TopicPartition
        kind = {"preferred": ElectionType.PREFERRED, "unclean": ElectionType.UNCLEAN}[election_type]
        wanted = None
        if topic is not None:
            chosen = partitions if partitions is not None else [p.partition for p in self.describe_topic(topic)]
            wanted = [TopicPartition(topic, p) for p in chosen]
        answer = _result(self._admin.elect_leaders(kind, wanted))
        return {(tp.topic, tp.partition): _code_name(error) for tp, error in answer.items()}

    def delete_records(self, offsets: dict[tuple[str, int], int]) -> dict[tuple[str, int], int]:
        from confluent_kafka import TopicPartition
        futures = self._admin.delete_records([TopicPartition(t, p, o) for (t, p), o in offsets.items()],
                                             operation_timeout=TIMEOUT_S)
        return {(tp.topic, tp.partition): _result(future).low_watermark for tp, future in futures.items()}

    def describe_log_dirs(self, broker_ids: list[int]) -> dict[int, dict[str, dict]]:
        answer = self._kafka_python("describe_log_dirs", brokers=list(broker_ids))
        return {int(broker["broker"]): {result["log_dir"]: {
            "error": ErrorCode(result["error_code"]),
            "partitions": {(topic["name"], p["partition_index"]): {
                "size": p["partition_size"], "offset_lag": p["offset_lag"], "is_future": p["is_future_key"]}
                for topic in result["topics"] for p in topic["partitions"]}} for result in broker["log_dirs"]}
            for broker in answer}

    def alter_partition_reassignments(self, reassignments: dict[tuple[str, int], list[int] | None]
                                      ) -> dict[tuple[str, int], str]:
        from kafka import TopicPartition
        answer = self._kafka_python("alter_partition_reassignments", {
            TopicPartition(t, p): replicas for (t, p), replicas in reassignments.items()}, timeout_ms=TIMEOUT_S * 1000)
        return {(tp.topic, tp.partition): _code_name(error) for tp, error in answer.items()}

    def list_partition_reassignments(self) -> dict[tuple[str, int], dict]:
        answer = self._kafka_python("list_partition_reassignments", timeout_ms=TIMEOUT_S * 1000)
        return {(tp.topic, tp.partition): {k: list(v) for k, v in moving.items()} for tp, moving in answer.items()}

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
