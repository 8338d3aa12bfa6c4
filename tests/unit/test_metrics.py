"""Proves the cores report Kafka's broker and controller metrics as ``Metric`` effects (bytes and
messages in per topic, under-replicated partitions, purgatory sizes, leader elections, offline
partitions, the active controller and its epoch), driving them step by step without Ray."""
from __future__ import annotations

from actors.core import metrics
from actors.core.metrics import COUNTER, GAUGE, HISTOGRAM, kind_of
from tests.support.core_driver import CoreDriver, make_batch
from tests.unit.test_controller import cluster, create


def last(found, name: str, **tags: str):
    matching = [m for m in found if m.name == name and all(dict(m.tags).get(k) == v for k, v in tags.items())]
    assert matching, f"no {name} {tags} among {[m.name for m in found]}"
    return matching[-1].value


def test_every_metric_has_a_kind_named_as_prometheus_expects():
    for name, (kind, description) in metrics.METRICS.items():
        assert name.startswith("raykafka_") and description
        assert name.endswith("_total") == (kind == COUNTER), name
        assert name.endswith("_ms") == (kind == HISTOGRAM), name
    assert kind_of("raykafka_not_listed") == GAUGE


def test_produce_counts_bytes_and_messages_in_per_topic():
    driver = CoreDriver(broker_id=4)
    driver.become("t", 0, leader=4, replicas=(4,))
    batch = make_batch([b"a", b"b", b"c"])
    driver.produce("t", 0, batch)
    assert last(driver.metrics, metrics.MESSAGES_IN, topic="t", broker_id="4") == 3
    assert last(driver.metrics, metrics.BYTES_IN, topic="t") == len(batch)


def test_a_produce_to_many_partitions_of_a_topic_counts_once_per_topic_with_the_sums():
    """Kafka's BrokerTopicMetrics are per topic: a request to 64 partitions of one topic and 2 of
    another adds its sums in one increment per topic and counter, not one per partition (each
    export is a call into the metrics library on the broker's event loop)."""
    from actors.core.messages.produce import PartitionProduceData, ProduceRequest, TopicProduceData
    driver = CoreDriver(broker_id=0)
    for partition in range(64):
        driver.become("t", partition, leader=0)
    for partition in range(2):
        driver.become("u", partition, leader=0)
    batch = make_batch([b"a", b"b"])
    driver.metrics.clear()
    driver.ask("handle_produce", ProduceRequest(acks=1, timeout_ms=1000, topic_data=(
        TopicProduceData(name="t", partition_data=tuple(PartitionProduceData(index=p, records=batch)
                                                        for p in range(64))),
        TopicProduceData(name="u", partition_data=tuple(PartitionProduceData(index=p, records=batch)
                                                        for p in range(2))))))
    counted = [(m.name, dict(m.tags)["topic"], m.value) for m in driver.metrics]
    assert sorted(counted) == sorted([(metrics.BYTES_IN, "t", 64 * len(batch)), (metrics.MESSAGES_IN, "t", 128),
                                      (metrics.BYTES_IN, "u", 2 * len(batch)), (metrics.MESSAGES_IN, "u", 4)])


def test_tick_sets_under_replicated_partitions_and_purgatory_sizes():
    driver = CoreDriver(broker_id=0)
    driver.become("t", 0, leader=0, replicas=(0, 1), isr=(0,))
    driver.become("u", 0, leader=0, replicas=(0, 1), isr=(0, 1))
    driver.produce("u", 0, make_batch([b"a"]), acks=-1)  # waits for broker 1 in the produce purgatory
    driver.advance(1_000)
    assert last(driver.metrics, metrics.UNDER_REPLICATED_PARTITIONS, broker_id="0") == 1
    assert last(driver.metrics, metrics.PURGATORY_SIZE, delayed_operation="Produce") == 1
    assert last(driver.metrics, metrics.PURGATORY_SIZE, delayed_operation="Fetch") == 0


def test_controller_counts_elections_and_reports_offline_partitions_and_its_epoch():
    driver = cluster(1, 2, 3)
    create(driver, "t", {0: [1, 2]})
    create(driver, "u", {0: [3]})
    driver.metrics.clear()
    driver.broker_unreachable(1)  # t-0 moves to broker 2
    assert last(driver.metrics, metrics.LEADER_ELECTIONS) == 1
    driver.broker_unreachable(3)  # u-0 has no other replica: offline
    assert last(driver.metrics, metrics.OFFLINE_PARTITIONS) == 1
    assert last(driver.metrics, metrics.ACTIVE_CONTROLLER_COUNT) == 1
    assert last(driver.metrics, metrics.CONTROLLER_EPOCH) == driver.core.controller_epoch
