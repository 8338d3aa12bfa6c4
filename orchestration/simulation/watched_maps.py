"""Maps that tell the simulator what a step reached, so invariants are checked where things changed.

Theory of operation. Checking every replica and every partition's leadership after every step costs
a scan of the whole cluster per step, which at 10,000 partitions is most of a run. These maps let
the simulation check exactly what a step could have changed:

- ``WatchedPartitions`` replaces a broker core's ``replica_manager.partitions`` (by value: the
  core reads the map anew each time). While ``armed`` (during one step of that broker: the
  simulation arms it around each) it notes every partition the step looked up, stored or removed by
  key, with its log end offset before the step; iterating the map notes every partition. A
  ``Partition``'s state (high watermark, log end offset, leadership) changes only in a step of its
  broker, and every handler reaches a partition through this map, by key or by iterating it, so
  the noted partitions are a superset of the changed ones (tests/scenarios/test_simulator.py
  compares them with a full diff after every step of faulty runs).
- ``WatchedLeaderships`` replaces a controller core's ``context.leadership``. Its values are
  immutable (``LeaderAndIsr``; every change stores a new one), so the keys written since the last
  ``take_written`` are exactly the partitions whose leadership changed.

Reads from outside a step (the simulation's own queries) see a plain map and note nothing.
"""
from __future__ import annotations

from typing import Any


class WatchedPartitions(dict):
    """A broker's partition map noting what an armed step reaches (see the module docstring)."""

    def __init__(self, partitions: dict) -> None:
        super().__init__(partitions)
        self.armed = False
        # Partition -> its log end offset when the step first reached it (None: not hosted then).
        self.before: dict[Any, int | None] = {}
        self.everything = False  # the step iterated the map: every partition counts as reached

    def arm(self) -> None:
        self.armed, self.before, self.everything = True, {}, False

    def disarm(self) -> dict[Any, int | None]:
        """End the step; the partitions it reached, each with its log end offset before it."""
        self.armed = False
        return self.before

    def _note(self, key: Any) -> None:
        if key not in self.before:
            partition = dict.get(self, key)
            self.before[key] = None if partition is None else partition.log_end_offset

    def _note_all(self) -> None:
        if not self.everything:
            self.everything = True
            for key in dict.keys(self):
                self._note(key)

    def get(self, key: Any, default: Any = None) -> Any:
        if self.armed:
            self._note(key)
        return dict.get(self, key, default)

    def __getitem__(self, key: Any) -> Any:
        if self.armed:
            self._note(key)
        return dict.__getitem__(self, key)

    def __setitem__(self, key: Any, value: Any) -> None:
        if self.armed:
            self._note(key)
        dict.__setitem__(self, key, value)

    def __delitem__(self, key: Any) -> None:
        if self.armed:
            self._note(key)
        dict.__delitem__(self, key)

    def pop(self, key: Any, *default: Any) -> Any:
        if self.armed:
            self._note(key)
        return dict.pop(self, key, *default)

    def setdefault(self, key: Any, default: Any = None) -> Any:
        if self.armed:
            self._note(key)
        return dict.setdefault(self, key, default)

    def values(self):
        if self.armed:
            self._note_all()
        return dict.values(self)

    def items(self):
        if self.armed:
            self._note_all()
        return dict.items(self)

    def keys(self):
        if self.armed:
            self._note_all()
        return dict.keys(self)

    def __iter__(self):
        if self.armed:
            self._note_all()
        return dict.__iter__(self)

    def copy(self) -> dict:
        if self.armed:
            self._note_all()
        return dict(dict.items(self))

    def popitem(self):
        raise NotImplementedError("a broker core never pops an arbitrary partition")

    def clear(self) -> None:
        if self.armed:
            self._note_all()
        dict.clear(self)

    def update(self, *args: Any, **kwargs: Any) -> None:
        for key, value in dict(*args, **kwargs).items():
            self[key] = value


class WatchedLeaderships(dict):
    """A controller's leadership map noting the keys written (see the module docstring)."""

    def __init__(self, leaderships: dict) -> None:
        super().__init__(leaderships)
        self.written: dict[Any, None] = dict.fromkeys(leaderships)  # an ordered set

    def take_written(self) -> list:
        written, self.written = list(self.written), {}
        return written

    def __setitem__(self, key: Any, value: Any) -> None:
        self.written[key] = None
        dict.__setitem__(self, key, value)

    def __delitem__(self, key: Any) -> None:
        self.written[key] = None
        dict.__delitem__(self, key)

    def pop(self, key: Any, *default: Any) -> Any:
        self.written[key] = None
        return dict.pop(self, key, *default)

    def setdefault(self, key: Any, default: Any = None) -> Any:
        self.written[key] = None
        return dict.setdefault(self, key, default)

    def popitem(self):
        raise NotImplementedError("a controller core never pops an arbitrary leadership")

    def clear(self) -> None:
        self.written.update(dict.fromkeys(dict.keys(self)))
        dict.clear(self)

    def update(self, *args: Any, **kwargs: Any) -> None:
        for key, value in dict(*args, **kwargs).items():
            self[key] = value


__all__ = ["WatchedLeaderships", "WatchedPartitions"]
