"""The simulation's nodes by name, with their armed wake-ups indexed: what is due costs what is due.

Theory of operation. ``NodeMap`` is ``Simulation.nodes`` (name -> node). It keeps the names sorted
(the order in which wake-ups fire) until a node comes or goes, and one heap of every node's armed
deadlines: a node's ``timers`` becomes a ``Timers`` set when the node enters the map, and each
deadline the set is given from then on is pushed onto the heap. ``next_deadline_ms`` and
``pop_due_names`` answer from the heap, skipping entries whose node has gone or whose deadline has
fired; they give what a scan of every node's timers gives, so no seed's schedule changes. At 10,000
partitions a simulated cluster has thousands of fetcher nodes, and that scan ran every millisecond.
"""
from __future__ import annotations

import heapq
import itertools
from typing import Any

_ENTRY_NUMBERS = itertools.count()  # breaks ties in the heap, so nodes are never compared


class Timers(set):
    """A node's armed deadlines (ms); pushes each new one onto its map's heap."""

    __slots__ = ("_heap", "_node")

    def __init__(self, deadlines=()) -> None:
        super().__init__(deadlines)
        self._heap: list | None = None
        self._node: Any = None

    def attach(self, heap: list, node: Any) -> None:
        self._heap, self._node = heap, node
        for deadline_ms in self:
            heapq.heappush(heap, (deadline_ms, next(_ENTRY_NUMBERS), node))

    def add(self, deadline_ms: int) -> None:
        set.add(self, deadline_ms)
        if self._heap is not None:
            heapq.heappush(self._heap, (deadline_ms, next(_ENTRY_NUMBERS), self._node))


class NodeMap(dict):
    def __init__(self) -> None:
        super().__init__()
        self._heap: list = []
        self._sorted_names: list[str] | None = None

    def __setitem__(self, name: str, node: Any) -> None:
        dict.__setitem__(self, name, node)
        self._sorted_names = None
        node.timers = Timers(node.timers)
        node.timers.attach(self._heap, node)

    def __delitem__(self, name: str) -> None:
        dict.__delitem__(self, name)
        self._sorted_names = None

    def pop(self, name: str, *default: Any) -> Any:
        self._sorted_names = None
        return dict.pop(self, name, *default)

    def setdefault(self, name: str, default: Any = None) -> Any:
        raise NotImplementedError("add a node with nodes[name] = node")

    def update(self, *args: Any, **kwargs: Any) -> None:
        for name, node in dict(*args, **kwargs).items():
            self[name] = node

    def sorted_names(self) -> list[str]:
        """Every node's name, sorted; a list the map never changes afterwards (iterate it freely)."""
        if self._sorted_names is None:
            self._sorted_names = sorted(dict.keys(self))
        return self._sorted_names

    def _live(self, deadline_ms: int, node: Any) -> bool:
        return dict.get(self, node.name) is node and deadline_ms in node.timers

    def next_deadline_ms(self) -> int | None:
        """The earliest deadline armed on any node, or None."""
        heap = self._heap
        while heap:
            deadline_ms, _, node = heap[0]
            if self._live(deadline_ms, node):
                return deadline_ms
            heapq.heappop(heap)
        return None

    def pop_due_names(self, now_ms: int) -> set[str]:
        """The names of the nodes with a deadline at or before ``now_ms``; their entries leave the
        heap (the caller fires those deadlines)."""
        heap, names = self._heap, set()
        while heap and heap[0][0] <= now_ms:
            deadline_ms, _, node = heapq.heappop(heap)
            if self._live(deadline_ms, node):
                names.add(node.name)
        return names
