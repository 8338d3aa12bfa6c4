"""A broker that restarts without its data is not elected as if it had it (KIP-858 directory ids):
the controller records each broker's log directory id, and a broker that registers with another
one leaves every ISR it was in, the last member included, so the partition stays offline instead
of being led by an empty log, until an unclean election is allowed. A broker that comes back with
its directory is trusted as before."""
from __future__ import annotations

from actors.core.errors import ErrorCode
from actors.core.log.meta_properties import (
    META_PROPERTIES, InconsistentBrokerIdError, load_or_create_directory_id,
)
from actors.core.log.storage import InMemoryStorage
from actors.core.messages.elect_leaders import ElectLeadersRequest, TopicPartitions, UNCLEAN_ELECTION
from tests.support.controller_driver import ControllerDriver


def cluster_with_directories(*broker_ids: int, config: dict | None = None) -> ControllerDriver:
    driver = ControllerDriver(config=config)
    for broker_id in broker_ids:
        assert driver.register(broker_id, directory=f"dir-{broker_id}-a").error_code == ErrorCode.NONE
    return driver


def state(driver: ControllerDriver, topic: str) -> tuple:
    (partition,) = driver.core.describe_topic(topic)
    return partition["leader"], partition["isr"], partition["state"]


def last_isr_member_restarts(driver: ControllerDriver, directory: str) -> None:
    """Broker 1 dies (the ISR shrinks to {0}), then broker 0 dies and comes back on ``directory``."""
    driver.create_topic("t", assignment={0: [0, 1]})
    driver.broker_unreachable(1)
    assert state(driver, "t") == (0, [0], "ONLINE_PARTITION")
    driver.broker_unreachable(0)
    assert state(driver, "t") == (-1, [0], "OFFLINE_PARTITION")
    driver.register(0, new_incarnation=True, directory=directory)


def test_the_last_isr_member_back_with_its_data_leads_again():
    driver = cluster_with_directories(0, 1)
    last_isr_member_restarts(driver, directory="dir-0-a")
    assert state(driver, "t") == (0, [0], "ONLINE_PARTITION")


def test_the_last_isr_member_back_on_an_empty_disk_is_not_elected():
    driver = cluster_with_directories(0, 1)
    last_isr_member_restarts(driver, directory="dir-0-b")
    leader, isr, partition_state = state(driver, "t")
    assert (leader, isr, partition_state) == (-1, [], "OFFLINE_PARTITION")
    assert any("new log directory" in event.message for event in driver.logs)
    # Broker 1 returns with its data, but it left the ISR before the last write: still no clean leader.
    driver.register(1, new_incarnation=True, directory="dir-1-a")
    assert state(driver, "t")[0] == -1


def test_an_operator_may_then_elect_uncleanly():
    driver = cluster_with_directories(0, 1)
    last_isr_member_restarts(driver, directory="dir-0-b")
    driver.register(1, new_incarnation=True, directory="dir-1-a")
    response = driver.ask("handle_elect_leaders", ElectLeadersRequest(
        election_type=UNCLEAN_ELECTION, topic_partitions=(TopicPartitions(topic="t", partitions=(0,)),)))
    assert response.error_code == ErrorCode.NONE
    leader, isr, partition_state = state(driver, "t")
    assert partition_state == "ONLINE_PARTITION" and isr == [leader]


def test_with_unclean_election_enabled_the_controller_elects_and_says_it_was_unclean():
    driver = cluster_with_directories(0, 1, config={"unclean.leader.election.enable": "true"})
    last_isr_member_restarts(driver, directory="dir-0-b")
    leader, isr, partition_state = state(driver, "t")
    assert partition_state == "ONLINE_PARTITION" and isr == [leader] == [0]
    assert any("unclean election" in event.message for event in driver.logs)


def test_a_lost_disk_that_is_not_the_last_isr_member_just_leaves_the_isr():
    driver = cluster_with_directories(0, 1, 2)
    driver.create_topic("t", assignment={0: [0, 1, 2]})
    driver.register(2, new_incarnation=True, directory="dir-2-b")
    assert state(driver, "t") == (0, [0, 1], "ONLINE_PARTITION")


def test_meta_properties_keeps_a_directory_id_and_refuses_another_brokers_directory():
    storage = InMemoryStorage()
    assert load_or_create_directory_id(storage, 3, "first") == "first"
    assert load_or_create_directory_id(storage, 3, "second") == "first", "the id survives restarts"
    assert b"broker.id=3" in storage.read_file(META_PROPERTIES)
    try:
        load_or_create_directory_id(storage, 4, "third")
    except InconsistentBrokerIdError as exc:
        assert "broker 3" in str(exc)
    else:
        raise AssertionError("a directory of broker 3 was taken by broker 4")
    assert load_or_create_directory_id(InMemoryStorage(), 3, "fresh") == "fresh", "an empty disk gets a new id"


def test_an_operators_unclean_election_logs_a_warning_naming_partition_leader_and_operator():
    """Kafka's controller logs an unclean election at WARN; one an operator asked for says so, so
    the log tells a loss the operator chose from one the configuration allowed. The line is
    captured where the controller's shell sends it: loguru, at WARNING."""
    from loguru import logger

    from actors.ray_seams import RayEventLog
    driver = cluster_with_directories(0, 1)
    last_isr_member_restarts(driver, directory="dir-0-b")
    driver.register(1, new_incarnation=True, directory="dir-1-a")
    before = len(driver.logs)
    response = driver.ask("handle_elect_leaders", ElectLeadersRequest(
        election_type=UNCLEAN_ELECTION, topic_partitions=(TopicPartitions(topic="t", partitions=(0,)),)))
    assert response.error_code == ErrorCode.NONE
    leader = state(driver, "t")[0]
    warnings = [event for event in driver.logs[before:] if event.level == "warning"]
    assert len(warnings) == 1, driver.logs[before:]
    captured: list[tuple[str, str]] = []
    logger.enable("actors")
    sink = logger.add(lambda message: captured.append((message.record["level"].name, message.record["message"])))
    try:
        RayEventLog().log(warnings[0].level, warnings[0].message)
    finally:
        logger.remove(sink)
        logger.disable("actors")
    ((level, message),) = captured
    assert level == "WARNING"
    assert "t-0" in message and f"broker {leader}" in message and "operator" in message, message


def test_a_preferred_election_logs_no_unclean_warning():
    driver = cluster_with_directories(0, 1)
    driver.create_topic("t", assignment={0: [0, 1]})
    before = len(driver.logs)
    driver.ask("handle_elect_leaders", ElectLeadersRequest(
        election_type=0, topic_partitions=(TopicPartitions(topic="t", partitions=(0,)),)))
    assert not [event for event in driver.logs[before:] if event.level == "warning"], driver.logs[before:]
