"""Proves that clients ask for metadata again while a partition they need has no known leader, as
Kafka's clients do, so a leader elected later is found: the refresh timing on a fake clock, then
real producers and consumers (assign and group mode) without Ray against an in-process broker core
whose metadata names no leader (-1) until it has been asked a few times."""
from __future__ import annotations

import time

import pytest

from actors.core.errors import ErrorCode
from orchestration.clients.broker_directory import MetadataRefresher
from orchestration.clients.consumer import Consumer
from orchestration.errors import KafkaError
from orchestration.clients.producer import Producer
from tests.support.core_driver import make_batch
from tests.unit.test_client_history import TOPIC, WAIT_S, CoreBroker, FakeDirectory, _produce_request, leading_broker
from tests.unit.test_consumer_group_client import GROUP, CoreCoordinator, FakeChannel

BACKOFF_MS = 100
MAX_AGE_MS = 10_000


class FakeClock:
    def __init__(self) -> None:
        self.now_ms = 1000.0

    def __call__(self) -> float:
        return self.now_ms


class CountingDirectory:
    """Counts refreshes; ``failing`` makes them fail as with no broker answering."""

    def __init__(self) -> None:
        self.refreshes = 0
        self.failing = False

    def refresh_metadata(self) -> None:
        self.refreshes += 1
        if self.failing:
            raise KafkaError(ErrorCode.BROKER_NOT_AVAILABLE, "no broker answered Metadata")


def refresher() -> tuple[MetadataRefresher, CountingDirectory, FakeClock]:
    directory, clock = CountingDirectory(), FakeClock()
    return MetadataRefresher(directory, retry_backoff_ms=BACKOFF_MS, metadata_max_age_ms=MAX_AGE_MS,
                             clock_ms=clock), directory, clock


# ------------------------------------------------------------------------------ refresh timing
def test_fresh_metadata_is_not_refreshed_until_an_update_is_requested():
    metadata, directory, clock = refresher()
    clock.now_ms += MAX_AGE_MS - 1
    assert not metadata.update_if_due() and directory.refreshes == 0
    metadata.request_update()
    assert metadata.update_if_due() and directory.refreshes == 1
    assert not metadata.update_if_due(), "the request was answered"


def test_requested_updates_are_paced_by_retry_backoff_ms():
    metadata, directory, clock = refresher()
    metadata.refresh_now()
    metadata.request_update()
    assert metadata.time_to_next_update_ms() == BACKOFF_MS
    clock.now_ms += BACKOFF_MS - 1
    assert not metadata.update_if_due() and directory.refreshes == 1
    clock.now_ms += 1
    assert metadata.update_if_due() and directory.refreshes == 2


def test_metadata_older_than_metadata_max_age_ms_is_refreshed_unasked():
    metadata, directory, clock = refresher()
    clock.now_ms += MAX_AGE_MS
    assert metadata.update_if_due() and directory.refreshes == 1
    clock.now_ms += MAX_AGE_MS - 1
    assert not metadata.update_if_due()
    clock.now_ms += 1
    assert metadata.update_if_due() and directory.refreshes == 2


def test_a_failed_refresh_is_tried_again_after_the_backoff():
    metadata, directory, clock = refresher()
    directory.failing = True
    assert not metadata.refresh_now() and directory.refreshes == 1
    assert metadata.time_to_next_update_ms() == BACKOFF_MS
    clock.now_ms += BACKOFF_MS
    directory.failing = False
    assert metadata.update_if_due() and directory.refreshes == 2
    assert metadata.time_to_next_update_ms() == MAX_AGE_MS


# ---------------------------------------------------------------------- a leader elected later
class LeaderElectedLater(FakeDirectory):
    """Metadata that names no leader (-1) for every partition until it has been refreshed
    ``refreshes_without_leader + 1`` times; from then on broker 0 leads, as after an election."""

    def __init__(self, broker: CoreBroker, partitions: dict[str, int], refreshes_without_leader: int) -> None:
        super().__init__(broker, partitions)
        self.refreshes_without_leader = refreshes_without_leader

    def _leader(self) -> int:
        return 0 if self.metadata_refreshes > self.refreshes_without_leader else -1

    def partitions_for(self, topic: str, *, refresh_if_missing: bool = True) -> dict[int, tuple[int, int]]:
        return {p: (self._leader(), 0) for p in super().partitions_for(topic)}

    def leader_for(self, topic: str, partition: int) -> tuple[int, int]:
        super().leader_for(topic, partition)
        return self._leader(), 0


def wait_for(condition, what: str):
    deadline = time.monotonic() + WAIT_S
    while True:
        result = condition()
        if result:
            return result
        assert time.monotonic() < deadline, f"timed out after {WAIT_S}s waiting for {what}"
        time.sleep(0.005)


@pytest.fixture
def closing():
    clients = []
    yield clients.append
    for client in clients:
        client.close()


def test_the_producer_asks_for_metadata_while_its_partition_has_no_leader(closing):
    """Kafka's Sender: data for a partition with no known leader makes the producer request a
    metadata update (retry.backoff.ms apart), until the new leader is known; then it sends."""
    broker = leading_broker()
    directory = LeaderElectedLater(broker, {TOPIC: 1}, refreshes_without_leader=3)
    producer = Producer(directory, {"acks": "all", "retries": "0", "linger.ms": "2", "retry.backoff.ms": "5",
                                    "delivery.timeout.ms": str(WAIT_S * 4000)})
    closing(producer)
    future = producer.send(TOPIC, value=b"after the election", partition=0)

    assert future.result(timeout=WAIT_S).offset == 0
    assert directory.metadata_refreshes == 4
    assert len(broker.produce_requests) == 1, "one request, sent once a leader was known"


def test_the_producer_refreshes_metadata_every_metadata_max_age_ms(closing):
    directory = FakeDirectory(leading_broker(), {TOPIC: 1})
    producer = Producer(directory, {"metadata.max.age.ms": "20", "retry.backoff.ms": "5"})
    closing(producer)
    wait_for(lambda: directory.metadata_refreshes >= 3, "an idle producer to refresh metadata three times")


def produced(broker: CoreBroker, values: list[bytes]) -> None:
    assert broker.ask("handle_produce", _produce_request(make_batch(values))).responses[0] \
        .partition_responses[0].error_code == ErrorCode.NONE


def poll_values(consumer: Consumer, count: int) -> list[bytes]:
    values: list[bytes] = []
    wait_for(lambda: values.extend(r.value for r in consumer.poll(timeout_ms=10)) or len(values) >= count,
             f"{count} records")
    return values


def test_an_assigned_partition_without_a_leader_is_fetched_once_metadata_names_one(closing):
    broker = leading_broker()
    produced(broker, [b"a", b"b"])
    directory = LeaderElectedLater(broker, {TOPIC: 1}, refreshes_without_leader=3)
    consumer = Consumer(directory, {"auto.offset.reset": "earliest", "fetch.max.wait.ms": "0",
                                    "retry.backoff.ms": "5"})
    closing(consumer)
    consumer.assign([(TOPIC, 0)])

    assert poll_values(consumer, 2) == [b"a", b"b"]


def test_position_waits_for_a_leader_instead_of_failing(closing):
    """Kafka's position() blocks (up to default.api.timeout.ms) until it can look the offset up."""
    broker = leading_broker()
    produced(broker, [b"a", b"b", b"c"])
    directory = LeaderElectedLater(broker, {TOPIC: 1}, refreshes_without_leader=2)
    consumer = Consumer(directory, {"auto.offset.reset": "latest", "retry.backoff.ms": "5"})
    closing(consumer)
    consumer.assign([(TOPIC, 0)])

    assert consumer.position((TOPIC, 0)) == 3
    assert consumer.end_offsets([(TOPIC, 0)]) == {(TOPIC, 0): 3}


def test_position_gives_up_after_default_api_timeout_ms(closing):
    directory = LeaderElectedLater(leading_broker(), {TOPIC: 1}, refreshes_without_leader=10**9)
    consumer = Consumer(directory, {"retry.backoff.ms": "5", "default.api.timeout.ms": "100"})
    closing(consumer)
    consumer.assign([(TOPIC, 0)])
    with pytest.raises(KafkaError) as raised:
        consumer.position((TOPIC, 0))
    assert raised.value.error_code == ErrorCode.LEADER_NOT_AVAILABLE
    assert directory.metadata_refreshes > 1, "metadata was asked for again while waiting"


def test_a_group_member_resets_its_new_partition_once_metadata_names_a_leader(closing):
    """The member's partition has no committed offset, so its position comes from ListOffsets,
    which needs the leader. The leader's assignment reads metadata once (no leader yet); the
    member must keep asking until it names one."""
    broker = leading_broker()
    produced(broker, [b"x", b"y"])
    directory = LeaderElectedLater(broker, {TOPIC: 1}, refreshes_without_leader=3)
    channel = FakeChannel({"coordinator-1": CoreCoordinator(1)})
    consumer = Consumer(directory, {"group.id": GROUP, "auto.offset.reset": "earliest", "fetch.max.wait.ms": "0",
                                    "retry.backoff.ms": "5", "enable.auto.commit": "false"},
                        coordinator_channel=channel, heartbeat_thread=False)
    closing(consumer)
    consumer.subscribe([TOPIC])

    assert poll_values(consumer, 2) == [b"x", b"y"]
    assert consumer.assignment() == {(TOPIC, 0)}
