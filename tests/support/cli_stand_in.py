"""The ``raykafka`` command modules' unit tests run a command against a stand-in for a cluster:
``connect_commands_to`` makes each given module's ``connected(args)`` yield that stand-in."""
from __future__ import annotations

import contextlib


def connect_commands_to(monkeypatch, stand_in, *command_modules) -> None:
    @contextlib.contextmanager
    def connected(args):
        yield stand_in
    for module in command_modules:
        monkeypatch.setattr(module, "connected", connected)
