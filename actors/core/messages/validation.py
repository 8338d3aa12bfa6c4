"""Kafka's request parsing, for requests that arrive as Python objects.

A Kafka broker parses every request against its schema before any handler sees it, and answers a
request it cannot parse by closing the connection (the client sees a network error; the broker
logs ``INVALID_REQUEST``). raykafka's requests are dataclass instances handed over by Ray, so the
equivalent check is structural: ``request_schema_error(request, RequestType)`` says whether
``request`` is a ``RequestType`` whose every field, all the way down, has the type its annotation
names. The shells run it before a request reaches a core (``actors/drivers/base.py``), so a
string passed as a ``ProduceRequest`` or a ``FetchRequest`` passed to JoinGroup is refused with
``INVALID_REQUEST`` and can neither crash a core half-way through a step nor change its state.

What counts as the right type, per annotation: ``int`` any integral number (``bool`` too, as
Python has it); ``bool`` a ``bool``; ``str`` a ``str``; ``bytes`` a ``bytes``, ``bytearray`` or
``memoryview``; an enum a member of it (an ``IntEnum`` also a plain integer); ``tuple[X, ...]``
a tuple or list of X (Kafka's arrays); ``X | None`` None or X; a message class an instance of
exactly that class, checked field by field; ``Any`` anything (record payloads, which the log
validates itself and answers ``CORRUPT_MESSAGE``). Checkers are compiled once per annotation,
so a check costs a few attribute reads per field.
"""
from __future__ import annotations

import abc
import dataclasses
import enum
import functools
import numbers
import types
import typing
from collections.abc import Callable
from typing import Any

# Returns None when the value fits, else what is wrong, as "path: problem".
Checker = Callable[[Any], "str | None"]

_BYTES_TYPES = (bytes, bytearray, memoryview)
_ARRAY_TYPES = (tuple, list)


def request_schema_error(request: Any, request_type: type) -> str | None:
    """None if ``request`` is a well-formed ``request_type``, else a description of the first
    field that is not (``"topic_data[0].name: expected str, got int"``)."""
    error = _checker(request_type)(request)
    return None if error is None else error.removeprefix(".")


def _type_name(value: Any) -> str:
    return type(value).__name__


@functools.cache
def _checker(annotation: Any) -> Checker:
    if annotation is Any:
        return lambda value: None
    if annotation is type(None):
        return lambda value: None if value is None else f"expected None, got {_type_name(value)}"
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        return _union_checker(typing.get_args(annotation))
    if origin is tuple:
        return _tuple_checker(typing.get_args(annotation))
    if origin is not None:
        raise AssertionError(f"no schema checker for {annotation!r}")
    if dataclasses.is_dataclass(annotation):
        return _message_checker(annotation)
    if annotation is bool:
        return _instance_checker(bool, "bool")
    if isinstance(annotation, type) and issubclass(annotation, enum.IntEnum):
        return _instance_checker(numbers.Integral, annotation.__name__)
    if annotation is int:
        return _instance_checker(numbers.Integral, "int")
    if annotation is bytes:
        return _instance_checker(_BYTES_TYPES, "bytes")
    if isinstance(annotation, type):
        return _instance_checker(annotation, annotation.__name__)
    raise AssertionError(f"no schema checker for {annotation!r}")


def _instance_checker(accepted, name: str) -> Checker:
    # The exact type first: ``isinstance`` against an abstract base class is slow, and nearly
    # every value has exactly the expected type.
    exact = accepted if isinstance(accepted, type) and not isinstance(accepted, abc.ABCMeta) else int \
        if accepted is numbers.Integral else None

    def check(value: Any) -> str | None:
        if type(value) is exact or isinstance(value, accepted):
            return None
        return f"expected {name}, got {_type_name(value)}"
    return check


def _union_checker(options: tuple) -> Checker:
    checkers = tuple(_checker(option) for option in options)
    not_none = [checker for option, checker in zip(options, checkers) if option is not type(None)]
    names = " | ".join(getattr(option, "__name__", repr(option)) for option in options)

    def check(value: Any) -> str | None:
        if any(checker(value) is None for checker in checkers):
            return None
        if value is not None and len(not_none) == 1:
            return not_none[0](value)  # ``X | None`` given something else: say what is wrong with it
        return f"expected {names}, got {_type_name(value)}"
    return check


def _tuple_checker(arguments: tuple) -> Checker:
    if len(arguments) == 2 and arguments[1] is Ellipsis:
        element = _checker(arguments[0])

        def check_array(value: Any) -> str | None:
            if not isinstance(value, _ARRAY_TYPES):
                return f"expected an array (tuple), got {_type_name(value)}"
            for index, item in enumerate(value):  # bounded by the request's own size
                error = element(item)
                if error is not None:
                    return f"[{index}]{'' if error.startswith(('.', '[')) else ': '}{error}"
            return None
        return check_array
    elements = tuple(_checker(argument) for argument in arguments)

    def check_fixed(value: Any) -> str | None:
        if not isinstance(value, _ARRAY_TYPES) or len(value) != len(elements):
            return f"expected a tuple of {len(elements)}, got {_type_name(value)}"
        for index, (checker, item) in enumerate(zip(elements, value)):
            error = checker(item)
            if error is not None:
                return f"[{index}]{'' if error.startswith(('.', '[')) else ': '}{error}"
        return None
    return check_fixed


def _message_checker(message_type: type) -> Checker:
    # No message contains itself, so compiling every field now ends.
    hints = typing.get_type_hints(message_type)
    fields = tuple((field.name, _checker(hints[field.name])) for field in dataclasses.fields(message_type))

    def check(value: Any) -> str | None:
        if type(value) is not message_type:
            return f"expected {message_type.__name__}, got {_type_name(value)}"
        for name, checker in fields:
            error = checker(getattr(value, name))
            if error is not None:
                return f".{name}{'' if error.startswith(('.', '[')) else ': '}{error}"
        return None
    return check
