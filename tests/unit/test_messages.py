"""Proves every message type (found by walking the modules of actors.core.messages) is a frozen,
slotted, keyword-only dataclass that pickles intact, that requests and responses pair up under
Kafka's API keys and that ErrorCode carries Kafka's numbers, by building a fully populated
instance of every class from its type hints."""
from __future__ import annotations

import dataclasses
import importlib
import inspect
import pickle
import pkgutil
import types
import typing

import pytest

import actors.core.messages as messages
from actors.core.errors import ErrorCode
from actors.core.messages import leader_and_isr


def discover_message_classes() -> dict[str, list[type]]:
    """Every public class defined in a module of actors.core.messages, by name."""
    found: dict[str, list[type]] = {}
    for module_info in pkgutil.iter_modules(messages.__path__):
        module = importlib.import_module(f"{messages.__name__}.{module_info.name}")
        for name, value in vars(module).items():
            if inspect.isclass(value) and value.__module__ == module.__name__ and not name.startswith("_"):
                found.setdefault(name, []).append(value)
    return found


DISCOVERED = discover_message_classes()
BY_NAME = {name: classes[0] for name, classes in DISCOVERED.items()}
MESSAGE_CLASSES = sorted(BY_NAME.values(), key=lambda cls: cls.__name__)
assert MESSAGE_CLASSES, "actors.core.messages defines no classes"
REQUEST_CLASSES = [cls for cls in MESSAGE_CLASSES if cls.__name__.endswith("Request")]

# Kafka's API keys (org.apache.kafka.common.protocol.ApiKeys), written out again so that a typo
# in a request type's API_KEY cannot pass unnoticed.
KAFKA_API_KEYS = {
    "Produce": 0,
    "Fetch": 1,
    "ListOffsets": 2,
    "Metadata": 3,
    "LeaderAndIsr": 4,
    "StopReplica": 5,
    "UpdateMetadata": 6,
    "ControlledShutdown": 7,
    "OffsetCommit": 8,
    "OffsetFetch": 9,
    "FindCoordinator": 10,
    "JoinGroup": 11,
    "Heartbeat": 12,
    "LeaveGroup": 13,
    "SyncGroup": 14,
    "DescribeGroups": 15,
    "ListGroups": 16,
    "CreateTopics": 19,
    "DeleteTopics": 20,
    "DeleteRecords": 21,
    "InitProducerId": 22,
    "OffsetForLeaderEpoch": 23,
    "ElectLeaders": 43,
    "AlterConfigs": 33,
    "DescribeLogDirs": 35,
    "CreatePartitions": 37,
    "OffsetDelete": 47,
    "IncrementalAlterConfigs": 44,
    "AlterPartitionReassignments": 45,
    "ListPartitionReassignments": 46,
    "AlterPartition": 56,
    "DescribeCluster": 60,
    "BrokerRegistration": 62,
    "BrokerHeartbeat": 63,
    "AllocateProducerIds": 67,
}

# Kafka's numeric codes (org.apache.kafka.common.protocol.Errors) for the codes raykafka uses most.
KAFKA_ERROR_CODES = [
    ("NONE", 0),
    ("OFFSET_OUT_OF_RANGE", 1),
    ("CORRUPT_MESSAGE", 2),
    ("UNKNOWN_TOPIC_OR_PARTITION", 3),
    ("NOT_LEADER_OR_FOLLOWER", 6),
    ("MESSAGE_TOO_LARGE", 10),
    ("STALE_CONTROLLER_EPOCH", 11),
    ("NOT_COORDINATOR", 16),
    ("INVALID_TOPIC_EXCEPTION", 17),
    ("NOT_ENOUGH_REPLICAS", 19),
    ("INVALID_REQUIRED_ACKS", 21),
    ("ILLEGAL_GENERATION", 22),
    ("UNKNOWN_MEMBER_ID", 25),
    ("REBALANCE_IN_PROGRESS", 27),
    ("TOPIC_ALREADY_EXISTS", 36),
    ("INVALID_PARTITIONS", 37),
    ("INVALID_REPLICATION_FACTOR", 38),
    ("FENCED_LEADER_EPOCH", 74),
    ("UNKNOWN_LEADER_EPOCH", 75),
    ("STALE_BROKER_EPOCH", 77),
]


def sample_value(hint: typing.Any, depth: int = 0) -> typing.Any:
    """A value of type ``hint`` unlike any default, so a populated message overrides every field."""
    assert depth < 10, f"message nesting too deep at {hint!r}"
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        (inner,) = [arg for arg in typing.get_args(hint) if arg is not type(None)]
        return sample_value(inner, depth + 1)
    if origin is tuple:
        args = typing.get_args(hint)
        if Ellipsis not in args:  # a fixed-shape pair, such as a (key, value) config entry
            return tuple(sample_value(arg, depth + 1) for arg in args)
        item_hint, _ = args
        return (sample_value(item_hint, depth + 1), sample_value(item_hint, depth + 1))
    if dataclasses.is_dataclass(hint):
        return sample_message(hint, depth + 1)
    if hint is ErrorCode:
        return ErrorCode.NOT_LEADER_OR_FOLLOWER
    if hint is bool:
        return True
    if hint is int:
        return 7
    if hint is str:
        return "sample"
    if hint in (bytes, typing.Any):
        return b"\x00payload\xff"
    raise AssertionError(f"no sample for field type {hint!r}")


def sample_message(cls: type, depth: int = 0) -> typing.Any:
    """An instance of ``cls`` with every field, nested ones included, set to a sample value."""
    hints = typing.get_type_hints(cls)
    fields = dataclasses.fields(cls)
    return cls(**{field.name: sample_value(hints[field.name], depth) for field in fields})


def test_every_message_class_has_one_name_across_the_modules():
    assert len(DISCOVERED) > 20
    twice = sorted(name for name, classes in DISCOVERED.items() if len(classes) > 1)
    assert not twice, f"message classes defined in more than one module: {twice}"


@pytest.mark.parametrize("cls", MESSAGE_CLASSES, ids=lambda cls: cls.__name__)
def test_message_is_frozen_slotted_keyword_only_dataclass(cls):
    assert dataclasses.is_dataclass(cls)
    params = cls.__dataclass_params__
    assert params.frozen and params.eq
    assert "__slots__" in vars(cls)
    fields = dataclasses.fields(cls)
    assert fields, f"{cls.__name__} has no fields"
    assert all(field.kw_only for field in fields)

    instance = sample_message(cls)
    assert not hasattr(instance, "__dict__")
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(instance, fields[0].name, getattr(instance, fields[0].name))
    with pytest.raises((dataclasses.FrozenInstanceError, AttributeError, TypeError)):
        instance.not_a_field = 1
    positional = [getattr(instance, field.name) for field in fields]
    with pytest.raises(TypeError):
        cls(*positional)


@pytest.mark.parametrize("cls", MESSAGE_CLASSES, ids=lambda cls: cls.__name__)
def test_collections_are_tuples_and_error_codes_are_error_code(cls):
    hints = typing.get_type_hints(cls)
    for field in dataclasses.fields(cls):
        hint = hints[field.name]
        if field.name == "error_code":
            assert hint is ErrorCode, f"{cls.__name__}.error_code is {hint!r}"
            if field.default is not dataclasses.MISSING:
                assert field.default is ErrorCode.NONE
        for part in [hint, *typing.get_args(hint)]:
            assert typing.get_origin(part) not in (list, dict, set), f"{cls.__name__}.{field.name}"


@pytest.mark.parametrize("cls", MESSAGE_CLASSES, ids=lambda cls: cls.__name__)
def test_message_pickles_to_an_equal_message(cls):
    instance = sample_message(cls)
    restored = pickle.loads(pickle.dumps(instance))
    assert restored == instance
    assert type(restored) is cls
    assert hash(restored) == hash(instance)
    changed = dataclasses.replace(instance, **{dataclasses.fields(cls)[0].name: None})
    assert pickle.loads(pickle.dumps(changed)) != instance


def test_api_keys_are_kafkas():
    assert {cls.__name__: cls.API_KEY for cls in REQUEST_CLASSES} == {
        f"{api}Request": key for api, key in KAFKA_API_KEYS.items()}


def test_every_request_has_an_api_key_and_a_response():
    assert all(isinstance(cls.API_KEY, int) for cls in REQUEST_CLASSES)
    for request_name in (cls.__name__ for cls in REQUEST_CLASSES):
        response_name = request_name.removesuffix("Request") + "Response"
        assert response_name in BY_NAME, f"{request_name} has no {response_name}"
        assert dataclasses.is_dataclass(BY_NAME[response_name])
        assert BY_NAME[response_name].__module__ == BY_NAME[request_name].__module__


@pytest.mark.parametrize(("name", "code"), KAFKA_ERROR_CODES)
def test_error_code_numbers_are_kafkas(name, code):
    assert ErrorCode[name] == code
    assert ErrorCode(code).name == name


def test_nested_message_round_trip_keeps_values():
    request = leader_and_isr.LeaderAndIsrRequest(
        controller_id=1,
        controller_epoch=3,
        broker_epoch=42,
        topic_states=(
            leader_and_isr.LeaderAndIsrTopicState(
                topic_name="orders",
                partition_states=(
                    leader_and_isr.LeaderAndIsrPartitionState(
                        partition_index=0,
                        controller_epoch=3,
                        leader=2,
                        leader_epoch=5,
                        isr=(2, 3),
                        partition_epoch=9,
                        replicas=(2, 3, 4),
                    ),
                ),
            ),
        ),
        live_leaders=(leader_and_isr.LeaderAndIsrLiveLeader(broker_id=2, host_name="broker-2"),),
    )
    restored = pickle.loads(pickle.dumps(request))
    assert restored == request
    state = restored.topic_states[0].partition_states[0]
    assert (state.leader, state.leader_epoch, state.isr, state.is_new) == (2, 5, (2, 3), False)
    assert restored.live_leaders[0].port == 0
