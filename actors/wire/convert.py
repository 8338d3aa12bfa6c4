"""Values between kio's generated classes and raykafka's messages, matched by field name.

Kafka's JSON schemas name the fields of both (snake_case), so one rule covers almost every
API: a raykafka field ``x`` takes kio's ``x``; a raykafka ``x_ms`` takes kio's ``x`` where kio
holds a ``timedelta`` or ``datetime`` (kio turns Kafka's millisecond fields into those). Nested
entities and tuples of entities are converted recursively, with the nested class read from the
type hints, so the same code serves every version of an API: a field a version lacks takes the
other side's default. An API whose shapes differ more converts the difference itself.
"""
from __future__ import annotations

import dataclasses
import datetime
import functools
import typing
import uuid
from typing import Any, NamedTuple

from kio.schema.errors import ErrorCode as KioErrorCode

from actors.core.errors import ErrorCode
from actors.core.log.record_batch import as_byte_view

_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


class _Field(NamedTuple):
    """What translating one field needs to know about it, read once per class: a response of 64
    partitions converts 64 entities of the same class, and reading type hints for each was most
    of a many-partition request's translation time."""
    name: str
    hint: Any
    kafka_type: str
    entity: type | None  # the dataclass the field holds (alone, in a tuple, or optional)
    is_tuple: bool
    is_optional: bool
    required: bool  # no default: a kio field that must be given a value
    time_field: bool  # kio holds a timedelta or datetime where raykafka holds milliseconds
    kind: str  # how a raykafka value becomes kio's (``_kio_value``)


@functools.cache
def _fields(cls: type) -> tuple[_Field, ...]:
    """Each dataclass field of ``cls`` with what its translation needs, resolved once."""
    hints = typing.get_type_hints(cls)
    found = []
    for field in dataclasses.fields(cls):
        hint = hints[field.name]
        kafka_type = field.metadata.get("kafka_type", "")
        entity, is_tuple = _entity_class(hint), _is_tuple(hint)
        found.append(_Field(
            name=field.name, hint=hint, kafka_type=kafka_type, entity=entity, is_tuple=is_tuple,
            is_optional=_is_optional(hint),
            required=field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING,
            time_field=kafka_type.startswith(("timedelta", "datetime")),
            kind=_kind(kafka_type, entity, is_tuple)))
    return tuple(found)


def _kind(kafka_type: str, entity: type | None, is_tuple: bool) -> str:
    if entity is not None:
        return "entities" if is_tuple else "entity"
    for prefix in ("timedelta", "datetime"):
        if kafka_type.startswith(prefix):
            return prefix
    if kafka_type in ("error_code", "records", "bytes"):
        return kafka_type
    return "tuple" if is_tuple else "plain"


@functools.cache
def _message_plan(cls: type, source_type: type) -> tuple[tuple[_Field, str | None], ...]:
    """For a kio ``cls`` filled from a raykafka message of ``source_type``: each kio field with
    the message attribute it takes (its own name, else ``name_ms`` for a time), or None."""
    names = {field.name for field in dataclasses.fields(source_type)} | set(dir(source_type))
    plan = []
    for field in _fields(cls):
        attribute = None
        if field.name in names:
            attribute = field.name
        elif field.time_field and field.name + "_ms" in names:
            attribute = field.name + "_ms"
        plan.append((field, attribute))
    return tuple(plan)


def _entity_class(hint: Any) -> type | None:
    """The dataclass a field holds (alone, in a tuple, or optional), or None for a primitive."""
    if dataclasses.is_dataclass(hint):
        return hint
    for argument in typing.get_args(hint):
        found = _entity_class(argument)
        if found is not None:
            return found
    return None


def _is_tuple(hint: Any) -> bool:
    if typing.get_origin(hint) is tuple:
        return True
    return any(typing.get_origin(argument) is tuple for argument in typing.get_args(hint))


def _is_optional(hint: Any) -> bool:
    return type(None) in typing.get_args(hint)


def duration_ms(value: Any) -> int:
    return int(value / datetime.timedelta(milliseconds=1))


@functools.cache
def _zero(field: _Field) -> Any:
    """What a kio field without a default gets when raykafka has nothing for it."""
    kafka_type = field.kafka_type
    if field.is_tuple:
        return ()
    if field.is_optional:
        return None
    if kafka_type.startswith("timedelta"):
        return datetime.timedelta(0)
    if kafka_type == "error_code":
        return KioErrorCode.none
    if kafka_type == "string":
        return ""
    if kafka_type in ("bytes", "records"):
        return b""
    if kafka_type == "bool":
        return False
    if kafka_type == "uuid":
        return uuid.UUID(int=0)
    if kafka_type.startswith(("int", "uint", "float")):
        return 0
    assert field.entity is not None, f"no zero value for {field.name} ({field.hint})"
    return to_kio(field.entity, None)


def _lookup(source: Any, name: str) -> tuple[bool, Any]:
    if source is None:
        return False, None
    if isinstance(source, dict):
        if name in source:
            return True, source[name]
        return False, None
    if hasattr(source, name):
        return True, getattr(source, name)
    return False, None


def _kio_value(field: _Field, value: Any) -> Any:
    if value is None:
        return None if field.is_optional else _zero(field)
    kind = field.kind
    if kind == "plain":
        return value
    if kind == "entities":
        return tuple(to_kio(field.entity, item) for item in value)
    if kind == "entity":
        return to_kio(field.entity, value)
    if kind == "timedelta":
        return datetime.timedelta(milliseconds=value)
    if kind == "datetime":
        return None if value < 0 else _EPOCH + datetime.timedelta(milliseconds=value)
    if kind == "error_code":
        return KioErrorCode(int(value))
    if kind == "records":
        # Records go out as the log stored them: a view of a segment's bytes is written to the
        # socket as it is (see frames.encode_response_segments), never copied here.
        return value if isinstance(value, bytes) else as_byte_view(value)
    if kind == "bytes":
        return bytes(value)
    return tuple(value)  # kind == "tuple"


def to_kio(cls: type, source: Any, **overrides: Any) -> Any:
    """A kio ``cls`` filled from ``source`` (a raykafka message or a dict) and ``overrides``."""
    if not overrides and source is not None and dataclasses.is_dataclass(source):
        # The common case, a raykafka message: which attribute fills which field is known per
        # pair of classes, so a response of many partitions does no name lookups per partition.
        values = {}
        for field, attribute in _message_plan(cls, type(source)):
            if attribute is not None:
                values[field.name] = _kio_value(field, getattr(source, attribute))
            elif field.required:
                values[field.name] = _zero(field)
        return cls(**values)
    values = {}
    for field in _fields(cls):
        found, value = _lookup(overrides, field.name)
        if not found:
            found, value = _lookup(source, field.name)
        if not found and field.time_field:
            found, value = _lookup(source, field.name + "_ms")
        if found:
            values[field.name] = _kio_value(field, value)
        elif field.required:
            values[field.name] = _zero(field)
    return cls(**values)


def _core_value(field: _Field, value: Any) -> Any:
    entity = field.entity
    if value is None:
        return None
    if isinstance(value, (datetime.timedelta,)):
        return duration_ms(value)
    if isinstance(value, datetime.datetime):
        return duration_ms(value - _EPOCH)
    if isinstance(value, KioErrorCode):
        return ErrorCode(int(value))
    if entity is not None:
        if field.is_tuple:
            return tuple(from_kio(entity, item) for item in value)
        return from_kio(entity, value)
    if isinstance(value, tuple):
        return tuple(_plain(item) for item in value)
    return _plain(value)


def _plain(value: Any) -> Any:
    """kio's nominal types (TopicName, BrokerId, i32, ...) as the builtin they subclass, so a
    message holds only builtins (Ray pickles them cheaply; validation compares exact types)."""
    for builtin in (bool, int, str, bytes):
        if isinstance(value, builtin):
            return builtin(value)
    return value


def from_kio(cls: type, source: Any, **overrides: Any) -> Any:
    """A raykafka message ``cls`` filled from kio's ``source`` and ``overrides``; a field kio's
    version lacks keeps the message's default."""
    values = {}
    for field in _fields(cls):
        if field.name in overrides:
            values[field.name] = overrides[field.name]
            continue
        found, value = _lookup(source, field.name)
        if not found and field.name.endswith("_ms"):
            found, value = _lookup(source, field.name[:-3])
        if found:
            values[field.name] = _core_value(field, value)
    return cls(**values)
