"""A static confluent-kafka consumer (KIP-345, ``group.instance.id``) that is closed and started again
within its session timeout takes its old place in a real 3-broker raykafka cluster: the group's
generation stays, the restarted member gets its old partitions back, and the other member is
neither revoked nor reassigned anything, while both go on reading what is produced after the
restart."""
from __future__ import annotations

import pytest

from orchestration.admin.wait import wait_until
from tests.support.kafka_clients import confluent_produce

pytestmark = pytest.mark.integration

TOPIC = "static-members"
GROUP = "static-group"
PARTITIONS = 4
SESSION_TIMEOUT_MS = 20_000  # the restart must come back well within it
WAIT_S = 60


class StaticConsumer:
    """A confluent-kafka consumer with a ``group.instance.id`` that records what it read and every
    assignment and revocation it was given."""

    def __init__(self, bootstrap: str, instance: str) -> None:
        from confluent_kafka import Consumer
        self.events: list[tuple[str, frozenset[int]]] = []
        self.read: dict[tuple[int, int], bytes] = {}
        self.consumer = Consumer({
            "bootstrap.servers": bootstrap, "group.id": GROUP, "group.instance.id": instance,
            "session.timeout.ms": SESSION_TIMEOUT_MS, "heartbeat.interval.ms": 1000,
            "auto.offset.reset": "earliest", "enable.auto.commit": False})
        self.consumer.subscribe([TOPIC], on_assign=self._assigned, on_revoke=self._revoked)

    def _assigned(self, _consumer, partitions) -> None:
        self.events.append(("assign", frozenset(tp.partition for tp in partitions)))

    def _revoked(self, _consumer, partitions) -> None:
        self.events.append(("revoke", frozenset(tp.partition for tp in partitions)))

    def poll(self) -> None:
        for message in self.consumer.consume(num_messages=500, timeout=0.2):
            if message.error() is None:
                self.read[(message.partition(), message.offset())] = message.value()

    def assignment(self) -> set[int]:
        return {tp.partition for tp in self.consumer.assignment()}


def poll_until(consumers: list[StaticConsumer], condition, what: str) -> None:
    def polled() -> bool:
        for consumer in consumers:
            consumer.poll()
        return condition()
    wait_until(polled, WAIT_S, what)


def produce_round(bootstrap: str, tag: str) -> dict[tuple[int, int], bytes]:
    acked = {}
    for partition in range(PARTITIONS):
        for partition_, offset, value in confluent_produce(
                bootstrap, TOPIC, [f"{tag}-{partition}-{i}".encode() for i in range(5)], "all", partition=partition):
            acked[(partition_, offset)] = value
    return acked


def test_a_restarted_static_consumer_takes_its_place_without_a_rebalance(cluster):
    bootstrap = cluster.bootstrap_servers
    cluster.create_topic(TOPIC, partitions=PARTITIONS, replication_factor=2)
    before = produce_round(bootstrap, "before")
    first, other = StaticConsumer(bootstrap, "static-a"), StaticConsumer(bootstrap, "static-b")
    restarted = None
    try:
        poll_until([first, other], lambda: len(first.assignment()) == len(other.assignment()) == PARTITIONS // 2
                   and set(first.read) | set(other.read) >= set(before),
                   "two static members to own two partitions each and read them")
        described = cluster.describe_group(GROUP)
        assert described.state == "Stable" and len(described.members) == 2, described
        kept_assignment, other_assignment = first.assignment(), other.assignment()
        other_events = list(other.events)

        first.consumer.close()  # a static member sends no LeaveGroup: its place stays for it
        restarted = StaticConsumer(bootstrap, "static-a")
        poll_until([restarted, other], lambda: restarted.assignment() == kept_assignment,
                   f"the restarted member to get partitions {sorted(kept_assignment)} back")
        after = produce_round(bootstrap, "after")
        poll_until([restarted, other], lambda: set(restarted.read) | set(other.read) >= set(after),
                   "both members to read what was produced after the restart")

        again = cluster.describe_group(GROUP)
        assert again.generation_id == described.generation_id, "the restart caused a rebalance"
        assert other.events == other_events, "the other member was revoked or reassigned"
        assert other.assignment() == other_assignment
        assert restarted.events == [("assign", frozenset(kept_assignment))]
        assert {p for p, _ in set(restarted.read) & set(after)} <= kept_assignment
        old_ids = {m.member_id for m in described.members}
        new_ids = {m.member_id for m in again.members}
        assert len(new_ids) == 2 and len(old_ids & new_ids) == 1, "only the restarted member has a new id"
    finally:
        for consumer in (first, other, restarted):
            if consumer is not None:
                try:
                    consumer.consumer.close()
                except RuntimeError:  # already closed
                    pass

