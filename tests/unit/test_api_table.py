"""The API table (actors/core/apis.py) is the one place a request finds its handler: every API the
wire advertises is in it with its versions and codec, every request type belongs to one entry,
each kind's driver dispatches a well-formed request of every type it serves to that entry's
handler and refuses every other type with INVALID_REQUEST before its core is stepped, and no shell,
driver or client reaches a handler through a method-name string any more."""
from __future__ import annotations

import ast
import dataclasses
import enum
import inspect
import types
import typing
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from actors.core.apis import (
    APIS, BROKER, BY_KEY, BY_REQUEST_TYPE, CONTROLLER, GROUP_COORDINATOR, LISTENER, WIRE_VERSIONS, ActorKind,
)
from actors.core.broker.broker_core import BrokerCore
from actors.core.controller.controller import ControllerCore
from actors.core.effects import Respond
from actors.core.errors import ErrorCode, KafkaProtocolError
from actors.core.group.coordinator import GroupCoordinatorCore
from actors.core.messages.validation import request_schema_error
from actors.core.replica.replica_manager import ReplicaManager
from actors.drivers.base import Driver
from actors.drivers.broker import BrokerDriver
from actors.drivers.controller import ControllerDriver
from actors.drivers.group_coordinator import GroupCoordinatorDriver
from actors.wire.apis import CODECS
from actors.wire.versions import SUPPORTED_VERSIONS

REPO_ROOT = Path(__file__).resolve().parents[2]
# Where each kind's handlers may live: its core, or (the broker) the replica manager it owns.
CORE_CLASSES = {BROKER: ("BrokerCore", "ReplicaManager"), CONTROLLER: ("ControllerCore",),
                GROUP_COORDINATOR: ("GroupCoordinatorCore",)}
CORES = {BROKER: BrokerCore, CONTROLLER: ControllerCore, GROUP_COORDINATOR: GroupCoordinatorCore}
# The Ray shells, and every module that once reached a handler by its name.
SHELLS = ("actors/broker.py", "actors/controller.py", "actors/group_coordinator.py")
CALLERS = SHELLS + (
    "actors/kafka_listener.py", "actors/drivers/base.py", "actors/drivers/broker.py", "actors/drivers/controller.py",
    "actors/drivers/group_coordinator.py", "actors/replica_fetcher.py", "actors/request_send_thread.py",
    "orchestration/simulation/nodes.py", "orchestration/clients/broker_directory.py",
    "orchestration/clients/group_channel.py", "orchestration/admin/admin_client.py", "orchestration/admin/groups.py")


# ------------------------------------------------------------------------- the table itself
def test_every_api_the_wire_advertises_is_in_the_table_with_versions_and_a_codec():
    assert SUPPORTED_VERSIONS == dict(WIRE_VERSIONS)
    for key, versions in SUPPORTED_VERSIONS.items():
        api = BY_KEY[key]
        assert api.versions == versions and versions[0] <= versions[1], api.name
        assert CODECS[key].api is api
        if api.kind is LISTENER:
            assert api.request_type is None and not api.handlers, f"{api.name} is answered by the listener alone"
        else:
            assert api.request_type is not None and api.handlers, f"{api.name} has no request type or handler"


def test_every_request_type_belongs_to_exactly_one_entry():
    typed = [api.request_type for api in APIS if api.request_type is not None]
    assert len(typed) == len(set(typed)) == len(BY_REQUEST_TYPE)
    keys = [api.key for api in APIS if api.key is not None]
    assert len(keys) == len(set(keys))
    names = [api.name for api in APIS]
    assert len(names) == len(set(names))


@pytest.mark.parametrize("api", [a for a in APIS if a.handlers], ids=lambda a: a.name)
def test_each_handler_is_a_step_of_its_kinds_core(api):
    for kind, handler in api.handlers.items():
        assert kind is not LISTENER
        parameters = inspect.signature(handler, follow_wrapped=False).parameters
        assert len(parameters) == 4 or handler.__name__ == "<lambda>", api.name
        target = getattr(handler, "__wrapped__", handler)
        if target.__name__ != "<lambda>":  # a reference to the method that does the work
            assert target.__qualname__.split(".")[0] in CORE_CLASSES[kind], (api.name, target.__qualname__)
            assert target.__name__ == f"handle_{api.name}", (api.name, target.__name__)
        # A request type of this API has a schema checker (nested annotations all supported).
        assert request_schema_error(None, api.request_type) is not None


# ------------------------------------------------------------------------------ dispatch
def _example(annotation: Any) -> Any:
    """A well-formed value of ``annotation`` (the smallest one), to build a request of any type."""
    if annotation is Any or annotation is object:
        return None
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        options = typing.get_args(annotation)
        return None if type(None) in options else _example(options[0])
    if origin is tuple:
        return ()
    if dataclasses.is_dataclass(annotation):
        hints = typing.get_type_hints(annotation)
        return annotation(**{f.name: _example(hints[f.name]) for f in dataclasses.fields(annotation)
                             if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING})
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return next(iter(annotation))
    return {bool: False, int: 0, str: "", bytes: b""}[annotation]


class _Log:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def log(self, level: str, message: str) -> None:
        self.lines.append(message)

    def metric(self, name: str, value: float, tags: dict) -> None:
        pass


class _Clock:
    def now_ms(self) -> int:
        return 0

    def wake_at(self, deadline_ms: int) -> None:
        pass


def _driver(kind: ActorKind) -> tuple[Driver, list]:
    """The kind's real driver around a stand-in core; its ``step`` records the handler it was given."""
    core = SimpleNamespace(broker_id=0, config=SimpleNamespace(get_int=lambda key, default: default))
    log, clock = _Log(), _Clock()
    if kind is BROKER:
        driver = BrokerDriver(core, None, clock, log)
    elif kind is CONTROLLER:
        driver = ControllerDriver(core, None, clock, log)
    else:
        driver = GroupCoordinatorDriver(SimpleNamespace(core=core), None, clock, log)
    stepped: list = []

    def step(handler, request_id, request, now_ms):
        stepped.append((handler, request))
        return [Respond(request_id=request_id, response=ErrorCode.NONE)]
    driver.step = step
    return driver, stepped


@pytest.mark.parametrize("kind", [BROKER, CONTROLLER, GROUP_COORDINATOR], ids=lambda k: k.value)
def test_a_driver_dispatches_each_type_it_serves_to_the_tables_handler(kind):
    driver, stepped = _driver(kind)
    served = [api for api in APIS if kind in api.handlers]
    assert served
    for api in served:
        request = _example(api.request_type)
        answers: list = []
        driver.handle(request, answers.append)
        assert stepped[-1] == (api.handlers[kind], request) and answers == [ErrorCode.NONE], api.name
    assert len(stepped) == len(served)


@pytest.mark.parametrize("kind", [BROKER, CONTROLLER, GROUP_COORDINATOR], ids=lambda k: k.value)
def test_a_request_type_foreign_to_a_kind_is_refused_with_invalid_request_and_the_core_untouched(kind):
    driver, stepped = _driver(kind)
    foreign = [api for api in APIS if api.request_type is not None and kind not in api.handlers]
    assert foreign
    for api in foreign:
        answers: list = []
        with pytest.raises(KafkaProtocolError) as raised:
            driver.handle(_example(api.request_type), answers.append)
        assert raised.value.error_code == ErrorCode.INVALID_REQUEST, api.name
        assert answers == [] and stepped == [] and driver.requests_pending == 0
    with pytest.raises(KafkaProtocolError):
        driver.handle("not a request at all", [].append)
    assert stepped == []


def test_the_shells_serve_every_api_through_one_handle_method():
    for path in SHELLS:
        tree = ast.parse((REPO_ROOT / path).read_text())
        methods = {node.name for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}
        per_api = sorted(name for name in methods if name.startswith("handle_"))
        assert per_api == [], f"{path} has one method per API: {per_api}"
        assert "handle" in methods, f"{path} has no handle(request)"


def test_no_caller_reaches_a_handler_by_its_name():
    """No ``handle_<api>`` string and no ``getattr`` of a handler name in the shells, drivers, fetcher,
    send thread, simulator, clients or admin: grep from the table finds the code instead."""
    offenders = []
    for path in CALLERS:
        for node in ast.walk(ast.parse((REPO_ROOT / path).read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith("handle_"):
                offenders.append(f"{path}:{node.lineno} {node.value!r}")
    assert offenders == []
    assert not (REPO_ROOT / "actors/drivers/request_types.py").exists()


def test_broker_core_keeps_no_one_line_delegation_the_table_replaces():
    delegated = {name for name in vars(ReplicaManager) if name.startswith("handle_")}
    assert sorted(name for name in vars(BrokerCore) if name in delegated and name not in {
        "handle_leader_and_isr", "handle_update_metadata", "handle_stop_replica"}) == []  # those three park
