"""The same few jobs done with each stock Kafka client library, for the wire-protocol tests.

Each library gets: ``produce`` (returns every acknowledged (partition, offset, value)),
``consume`` (reads given partitions from the start until it has ``count`` records), ``group`` (three
consumers in one group share a topic, read everything, commit, and report their assignments and
the group's committed offsets) and ``admin`` (create, describe and delete a topic). Every wait is
bounded by ``timeout_s`` and says what it waited for.
"""
from __future__ import annotations

import asyncio
import threading
import time

# Plain (non-idempotent) producers here, so acks 0 and 1 can be tested as such; the idempotent
# producer has its own test.
CONFLUENT_PRODUCER = {"enable.idempotence": False, "linger.ms": 5}
CONSUMER_MEMBERS = 3


class Waited(AssertionError):
    pass


def _deadline(timeout_s: float) -> float:
    return time.monotonic() + timeout_s


def _check(deadline: float, what: str) -> None:
    if time.monotonic() > deadline:
        raise Waited(f"timed out waiting for {what}")


# ------------------------------------------------------------------------------ confluent-kafka
def confluent_produce(bootstrap: str, topic: str, values: list[bytes], acks: str, timeout_s: float = 60,
                      partition: int | None = None) -> list[tuple[int, int, bytes]]:
    from confluent_kafka import Producer
    producer = Producer({"bootstrap.servers": bootstrap, "acks": acks, **CONFLUENT_PRODUCER})
    acked: list[tuple[int, int, bytes]] = []

    def delivered(error, message):
        if error is None:
            acked.append((message.partition(), message.offset(), message.value()))
    for value in values:
        kwargs = {} if partition is None else {"partition": partition}
        producer.produce(topic, value=value, on_delivery=delivered, **kwargs)
        producer.poll(0)
    left = producer.flush(timeout_s)
    assert left == 0, f"{left} records still unacknowledged after {timeout_s}s"
    return acked


def confluent_consume(bootstrap: str, topic: str, partitions: list[int], count: int,
                      timeout_s: float = 60) -> list[tuple[int, int, bytes]]:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"reader-{topic}", "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions])
    found: list[tuple[int, int, bytes]] = []
    deadline = _deadline(timeout_s)
    try:
        while len(found) < count:
            _check(deadline, f"{count} records from {topic} (have {len(found)})")
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                found.append((message.partition(), message.offset(), message.value()))
    finally:
        consumer.close()
    return found


def _confluent_rebalanced_codes() -> frozenset:
    from confluent_kafka import KafkaError
    return frozenset({KafkaError.REBALANCE_IN_PROGRESS, KafkaError.ILLEGAL_GENERATION,
                      KafkaError.UNKNOWN_MEMBER_ID, KafkaError._ASSIGNMENT_LOST})


def confluent_group(bootstrap: str, topic: str, group_id: str, end_offsets: dict[int, int],
                    timeout_s: float = 120) -> tuple[list[set[int]], dict[int, int]]:
    from confluent_kafka import Consumer, KafkaException, TopicPartition
    members = [Consumer({"bootstrap.servers": bootstrap, "group.id": group_id, "auto.offset.reset": "earliest",
                         "enable.auto.commit": False, "session.timeout.ms": 10000,
                         "heartbeat.interval.ms": 1000}) for _ in range(CONSUMER_MEMBERS)]
    deadline = _deadline(timeout_s)
    try:
        for member in members:
            member.subscribe([topic])
        while True:
            _check(deadline, "three members to own two partitions each, read them to the end and commit")
            for member in members:
                member.consume(num_messages=500, timeout=0.2)
            assignments = [{tp.partition for tp in member.assignment()} for member in members]
            if sorted(len(a) for a in assignments) == [2, 2, 2] and _read_to_end_confluent(members, topic, end_offsets):
                try:
                    for member in members:
                        member.commit(asynchronous=False)
                    break
                except KafkaException as exc:
                    if exc.args[0].code() not in _confluent_rebalanced_codes():
                        raise
                    # the group rebalanced after it was seen whole: read and commit again
        committed = members[0].committed([TopicPartition(topic, p) for p in end_offsets], timeout=30)
        # An empty partition has nothing to commit: librdkafka reports it as -1001, Kafka's "none".
        return assignments, {tp.partition: max(tp.offset, 0) for tp in committed}
    finally:
        for member in members:
            member.close()


def _read_to_end_confluent(members, topic: str, end_offsets: dict[int, int]) -> bool:
    positions = {}
    for member in members:
        for tp in member.position(member.assignment()):
            positions[tp.partition] = tp.offset
    # librdkafka reports no position (-1001) for a partition it has read nothing from.
    return all(end == 0 or positions.get(p, -1) >= end for p, end in end_offsets.items())


def confluent_admin(bootstrap: str, topic: str, timeout_s: float = 60) -> dict:
    from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=3, replication_factor=2,
                                  config={"min.insync.replicas": "2"})])[topic].result(timeout_s)
    deadline = _deadline(timeout_s)
    while True:
        _check(deadline, f"{topic} in metadata with 3 partitions")
        metadata = admin.list_topics(topic=topic, timeout=10).topics[topic]
        if metadata.error is None and len(metadata.partitions) == 3:
            break
        time.sleep(0.2)
    resource = ConfigResource("topic", topic)
    configs = admin.describe_configs([resource])[resource].result(timeout_s)
    described = {"partitions": len(metadata.partitions),
                 "replicas": sorted(len(p.replicas) for p in metadata.partitions.values()),
                 "min.insync.replicas": configs["min.insync.replicas"].value}
    admin.delete_topics([topic])[topic].result(timeout_s)
    while topic in admin.list_topics(timeout=10).topics:
        _check(deadline, f"{topic} to leave metadata")
        time.sleep(0.2)
    return described


# -------------------------------------------------------------------------------- kafka-python
def kafka_python_produce(bootstrap: str, topic: str, values: list[bytes], acks, timeout_s: float = 60
                         ) -> list[tuple[int, int, bytes]]:
    from kafka import KafkaProducer
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks=acks, linger_ms=5, enable_idempotence=False)
    try:
        futures = [(producer.send(topic, value=value), value) for value in values]
        producer.flush(timeout=timeout_s)
        acked = []
        for future, value in futures:
            metadata = future.get(timeout=timeout_s)
            acked.append((metadata.partition, metadata.offset, value))
        return acked
    finally:
        producer.close(timeout=10)


def kafka_python_consume(bootstrap: str, topic: str, partitions: list[int], count: int,
                         timeout_s: float = 60) -> list[tuple[int, int, bytes]]:
    from kafka import KafkaConsumer, TopicPartition
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    assigned = [TopicPartition(topic, p) for p in partitions]
    consumer.assign(assigned)
    consumer.seek_to_beginning(*assigned)
    found: list[tuple[int, int, bytes]] = []
    deadline = _deadline(timeout_s)
    try:
        while len(found) < count:
            _check(deadline, f"{count} records from {topic} (have {len(found)})")
            for records in consumer.poll(timeout_ms=500).values():
                found += [(r.partition, r.offset, r.value) for r in records]
    finally:
        consumer.close()
    return found


def kafka_python_group(bootstrap: str, topic: str, group_id: str, end_offsets: dict[int, int],
                       timeout_s: float = 120) -> tuple[list[set[int]], dict[int, int]]:
    """Each member polls in a thread of its own, as an application's consumer thread does.

    kafka-python 3.0 drops a JoinGroup/SyncGroup answer that arrives while its consumer is not
    inside ``poll`` and joins again (``join_group_async`` starts a new join when the cached one is
    done); a leader that rejoins makes the coordinator rebalance the whole group, as Kafka's does.
    Three members polled in turn from one thread spend most of their time outside ``poll``, so on
    a busy machine the group could rebalance for minutes. A thread per member keeps each inside
    ``poll`` but for a moment between calls.
    """
    from kafka import KafkaConsumer, TopicPartition
    from kafka.errors import CommitFailedError, RebalanceInProgressError
    members = [KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group_id, auto_offset_reset="earliest",
                             enable_auto_commit=False, session_timeout_ms=10000, heartbeat_interval_ms=1000)
               for _ in range(CONSUMER_MEMBERS)]
    deadline = _deadline(timeout_s)
    try:
        while True:
            assignments = _kafka_python_poll_until_read(members, end_offsets, deadline)
            try:
                for member in members:  # the polling threads have ended: one thread uses each member
                    member.commit()
            except (CommitFailedError, RebalanceInProgressError):
                continue  # the group rebalanced after it was seen whole: read and commit again
            committed = {p: members[0].committed(TopicPartition(topic, p)) for p in end_offsets}
            return assignments, committed
    finally:
        for member in members:
            member.close()


def _kafka_python_poll_until_read(members, end_offsets: dict[int, int], deadline: float) -> list[set[int]]:
    """Poll every member in its own thread until three own two partitions each and every
    partition is read to its end; the members' assignments then. The threads have ended when
    this returns or raises."""
    seen: list = [None] * len(members)  # each member's (assignment, positions), written by its thread
    done = threading.Event()
    failures: list[BaseException] = []

    def drive(index: int, member) -> None:
        try:
            while not done.is_set() and time.monotonic() < deadline:
                member.poll(timeout_ms=500)
                assignment = member.assignment()
                seen[index] = ({tp.partition for tp in assignment},
                               {tp.partition: member.position(tp) for tp in assignment})
        except BaseException as exc:  # handed to the caller, which raises it
            failures.append(exc)
            done.set()
    threads = [threading.Thread(target=drive, args=(i, m), daemon=True) for i, m in enumerate(members)]
    for thread in threads:
        thread.start()
    try:
        while not done.is_set():
            _check(deadline, "three members to own two partitions each and read them to the end")
            snapshot = list(seen)
            if all(snapshot):
                positions = {p: o for _, member_positions in snapshot for p, o in member_positions.items()}
                if sorted(len(a) for a, _ in snapshot) == [2, 2, 2] and all(
                        positions.get(p, -1) >= end for p, end in end_offsets.items()):
                    return [a for a, _ in snapshot]
            done.wait(0.1)  # a bounded pause between looks at what the threads saw
    finally:
        done.set()
        for thread in threads:
            thread.join(timeout=30)
    if failures:
        raise failures[0]
    raise AssertionError("unreachable: the polling threads stopped without a failure")


def kafka_python_admin(bootstrap: str, topic: str, timeout_s: float = 60) -> dict:
    from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient, NewTopic
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(topic, num_partitions=3, replication_factor=2,
                                      topic_configs={"min.insync.replicas": "2"})], timeout_ms=timeout_s * 1000)
        deadline = _deadline(timeout_s)
        while True:
            _check(deadline, f"{topic} described with 3 partitions")
            described = admin.describe_topics([topic])
            if described and described[0]["error_code"] == 0 and len(described[0]["partitions"]) == 3:
                break
            time.sleep(0.2)
        configs = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)])
        values = _kafka_python_config_values(configs)
        admin.delete_topics([topic], timeout_ms=timeout_s * 1000)
        while topic in admin.list_topics():
            _check(deadline, f"{topic} to leave the topic list")
            time.sleep(0.2)
        return {"partitions": len(described[0]["partitions"]),
                "replicas": sorted(len(p.get("replicas", p.get("replica_nodes", ()))) for p in described[0]["partitions"]),
                "min.insync.replicas": values["min.insync.replicas"]}
    finally:
        admin.close()


def _kafka_python_config_values(responses) -> dict[str, str]:
    """Config names and values from DescribeConfigs answers, whichever shape the library returns
    (protocol structs with ``to_object``, or dicts; names are ``name`` or ``config_names``)."""
    values: dict[str, str] = {}

    def walk(node) -> None:
        if hasattr(node, "to_object"):
            node = node.to_object()
        if isinstance(node, dict):
            name = node.get("name", node.get("config_names"))
            if isinstance(name, str) and ("value" in node or "config_value" in node):
                values[name] = node.get("value", node.get("config_value"))
            for key, child in node.items():
                if isinstance(key, str) and isinstance(child, dict) and "value" in child:
                    values.setdefault(key, child["value"])  # kafka-python 3: {name: {"value": ...}}
                walk(child)
        elif isinstance(node, (list, tuple)):
            for child in node:
                walk(child)
    walk(responses)
    return values


# ------------------------------------------------------------------------------------ aiokafka
def aiokafka_produce(bootstrap: str, topic: str, values: list[bytes], acks, timeout_s: float = 60
                     ) -> list[tuple[int, int, bytes]]:
    from aiokafka import AIOKafkaProducer

    async def run():
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks=acks, linger_ms=5)
        await producer.start()
        try:
            futures = [(await producer.send(topic, value=value), value) for value in values]
            acked = []
            for future, value in futures:
                metadata = await asyncio.wait_for(future, timeout_s)
                if metadata is None:  # acks=0: aiokafka resolves with no metadata
                    acked.append((-1, -1, value))
                else:
                    acked.append((metadata.partition, metadata.offset, value))
            return acked
        finally:
            await producer.stop()
    return asyncio.run(run())


def aiokafka_consume(bootstrap: str, topic: str, partitions: list[int], count: int,
                     timeout_s: float = 60) -> list[tuple[int, int, bytes]]:
    from aiokafka import AIOKafkaConsumer, TopicPartition

    async def run():
        consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
        await consumer.start()
        try:
            assigned = [TopicPartition(topic, p) for p in partitions]
            consumer.assign(assigned)
            await consumer.seek_to_beginning(*assigned)
            found: list[tuple[int, int, bytes]] = []
            deadline = _deadline(timeout_s)
            while len(found) < count:
                _check(deadline, f"{count} records from {topic} (have {len(found)})")
                for records in (await consumer.getmany(timeout_ms=500)).values():
                    found += [(r.partition, r.offset, r.value) for r in records]
            return found
        finally:
            await consumer.stop()
    return asyncio.run(run())


def aiokafka_group(bootstrap: str, topic: str, group_id: str, end_offsets: dict[int, int],
                   timeout_s: float = 120) -> tuple[list[set[int]], dict[int, int]]:
    from aiokafka import AIOKafkaConsumer, TopicPartition
    from aiokafka.errors import CommitFailedError, IllegalGenerationError, RebalanceInProgressError

    async def run():
        members = [AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group_id,
                                    auto_offset_reset="earliest", enable_auto_commit=False,
                                    session_timeout_ms=10000, heartbeat_interval_ms=1000)
                   for _ in range(CONSUMER_MEMBERS)]
        for member in members:
            await member.start()
        deadline = _deadline(timeout_s)
        try:
            while True:
                _check(deadline, "three members to own two partitions each, read them to the end and commit")
                await asyncio.gather(*(member.getmany(timeout_ms=200) for member in members))
                assignments = [{tp.partition for tp in member.assignment()} for member in members]
                positions = {}
                for member in members:
                    for tp in member.assignment():
                        positions[tp.partition] = await member.position(tp)
                if sorted(len(a) for a in assignments) == [2, 2, 2] and all(
                        positions.get(p, -1) >= end for p, end in end_offsets.items()):
                    try:
                        for member in members:
                            await member.commit()
                        break
                    except (CommitFailedError, IllegalGenerationError, RebalanceInProgressError):
                        continue  # the group rebalanced after it was seen whole: read and commit again
            committed = {p: await members[0].committed(TopicPartition(topic, p)) for p in end_offsets}
            return assignments, committed
        finally:
            for member in members:
                await member.stop()
    return asyncio.run(run())


def aiokafka_admin(bootstrap: str, topic: str, timeout_s: float = 60) -> dict:
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic
    from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

    async def run():
        admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
        await admin.start()
        try:
            await admin.create_topics([NewTopic(topic, num_partitions=3, replication_factor=2,
                                                topic_configs={"min.insync.replicas": "2"})],
                                      timeout_ms=int(timeout_s * 1000))
            deadline = _deadline(timeout_s)
            while True:
                _check(deadline, f"{topic} described with 3 partitions")
                described = await admin.describe_topics([topic])
                if described and described[0]["error_code"] == 0 and len(described[0]["partitions"]) == 3:
                    break
                await asyncio.sleep(0.2)
            configs = await admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)])
            values = _kafka_python_config_values(configs)
            await admin.delete_topics([topic], timeout_ms=int(timeout_s * 1000))
            while topic in await admin.list_topics():
                _check(deadline, f"{topic} to leave the topic list")
                await asyncio.sleep(0.2)
            return {"partitions": len(described[0]["partitions"]),
                    "replicas": sorted(len(p["replicas"]) for p in described[0]["partitions"]),
                    "min.insync.replicas": values["min.insync.replicas"]}
        finally:
            await admin.close()
    return asyncio.run(run())


LIBRARIES = {
    "confluent-kafka": {"produce": confluent_produce, "consume": confluent_consume, "group": confluent_group,
                        "admin": confluent_admin, "acks": {"0": "0", "1": "1", "all": "all"}},
    "kafka-python": {"produce": kafka_python_produce, "consume": kafka_python_consume, "group": kafka_python_group,
                     "admin": kafka_python_admin, "acks": {"0": 0, "1": 1, "all": "all"}},
    "aiokafka": {"produce": aiokafka_produce, "consume": aiokafka_consume, "group": aiokafka_group,
                 "admin": aiokafka_admin, "acks": {"0": 0, "1": 1, "all": "all"}},
}
